import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ManualClock, SeededRandom } from '../io/index.ts'
import { TopicName, ZERO_UUID } from '../model/index.ts'
import { type Api, apis, decodeResponse, ErrorCode, encodeRequest } from '../protocol/index.ts'
import {
  createSaslServer,
  formatPrincipal,
  type KafkaPrincipal,
  plainAuthenticatorFromUsers,
} from '../security/index.ts'
import type { ConnectionInfo, DispatchResult } from './dispatcher.ts'
import { SaslAuthenticator } from './sasl-authenticator.ts'

const CONN: ConnectionInfo = { connectionId: 1, clientAddress: 'inject', listenerName: 'SASL_PLAINTEXT' }

function setup(options: { reauthMs?: number } = {}) {
  const clock = new ManualClock()
  const seen: Array<KafkaPrincipal | undefined> = []
  const inner = {
    dispatch: async (_frame: Buffer, conn: ConnectionInfo): Promise<DispatchResult> => {
      seen.push(conn.principal)
      return { kind: 'none' }
    },
  }
  const config = {
    clock,
    random: new SeededRandom(1),
    plain: { authenticate: plainAuthenticatorFromUsers(new Map([['alice', 'alice-pw']])) },
    connectionsReauthMsMax: { PLAIN: options.reauthMs ?? 0 },
  }
  const gate = new SaslAuthenticator(inner, {
    mechanisms: ['PLAIN'],
    newServer: (m) => createSaslServer(m, config),
    clock,
    failedAuthenticationDelayMs: 100,
  })
  return { clock, seen, gate }
}

let correlationId = 0
function frame<Req>(api: Api<unknown, Req, unknown, never>, version: number, body: Req): Buffer {
  return Buffer.concat(
    encodeRequest(api, { requestApiVersion: version, correlationId: ++correlationId, clientId: 't' }, body),
  ).subarray(4)
}

function bodyOf<Res>(api: Api<unknown, never, Res, never>, version: number, pieces: Buffer[]): Res {
  return decodeResponse(api, version, Buffer.concat(pieces).subarray(4)).body
}

const plainToken = (user: string, password: string) => Buffer.from(`\0${user}\0${password}`)
const produce = () => frame(apis.Produce, 9, { acks: 1, timeoutMs: 1000, topicData: [] })

async function authenticate(gate: SaslAuthenticator, password = 'alice-pw') {
  const hs = await gate.dispatch(frame(apis.SaslHandshake, 1, { mechanism: 'PLAIN' }), CONN)
  assert.equal(hs.kind, 'response')
  return gate.dispatch(frame(apis.SaslAuthenticate, 2, { authBytes: plainToken('alice', password) }), CONN)
}

describe('SaslAuthenticator', () => {
  test("before authentication: ApiVersions passes, any other request closes with Kafka's message", async () => {
    const { gate, seen } = setup()
    assert.equal((await gate.dispatch(frame(apis.ApiVersions, 3, {}), CONN)).kind, 'none')
    assert.deepEqual(seen, [undefined])
    const r = await gate.dispatch(produce(), CONN)
    assert.deepEqual(r, {
      kind: 'close',
      reason: 'Unexpected Kafka request of type Produce during SASL handshake.',
    })
  })

  test('SaslHandshake v1 then SaslAuthenticate: the principal reaches the dispatcher', async () => {
    const { gate, seen } = setup()
    const hs = await gate.dispatch(frame(apis.SaslHandshake, 1, { mechanism: 'PLAIN' }), CONN)
    assert.ok(hs.kind === 'response')
    assert.deepEqual(bodyOf(apis.SaslHandshake, 1, hs.frame), {
      errorCode: ErrorCode.None,
      mechanisms: ['PLAIN'],
    })
    const auth = await gate.dispatch(
      frame(apis.SaslAuthenticate, 2, { authBytes: plainToken('alice', 'alice-pw') }),
      CONN,
    )
    assert.ok(auth.kind === 'response')
    const body = bodyOf(apis.SaslAuthenticate, 2, auth.frame)
    assert.equal(body.errorCode, ErrorCode.None)
    assert.equal(body.sessionLifetimeMs, 0n)
    await gate.dispatch(produce(), CONN)
    assert.equal(formatPrincipal(seen[0]!), 'User:alice')
  })

  test('a wrong password: SASL_AUTHENTICATION_FAILED after connection.failed.authentication.delay.ms, then close', async () => {
    const { gate, clock } = setup()
    let result: DispatchResult | null = null
    void authenticate(gate, 'wrong').then((r) => {
      result = r
    })
    for (let i = 0; i < 5; i++) await Promise.resolve()
    clock.advance(99)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(result, null)
    clock.advance(1)
    await new Promise((resolve) => setImmediate(resolve))
    const r = result as DispatchResult | null
    assert.ok(r !== null && r.kind === 'close' && r.frame !== undefined)
    const body = bodyOf(apis.SaslAuthenticate, 2, r.frame)
    assert.equal(body.errorCode, ErrorCode.SaslAuthenticationFailed)
    assert.equal(body.errorMessage, 'Authentication failed: Invalid username or password')
    assert.ok(!r.reason.includes('wrong'))
  })

  test('an unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled ones, then close', async () => {
    const { gate, clock } = setup()
    const pending = gate.dispatch(frame(apis.SaslHandshake, 1, { mechanism: 'GSSAPI' }), CONN)
    await Promise.resolve()
    clock.advance(100)
    const r = await pending
    assert.ok(r.kind === 'close' && r.frame !== undefined)
    assert.deepEqual(bodyOf(apis.SaslHandshake, 1, r.frame), {
      errorCode: ErrorCode.UnsupportedSaslMechanism,
      mechanisms: ['PLAIN'],
    })
  })

  test('SaslHandshake v0: the raw token follows and is answered raw', async () => {
    const { gate, seen } = setup()
    const hs = await gate.dispatch(frame(apis.SaslHandshake, 0, { mechanism: 'PLAIN' }), CONN)
    assert.equal(hs.kind, 'response')
    const r = await gate.dispatch(plainToken('alice', 'alice-pw'), CONN)
    assert.ok(r.kind === 'response')
    assert.deepEqual(Buffer.concat(r.frame), Buffer.alloc(4))
    await gate.dispatch(produce(), CONN)
    assert.equal(formatPrincipal(seen[0]!), 'User:alice')
  })

  test("a request other than SaslAuthenticate after SaslHandshake v1 gets its api's ILLEGAL_SASL_STATE answer, then the close", async () => {
    for (const [request, read] of [
      [
        frame(apis.DescribeCluster, 1, {}),
        (pieces: Buffer[]) => bodyOf(apis.DescribeCluster, 1, pieces).errorCode,
      ],
      [frame(apis.ListGroups, 4, {}), (pieces: Buffer[]) => bodyOf(apis.ListGroups, 4, pieces).errorCode],
      [
        frame(apis.SaslHandshake, 1, { mechanism: 'PLAIN' }),
        (pieces: Buffer[]) => bodyOf(apis.SaslHandshake, 1, pieces).errorCode,
      ],
      // Produce and Metadata: the error on each partition or topic the request named.
      [
        frame(apis.Produce, 9, {
          acks: 1,
          timeoutMs: 1000,
          topicData: [{ name: TopicName('t'), partitionData: [{ index: 3, records: null }] }],
        }),
        (pieces: Buffer[]) => {
          const [topic] = bodyOf(apis.Produce, 9, pieces).responses
          assert.equal(topic?.name, 't')
          assert.equal(topic?.partitionResponses[0]?.index, 3)
          return topic?.partitionResponses[0]?.errorCode
        },
      ],
      [
        frame(apis.Metadata, 12, {
          topics: [{ name: TopicName('m'), topicId: ZERO_UUID }],
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false,
        }),
        (pieces: Buffer[]) => {
          const [topic] = bodyOf(apis.Metadata, 12, pieces).topics
          assert.equal(topic?.name, 'm')
          return topic?.errorCode
        },
      ],
    ] as const) {
      const { gate, clock } = setup()
      await gate.dispatch(frame(apis.SaslHandshake, 1, { mechanism: 'PLAIN' }), CONN)
      const pending = gate.dispatch(request, CONN)
      await Promise.resolve()
      clock.advance(100)
      const r = await pending
      assert.ok(r.kind === 'close' && r.frame !== undefined)
      assert.match(
        r.reason,
        /^Failed authentication: Unexpected Kafka request of type \w+ during SASL authentication\.$/,
      )
      assert.equal(read(r.frame), ErrorCode.IllegalSaslState)
    }
  })

  test('KIP-368: the session lifetime; re-authenticating in time keeps the connection, expiry closes it', async () => {
    const { gate, clock, seen } = setup({ reauthMs: 1000 })
    const auth = await authenticate(gate)
    assert.ok(auth.kind === 'response')
    assert.equal(bodyOf(apis.SaslAuthenticate, 2, auth.frame).sessionLifetimeMs, 1000n)
    clock.advance(900)
    const again = await authenticate(gate)
    assert.ok(again.kind === 'response')
    clock.advance(900)
    await gate.dispatch(produce(), CONN)
    assert.equal(seen.length, 1)
    clock.advance(200)
    const expired = await gate.dispatch(produce(), CONN)
    assert.equal(expired.kind, 'close')
  })
})
