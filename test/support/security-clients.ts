/**
 * What the secured-listener compat tests share: the confluent-kafka venv's Python, the JAAS lines
 * of Kafka's login modules, and JWTs signed with node:crypto alone (independent of the broker's
 * `jose`) for OAUTHBEARER against a JWKS.
 */
import { execFileSync } from 'node:child_process'
import { type KeyObject, sign } from 'node:crypto'
import { join } from 'node:path'
import { REPO } from './weir-process.ts'

/** The Python of the compat venv with confluent-kafka (tools/compat-install.sh installs it once). */
export function pythonOf(): string {
  return execFileSync(join(REPO, 'tools/compat-install.sh'), ['confluent-kafka'], { encoding: 'utf8' }).trim()
}

export const PLAIN_JAAS = (users: Record<string, string>) =>
  `org.apache.kafka.common.security.plain.PlainLoginModule required ${Object.entries(users)
    .map(([u, p]) => `user_${u}="${p}"`)
    .join(' ')};`

export const SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'

/** A public key as a JWKS entry. */
export function jwkOf(key: KeyObject, kid: string): Record<string, unknown> {
  return { ...key.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }
}

/** An RS256 JWS of `claims`, signed by `key` and naming `kid`. */
export function signedJwt(claims: Record<string, unknown>, key: KeyObject, kid: string): string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const input = `${b64({ alg: 'RS256', typ: 'JWT', kid })}.${b64(claims)}`
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`
}
