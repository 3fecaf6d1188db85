/**
 * SCRAM credentials as Kafka's ScramFormatter makes and stores them (RFC 5802 section 3): the
 * salted password Hi(password, salt, i) (PBKDF2 with HMAC, one block), from which the stored key
 * H(HMAC(salted, "Client Key")) and the server key HMAC(salted, "Server Key"). The password is
 * its UTF-8 bytes, without SASLprep, as Kafka's `normalize`.
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto'
import type { Random } from '../io/index.ts'

export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512'

export interface ScramAlgorithm {
  readonly mechanism: ScramMechanism
  /** node:crypto's digest name. */
  readonly hash: 'sha256' | 'sha512'
  readonly hashBytes: number
  /** Kafka's ScramMechanism bounds: the server refuses a credential below the minimum. */
  readonly iterationsMin: number
  readonly iterationsMax: number
  /** The type byte of UserScramCredentialRecord and AlterUserScramCredentials. */
  readonly type: number
}

export const SCRAM_ALGORITHMS: Readonly<Record<ScramMechanism, ScramAlgorithm>> = {
  'SCRAM-SHA-256': {
    mechanism: 'SCRAM-SHA-256',
    hash: 'sha256',
    hashBytes: 32,
    iterationsMin: 4096,
    iterationsMax: 16384,
    type: 1,
  },
  'SCRAM-SHA-512': {
    mechanism: 'SCRAM-SHA-512',
    hash: 'sha512',
    hashBytes: 64,
    iterationsMin: 4096,
    iterationsMax: 16384,
    type: 2,
  },
}

export function isScramMechanism(name: string): name is ScramMechanism {
  return name === 'SCRAM-SHA-256' || name === 'SCRAM-SHA-512'
}

/** What the server keeps per user and mechanism: never the password. */
export interface ScramCredential {
  readonly salt: Buffer
  readonly storedKey: Buffer
  readonly serverKey: Buffer
  readonly iterations: number
}

/** A malformed credential or an iteration count out of bounds. Never carries key material. */
export class ScramCredentialError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ScramCredentialError'
  }
}

export function hmac(algorithm: ScramAlgorithm, key: Buffer, data: Buffer | string): Buffer {
  return createHmac(algorithm.hash, key).update(data).digest()
}

export function hash(algorithm: ScramAlgorithm, data: Buffer): Buffer {
  return createHash(algorithm.hash).update(data).digest()
}

/** Hi(str, salt, i) of RFC 5802: PBKDF2's first block, which is all of it at the hash's length. */
export function saltedPassword(
  algorithm: ScramAlgorithm,
  password: Buffer | string,
  salt: Buffer,
  iterations: number,
): Buffer {
  if (!Number.isSafeInteger(iterations) || iterations < 1) {
    throw new ScramCredentialError(`Invalid iterations ${iterations}`)
  }
  return pbkdf2Sync(password, salt, iterations, algorithm.hashBytes, algorithm.hash)
}

/** The stored and server keys of a salted password (ScramFormatter.generateCredential). */
export function credentialFromSaltedPassword(
  algorithm: ScramAlgorithm,
  salt: Buffer,
  salted: Buffer,
  iterations: number,
): ScramCredential {
  const clientKey = hmac(algorithm, salted, 'Client Key')
  return {
    salt,
    storedKey: hash(algorithm, clientKey),
    serverKey: hmac(algorithm, salted, 'Server Key'),
    iterations,
  }
}

/** Check `iterations` against the mechanism's bounds, with the message Kafka's admin API gives. */
export function checkIterations(algorithm: ScramAlgorithm, iterations: number): void {
  if (!Number.isSafeInteger(iterations) || iterations < algorithm.iterationsMin) {
    throw new ScramCredentialError(
      `Too few iterations: ${iterations} is less than the minimum ${algorithm.iterationsMin} for ${algorithm.mechanism}`,
    )
  }
  if (iterations > algorithm.iterationsMax) {
    throw new ScramCredentialError(
      `Too many iterations: ${iterations} is more than the maximum ${algorithm.iterationsMax} for ${algorithm.mechanism}`,
    )
  }
}

/**
 * A credential for `password` with a fresh salt from `random`, as `kafka-configs --add-config
 * 'SCRAM-SHA-256=[iterations=8192,password=...]'` makes one. `iterations` must be within the
 * mechanism's bounds.
 */
export function scramCredentialFromPassword(
  mechanism: ScramMechanism,
  password: Buffer | string,
  iterations: number,
  random: Random,
): ScramCredential {
  const algorithm = SCRAM_ALGORITHMS[mechanism]
  checkIterations(algorithm, iterations)
  const salt = Buffer.from(randomBase36(random), 'ascii')
  return credentialFromSaltedPassword(
    algorithm,
    salt,
    saltedPassword(algorithm, password, salt, iterations),
    iterations,
  )
}

/**
 * 130 random bits in base 36, the shape of Kafka's `secureRandomString` (`new BigInteger(130,
 * random).toString(36)`): its salts and server nonces.
 */
export function randomBase36(random: Random): string {
  let value = BigInt(random.nextU32() & 0x3)
  for (let i = 0; i < 4; i++) value = (value << 32n) | BigInt(random.nextU32())
  return value.toString(36)
}

/** Kafka's stored form: `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`. */
export function scramCredentialToString(credential: ScramCredential): string {
  return [
    `salt=${credential.salt.toString('base64')}`,
    `stored_key=${credential.storedKey.toString('base64')}`,
    `server_key=${credential.serverKey.toString('base64')}`,
    `iterations=${credential.iterations}`,
  ].join(',')
}

const CREDENTIAL_KEYS = ['salt', 'stored_key', 'server_key', 'iterations'] as const
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Parse Kafka's stored form (ScramCredentialUtils.credentialFromString). */
export function scramCredentialFromString(text: string): ScramCredential {
  const invalid = () => new ScramCredentialError('Credentials not valid')
  const props = new Map<string, string>()
  for (const token of text.split(',')) {
    const index = token.indexOf('=')
    if (index <= 0) throw invalid()
    props.set(token.slice(0, index), token.slice(index + 1))
  }
  if (props.size !== 4 || !CREDENTIAL_KEYS.every((k) => props.has(k))) throw invalid()
  const bytes = (key: string) => {
    const value = props.get(key)!
    if (!BASE64.test(value)) throw invalid()
    return Buffer.from(value, 'base64')
  }
  const iterationsText = props.get('iterations')!
  if (!/^[+-]?[0-9]{1,10}$/.test(iterationsText)) throw invalid()
  const iterations = Number(iterationsText)
  if (iterations > 2 ** 31 - 1 || iterations < -(2 ** 31)) throw invalid()
  return { salt: bytes('salt'), storedKey: bytes('stored_key'), serverKey: bytes('server_key'), iterations }
}
