/**
 * Appends from pooled buffers (produce frames a connection assembled in the node's pool): the log
 * and its write tail hold them as holders of the pool, so that the pool never lends again memory
 * whose bytes a write, the tail or a reader still uses, and every hold ends (a closed log holds
 * nothing). The reused memory is filled with garbage as soon as it is lent again, so any early
 * reuse shows as wrong values or a failed CRC.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { batch, decodeAll, openSimLog } from '../../test/storage/fixtures.ts'
import type { PartitionLog } from './partition-log.ts'
import { ReadBufferPool } from './read-buffer-pool.ts'

const KIB = 1024

/** What a connection does with a produce frame: the bytes in a buffer from the pool. */
function frameOf(pool: ReadBufferPool, batch: Buffer): Buffer {
  const buf = pool.acquire(batch.length)
  batch.copy(buf)
  return buf.subarray(0, batch.length)
}

/**
 * Every value of the log from offset 0, read in pieces of `maxBytes`: as a holder of `pool` (the
 * reads go through it and are released), or without one (then no read may be a view of its memory).
 */
async function readAll(
  log: PartitionLog,
  maxBytes: number,
  pool: ReadBufferPool,
  asHolder: boolean,
): Promise<string[]> {
  const out: string[] = []
  let offset = 0n
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, maxBytes, asHolder ? { buffers: pool } : {})
    assert.ok(r.errorCode === 0 && 'records' in r)
    const records = decodeAll(r.records).filter((x) => x.offset >= offset)
    if (asHolder) pool.release(r.records)
    else assert.equal(pool.isLent(r.records), false, 'no view of pooled memory without a holder')
    assert.ok(records.length > 0)
    for (const rec of records) out.push(rec.value ?? '')
    offset = records.at(-1)!.offset + 1n
  }
  return out
}

describe('ReadBufferPool holders', () => {
  it('a retained buffer is free again only after its last holder released it', () => {
    const pool = new ReadBufferPool({ bytesMax: 1024 * KIB })
    const a = pool.acquire(100 * KIB)
    assert.equal(pool.retain(a.subarray(5, 10)), true)
    pool.release(a)
    assert.equal(pool.lentBytes, 128 * KIB, 'one holder left')
    assert.notEqual(pool.acquire(100 * KIB).buffer, a.buffer, 'not lent again while held')
    pool.release(a.subarray(1))
    assert.equal(pool.isLent(a), false)
    assert.equal(pool.acquire(100 * KIB).buffer, a.buffer, 'free again')
    assert.equal(pool.retain(Buffer.allocUnsafeSlow(10)), false, 'not the pool’s: nothing to release')
  })
})

describe('PartitionLog appends from pooled frames', () => {
  it('keeps appended bytes intact while the frame goes back to the pool at once and is reused', async () => {
    const pool = new ReadBufferPool({ bytesMax: 64 * 1024 * KIB })
    const { log } = await openSimLog(
      { segmentBytes: 256 * KIB },
      { options: { pool, tailBytesMax: 128 * KIB } },
    )
    const expected: string[] = []
    const appends: Promise<unknown>[] = []
    for (let i = 0; i < 60; i++) {
      const values = Array.from({ length: 40 }, (_, j) => `v${i}-${j}-${'x'.repeat((i * 37) % 900)}`)
      expected.push(...values)
      const frame = frameOf(pool, batch(values.map((value) => ({ value }))))
      appends.push(log.append(frame))
      pool.release(frame) // the connection's hold ends before the write completes
      pool.acquire(frame.length).fill(0xee) // whatever the pool lends next is overwritten at once
      if (i % 7 === 6) await Promise.all(appends.splice(0))
    }
    await Promise.all(appends)
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(await readAll(log, 20 * KIB, pool, false), expected, 'read without a holder: copies')
      const before = pool.lentBytes
      assert.deepEqual(
        await readAll(log, 20 * KIB, pool, true),
        expected,
        'read as a holder: views and pooled reads',
      )
      assert.equal(pool.lentBytes, before, 'every read released what it got')
      pool.acquire(200 * KIB).fill(0xee)
    }
    await log.close()
  })

  it('ends every hold: after random appends, reads and closes, the log holds nothing of the pool', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            records: fc.integer({ min: 1, max: 30 }),
            valueBytes: fc.integer({ min: 0, max: 3000 }),
            release: fc.constantFrom('now', 'after'),
            read: fc.boolean(),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.integer({ min: 0, max: 3 }),
        async (steps, tailChoice) => {
          const pool = new ReadBufferPool({ bytesMax: 8 * 1024 * KIB })
          const garbage: Buffer[] = []
          const tailBytesMax = [0, 16 * KIB, 128 * KIB, 1024 * KIB][tailChoice]!
          const { log } = await openSimLog({ segmentBytes: 64 * KIB }, { options: { pool, tailBytesMax } })
          const expected: string[] = []
          const pending: Promise<unknown>[] = []
          let n = 0
          for (const s of steps) {
            const values = Array.from({ length: s.records }, () => `${n++}:${'y'.repeat(s.valueBytes % 500)}`)
            const frame = frameOf(pool, batch(values.map((value) => ({ value }))))
            const done = log.append(frame)
            expected.push(...values)
            if (s.release === 'now') {
              pool.release(frame)
              pending.push(done)
            } else {
              pending.push(done.finally(() => pool.release(frame)))
            }
            // Everything the pool lends from here on is garbage to the log.
            const g = pool.acquire(4 * KIB + (n % 64) * KIB)
            g.fill(0xee)
            garbage.push(g)
            if (s.read) {
              await Promise.all(pending.splice(0))
              const got = await readAll(log, 8 * KIB, pool, s.release === 'now')
              assert.deepEqual(got, expected)
            }
            if (garbage.length > 4) pool.release(garbage.shift()!)
          }
          await Promise.all(pending)
          assert.deepEqual(await readAll(log, 8 * KIB, pool, false), expected)
          assert.deepEqual(await readAll(log, 8 * KIB, pool, true), expected)
          for (const g of garbage) pool.release(g)
          await log.close()
          assert.equal(pool.lentBytes, 0, 'nothing held once the log is closed')
        },
      ),
      { numRuns: 25 },
    )
  })
})
