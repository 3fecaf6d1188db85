/**
 * The fetch read buffers: a lent buffer is never lent again before its release, the pool never
 * holds more than its budget, a read larger than the pool still gets a buffer, and reads of a log
 * through the pool return every buffer they do not hand back.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { decodeAll, openSimLog, valuesBatch } from '../../test/storage/fixtures.ts'
import { READ_BUFFER_GRANULE_BYTES, ReadBufferPool } from './read-buffer-pool.ts'

const KIB = 1024

describe('ReadBufferPool', () => {
  it('lends the smallest free buffer that fits, rounded to the granule, and takes back views', () => {
    const pool = new ReadBufferPool({ bytesMax: 1024 * KIB })
    const a = pool.acquire(100 * KIB)
    assert.equal(a.length, 2 * READ_BUFFER_GRANULE_BYTES)
    assert.equal(pool.heldBytes, 128 * KIB)
    assert.equal(pool.lentBytes, 128 * KIB)
    pool.release(a.subarray(10, 20)) // a view gives back the whole buffer
    assert.equal(pool.lentBytes, 0)
    const b = pool.acquire(70 * KIB)
    assert.equal(b.buffer, a.buffer, 'the free buffer is reused')
    const c = pool.acquire(10 * KIB)
    assert.notEqual(c.buffer, a.buffer, 'a lent buffer is not lent twice')
    assert.equal(pool.heldBytes, 192 * KIB)
    pool.release(b)
    const small = pool.acquire(1024)
    assert.notEqual(small.buffer, a.buffer, 'a free buffer over twice the size asked stays free')
    assert.equal(small.length, READ_BUFFER_GRANULE_BYTES)
    pool.release(small)
    const again = pool.acquire(70 * KIB)
    assert.equal(again.buffer, a.buffer)
    pool.release(Buffer.alloc(0)) // not the pool's: ignored
    pool.release(Buffer.allocUnsafeSlow(10))
    assert.equal(pool.lentBytes, 192 * KIB)
  })

  it('past its budget drops free buffers, then falls back to plain allocations it does not keep', () => {
    const pool = new ReadBufferPool({ bytesMax: 256 * KIB })
    const a = pool.acquire(128 * KIB)
    pool.release(a)
    const b = pool.acquire(200 * KIB) // needs 256 KiB: the free 128 KiB one is dropped
    assert.equal(b.length, 256 * KIB)
    assert.equal(pool.heldBytes, 256 * KIB)
    const c = pool.acquire(1000 * KIB) // larger than the pool: still a buffer, not pooled
    assert.equal(c.length, 1000 * KIB)
    assert.equal(pool.fallbacks, 1)
    assert.equal(pool.heldBytes, 256 * KIB)
    pool.release(c)
    assert.equal(pool.lentBytes, 256 * KIB)
    const d = pool.acquire(1) // b is lent and fills the pool
    assert.equal(pool.fallbacks, 2)
    assert.notEqual(d.buffer, b.buffer)
  })

  it('trimIdle drops the free buffers not lent since its previous call, never a lent one', () => {
    const pool = new ReadBufferPool({ bytesMax: 1024 * KIB })
    const a = pool.acquire(64 * KIB)
    const b = pool.acquire(128 * KIB)
    const c = pool.acquire(256 * KIB)
    pool.release(a)
    pool.release(b)
    assert.equal(pool.trimIdle(), 0, 'all three were lent since the pool began')
    const again = pool.acquire(100 * KIB) // b's buffer, used again
    assert.equal(again.buffer, b.buffer)
    pool.release(again)
    assert.equal(pool.trimIdle(), 64 * KIB, 'a went unused: dropped; b stays; c is lent')
    assert.equal(pool.heldBytes, 384 * KIB)
    assert.equal(pool.trimIdle(), 128 * KIB, 'b unused since: dropped')
    assert.equal(pool.lentBytes, 256 * KIB)
    pool.release(c) // lent across two trims: it counts as used, kept once more
    assert.equal(pool.trimIdle(), 0)
    assert.equal(pool.trimIdle(), 256 * KIB)
    assert.equal(pool.heldBytes, 0)
  })

  it('never lends memory that is lent, never holds more than its budget (random acquire/release)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1024 * KIB }),
        fc.array(fc.oneof(fc.integer({ min: 0, max: 600 * KIB }), fc.constant(-1)), { maxLength: 60 }),
        (bytesMax, steps) => {
          const pool = new ReadBufferPool({ bytesMax })
          const lent: Buffer[] = []
          for (const step of steps) {
            if (step < 0) {
              const buf = lent.shift()
              if (buf !== undefined) pool.release(buf)
            } else {
              const buf = pool.acquire(step)
              assert.ok(buf.length >= step)
              for (const other of lent) assert.notEqual(other.buffer, buf.buffer)
              lent.push(buf)
            }
            assert.ok(pool.heldBytes <= bytesMax)
            assert.ok(pool.lentBytes <= pool.heldBytes)
          }
        },
      ),
    )
  })
})

describe('PartitionLog reads through a ReadBufferPool', () => {
  it('returns views of pooled buffers, and every buffer a read did not return is back', async () => {
    // No write tail: every read goes to the file.
    const { log } = await openSimLog({ segmentBytes: 10_000 }, { options: { tailBytesMax: 0 } })
    for (let i = 0; i < 40; i++) await log.append(valuesBatch(5, `b${i}-`))
    const pool = new ReadBufferPool({ bytesMax: 1024 * KIB })
    let offset = 0n
    let values = 0
    while (offset < log.logEndOffset) {
      const r = await log.read(offset, 700, { buffers: pool })
      assert.ok(r.errorCode === 0 && 'records' in r)
      const records = decodeAll(r.records)
      assert.ok(records.length > 0)
      // The one buffer this read returned is the only one lent.
      assert.equal(pool.lentBytes, READ_BUFFER_GRANULE_BYTES)
      for (const rec of records) assert.equal(rec.value, `b${Math.floor(values / 5)}-${values++ % 5}`)
      pool.release(r.records)
      assert.equal(pool.lentBytes, 0)
      offset = records.at(-1)!.offset + 1n
    }
    assert.equal(values, 200)
    // Reads that return nothing (below the high watermark, past a too-small budget) give it back.
    const none = await log.read(3n, 700, { buffers: pool, offsetMax: 2n })
    assert.ok(none.errorCode === 0 && 'records' in none && none.records.length === 0)
    const small = await log.read(50n, 1, { buffers: pool, atLeastOneBatch: false })
    assert.ok(small.errorCode === 0 && 'records' in small && small.records.length === 0)
    assert.equal(pool.lentBytes, 0)
    assert.equal(pool.heldBytes, READ_BUFFER_GRANULE_BYTES)
  })
})
