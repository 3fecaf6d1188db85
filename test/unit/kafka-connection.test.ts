import assert from 'node:assert/strict'
import { type AddressInfo, createServer } from 'node:net'
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
import { ReadBufferPool } from '../../src/storage/index.ts'

let listener: Listener

/** A loopback listener on a free port serving `registry`. */
const listenerOptions = (registry: HandlerRegistry) => ({
  listenerName: 'PLAINTEXT',
  host: '127.0.0.1',
  port: 0,
  dispatcher: new Dispatcher(registry),
  clock: systemClock,
  limits: {
    requestBytesMax: 1 << 20,
    inFlightRequestsMax: 16,
    inFlightBytesMax: 1 << 20,
    connectionsIdleMsMax: 60_000,
    connectionsMax: 10,
  },
  log: () => {},
})
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
  listener = new Listener(listenerOptions(registry))
  port = (await listener.start()).port
})

after(() => listener.stop(100))

const int32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n, 0)
  return b
}

/** An ApiVersions v0 body: the error code, then [api key, min, max] entries. */
function apiVersionsV0(errorCode: number, entries: ReadonlyArray<readonly [number, number, number]>): Buffer {
  const b = Buffer.alloc(2 + 4 + 6 * entries.length)
  b.writeInt16BE(errorCode, 0)
  b.writeInt32BE(entries.length, 2)
  entries.forEach(([apiKey, min, max], i) => {
    b.writeInt16BE(apiKey, 6 + 6 * i)
    b.writeInt16BE(min, 8 + 6 * i)
    b.writeInt16BE(max, 10 + 6 * i)
  })
  return b
}

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

/**
 * A TCP server that answers each request frame with `answer(correlationId)`, as raw bytes framed
 * here, or not at all when it returns null (it wrote to the socket itself).
 */
async function rawServer(
  answer: (correlationId: number, socket: import('node:net').Socket) => Buffer | null,
): Promise<{ port: number; close: () => void }> {
  const sockets = new Set<import('node:net').Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    let pending = Buffer.alloc(0)
    socket.on('error', () => {})
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const size = pending.readInt32BE(0)
        const correlationId = pending.readInt32BE(8)
        pending = pending.subarray(4 + size)
        const body = answer(correlationId, socket)
        if (body === null) continue
        const frame = Buffer.alloc(4 + body.length)
        frame.writeInt32BE(body.length, 0)
        body.copy(frame, 4)
        socket.write(frame)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as AddressInfo
  return {
    port: address.port,
    close: () => {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}

test('a response that does not decode fails its request and the connection, never leaves it waiting', async () => {
  // Correlation id, then three bytes that are no ApiVersions body of any version.
  const server = await rawServer((id) => Buffer.concat([int32(id), Buffer.from([0, 0, 9])]))
  try {
    // No request timeout to fall back on: before the fix, the request waited forever.
    await assert.rejects(
      KafkaConnection.open(
        { host: '127.0.0.1', port: server.port },
        { ...options, requestTimeoutMs: 600_000 },
      ),
      ConnectionError,
    )
  } finally {
    server.close()
  }
})

test('KIP-511: an UNSUPPORTED_VERSION answer in v0 is read as v0 and the client retries at the version named', async () => {
  let asked = 0
  const server = await rawServer((id) => {
    asked++
    // ApiVersions served up to v2 only; the retry asks v2, answered in v2 (v0's fields and a
    // throttle time).
    const v0 = apiVersionsV0(asked === 1 ? 35 : 0, [[apis.ApiVersions.apiKey, 0, asked === 1 ? 2 : 0]])
    return Buffer.concat([int32(id), v0, asked === 1 ? Buffer.alloc(0) : int32(0)])
  })
  try {
    const c = await KafkaConnection.open({ host: '127.0.0.1', port: server.port }, options)
    assert.equal(asked, 2, 'the client read the v0 answer and asked again')
    assert.equal(
      c.versionFor(apis.ApiVersions),
      0,
      'the peer serves ApiVersions v0 only, as its retry answer says',
    )
    c.close()
  } finally {
    server.close()
  }
})

test('a held listener answers nothing until served, then with every handler registered meanwhile', async () => {
  const registry = new HandlerRegistry()
  registry.register(
    makeApiVersionsHandler(registry, () => ({ supported: [], finalized: [], finalizedEpoch: -1n })),
  )
  const held = new Listener({ ...listenerOptions(registry), held: true })
  const heldPort = (await held.start()).port
  try {
    let connected = false
    const opening = KafkaConnection.open({ host: '127.0.0.1', port: heldPort }, options).then((c) => {
      connected = true
      return c
    })
    // The connection is accepted (counted) but its ApiVersions is not answered yet.
    while (held.connectionCount === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    assert.equal(connected, false)
    registry.register(defineHandler(apis.ListGroups, {}, async () => ({ errorCode: 0, groups: [] })))
    held.serve()
    const c = await opening
    assert.equal(c.versionFor(apis.ListGroups), apis.ListGroups.maxVersion, 'the late handler is listed')
    c.close()
  } finally {
    await held.stop(100)
  }
})

test('requestHeld: a large response is assembled in frameBuffers and goes back on release; request and small responses are not', async () => {
  const pool = new ReadBufferPool()
  const c = await KafkaConnection.open({ host: '127.0.0.1', port }, { ...options, frameBuffers: pool })
  try {
    const v = c.versionFor(apis.ListGroups)!
    // The handler echoes the filter as a group id: a 100 kB response spans the socket's 64 KiB reads.
    const big = 'x'.repeat(100_000)
    const plain = await c.request(apis.ListGroups, v, { statesFilter: [big] })
    assert.equal(plain.groups[0]?.groupId, big)
    assert.equal(pool.heldBytes, 0, 'request() assembles its response in a buffer of its own')
    const held = await c.requestHeld(apis.ListGroups, v, { statesFilter: [big] })
    assert.equal(held.body.groups[0]?.groupId, big)
    assert.ok(pool.lentBytes > 100_000, 'the response is in a buffer lent by the pool')
    held.release()
    held.release() // once only: the second is a no-op
    assert.equal(pool.lentBytes, 0)
    const small = await c.requestHeld(apis.ListGroups, v, { statesFilter: ['g'] })
    assert.equal(small.body.groups[0]?.groupId, 'g')
    assert.equal(pool.lentBytes, 0, 'a response below HELD_FRAME_BYTES_MIN is copied as usual')
    small.release()
  } finally {
    c.close()
  }
})

test('requestHeld: a response cut off by the connection closing gives its pooled buffer back', async () => {
  const pool = new ReadBufferPool()
  let asked = 0
  const server = await rawServer((id, socket) => {
    asked++
    if (asked > 2) {
      // The first 100 kB of a 200 kB response, then the connection drops.
      socket.write(Buffer.concat([int32(200_000), int32(id), Buffer.alloc(100_000)]))
      setTimeout(() => socket.destroy(), 100)
      return null
    }
    // ApiVersions as in the KIP-511 test: v0 UNSUPPORTED_VERSION naming v2, then v2 naming
    // ApiVersions 0-2 and ListGroups 0-0.
    const v0 =
      asked === 1
        ? apiVersionsV0(35, [[apis.ApiVersions.apiKey, 0, 2]])
        : apiVersionsV0(0, [
            [apis.ApiVersions.apiKey, 0, 2],
            [apis.ListGroups.apiKey, 0, 0],
          ])
    return Buffer.concat([int32(id), v0, asked === 1 ? Buffer.alloc(0) : int32(0)])
  })
  try {
    const c = await KafkaConnection.open(
      { host: '127.0.0.1', port: server.port },
      { ...options, frameBuffers: pool },
    )
    await assert.rejects(c.requestHeld(apis.ListGroups, 0, {}), ConnectionError)
    assert.ok(pool.heldBytes >= 200_000, 'the response was being assembled in a pooled buffer')
    assert.equal(pool.lentBytes, 0, 'and it went back when the connection closed')
  } finally {
    server.close()
  }
})
