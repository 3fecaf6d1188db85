import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { batch } from '../../test/storage/fixtures.ts'
import { BatchOffsets, readBatchHeader } from '../protocol/index.ts'
import { appendedHeader, int64At } from './appended-header.ts'

describe('appendedHeader', () => {
  it('reads every int64 exactly as readBigInt64BE, at the edges of the safe range and past them', () => {
    const buf = Buffer.alloc(16)
    const edges = [0n, 1n, -1n, -2n, 2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n), -(2n ** 53n) - 1n]
    const more = [2n ** 63n - 1n, -(2n ** 63n), 0xffffffffn, 0x100000000n, -0x100000000n, 1700000000000n]
    for (const v of [...edges, ...more]) {
      buf.writeBigInt64BE(v, 3)
      assert.equal(int64At(buf, 3), v)
    }
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
        buf.writeBigInt64BE(v, 5)
        assert.equal(int64At(buf, 5), buf.readBigInt64BE(5))
      }),
      { numRuns: 500 },
    )
  })

  it('gives the header readBatchHeader gives, whatever the int64 fields hold', () => {
    const one = batch([{ key: 'k', value: 'v' }])
    const buf = Buffer.concat([Buffer.alloc(7), one])
    const int64 = fc.oneof(
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      fc.bigInt({ min: -1n, max: 2n ** 41n }),
    )
    fc.assert(
      fc.property(int64, int64, int64, int64, (base, first, max, producer) => {
        buf.writeBigInt64BE(base, 7 + BatchOffsets.baseOffset)
        buf.writeBigInt64BE(first, 7 + BatchOffsets.baseTimestamp)
        buf.writeBigInt64BE(max, 7 + BatchOffsets.maxTimestamp)
        buf.writeBigInt64BE(producer, 7 + BatchOffsets.producerId)
        assert.deepEqual(appendedHeader(buf, 7), readBatchHeader(buf, 7))
        assert.deepEqual(appendedHeader(buf, 7, base), readBatchHeader(buf, 7))
      }),
      { numRuns: 300 },
    )
  })
})
