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
    const listener = new Listener({
      listenerName: 'PLAINTEXT',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(pooledFetchRegistry(pool, () => ++n)),
      clock: systemClock,
      limits: {
        requestBytesMax: 1024 * 1024,
        inFlightRequestsMax: 8,
        inFlightBytesMax: 1024 * 1024,
        connectionsMaxIdleMs: 10_000,
        connectionsMax: 8,
      },
      log: () => {},
    })
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
})
