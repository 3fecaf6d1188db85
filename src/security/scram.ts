/**
 * SASL/SCRAM-SHA-256 and SCRAM-SHA-512's server side (RFC 5802, RFC 7677), as Kafka's
 * ScramSaslServer: client-first (gs2 header, `n=`, `r=`, extensions such as `tokenauth`),
 * server-first (the client nonce with the server's appended, salt, iterations), client-final
 * (channel binding, the combined nonce, the proof) and server-final (`v=`). Unlike Kafka, the auth
 * message is built from the messages' own bytes, as the RFC says, not re-serialized from parsed
 * fields (the same bytes for every client Kafka's own works with).
 */
import { timingSafeEqual } from 'node:crypto'
import type { Random } from '../io/index.ts'
import {
  failureFrom,
  illegalStateFailure,
  SaslError,
  type SaslServer,
  type SaslStep,
  saslComplete,
} from './sasl.ts'
import {
  hash,
  hmac,
  randomBase36,
  SCRAM_ALGORITHMS,
  type ScramAlgorithm,
  type ScramCredential,
  type ScramMechanism,
} from './scram-credentials.ts'

export interface ScramClientFirst {
  /** `n` or `y` (the client supports channel binding but thinks the server does not). */
  readonly gs2Flag: 'n' | 'y'
  readonly authorizationId: string
  /** The username, `=2C` and `=3D` decoded. */
  readonly username: string
  readonly nonce: string
  readonly extensions: ReadonlyMap<string, string>
  /** `gs2-header`: what `c=` must carry, base64 encoded. */
  readonly gs2Header: string
  /** `client-first-message-bare`, the first part of the auth message. */
  readonly bare: string
}

export interface ScramClientFinal {
  readonly channelBinding: Buffer
  readonly nonce: string
  readonly proof: Buffer
  /** `client-final-message-without-proof`, the last part of the auth message. */
  readonly withoutProof: string
}

const SASLNAME = /^(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+$/
const PRINTABLE = /^[\x21-\x2b\x2d-\x7e]+$/
const EXTENSION = /^([A-Za-z]+)=([\x01-\x2b\x2d-\x7f]+)$/
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Messages are ASCII without NUL (every SCRAM attribute value is); anything else is malformed. */
function asciiText(response: Buffer, what: string): string {
  for (const byte of response) {
    if (byte === 0 || byte >= 0x80) throw new SaslError(`Invalid SCRAM ${what} message format`)
  }
  return response.toString('latin1')
}

/** Kafka's ScramFormatter.username: `=2C` is `,`, `=3D` is `=`, any other `=` is invalid. */
export function scramUsername(saslName: string): string {
  const withCommas = saslName.replaceAll('=2C', ',')
  if (withCommas.replaceAll('=3D', '').includes('=')) {
    throw new SaslError('Invalid username encoding', { serverError: 'invalid-username-encoding' })
  }
  return withCommas.replaceAll('=3D', '=')
}

/** The inverse: a username as a saslname. */
export function scramSaslName(username: string): string {
  return username.replaceAll('=', '=3D').replaceAll(',', '=2C')
}

/** `(,key=value)*` after the mandatory attributes; the last of a repeated key wins (Utils.parseMap). */
function parseExtensions(parts: readonly string[], what: string): Map<string, string> {
  const extensions = new Map<string, string>()
  for (const part of parts) {
    const match = EXTENSION.exec(part)
    if (match === null) throw new SaslError(`Invalid SCRAM ${what} message format`)
    extensions.set(match[1]!, match[2]!)
  }
  return extensions
}

function attribute(part: string | undefined, name: string, pattern: RegExp, what: string): string {
  if (part === undefined || !part.startsWith(`${name}=`))
    throw new SaslError(`Invalid SCRAM ${what} message format`)
  const value = part.slice(name.length + 1)
  if (!pattern.test(value)) throw new SaslError(`Invalid SCRAM ${what} message format`)
  return value
}

function parseGs2Header(
  flag: string | undefined,
  authzid: string | undefined,
): { flag: 'n' | 'y'; authzid: string } {
  if (flag === 'p' || flag?.startsWith('p=')) {
    throw new SaslError('Channel binding is not supported', { serverError: 'channel-binding-not-supported' })
  }
  if (flag !== 'n' && flag !== 'y') throw new SaslError('Invalid SCRAM client first message format')
  if (authzid === undefined) throw new SaslError('Invalid SCRAM client first message format')
  if (authzid === '') return { flag, authzid: '' }
  return { flag, authzid: scramUsername(attribute(authzid, 'a', SASLNAME, 'client first')) }
}

/** Parse a client-first message. Throws SaslError only. */
export function parseScramClientFirst(response: Buffer): ScramClientFirst {
  const text = asciiText(response, 'client first')
  const parts = text.split(',')
  const gs2 = parseGs2Header(parts[0], parts[1])
  if (parts[2]?.startsWith('m=')) {
    throw new SaslError('Mandatory extensions are not supported', { serverError: 'extensions-not-supported' })
  }
  const saslName = attribute(parts[2], 'n', SASLNAME, 'client first')
  const nonce = attribute(parts[3], 'r', PRINTABLE, 'client first')
  const extensions = parseExtensions(parts.slice(4), 'client first')
  const gs2Header = `${parts[0]},${parts[1]},`
  return {
    gs2Flag: gs2.flag,
    authorizationId: gs2.authzid,
    username: scramUsername(saslName),
    nonce,
    extensions,
    gs2Header,
    bare: text.slice(gs2Header.length),
  }
}

/** Parse a client-final message: `c=...,r=...[,extensions],p=...`. Throws SaslError only. */
export function parseScramClientFinal(response: Buffer): ScramClientFinal {
  const text = asciiText(response, 'client final')
  const parts = text.split(',')
  const channel = attribute(parts[0], 'c', BASE64, 'client final')
  const nonce = attribute(parts[1], 'r', PRINTABLE, 'client final')
  const proof = attribute(parts.at(-1), 'p', BASE64, 'client final')
  if (parts.length < 3) throw new SaslError('Invalid SCRAM client final message format')
  parseExtensions(parts.slice(2, -1), 'client final')
  const withoutProof = text.slice(0, text.length - parts.at(-1)!.length - 1)
  return {
    channelBinding: Buffer.from(channel, 'base64'),
    nonce,
    proof: Buffer.from(proof, 'base64'),
    withoutProof,
  }
}

/** A delegation token's SCRAM credential (`tokenauth=true`): its owner is the principal. */
export interface ScramTokenCredential {
  readonly credential: ScramCredential
  readonly owner: string
  readonly expiryTimestampMs: number | null
}

export interface ScramServerOptions {
  readonly mechanism: ScramMechanism
  /** The user's credential for this mechanism, or null if there is none. */
  readonly credential: (username: string) => ScramCredential | null
  /** A delegation token's credential by token id; without it, token authentication fails. */
  readonly tokenCredential?: (tokenId: string) => ScramTokenCredential | null
  /** Draws the server nonce. */
  readonly random: Random
  /** The server nonce, for test vectors; default 130 random bits in base 36, as Kafka's. */
  readonly serverNonce?: () => string
  readonly nowMs: () => number
  readonly connectionsReauthMsMax?: number
}

/** What the first step leaves for the second. */
interface ScramPending {
  readonly clientFirst: ScramClientFirst
  readonly serverFirst: string
  readonly combinedNonce: string
  readonly credential: ScramCredential
  readonly principal: string
  readonly expiryMs: number | null
}

const SUPPORTED_EXTENSIONS: ReadonlySet<string> = new Set(['tokenauth'])

export class ScramSaslServer implements SaslServer {
  readonly mechanism: ScramMechanism
  readonly #algorithm: ScramAlgorithm
  readonly #options: ScramServerOptions
  #state: 'RECEIVE_CLIENT_FIRST_MESSAGE' | 'RECEIVE_CLIENT_FINAL_MESSAGE' | 'COMPLETE' | 'FAILED' =
    'RECEIVE_CLIENT_FIRST_MESSAGE'
  #pending: ScramPending | null = null

  constructor(options: ScramServerOptions) {
    this.mechanism = options.mechanism
    this.#algorithm = SCRAM_ALGORITHMS[options.mechanism]
    this.#options = options
  }

  get isComplete(): boolean {
    return this.#state === 'COMPLETE'
  }

  async evaluate(response: Buffer): Promise<SaslStep> {
    return this.evaluateSync(response)
  }

  /** SCRAM needs no I/O: the same as `evaluate`, synchronously. */
  evaluateSync(response: Buffer): SaslStep {
    try {
      if (this.#state === 'RECEIVE_CLIENT_FIRST_MESSAGE') return this.#first(response)
      if (this.#state === 'RECEIVE_CLIENT_FINAL_MESSAGE') return this.#final(response)
      return illegalStateFailure(this.mechanism, this.#state)
    } catch (error) {
      this.#state = 'FAILED'
      this.#pending = null
      return failureFrom(error, this.mechanism)
    }
  }

  #first(response: Buffer): SaslStep {
    const clientFirst = parseScramClientFirst(response)
    const found = this.#lookUp(clientFirst)
    if (clientFirst.authorizationId !== '' && clientFirst.authorizationId !== clientFirst.username) {
      throw new SaslError(
        'Authentication failed: Client requested an authorization id that is different from username',
        { clientVisible: true },
      )
    }
    if (found.credential.iterations < this.#algorithm.iterationsMin) {
      throw new SaslError(
        `Iterations ${found.credential.iterations} is less than the minimum ${this.#algorithm.iterationsMin} for ${this.mechanism}`,
      )
    }
    const serverNonce = this.#options.serverNonce?.() ?? randomBase36(this.#options.random)
    const combinedNonce = clientFirst.nonce + serverNonce
    const serverFirst = `r=${combinedNonce},s=${found.credential.salt.toString('base64')},i=${found.credential.iterations}`
    this.#pending = { clientFirst, serverFirst, combinedNonce, ...found }
    this.#state = 'RECEIVE_CLIENT_FINAL_MESSAGE'
    return { kind: 'challenge', challenge: Buffer.from(serverFirst, 'ascii') }
  }

  #lookUp(
    clientFirst: ScramClientFirst,
  ): Omit<ScramPending, 'clientFirst' | 'serverFirst' | 'combinedNonce'> {
    const tokenAuth = clientFirst.extensions.get('tokenauth')?.toLowerCase() === 'true'
    if (tokenAuth) {
      const token = this.#options.tokenCredential?.(clientFirst.username) ?? null
      if (token === null) throw new SaslError('Token Authentication failed: Invalid tokenId')
      return { credential: token.credential, principal: token.owner, expiryMs: token.expiryTimestampMs }
    }
    const credential = this.#options.credential(clientFirst.username)
    if (credential === null) {
      throw new SaslError('Authentication failed: Invalid user credentials', { serverError: 'other-error' })
    }
    return { credential, principal: clientFirst.username, expiryMs: null }
  }

  #final(response: Buffer): SaslStep {
    const pending = this.#pending!
    const clientFinal = parseScramClientFinal(response)
    if (!clientFinal.channelBinding.equals(Buffer.from(pending.clientFirst.gs2Header, 'ascii'))) {
      throw new SaslError('Invalid channel binding in the final client message', {
        serverError: 'channel-bindings-dont-match',
      })
    }
    // Kafka 4: the final nonce is exactly the combined one (it starts with the client's by construction).
    if (clientFinal.nonce !== pending.combinedNonce) {
      throw new SaslError('Invalid client nonce in the final client message.', { serverError: 'other-error' })
    }
    const authMessage = `${pending.clientFirst.bare},${pending.serverFirst},${clientFinal.withoutProof}`
    this.#verifyProof(pending.credential, authMessage, clientFinal.proof)
    const signature = hmac(this.#algorithm, pending.credential.serverKey, authMessage)
    this.#pending = null
    this.#state = 'COMPLETE'
    return this.#complete(pending, Buffer.from(`v=${signature.toString('base64')}`, 'ascii'))
  }

  /** ClientKey = proof XOR HMAC(StoredKey, AuthMessage); H(ClientKey) must be StoredKey. */
  #verifyProof(credential: ScramCredential, authMessage: string, proof: Buffer): void {
    const invalid = () => new SaslError('Invalid client credentials', { serverError: 'invalid-proof' })
    const signature = hmac(this.#algorithm, credential.storedKey, authMessage)
    if (proof.length !== signature.length) throw invalid()
    const clientKey = Buffer.alloc(signature.length)
    for (let i = 0; i < signature.length; i++) clientKey[i] = signature[i]! ^ proof[i]!
    const computed = hash(this.#algorithm, clientKey)
    if (computed.length !== credential.storedKey.length || !timingSafeEqual(computed, credential.storedKey)) {
      throw invalid()
    }
  }

  #complete(pending: ScramPending, challenge: Buffer): SaslStep {
    const extensions = new Map<string, string>()
    for (const [key, value] of pending.clientFirst.extensions) {
      if (SUPPORTED_EXTENSIONS.has(key)) extensions.set(key, value)
    }
    return saslComplete(this.#options, pending.principal, pending.expiryMs, challenge, extensions)
  }
}
