/**
 * What every SASL mechanism's server side shares: the steps an exchange takes, the error its
 * parsers throw, and the session lifetime of KIP-368 (re-authentication).
 */
import { ErrorCode } from '../protocol/index.ts'

export type SaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | 'OAUTHBEARER'

export const SASL_MECHANISMS: readonly SaslMechanism[] = [
  'PLAIN',
  'SCRAM-SHA-256',
  'SCRAM-SHA-512',
  'OAUTHBEARER',
]

export function isSaslMechanism(name: string): name is SaslMechanism {
  return (SASL_MECHANISMS as readonly string[]).includes(name)
}

/** The server has more to say: send `challenge` (SaslAuthenticate's auth bytes) and wait. */
export interface SaslChallenge {
  readonly kind: 'challenge'
  readonly challenge: Buffer
}

/** Authenticated: send `challenge` (possibly empty) with no error. */
export interface SaslComplete {
  readonly kind: 'complete'
  readonly challenge: Buffer
  /** The authenticated name: the principal `User:<principal>` (before any principal builder). */
  readonly principal: string
  /** The authorization id: equal to `principal` for every mechanism here. */
  readonly authorizationId: string
  /**
   * KIP-368: what SaslAuthenticate's `sessionLifetimeMs` carries, 0 for none: the lesser of
   * `connections.max.reauth.ms` and the credential's remaining lifetime (Kafka's
   * `calcCompletionTimesAndReturnSessionLifetimeMs`).
   */
  readonly sessionLifetimeMs: number
  /** Wall time (ms) at which the credential expires (an OAuth token, a delegation token), or null. */
  readonly credentialExpiryMs: number | null
  /** The SASL extensions the client sent and the server accepted (SCRAM `tokenauth`, OAUTHBEARER kvpairs). */
  readonly extensions: ReadonlyMap<string, string>
}

/**
 * Authentication failed: answer with `errorCode` and `message` (the text the client sees, never a
 * secret), then close. `serverError`, for SCRAM, is RFC 5802's `e=` server-final message; Kafka
 * sends none, so it is there for a wiring that wants RFC behaviour.
 */
export interface SaslFailure {
  readonly kind: 'failure'
  readonly errorCode: ErrorCode
  readonly message: string
  /** Why, for the broker's debug log: no secret, and never sent to the client when it differs. */
  readonly reason: string
  readonly serverError?: Buffer
}

export type SaslStep = SaslChallenge | SaslComplete | SaslFailure

/** One authentication exchange on one connection; a new one per (re-)authentication. */
export interface SaslServer {
  readonly mechanism: SaslMechanism
  /** Evaluate the client's next auth bytes. Never rejects: every failure is a `SaslFailure`. */
  evaluate(response: Buffer): Promise<SaslStep>
  readonly isComplete: boolean
}

/**
 * A failure raised inside a mechanism: `clientVisible` says whether `message` may go to the client
 * (Kafka's SaslAuthenticationException) or the generic text replaces it (a SaslException: "it may
 * contain sensitive data like the existence of the user"). Parsers throw only this.
 */
export class SaslError extends Error {
  readonly errorCode: ErrorCode
  readonly clientVisible: boolean
  readonly serverError: string | undefined

  constructor(
    message: string,
    options: { clientVisible?: boolean; errorCode?: ErrorCode; serverError?: string } = {},
  ) {
    super(message)
    this.name = 'SaslError'
    this.errorCode = options.errorCode ?? ErrorCode.SaslAuthenticationFailed
    this.clientVisible = options.clientVisible ?? false
    this.serverError = options.serverError
  }
}

/** What the client sees for a failure that is not client-visible (Kafka's text). */
export function genericFailureMessage(mechanism: SaslMechanism, reauthenticating = false): string {
  const what = reauthenticating ? 're-authentication' : 'authentication'
  return `Authentication failed during ${what} due to invalid credentials with SASL mechanism ${mechanism}`
}

/** Turn a thrown error into the failure step; anything not a SaslError is an internal error. */
export function failureFrom(error: unknown, mechanism: SaslMechanism, reauthenticating = false): SaslFailure {
  if (!(error instanceof SaslError)) {
    return {
      kind: 'failure',
      errorCode: ErrorCode.SaslAuthenticationFailed,
      message: genericFailureMessage(mechanism, reauthenticating),
      reason: `internal error: ${error instanceof Error ? error.name : typeof error}`,
    }
  }
  const message =
    error.clientVisible || error.errorCode !== ErrorCode.SaslAuthenticationFailed
      ? error.message
      : genericFailureMessage(mechanism, reauthenticating)
  const failure: SaslFailure = { kind: 'failure', errorCode: error.errorCode, message, reason: error.message }
  if (error.serverError === undefined) return failure
  return { ...failure, serverError: Buffer.from(`e=${error.serverError}`, 'ascii') }
}

/** The failure for a response after the exchange completed or failed. */
export function illegalStateFailure(mechanism: SaslMechanism, state: string): SaslFailure {
  return failureFrom(
    new SaslError(`Unexpected challenge in Sasl server state ${state}`, {
      errorCode: ErrorCode.IllegalSaslState,
    }),
    mechanism,
  )
}

export interface SessionLifetimeInput {
  /** Wall time (ms) when authentication completed. */
  readonly nowMs: number
  /** `connections.max.reauth.ms` for the listener and mechanism; 0 or less: none. */
  readonly connectionsReauthMsMax: number
  readonly credentialExpiryMs: number | null
}

/** KIP-368's session lifetime, as Kafka's SaslServerAuthenticator computes it (0: none). */
export function sessionLifetimeMs(input: SessionLifetimeInput): number {
  const reauthLimited = input.connectionsReauthMsMax > 0
  const expiry = input.credentialExpiryMs
  if (expiry === null) return reauthLimited ? input.connectionsReauthMsMax : 0
  const remainingMs = Math.max(0, expiry - input.nowMs)
  return reauthLimited ? Math.min(remainingMs, input.connectionsReauthMsMax) : remainingMs
}

/** What a server's options give every completion: the clock and `connections.max.reauth.ms`. */
export interface SessionOptions {
  readonly nowMs: () => number
  readonly connectionsReauthMsMax?: number
}

/** A completion for `principal`, its session lifetime computed as KIP-368 says. */
export function saslComplete(
  options: SessionOptions,
  principal: string,
  credentialExpiryMs: number | null,
  challenge: Buffer = Buffer.alloc(0),
  extensions: ReadonlyMap<string, string> = new Map(),
): SaslComplete {
  return {
    kind: 'complete',
    challenge,
    principal,
    authorizationId: principal,
    sessionLifetimeMs: sessionLifetimeMs({
      nowMs: options.nowMs(),
      connectionsReauthMsMax: options.connectionsReauthMsMax ?? 0,
      credentialExpiryMs,
    }),
    credentialExpiryMs,
    extensions,
  }
}
