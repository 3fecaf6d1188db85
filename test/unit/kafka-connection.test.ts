import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { ConnectionError, KafkaConnection, RequestTimeoutError } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { apis } from '../../src/protocol/index.ts'
import {
  Dispatcher,
  defineHandler,
  HandlerRegistry,
  Listener,
  makeApiVersionsHandler,
} from '../../src/server/index.ts'

let listener: Listener
let port: number
let release: (() => void) | null = null

before(async () => {
  const registry = new HandlerRegistry()
  registry.register(
    makeApiVersionsHandler(registry, () => ({ supported: [], finalized: [], finalizedEpoch: -1n })),
    // ListGroups that waits to be released: to test ordering, timeouts and in-flight limits.
    defineHandler(apis.ListGroups, {}, async (req) => {
      if (req.statesFilter.includes('hang')) await new Promise<void>((resolve) => (release = resolve))
      return { errorCode: 0, groups: [{ groupId: req.statesFilter[0] ?? '' }] as never }
    }),
  )
  listener = new Listener({
    listenerName: 'PLAINTEXT',
    host: '127.0.0.1',
    port: 0,
    dispatcher: new Dispatcher(registry),
    clock: systemClock,
    limits: {
      requestBytesMax: 1 << 20,
      inFlightRequestsMax: 16,
      inFlightBytesMax: 1 << 20,
      connectionsMaxIdleMs: 60_000,
      connectionsMax: 10,
    },
    log: () => {},
  })
  port = (await listener.start()).port
})

after(() => listener.stop(100))

const options = {
  clientId: 'test',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 5000,
  inFlightRequestsMax: 2,
  responseBytesMax: 1 << 20,
  connectTimeoutMs: 2000,
}

test('negotiates versions on connect and answers requests in order, beyond the in-flight limit', async () => {
  const c = await KafkaConnection.open({ host: '127.0.0.1', port }, options)
  assert.equal(c.versionFor(apis.ListGroups), apis.ListGroups.maxVersion)
  assert.equal(c.versionFor(apis.Fetch), undefined)
  const v = c.versionFor(apis.ListGroups)!
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) => c.request(apis.ListGroups, v, { statesFilter: [`g${i}`] })),
  )
  assert.deepEqual(
    answers.map((a) => a.groups[0]?.groupId),
    Array.from({ length: 10 }, (_, i) => `g${i}`),
  )
  c.close()
})

test('a request that gets no answer times out and fails the connection', async () => {
  const c = await KafkaConnection.open({ host: '127.0.0.1', port }, options)
  const v = c.versionFor(apis.ListGroups)!
  await assert.rejects(
    c.request(apis.ListGroups, v, { statesFilter: ['hang'] }, { timeoutMs: 100 }),
    RequestTimeoutError,
  )
  assert.equal(c.closed, true)
  await assert.rejects(c.request(apis.ListGroups, v, {}), ConnectionError)
  release?.()
})

test('connecting to a closed port is a ConnectionError', async () => {
  await assert.rejects(KafkaConnection.open({ host: '127.0.0.1', port: 1 }, options), ConnectionError)
})
