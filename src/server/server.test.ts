import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { systemClock } from '../io/index.ts'
import { apis, decodeResponse, ErrorCode, encodeRequest } from '../protocol/index.ts'
import { Dispatcher } from './dispatcher.ts'
import { defineHandler, NO_RESPONSE } from './handler.ts'
import { makeApiVersionsHandler } from './handlers/api-versions.ts'
import { Listener } from './listener.ts'
import { HandlerRegistry } from './registry.ts'

const NO_FEATURES = { supported: [], finalized: [], finalizedEpoch: -1n }
const CONN = { connectionId: 1, clientAddress: 'inject', listenerName: 'PLAINTEXT' }

function makeRegistry(): HandlerRegistry {
  const registry = new HandlerRegistry()
  registry.register(
    makeApiVersionsHandler(registry, () => NO_FEATURES),
    // A stand-in Produce that answers by silence when acks=0, to test NO_RESPONSE.
    defineHandler(apis.Produce, { minVersion: 3 }, (req) =>
      req.acks === 0 ? NO_RESPONSE : { responses: [] },
    ),
  )
  return registry
}

function apiVersionsFrame(version: number, correlationId: number, name = 'weir-test'): Buffer {
  return Buffer.concat(
    encodeRequest(
      apis.ApiVersions,
      { requestApiVersion: version, correlationId, clientId: 't' },
      { clientSoftwareName: name, clientSoftwareVersion: '1.0' },
    ),
  )
}

describe('dispatcher (injected frames)', () => {
  const dispatcher = new Dispatcher(makeRegistry())

  test('ApiVersions lists exactly the registered handlers and their versions (Produce from v0, as Kafka 4.0)', async () => {
    const r = await dispatcher.dispatch(apiVersionsFrame(3, 7).subarray(4), CONN)
    assert.equal(r.kind, 'response')
    if (r.kind !== 'response') return
    const { correlationId, body } = decodeResponse(apis.ApiVersions, 3, Buffer.concat(r.frame).subarray(4))
    assert.equal(correlationId, 7)
    assert.equal(body.errorCode, ErrorCode.None)
    assert.deepEqual(
      body.apiKeys.map((k) => [k.apiKey, k.minVersion, k.maxVersion]),
      [
        // KAFKA-18659: librdkafka stops compressing unless Produce's range starts at 0.
        [apis.Produce.apiKey, 0, apis.Produce.maxVersion],
        [apis.ApiVersions.apiKey, 0, apis.ApiVersions.maxVersion],
      ],
    )
  })

  test('ApiVersions features: a range from 0 only from v4 (KAFKA-17011); the finalized levels in every version', async () => {
    const registry = new HandlerRegistry()
    registry.register(
      makeApiVersionsHandler(registry, () => ({
        supported: [
          { name: 'metadata.version', minVersion: 7, maxVersion: 25 },
          { name: 'transaction.version', minVersion: 0, maxVersion: 2 },
        ],
        finalized: [{ name: 'transaction.version', minVersionLevel: 2, maxVersionLevel: 2 }],
        finalizedEpoch: 5n,
      })),
    )
    const features = new Dispatcher(registry)
    const ask = async (version: number) => {
      const r = await features.dispatch(apiVersionsFrame(version, 1).subarray(4), CONN)
      assert.equal(r.kind, 'response')
      if (r.kind !== 'response') throw new Error('no response')
      const { body } = decodeResponse(apis.ApiVersions, version, Buffer.concat(r.frame).subarray(4))
      return [body.supportedFeatures.map((f) => f.name), body.finalizedFeatures.map((f) => f.name)]
    }
    assert.deepEqual(await ask(3), [['metadata.version'], ['transaction.version']])
    assert.deepEqual(await ask(4), [['metadata.version', 'transaction.version'], ['transaction.version']])
  })

  test('an ApiVersions version newer than known is answered in v0 with UNSUPPORTED_VERSION', async () => {
    const frame = apiVersionsFrame(3, 9).subarray(4)
    frame.writeInt16BE(apis.ApiVersions.maxVersion + 5, 2)
    const r = await dispatcher.dispatch(frame, CONN)
    assert.equal(r.kind, 'response')
    if (r.kind !== 'response') return
    const { correlationId, body } = decodeResponse(apis.ApiVersions, 0, Buffer.concat(r.frame).subarray(4))
    assert.equal(correlationId, 9)
    assert.equal(body.errorCode, ErrorCode.UnsupportedVersion)
    assert.ok(body.apiKeys.some((k) => k.apiKey === apis.ApiVersions.apiKey))
  })

  test('an invalid client software name is INVALID_REQUEST (KIP-511)', async () => {
    const r = await dispatcher.dispatch(apiVersionsFrame(3, 1, '-bad name').subarray(4), CONN)
    assert.equal(r.kind, 'response')
    if (r.kind !== 'response') return
    const { body } = decodeResponse(apis.ApiVersions, 3, Buffer.concat(r.frame).subarray(4))
    assert.equal(body.errorCode, ErrorCode.InvalidRequest)
  })

  test('unknown apis, unserved versions and malformed bytes close the connection', async () => {
    const unknown = Buffer.alloc(10)
    unknown.writeInt16BE(777, 0)
    assert.equal((await dispatcher.dispatch(unknown, CONN)).kind, 'close')
    const fetch = Buffer.concat(
      encodeRequest(apis.Fetch, { requestApiVersion: 4, correlationId: 1, clientId: null }, {}),
    ).subarray(4)
    assert.equal((await dispatcher.dispatch(fetch, CONN)).kind, 'close')
    const produceV2 = Buffer.concat(
      encodeRequest(apis.Produce, { requestApiVersion: 2, correlationId: 1, clientId: null }, {}),
    ).subarray(4)
    assert.equal((await dispatcher.dispatch(produceV2, CONN)).kind, 'close')
    const truncated = apiVersionsFrame(3, 1).subarray(4, 12)
    assert.equal((await dispatcher.dispatch(truncated, CONN)).kind, 'close')
  })

  test('acks=0 produce is answered by silence', async () => {
    const frame = Buffer.concat(
      encodeRequest(apis.Produce, { requestApiVersion: 9, correlationId: 1, clientId: null }, { acks: 0 }),
    ).subarray(4)
    assert.equal((await dispatcher.dispatch(frame, CONN)).kind, 'none')
  })
})

/** A raw socket client that collects response frames. */
class RawClient {
  readonly socket: Socket
  #buf = Buffer.alloc(0)
  readonly frames: Buffer[] = []
  closed: Promise<void>
  #waiters: Array<() => void> = []

  constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port })
    this.socket.on('data', (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d])
      while (this.#buf.length >= 4 && this.#buf.length >= 4 + this.#buf.readInt32BE(0)) {
        const n = this.#buf.readInt32BE(0)
        this.frames.push(this.#buf.subarray(4, 4 + n))
        this.#buf = this.#buf.subarray(4 + n)
      }
      for (const w of this.#waiters.splice(0)) w()
    })
    this.socket.on('error', () => {})
    this.closed = new Promise((resolve) => this.socket.on('close', () => resolve()))
  }

  async waitFrames(n: number): Promise<Buffer[]> {
    while (this.frames.length < n) await new Promise<void>((resolve) => this.#waiters.push(resolve))
    return this.frames
  }
}

describe('listener (real sockets)', () => {
  const warnings: string[] = []
  let listener: Listener
  let port: number

  before(async () => {
    listener = new Listener({
      listenerName: 'PLAINTEXT',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(makeRegistry()),
      clock: systemClock,
      limits: {
        requestBytesMax: 1024 * 1024,
        inFlightRequestsMax: 4,
        inFlightBytesMax: 1024 * 1024,
        connectionsIdleMsMax: 300,
        connectionsMax: 8,
      },
      log: (_level, message) => warnings.push(message),
    })
    port = (await listener.start()).port
  })

  after(async () => {
    await listener.stop(1000)
  })

  test('pipelined requests are answered in order', async () => {
    const c = new RawClient(port)
    const batch = Buffer.concat(Array.from({ length: 20 }, (_, i) => apiVersionsFrame(3, 100 + i)))
    // Dribble the bytes in small pieces to exercise partial frames.
    for (let at = 0; at < batch.length; at += 7) c.socket.write(batch.subarray(at, at + 7))
    const frames = await c.waitFrames(20)
    assert.deepEqual(
      frames.map((f) => f.readInt32BE(0)),
      Array.from({ length: 20 }, (_, i) => 100 + i),
    )
    c.socket.destroy()
  })

  test('garbage, a huge length prefix, and unknown apis close that connection only', async () => {
    const healthy = new RawClient(port)
    const garbage = new RawClient(port)
    garbage.socket.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'))
    await garbage.closed
    const huge = new RawClient(port)
    const prefix = Buffer.alloc(4)
    prefix.writeInt32BE(0x7fffffff)
    huge.socket.write(prefix)
    await huge.closed
    const unknown = new RawClient(port)
    const frame = Buffer.alloc(14)
    frame.writeInt32BE(10, 0)
    frame.writeInt16BE(999, 4)
    unknown.socket.write(frame)
    await unknown.closed
    healthy.socket.write(apiVersionsFrame(0, 5))
    const [answer] = await healthy.waitFrames(1)
    assert.equal(answer!.readInt32BE(0), 5)
    healthy.socket.destroy()
    assert.ok(warnings.some((w) => w.includes('unknown api key 999')))
  })

  test('a silent connection is closed after connections.max.idle.ms', async () => {
    const c = new RawClient(port)
    await c.closed
  })

  test('a truncated request followed by silence is closed by the idle timeout, not held forever', async () => {
    const c = new RawClient(port)
    c.socket.write(apiVersionsFrame(3, 1).subarray(0, 9))
    await c.closed
  })
})

describe('pipelined Produce requests (real sockets)', () => {
  test('consecutive Produces overlap and answer in request order; other requests wait their turn', async () => {
    const events: string[] = []
    const registry = new HandlerRegistry()
    // The first Produce is the slowest to finish, as one waiting for a fsync behind later appends.
    const delays = new Map<number, number>([
      [1, 60],
      [2, 10],
      [3, 0],
      [5, 0],
    ])
    registry.register(
      makeApiVersionsHandler(registry, () => NO_FEATURES),
      defineHandler(apis.Produce, { minVersion: 3 }, async (req, ctx) => {
        const cid = ctx.header.correlationId
        events.push(`start ${cid}`)
        await new Promise((resolve) => setTimeout(resolve, delays.get(cid) ?? 0))
        events.push(`end ${cid}`)
        return req.acks === 0 ? NO_RESPONSE : { responses: [] }
      }),
    )
    const listener = new Listener({
      listenerName: 'PLAINTEXT',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(registry),
      clock: systemClock,
      limits: {
        requestBytesMax: 1024 * 1024,
        inFlightRequestsMax: 8,
        inFlightBytesMax: 1024 * 1024,
        connectionsIdleMsMax: 10_000,
        connectionsMax: 8,
      },
      log: () => {},
    })
    const { port } = await listener.start()
    const produce = (correlationId: number, acks: number) =>
      Buffer.concat(
        encodeRequest(
          apis.Produce,
          { requestApiVersion: 9, correlationId, clientId: 't' },
          { acks, timeoutMs: 1000, topicData: [] },
        ),
      )
    const c = new RawClient(port)
    // Produce 1, 2, 3 (acks=0: no answer), ApiVersions 4, Produce 5.
    c.socket.write(
      Buffer.concat([produce(1, 1), produce(2, 1), produce(3, 0), apiVersionsFrame(3, 4), produce(5, 1)]),
    )
    const frames = await c.waitFrames(4)
    assert.deepEqual(
      frames.map((f) => f.readInt32BE(0)),
      [1, 2, 4, 5],
    )
    assert.deepEqual(events.slice(0, 3), ['start 1', 'start 2', 'start 3'])
    // Produce 5 starts only after everything before the ApiVersions request was answered.
    assert.ok(events.indexOf('start 5') > events.indexOf('end 1'))
    c.socket.destroy()
    await listener.stop(1000)
  })
})
