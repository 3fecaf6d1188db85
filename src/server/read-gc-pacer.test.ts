/**
 * The read-paced minor GC: V8's scavenge, reached without --expose-gc on the command line, frees
 * dead socket-read-sized Buffers at once; a node's listener starts one per `everyBytes` read.
 */
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { systemClock } from '../io/index.ts'
import { Dispatcher } from './dispatcher.ts'
import { Listener } from './listener.ts'
import { minorGc, ReadGcPacer } from './read-gc-pacer.ts'
import { HandlerRegistry } from './registry.ts'

const MIB = 1024 * 1024

describe('ReadGcPacer', () => {
  test('minorGc frees dead 64 KiB Buffers that V8 had not collected yet', async () => {
    const collect = minorGc()
    assert.ok(collect !== null, 'V8 gives a minor GC')
    assert.equal((globalThis as { gc?: unknown }).gc, undefined, 'the main context is untouched')
    collect()
    const before = process.memoryUsage().arrayBuffers
    // 64 MiB of reads that die at once, as socket chunks copied into an assembled frame.
    for (let i = 0; i < 1024; i++) Buffer.allocUnsafeSlow(64 * 1024).fill(i)
    assert.ok(process.memoryUsage().arrayBuffers - before >= 32 * MIB, 'not collected by themselves')
    collect()
    // Array buffers may be swept concurrently: give the sweep a moment.
    for (let i = 0; i < 100 && process.memoryUsage().arrayBuffers - before > 8 * MIB; i++) {
      await new Promise((r) => setTimeout(r, 10))
    }
    assert.ok(process.memoryUsage().arrayBuffers - before <= 8 * MIB)
  })

  test('collects once per everyBytes read, counting across reads', () => {
    let collections = 0
    const pacer = new ReadGcPacer(() => collections++, 1000)
    for (let i = 0; i < 25; i++) pacer.read(100)
    assert.equal(collections, 2)
    pacer.read(5000)
    assert.equal(collections, 3, 'a large read starts one collection, and the count starts over')
    pacer.read(999)
    assert.equal(collections, 3)
    assert.equal(pacer.collections, 3)
  })

  test('a listener tells the pacer every socket read of its connections', async () => {
    let collections = 0
    const pacer = new ReadGcPacer(() => collections++, MIB)
    const listener = new Listener({
      listenerName: 'PLAINTEXT',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(new HandlerRegistry()),
      clock: systemClock,
      limits: {
        requestBytesMax: 8 * MIB,
        inFlightRequestsMax: 8,
        inFlightBytesMax: 8 * MIB,
        connectionsMaxIdleMs: 10_000,
        connectionsMax: 8,
      },
      log: () => {},
      readGc: pacer,
    })
    const { port } = await listener.start()
    try {
      // One frame of 3.5 MiB (an unknown api: the connection closes once it is whole).
      const frame = Buffer.alloc(4 + 3.5 * MIB)
      frame.writeInt32BE(3.5 * MIB, 0)
      frame.writeInt16BE(999, 4)
      const socket = connect({ host: '127.0.0.1', port })
      socket.on('error', () => {})
      socket.end(frame)
      await new Promise((resolve) => socket.on('close', resolve))
      assert.equal(collections, 3)
    } finally {
      await listener.stop(1000)
    }
  })
})
