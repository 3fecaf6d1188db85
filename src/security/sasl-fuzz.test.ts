/**
 * Mutated valid messages, for every mechanism: a well-formed PLAIN response, SCRAM client-first and
 * client-final, and OAUTHBEARER initial response with bytes flipped, inserted, deleted, cut or
 * repeated. The parsers throw nothing but SaslError; a server answers every message with a step,
 * and a failure carries one of Kafka's error codes and a message that holds no secret of the
 * exchange (the password, the token, the proof), and is never an internal error.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ManualClock, SeededRandom } from '../io/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { parseJaasConfig } from './jaas.ts'
import {
  parseOAuthBearerInitialResponse,
  unsecuredValidator,
  unsecuredValidatorOptionsFromJaas,
} from './oauthbearer.ts'
import { parsePlainMessage, plainAuthenticatorFromUsers } from './plain.ts'
import { SaslError, type SaslStep } from './sasl.ts'
import { createSaslServer, type SaslServerConfig } from './sasl-server.ts'
import { parseScramClientFinal, parseScramClientFirst } from './scram.ts'
import { scramCredentialFromPassword } from './scram-credentials.ts'

const PASSWORD = 'fuzz-secret-pw'
const clock = new ManualClock()
const random = new SeededRandom(7)
const credential = scramCredentialFromPassword('SCRAM-SHA-256', PASSWORD, 4096, random)
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const TOKEN = `${b64({ alg: 'none' })}.${b64({ sub: 'alice', exp: clock.nowMs() / 1000 + 60 })}.`

const config: SaslServerConfig = {
  clock,
  random,
  plain: { authenticate: plainAuthenticatorFromUsers(new Map([['alice', PASSWORD]])) },
  scram: { mechanisms: ['SCRAM-SHA-256'], credential: (_m, user) => (user === 'alice' ? credential : null) },
  oauthbearer: {
    validator: unsecuredValidator(
      unsecuredValidatorOptionsFromJaas(
        parseJaasConfig('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;')[0]!,
      ),
      () => clock.nowMs(),
    ),
  },
}

const CLIENT_NONCE = 'rOprNGfwEbeRWgbNEkqO'
const VALID = {
  plain: Buffer.from(`\0alice\0${PASSWORD}`),
  scramFirst: Buffer.from(`n,,n=alice,r=${CLIENT_NONCE}`),
  oauth: Buffer.from(`n,,\x01auth=Bearer ${TOKEN}\x01traceId=1\x01\x01`),
}
/** A client-final of the right form for a server nonce (its proof is random bytes). */
const scramFinal = (nonce: string) =>
  Buffer.from(`c=biws,r=${nonce},p=${Buffer.alloc(32, 0x5a).toString('base64')}`)

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'set'; at: number; byte: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'cut'; at: number }
  | { kind: 'repeat'; times: number }

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({
    kind: fc.constant('set' as const),
    at: fc.nat(),
    byte: fc.constantFrom(0, 1, 0x2c, 0x3d, 0x7f, 0x80, 0xc3, 0xff),
  }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('repeat' as const), times: fc.integer({ min: 2, max: 3 }) }),
)
const mutations = fc.array(mutation, { minLength: 1, maxLength: 4 })

function mutate(message: Buffer, changes: readonly Mutation[]): Buffer {
  let bytes = Buffer.from(message)
  for (const m of changes) {
    const pick = 'at' in m ? m.at : 0
    const at = bytes.length === 0 ? 0 : m.kind === 'insert' ? pick % (bytes.length + 1) : pick % bytes.length
    if (m.kind === 'flip' && bytes.length > 0) bytes[at]! ^= 1 << m.bit
    else if (m.kind === 'set' && bytes.length > 0) bytes[at] = m.byte
    else if (m.kind === 'insert') bytes = Buffer.concat([bytes.subarray(0, at), m.bytes, bytes.subarray(at)])
    else if (m.kind === 'delete') bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + m.count)])
    else if (m.kind === 'cut') bytes = bytes.subarray(0, at)
    else if (m.kind === 'repeat') bytes = Buffer.concat(Array.from({ length: m.times }, () => bytes))
  }
  return bytes
}

function onlySaslError(parse: (b: Buffer) => unknown, bytes: Buffer): void {
  try {
    parse(bytes)
  } catch (error) {
    assert.ok(error instanceof SaslError, String(error))
  }
}

const KAFKA_CODES: readonly number[] = [ErrorCode.SaslAuthenticationFailed, ErrorCode.IllegalSaslState]

/** A step as Kafka answers: a failure has Kafka's code, no internal error, and no secret in its texts. */
function checkStep(step: SaslStep): void {
  assert.ok(['challenge', 'complete', 'failure'].includes(step.kind))
  if (step.kind !== 'failure') return
  assert.ok(KAFKA_CODES.includes(step.errorCode), `error code ${step.errorCode}`)
  assert.doesNotMatch(step.reason, /^internal error/)
  for (const text of [step.message, step.reason]) {
    assert.ok(!text.includes(PASSWORD) && !text.includes(TOKEN), text)
  }
}

function server(mechanism: string) {
  const s = createSaslServer(mechanism, config)
  assert.ok(!('kind' in s))
  return s
}

describe('SASL parsers and servers on mutated valid messages (fuzz)', () => {
  it('the parsers throw nothing but SaslError', () => {
    fc.assert(
      fc.property(mutations, (changes) => {
        onlySaslError(parsePlainMessage, mutate(VALID.plain, changes))
        onlySaslError(parseScramClientFirst, mutate(VALID.scramFirst, changes))
        onlySaslError(parseScramClientFinal, mutate(scramFinal(`${CLIENT_NONCE}xyz`), changes))
        onlySaslError(parseOAuthBearerInitialResponse, mutate(VALID.oauth, changes))
      }),
      { numRuns: 3000 },
    )
  })

  it("PLAIN and OAUTHBEARER servers answer every mutated message with a step, a failure with Kafka's code", async () => {
    await fc.assert(
      fc.asyncProperty(mutations, async (changes) => {
        checkStep(await server('PLAIN').evaluate(mutate(VALID.plain, changes)))
        const oauth = server('OAUTHBEARER')
        checkStep(await oauth.evaluate(mutate(VALID.oauth, changes)))
        // The client's answer to an error challenge, itself mutated.
        checkStep(await oauth.evaluate(mutate(Buffer.from([1]), changes)))
      }),
      { numRuns: 1000 },
    )
  })

  it("a SCRAM server answers a mutated client-first, then a mutated client-final, with Kafka's steps", async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), mutations, async (mutateFirst, changes) => {
        const s = server('SCRAM-SHA-256')
        const first = await s.evaluate(mutateFirst ? mutate(VALID.scramFirst, changes) : VALID.scramFirst)
        checkStep(first)
        const nonce =
          first.kind === 'challenge'
            ? (/r=([^,]+)/.exec(first.challenge.toString())?.[1] ?? '')
            : CLIENT_NONCE
        const second = await s.evaluate(mutateFirst ? scramFinal(nonce) : mutate(scramFinal(nonce), changes))
        checkStep(second)
        assert.notEqual(second.kind, 'complete', 'a random proof never authenticates')
      }),
      { numRuns: 300 },
    )
  })
})
