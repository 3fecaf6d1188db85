/**
 * The factory of SASL servers by mechanism name, from what each mechanism needs (users, SCRAM
 * credentials, a token validator) and the io ports (the Clock for lifetimes and token times, the
 * Random for SCRAM nonces).
 */
import type { Clock, Random } from '../io/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { OAuthBearerSaslServer, type OAuthBearerValidator } from './oauthbearer.ts'
import { type PlainAuthenticator, PlainSaslServer } from './plain.ts'
import { isSaslMechanism, type SaslFailure, type SaslMechanism, type SaslServer } from './sasl.ts'
import { ScramSaslServer, type ScramTokenCredential } from './scram.ts'
import type { ScramCredential, ScramMechanism } from './scram-credentials.ts'

/**
 * Where SCRAM credentials come from: the user's stored credential for a mechanism, or null for an
 * unknown user (the broker reads them from the metadata image's UserScramCredentialRecords).
 */
export type ScramCredentialLookup = (mechanism: ScramMechanism, username: string) => ScramCredential | null

export interface SaslServerConfig {
  readonly clock: Clock
  readonly random: Random
  /** `connections.max.reauth.ms` per mechanism (Kafka's `listener.name.<l>.<mechanism>.` prefix); 0: none. */
  readonly connectionsReauthMsMax?: Partial<Record<SaslMechanism, number>>
  /** PLAIN: enabled when given. */
  readonly plain?: { readonly authenticate: PlainAuthenticator }
  /** SCRAM-SHA-256 and -512: enabled when given (each only if listed in `mechanisms`). */
  readonly scram?: {
    readonly mechanisms: readonly ScramMechanism[]
    readonly credential: ScramCredentialLookup
    readonly tokenCredential?: (mechanism: ScramMechanism, tokenId: string) => ScramTokenCredential | null
  }
  /** OAUTHBEARER: enabled when given. */
  readonly oauthbearer?: { readonly validator: OAuthBearerValidator }
}

/** The mechanisms this configuration serves, in SaslHandshake's order. */
export function enabledSaslMechanisms(config: SaslServerConfig): SaslMechanism[] {
  const enabled: SaslMechanism[] = []
  if (config.plain !== undefined) enabled.push('PLAIN')
  for (const mechanism of config.scram?.mechanisms ?? []) enabled.push(mechanism)
  if (config.oauthbearer !== undefined) enabled.push('OAUTHBEARER')
  return enabled
}

function unsupported(mechanism: string): SaslFailure {
  return {
    kind: 'failure',
    errorCode: ErrorCode.UnsupportedSaslMechanism,
    message: `Unsupported SASL mechanism ${mechanism}`,
    reason: `mechanism ${mechanism} is not enabled`,
  }
}

/** A server for one exchange, or UNSUPPORTED_SASL_MECHANISM's failure if `name` is not enabled. */
export function createSaslServer(name: string, config: SaslServerConfig): SaslServer | SaslFailure {
  if (!isSaslMechanism(name) || !enabledSaslMechanisms(config).includes(name)) return unsupported(name)
  const nowMs = () => config.clock.nowMs()
  const connectionsReauthMsMax = config.connectionsReauthMsMax?.[name] ?? 0
  if (name === 'PLAIN') {
    return new PlainSaslServer({ authenticate: config.plain!.authenticate, nowMs, connectionsReauthMsMax })
  }
  if (name === 'OAUTHBEARER') {
    return new OAuthBearerSaslServer({
      validator: config.oauthbearer!.validator,
      nowMs,
      connectionsReauthMsMax,
    })
  }
  const scram = config.scram!
  const tokenCredential = scram.tokenCredential
  return new ScramSaslServer({
    mechanism: name,
    credential: (username) => scram.credential(name, username),
    ...(tokenCredential === undefined ? {} : { tokenCredential: (id: string) => tokenCredential(name, id) }),
    random: config.random,
    nowMs,
    connectionsReauthMsMax,
  })
}
