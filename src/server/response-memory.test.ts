/**
 * Memory a response refers to (a Fetch's pooled read buffers) goes back only once the socket write
 * completed, or once the response is dropped: real sockets, a client that stops reading.
 */
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { systemClock } from '../io/index.ts'
import { apis, encodeRequest } from '../protocol/index.ts'
import { ReadBufferPool } from '../storage/index.ts'
import { Dispatcher } from './dispatcher.ts'
import { defineHandler } from './handler.ts'
import { Listener } from './listener.ts'
import { HandlerRegistry } from './registry.ts'

const RECORDS_BYTES = 8 * 1024 * 1024

/** A Fetch handler answering one partition whose records are a pooled buffer filled with `fill`. */
function pooledFetchRegistry(pool: ReadBufferPool, fill: () => number): HandlerRegistry {
  const registry = new HandlerRegistry()
  registry.register(
    defineHandler(apis.Fetch, { minVersion: 4 }, (_req, ctx) => {
      const records = pool.acquire(RECORDS_BYTES).subarray(0, RECORDS_BYTES)
      records.fill(fill())
      ctx.afterResponse!(() => pool.release(records))
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        sessionId: 0,
        responses: [
          {
            topic: 't',
            partitions: [
              {
                partitionIndex: 0,
                errorCode: 0,
                highWatermark: 0n,
                lastStableOffset: 0n,
                logStartOffset: 0n,
                abortedTransactions: null,
                preferredReadReplica: -1,
                records,
              },
            ],
          },
        ],
      } as never
    }),
  )
  return registry
}

function fetchFrame(correlationId: number): Buffer {
  return Buffer.concat(
    encodeRequest(apis.Fetch, { requestApiVersion: 10, correlationId, clientId: 't' }, {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 30,
      isolationLevel: 0,
      topics: [],
    } as never),
  )
}

/** A listener on a free loopback port serving `registry` (with `frameBuffers` when given). */
function loopbackListener(
  registry: HandlerRegistry,
  inFlightBytesMax: number,
  frameBuffers?: ReadBufferPool,
) {
  return new Listener({
    listenerName: 'PLAINTEXT',
    host: '127.0.0.1',
    port: 0,
    dispatcher: new Dispatcher(registry),
    clock: systemClock,
    limits: {
      requestBytesMax: 1024 * 1024,
      inFlightRequestsMax: 8,
      inFlightBytesMax,
      connectionsIdleMsMax: 10_000,
      connectionsMax: 8,
    },
    log: () => {},
    ...(frameBuffers === undefined ? {} : { frameBuffers }),
  })
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
  assert.ok(check(), what)
}

/** Reads whole frames; `pause()` stops reading, so the server's writes stay pending. */
class Client {
  readonly socket: Socket
  readonly frames: Buffer[] = []
  #pending: Buffer[] = []

  constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port })
    this.socket.on('error', () => {})
    this.socket.on('data', (d: Buffer) => {
      this.#pending.push(d)
      let buf = Buffer.concat(this.#pending)
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        this.frames.push(buf.subarray(4, 4 + buf.readInt32BE(0)))
        buf = buf.subarray(4 + buf.readInt32BE(0))
      }
      this.#pending = [buf]
    })
  }
}

describe('response memory (real sockets)', () => {
  test('a pooled buffer is back only after its response was written, and is never lent while sent', async () => {
    const pool = new ReadBufferPool({ bytesMax: 4 * RECORDS_BYTES })
    let n = 0
    const listener = loopbackListener(
      pooledFetchRegistry(pool, () => ++n),
      1024 * 1024,
    )
    const { port } = await listener.start()
    try {
      const c = new Client(port)
      c.socket.pause() // 8 MiB cannot all fit in the socket buffers: the write stays pending
      c.socket.write(fetchFrame(1))
      await until('the first response is lent', () => pool.lentBytes > 0)
      await new Promise((r) => setTimeout(r, 100))
      assert.equal(pool.lentBytes, RECORDS_BYTES, 'held while the client does not read')
      // A second connection's Fetch meanwhile gets another buffer: the one being sent is not reused.
      const d = new Client(port)
      d.socket.write(fetchFrame(2))
      await until('the second response arrives', () => d.frames.length === 1)
      assert.equal(d.frames[0]!.at(-1), 2)
      c.socket.resume()
      await until('the first response arrives', () => c.frames.length === 1)
      // Every byte the client got is the first response's fill: no later read wrote into it.
      const first = c.frames[0]!
      assert.equal(first.at(-1), 1)
      assert.equal(
        first.subarray(first.length - RECORDS_BYTES).every((b) => b === 1),
        true,
      )
      await until('both buffers are back', () => pool.lentBytes === 0)
      assert.equal(pool.heldBytes, 2 * RECORDS_BYTES)

      // A client that goes away mid-response: the buffer comes back once the write is abandoned.
      const gone = new Client(port)
      gone.socket.pause()
      gone.socket.write(fetchFrame(3))
      await until('the third response is lent', () => pool.lentBytes > 0)
      gone.socket.destroy()
      await until('the abandoned response is back', () => pool.lentBytes === 0)
      c.socket.destroy()
      d.socket.destroy()
    } finally {
      await listener.stop(1000)
    }
  })

  test('a produce frame assembled in the pool is held until its response was written, and a partial one is given back at close', async () => {
    const pool = new ReadBufferPool({ bytesMax: 16 * 1024 * 1024 })
    const RECORDS = 300 * 1024
    /** What the handler saw: whether its records were a pooled view, and their first byte. */
    const seen: Array<{ pooled: boolean; first: number }> = []
    let answer: (() => void) | null = null
    const registry = new HandlerRegistry()
    registry.register(
      defineHandler(apis.Produce, { minVersion: 3 }, async (req) => {
        const records = req.topicData[0]!.partitionData[0]!.records as Buffer
        seen.push({ pooled: pool.isLent(records), first: records[0]! })
        await new Promise<void>((resolve) => {
          answer = resolve
        })
        return { responses: [], throttleTimeMs: 0 } as never
      }),
    )
    const listener = loopbackListener(registry, 4 * 1024 * 1024, pool)
    const produceFrame = (correlationId: number, fill: number): Buffer =>
      Buffer.concat(
        encodeRequest(apis.Produce, { requestApiVersion: 7, correlationId, clientId: 't' }, {
          transactionalId: null,
          acks: 1,
          timeoutMs: 1000,
          topicData: [{ name: 't', partitionData: [{ index: 0, records: Buffer.alloc(RECORDS, fill) }] }],
        } as never),
      )
    const { port } = await listener.start()
    try {
      const c = new Client(port)
      const frame = produceFrame(1, 7)
      // In pieces, so that the frame spans socket reads and is assembled.
      for (let at = 0; at < frame.length; at += 16 * 1024) {
        c.socket.write(frame.subarray(at, at + 16 * 1024))
        await new Promise((r) => setTimeout(r, 1))
      }
      await until('the handler has the request', () => seen.length === 1)
      assert.deepEqual(seen[0], { pooled: true, first: 7 })
      assert.ok(pool.lentBytes >= RECORDS, 'held while the request is handled')
      answer!()
      await until('the response arrives', () => c.frames.length === 1)
      await until('the frame is back once the response was written', () => pool.lentBytes === 0)

      // A frame cut off by the client going away: the buffer it was assembled in comes back.
      const gone = new Client(port)
      gone.socket.write(produceFrame(2, 9).subarray(0, 200 * 1024))
      await until('the partial frame is lent', () => pool.lentBytes > 0)
      gone.socket.destroy()
      await until('the partial frame is back', () => pool.lentBytes === 0)

      // A request being handled when its connection closes: the frame is back once the handler is done.
      const closing = new Client(port)
      closing.socket.write(produceFrame(3, 5))
      await until('the handler has the third request', () => seen.length === 2)
      closing.socket.destroy()
      await new Promise((r) => setTimeout(r, 50))
      assert.ok(pool.lentBytes >= RECORDS, 'still held: the handler may read it')
      answer!()
      await until('the frame of the dropped request is back', () => pool.lentBytes === 0)
      c.socket.destroy()
    } finally {
      await listener.stop(1000)
    }
  })
})
