/**
 * SASL/PLAIN's server side (RFC 4616), as Kafka's PlainSaslServer: one message
 * `[authzid] NUL authcid NUL passwd`, checked against the `user_<name>` options of the
 * PlainLoginModule's JAAS entry (or any lookup given).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import {
  failureFrom,
  illegalStateFailure,
  SaslError,
  type SaslServer,
  type SaslStep,
  saslComplete,
} from './sasl.ts'

export interface PlainMessage {
  readonly authorizationId: string
  readonly username: string
  /** The password's bytes as sent; kept out of strings. */
  readonly password: Buffer
}

/**
 * Split a PLAIN response. Kafka splits the UTF-8 text at NUL up to four times and wants exactly
 * three tokens; NUL is one byte in UTF-8, so splitting the bytes gives the same tokens.
 */
export function parsePlainMessage(response: Buffer): PlainMessage {
  const tokens: Buffer[] = []
  let start = 0
  for (let i = 0; i < 4; i++) {
    const end = response.indexOf(0, start)
    if (end < 0) {
      tokens.push(response.subarray(start))
      break
    }
    tokens.push(response.subarray(start, end))
    start = end + 1
  }
  if (tokens.length !== 3) {
    throw new SaslError(`Invalid SASL/PLAIN response: expected 3 tokens, got ${tokens.length}`, {
      clientVisible: true,
    })
  }
  const [authzid, username, password] = tokens as [Buffer, Buffer, Buffer]
  return { authorizationId: authzid.toString('utf8'), username: username.toString('utf8'), password }
}

/** Whether a user exists with this password; given the password's bytes, never a string of them. */
export type PlainAuthenticator = (username: string, password: Buffer) => boolean

/**
 * PlainServerCallbackHandler: the users of the JAAS entry (`plainUsersFromJaas`), compared in
 * constant time (both sides hashed first, so neither the length nor the content leaks).
 */
export function plainAuthenticatorFromUsers(users: ReadonlyMap<string, string>): PlainAuthenticator {
  return (username, password) => {
    const expected = users.get(username)
    if (expected === undefined) return false
    const a = createHash('sha256').update(password).digest()
    const b = createHash('sha256').update(expected, 'utf8').digest()
    return timingSafeEqual(a, b)
  }
}

export interface PlainServerOptions {
  readonly authenticate: PlainAuthenticator
  readonly nowMs: () => number
  readonly connectionsReauthMsMax?: number
}

/** Check one PLAIN message; throws SaslError with Kafka's client-visible messages. */
function checkPlain(message: PlainMessage, authenticate: PlainAuthenticator): string {
  if (message.username === '') throw visible('Authentication failed: username not specified')
  if (message.password.length === 0) throw visible('Authentication failed: password not specified')
  if (!authenticate(message.username, message.password)) {
    throw visible('Authentication failed: Invalid username or password')
  }
  if (message.authorizationId !== '' && message.authorizationId !== message.username) {
    throw visible(
      'Authentication failed: Client requested an authorization id that is different from username',
    )
  }
  return message.username
}

function visible(message: string): SaslError {
  return new SaslError(message, { clientVisible: true })
}

export class PlainSaslServer implements SaslServer {
  readonly mechanism = 'PLAIN' as const
  readonly #options: PlainServerOptions
  #state: 'RECEIVE_RESPONSE' | 'COMPLETE' | 'FAILED' = 'RECEIVE_RESPONSE'

  constructor(options: PlainServerOptions) {
    this.#options = options
  }

  get isComplete(): boolean {
    return this.#state === 'COMPLETE'
  }

  async evaluate(response: Buffer): Promise<SaslStep> {
    return this.evaluateSync(response)
  }

  /** PLAIN needs no I/O: the same as `evaluate`, synchronously. */
  evaluateSync(response: Buffer): SaslStep {
    if (this.#state !== 'RECEIVE_RESPONSE') return illegalStateFailure(this.mechanism, this.#state)
    try {
      const username = checkPlain(parsePlainMessage(response), this.#options.authenticate)
      this.#state = 'COMPLETE'
      return saslComplete(this.#options, username, null)
    } catch (error) {
      this.#state = 'FAILED'
      return failureFrom(error, this.mechanism)
    }
  }
}
