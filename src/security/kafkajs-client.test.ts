/**
 * A real client's side of each mechanism against these servers: kafkajs's own SASL authenticators
 * (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER), with their SaslAuthenticate round trip replaced by a
 * call to `evaluate`. No broker and no socket: the bytes are exactly those kafkajs sends.
 */
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import { ManualClock, SeededRandom } from '../io/index.ts'
import { unsecuredValidator } from './oauthbearer.ts'
import { plainAuthenticatorFromUsers } from './plain.ts'
import type { SaslServer, SaslStep } from './sasl.ts'
import { createSaslServer, type SaslServerConfig } from './sasl-server.ts'
import { type ScramMechanism, scramCredentialFromPassword } from './scram-credentials.ts'

interface KafkajsRequest {
  encode(): Promise<Buffer>
}
interface KafkajsResponse {
  decode(raw: Buffer): Promise<Buffer>
  parse(data: Buffer): Promise<unknown>
}
type SaslAuthenticate = (exchange: {
  request: KafkajsRequest
  response?: KafkajsResponse
}) => Promise<unknown>
type Provider = (
  sasl: Record<string, unknown>,
) => (context: {
  host: string
  port: number
  logger: Record<string, () => void>
  saslAuthenticate: SaslAuthenticate
}) => { authenticate(): Promise<void> }

const require = createRequire(import.meta.url)
const providers: Record<string, Provider> = {
  PLAIN: require('kafkajs/src/broker/saslAuthenticator/plain.js'),
  'SCRAM-SHA-256': require('kafkajs/src/broker/saslAuthenticator/scram256.js'),
  'SCRAM-SHA-512': require('kafkajs/src/broker/saslAuthenticator/scram512.js'),
  OAUTHBEARER: require('kafkajs/src/broker/saslAuthenticator/oauthBearer.js'),
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }
const NOW_MS = 1_700_000_000_000

/** Kafka's `bytes`: an int32 length, then the bytes. kafkajs encodes and decodes auth bytes so. */
function framed(bytes: Buffer): Buffer {
  const out = Buffer.alloc(4 + bytes.length)
  out.writeInt32BE(bytes.length, 0)
  bytes.copy(out, 4)
  return out
}

/** Run kafkajs's authenticator for `mechanism` against `server`; the steps the server took. */
async function authenticate(server: SaslServer, sasl: Record<string, unknown>): Promise<SaslStep[]> {
  const steps: SaslStep[] = []
  const saslAuthenticate: SaslAuthenticate = async ({ request, response }) => {
    const step = await server.evaluate((await request.encode()).subarray(4))
    steps.push(step)
    if (step.kind === 'failure') throw new Error(step.message)
    if (response === undefined) return undefined
    return response.parse(await response.decode(framed(step.challenge)))
  }
  const provider = providers[server.mechanism]!
  await provider(sasl)({ host: 'localhost', port: 9092, logger: quiet, saslAuthenticate }).authenticate()
  return steps
}

const scramUsers = new Map(
  (['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const).map((m) => [
    m,
    scramCredentialFromPassword(m, 'scram-secret', 4096, new SeededRandom(m.length)),
  ]),
)

const config: SaslServerConfig = {
  clock: new ManualClock({ nowMs: NOW_MS }),
  random: new SeededRandom(42),
  plain: { authenticate: plainAuthenticatorFromUsers(new Map([['alice', 'alice-secret']])) },
  scram: {
    mechanisms: ['SCRAM-SHA-256', 'SCRAM-SHA-512'],
    credential: (mechanism: ScramMechanism, user) => (user === 'bob,=' ? scramUsers.get(mechanism)! : null),
  },
  oauthbearer: {
    validator: unsecuredValidator(
      { principalClaimName: 'sub', scopeClaimName: 'scope', requiredScope: [], clockSkewMs: 0 },
      () => NOW_MS,
    ),
  },
}

function serverFor(mechanism: string): SaslServer {
  const server = createSaslServer(mechanism, config)
  assert.ok('evaluate' in server)
  return server
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

describe('kafkajs 2.2.4 clients against the servers', () => {
  it('PLAIN', async () => {
    const steps = await authenticate(serverFor('PLAIN'), { username: 'alice', password: 'alice-secret' })
    assert.equal(steps.at(-1)?.kind, 'complete')
    await assert.rejects(
      authenticate(serverFor('PLAIN'), { username: 'alice', password: 'nope' }),
      /Invalid username or password/,
    )
  })

  for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const) {
    it(`${mechanism}, with a name to escape; kafkajs checks the server signature`, async () => {
      const steps = await authenticate(serverFor(mechanism), { username: 'bob,=', password: 'scram-secret' })
      const last = steps.at(-1)
      assert.equal(last?.kind, 'complete')
      assert.equal(last?.kind === 'complete' && last.principal, 'bob,=')
      await assert.rejects(
        authenticate(serverFor(mechanism), { username: 'bob,=', password: 'wrong' }),
        /invalid credentials with SASL mechanism/,
      )
    })
  }

  it('OAUTHBEARER, with extensions', async () => {
    const token = `${b64({ alg: 'none' })}.${b64({ sub: 'carol', exp: NOW_MS / 1000 + 60 })}.`
    const steps = await authenticate(serverFor('OAUTHBEARER'), {
      oauthBearerProvider: async () => ({ value: token, extensions: { traceId: 'abc' } }),
    })
    const last = steps.at(-1)
    assert.equal(last?.kind === 'complete' && last.principal, 'carol')
    assert.equal(last?.kind === 'complete' && last.extensions.get('traceId'), 'abc')
    assert.equal(last?.kind === 'complete' && last.sessionLifetimeMs, 60_000)
  })
})
