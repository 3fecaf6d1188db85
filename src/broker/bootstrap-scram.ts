/**
 * SCRAM credentials a new cluster starts with, as `kafka-storage format --add-scram` gives them:
 * `SCRAM-SHA-512=[name=admin,password=secret]`, optionally `iterations=8192`, and `salt=` with
 * `saltedpassword=` (base64) instead of a password. The controller writes them as
 * UserScramCredentialRecords with the cluster's first records, only when the metadata log is new.
 */
import type { PendingRecord } from '../controller/index.ts'
import { pendingRecord } from '../controller/index.ts'
import type { Random } from '../io/index.ts'
import { metadataRecordTypes as T } from '../protocol/index.ts'
import {
  checkIterations,
  credentialFromSaltedPassword,
  isScramMechanism,
  SCRAM_ALGORITHMS,
  type ScramCredential,
  type ScramMechanism,
  scramCredentialFromPassword,
} from '../security/index.ts'

/** One `--add-scram` argument, parsed. */
export interface BootstrapScram {
  readonly mechanism: ScramMechanism
  readonly name: string
  readonly iterations: number
  readonly secret: { readonly password: string } | { readonly salt: Buffer; readonly saltedPassword: Buffer }
}

/** A malformed `--add-scram` argument. */
export class BootstrapScramError extends Error {
  override name = 'BootstrapScramError'
}

/** Kafka's default for `--add-scram` without `iterations` (the mechanism's minimum). */
const ITERATIONS_DEFAULT = 4096

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value
}

/** `key=value` pairs of the bracketed part, split on commas outside double quotes. */
function fields(body: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of body.match(/(?:[^,"]|"[^"]*")+/g) ?? []) {
    const at = part.indexOf('=')
    if (at <= 0) throw new BootstrapScramError(`--add-scram: "${part}" is not key=value`)
    out.set(part.slice(0, at).trim().toLowerCase(), unquote(part.slice(at + 1).trim()))
  }
  return out
}

export function parseBootstrapScram(text: string): BootstrapScram {
  const match = /^\s*([A-Za-z0-9-]+)\s*=\s*\[(.*)\]\s*$/s.exec(text)
  if (match === null)
    throw new BootstrapScramError(`--add-scram ${text}: expected MECHANISM=[name=...,password=...]`)
  const mechanism = match[1]!.toUpperCase()
  if (!isScramMechanism(mechanism))
    throw new BootstrapScramError(`--add-scram: unknown SCRAM mechanism ${match[1]}`)
  const f = fields(match[2]!)
  const name = f.get('name')
  if (name === undefined || name === '') throw new BootstrapScramError('--add-scram: name= is required')
  const iterationsText = f.get('iterations')
  const iterations = iterationsText === undefined ? ITERATIONS_DEFAULT : Number(iterationsText)
  try {
    checkIterations(SCRAM_ALGORITHMS[mechanism], iterations)
  } catch (e) {
    throw new BootstrapScramError(`--add-scram: ${(e as Error).message}`)
  }
  const password = f.get('password')
  const salt = f.get('salt')
  const salted = f.get('saltedpassword')
  if (password !== undefined) return { mechanism, name, iterations, secret: { password } }
  if (salt !== undefined && salted !== undefined) {
    const secret = { salt: Buffer.from(salt, 'base64'), saltedPassword: Buffer.from(salted, 'base64') }
    return { mechanism, name, iterations, secret }
  }
  throw new BootstrapScramError('--add-scram: password= (or salt= and saltedpassword=) is required')
}

function credentialOf(scram: BootstrapScram, random: Random): ScramCredential {
  const { secret } = scram
  if ('password' in secret)
    return scramCredentialFromPassword(scram.mechanism, secret.password, scram.iterations, random)
  return credentialFromSaltedPassword(
    SCRAM_ALGORITHMS[scram.mechanism],
    secret.salt,
    secret.saltedPassword,
    scram.iterations,
  )
}

/** The UserScramCredentialRecords of the bootstrap credentials (fresh salts from `random`). */
export function bootstrapScramRecords(
  credentials: readonly BootstrapScram[],
  random: Random,
): PendingRecord[] {
  return credentials.map((scram) => {
    const c = credentialOf(scram, random)
    return pendingRecord(T.UserScramCredential, 0, {
      name: scram.name,
      mechanism: SCRAM_ALGORITHMS[scram.mechanism].type,
      salt: c.salt,
      storedKey: c.storedKey,
      serverKey: c.serverKey,
      iterations: c.iterations,
    })
  })
}
