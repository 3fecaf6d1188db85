/**
 * The client side of SASL's mechanisms, as Kafka's clients speak them: PLAIN (RFC 4616), SCRAM-SHA-256
 * and SCRAM-SHA-512 (RFC 5802, RFC 7677: Kafka's ScramSaslClient, no channel binding) and OAUTHBEARER
 * with an unsecured token (RFC 7628, Kafka's OAuthBearerUnsecuredLoginCallbackHandler). The credentials
 * come from a client's `sasl.jaas.config`, as Kafka's login modules read it. A mechanism only turns
 * challenges into responses; SaslHandshake and SaslAuthenticate are the connection's (client/).
 */
import type { Random } from '../io/index.ts'
import {
  JaasConfigError,
  OAUTHBEARER_LOGIN_MODULE,
  PLAIN_LOGIN_MODULE,
  parseJaasConfig,
  SCRAM_LOGIN_MODULE,
} from './jaas.ts'
import { parseScope } from './oauthbearer.ts'
import type { SaslMechanism } from './sasl.ts'
import { scramSaslName } from './scram.ts'
import {
  hash,
  hmac,
  randomBase36,
  SCRAM_ALGORITHMS,
  type ScramMechanism,
  saltedPassword,
} from './scram-credentials.ts'

/** A client's own credentials for one mechanism. */
export type SaslClientCredentials =
  | {
      readonly mechanism: 'PLAIN' | ScramMechanism
      readonly username: string
      readonly password: string
    }
  | { readonly mechanism: 'OAUTHBEARER'; readonly unsecuredLogin: UnsecuredLoginOptions }

/** The unsecured token's claims, from OAuthBearerLoginModule's `unsecuredLogin*` options. */
export interface UnsecuredLoginOptions {
  /** `unsecuredLoginStringClaim_sub` (the principal claim, `unsecuredLoginPrincipalClaimName`). */
  readonly principal: string
  /** `unsecuredLoginPrincipalClaimName`, default `sub`. */
  readonly principalClaimName: string
  /** `unsecuredLoginLifetimeSeconds`, default 3600. */
  readonly lifetimeSeconds: number
  /** `unsecuredLoginListClaim_<scopeClaimName>` (its first character delimits the list). */
  readonly scope: readonly string[]
  /** `unsecuredLoginScopeClaimName`, default `scope`. */
  readonly scopeClaimName: string
}

/** The server refused or answered something a client cannot accept. The message holds no secret. */
export class SaslClientError extends Error {
  override name = 'SaslClientError'
}

/** One exchange of one mechanism. */
export interface SaslClient {
  readonly mechanism: SaslMechanism
  /**
   * The next response to send, given the server's last challenge (null before the first message);
   * null once the exchange is complete on the client's side. Throws SaslClientError.
   */
  respond(challenge: Buffer | null): Buffer | null
}

export interface SaslClientPorts {
  /** The SCRAM client nonce (Kafka draws it from a SecureRandom: `systemRandom` in production). */
  readonly random: Random
  /** Wall time (ms): the unsecured token's `iat` and `exp`. */
  readonly nowMs: () => number
}

export function createSaslClient(credentials: SaslClientCredentials, ports: SaslClientPorts): SaslClient {
  switch (credentials.mechanism) {
    case 'PLAIN':
      return new OneMessageClient('PLAIN', () =>
        Buffer.concat([
          Buffer.from([0]),
          Buffer.from(credentials.username, 'utf8'),
          Buffer.from([0]),
          Buffer.from(credentials.password, 'utf8'),
        ]),
      )
    case 'OAUTHBEARER':
      return new OneMessageClient('OAUTHBEARER', () =>
        Buffer.from(
          `n,,\x01auth=Bearer ${unsecuredToken(credentials.unsecuredLogin, ports.nowMs())}\x01\x01`,
          'utf8',
        ),
      )
    default:
      return new ScramSaslClient(
        credentials.mechanism,
        credentials.username,
        credentials.password,
        ports.random,
      )
  }
}

/** PLAIN and OAUTHBEARER: one message; the server's answer (empty) completes it. */
class OneMessageClient implements SaslClient {
  readonly mechanism: SaslMechanism
  readonly #message: () => Buffer
  #sent = false

  constructor(mechanism: SaslMechanism, message: () => Buffer) {
    this.mechanism = mechanism
    this.#message = message
  }

  respond(challenge: Buffer | null): Buffer | null {
    if (this.#sent) {
      // OAUTHBEARER's failure challenge is a JSON error (RFC 7628 3.2.2); Kafka answers it with 0x01.
      if (this.mechanism === 'OAUTHBEARER' && challenge !== null && challenge.length > 0)
        return Buffer.from([1])
      return null
    }
    this.#sent = true
    return this.#message()
  }
}

function base64Url(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')
}

/** `<header>.<claims>.`: an unsecured JWS (alg none), as OAuthBearerUnsecuredLoginCallbackHandler makes. */
export function unsecuredToken(options: UnsecuredLoginOptions, nowMs: number): string {
  const iat = nowMs / 1000
  const claims: Record<string, unknown> = {
    iat,
    exp: iat + options.lifetimeSeconds,
    [options.principalClaimName]: options.principal,
  }
  if (options.scope.length > 0) claims[options.scopeClaimName] = options.scope
  return `${base64Url({ alg: 'none' })}.${base64Url(claims)}.`
}

type ScramState = 'FIRST' | 'FINAL' | 'VERIFY' | 'COMPLETE'

/** Kafka's ScramSaslClient: client-first, client-final with the proof, then the server's signature checked. */
class ScramSaslClient implements SaslClient {
  readonly mechanism: ScramMechanism
  readonly #username: string
  readonly #password: string
  readonly #random: Random
  #state: ScramState = 'FIRST'
  #nonce = ''
  #bare = ''
  #serverSignature: Buffer | null = null

  constructor(mechanism: ScramMechanism, username: string, password: string, random: Random) {
    this.mechanism = mechanism
    this.#username = username
    this.#password = password
    this.#random = random
  }

  respond(challenge: Buffer | null): Buffer | null {
    switch (this.#state) {
      case 'FIRST':
        this.#nonce = randomBase36(this.#random)
        this.#bare = `n=${scramSaslName(this.#username)},r=${this.#nonce}`
        this.#state = 'FINAL'
        return Buffer.from(`n,,${this.#bare}`, 'utf8')
      case 'FINAL':
        this.#state = 'VERIFY'
        return this.#final(challenge ?? Buffer.alloc(0))
      case 'VERIFY':
        this.#verify(challenge ?? Buffer.alloc(0))
        this.#state = 'COMPLETE'
        return null
      default:
        throw new SaslClientError(`${this.mechanism}: the exchange is already complete`)
    }
  }

  #final(serverFirstBytes: Buffer): Buffer {
    const algorithm = SCRAM_ALGORITHMS[this.mechanism]
    const serverFirst = serverFirstBytes.toString('utf8')
    const attrs = scramAttributes(serverFirst)
    const nonce = attrs.get('r')
    const salt = attrs.get('s')
    const iterations = Number(attrs.get('i'))
    if (nonce === undefined || salt === undefined || !Number.isSafeInteger(iterations)) {
      throw new SaslClientError(`${this.mechanism}: invalid server first message`)
    }
    if (!nonce.startsWith(this.#nonce) || nonce.length === this.#nonce.length) {
      throw new SaslClientError(`${this.mechanism}: invalid server nonce: does not start with client nonce`)
    }
    if (iterations < algorithm.iterationsMin) {
      throw new SaslClientError(
        `${this.mechanism}: requested iterations ${iterations} is less than the minimum ${algorithm.iterationsMin}`,
      )
    }
    const salted = saltedPassword(algorithm, this.#password, Buffer.from(salt, 'base64'), iterations)
    const withoutProof = `c=${Buffer.from('n,,').toString('base64')},r=${nonce}`
    const authMessage = `${this.#bare},${serverFirst},${withoutProof}`
    const clientKey = hmac(algorithm, salted, 'Client Key')
    const signature = hmac(algorithm, hash(algorithm, clientKey), authMessage)
    const proof = Buffer.alloc(clientKey.length)
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ signature[i]!
    this.#serverSignature = hmac(algorithm, hmac(algorithm, salted, 'Server Key'), authMessage)
    return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'utf8')
  }

  #verify(serverFinalBytes: Buffer): void {
    const attrs = scramAttributes(serverFinalBytes.toString('utf8'))
    const error = attrs.get('e')
    if (error !== undefined) throw new SaslClientError(`${this.mechanism}: the server refused: ${error}`)
    const v = attrs.get('v')
    if (v === undefined || !Buffer.from(v, 'base64').equals(this.#serverSignature!)) {
      throw new SaslClientError(`${this.mechanism}: invalid server signature in the server final message`)
    }
  }
}

/** `k=v,k=v`: a SCRAM message's attributes (values may hold `=`). */
function scramAttributes(message: string): Map<string, string> {
  const attrs = new Map<string, string>()
  for (const part of message.split(',')) {
    const eq = part.indexOf('=')
    if (eq === 1) attrs.set(part[0]!, part.slice(2))
  }
  return attrs
}

/**
 * A client's `sasl.jaas.config` for `mechanism`, as its login module reads it: PlainLoginModule and
 * ScramLoginModule's `username` and `password`, OAuthBearerLoginModule's `unsecuredLogin*` options.
 * Throws JaasConfigError, naming options, never their values.
 */
export function saslClientCredentialsFromJaas(
  mechanism: SaslMechanism,
  jaasText: string,
): SaslClientCredentials {
  const entries = parseJaasConfig(jaasText)
  if (entries.length !== 1) {
    throw new JaasConfigError(
      `JAAS config property contains ${entries.length} login modules, should be 1 module`,
    )
  }
  const entry = entries[0]!
  const module =
    mechanism === 'PLAIN'
      ? PLAIN_LOGIN_MODULE
      : mechanism === 'OAUTHBEARER'
        ? OAUTHBEARER_LOGIN_MODULE
        : SCRAM_LOGIN_MODULE
  if (entry.loginModule !== module) {
    throw new JaasConfigError(`sasl.mechanism ${mechanism} needs ${module}, not ${entry.loginModule}`)
  }
  const option = (key: string): string => {
    const value = entry.options.get(key)
    if (value === undefined) throw new JaasConfigError(`${entry.loginModule} needs the option ${key}`)
    return value
  }
  if (mechanism !== 'OAUTHBEARER')
    return { mechanism, username: option('username'), password: option('password') }
  const principalClaimName = entry.options.get('unsecuredLoginPrincipalClaimName')?.trim() || 'sub'
  const scopeClaimName = entry.options.get('unsecuredLoginScopeClaimName')?.trim() || 'scope'
  const lifetimeText = entry.options.get('unsecuredLoginLifetimeSeconds')?.trim() || '3600'
  if (!/^[0-9]{1,10}$/.test(lifetimeText)) {
    throw new JaasConfigError('unsecuredLoginLifetimeSeconds must be a number of seconds')
  }
  const list = entry.options.get(`unsecuredLoginListClaim_${scopeClaimName}`) ?? ''
  return {
    mechanism,
    unsecuredLogin: {
      principal: option(`unsecuredLoginStringClaim_${principalClaimName}`),
      principalClaimName,
      lifetimeSeconds: Number(lifetimeText),
      scope:
        list.length < 2
          ? []
          : list
              .slice(1)
              .split(list[0]!)
              .flatMap((s) => parseScope(s)),
      scopeClaimName,
    },
  }
}
