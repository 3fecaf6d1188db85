import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  CRC32C_IMPLEMENTATION,
  crc32c,
  crc32cBatchRun,
  crc32cPure,
  crc32cRange,
  NATIVE_BYTES_MIN,
} from './crc32c.ts'

/** crc32cBatchRun's contract, one batch at a time in TypeScript: the reference it must agree with. */
function batchRunReference(buf: Buffer, start: number, end: number): number {
  let at = start
  while (at < end) {
    if (end - at < 61) break
    const batchLength = buf.readInt32BE(at + 8)
    if (batchLength < 49 || 12 + batchLength > end - at) break
    const size = 12 + batchLength
    if (crc32cPure(buf.subarray(at + 21, at + size)) !== buf.readUInt32BE(at + 17)) break
    at += size
  }
  return at
}

/** Where tools/build-native.js puts Weir's addon (npm ci and `npm run check` build it). */
const ADDON = new URL('../../../build/native/crc32c.node', import.meta.url)

describe('crc32c', () => {
  it('gives the CRC-32C check value for "123456789"', () => {
    const check = Buffer.from('123456789', 'latin1')
    assert.equal(crc32c(check), 0xe3069283)
    assert.equal(crc32cPure(check), 0xe3069283)
  })

  it('matches the RFC 3720 (iSCSI) test vectors', () => {
    const ascending = Buffer.from(Array.from({ length: 32 }, (_, i) => i))
    const descending = Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i))
    for (const f of [crc32c, crc32cPure]) {
      assert.equal(f(Buffer.alloc(32, 0)), 0x8a9136aa)
      assert.equal(f(Buffer.alloc(32, 0xff)), 0x62a8ab43)
      assert.equal(f(ascending), 0x46dd794e)
      assert.equal(f(descending), 0x113fdb5c)
      assert.equal(f(Buffer.alloc(0)), 0)
    }
  })

  it("uses a native implementation on this machine, Weir's own where it was built", () => {
    // Not a requirement (the pure fallback is correct), but a lost native addon should be noticed.
    assert.notEqual(CRC32C_IMPLEMENTATION, 'pure')
    if (existsSync(ADDON)) assert.equal(CRC32C_IMPLEMENTATION, 'weir-native')
  })

  it('crc32cRange agrees with the pure table on any range, across the native interleaved block sizes', () => {
    // The addon runs three streams of 8 KiB while 24 KiB remain, then of 256 B while 768 B remain.
    const big = Buffer.alloc(3 * 8192 * 2 + 3000)
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761 + (i >> 9)) >>> 24
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.nat(), (a, b, c) => {
        const start = a % 64
        const end = start + (b % (big.length - start + 1))
        const crc = c % 2 === 0 ? 0 : c >>> 0
        assert.equal(crc32cRange(big, start, end, crc), crc32cPure(big.subarray(start, end), crc))
      }),
      { numRuns: 300 },
    )
    for (const length of [767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 8192 + 768, 6 * 8192]) {
      for (const start of [0, 1, 7, 8]) {
        const whole = crc32cPure(big.subarray(start, start + length))
        assert.equal(crc32cRange(big, start, start + length), whole, `${length} from ${start}`)
        assert.equal(crc32c(big.subarray(start, start + length)), whole, `${length} from ${start}`)
      }
    }
  })

  it('native and pure TS agree on any input, range and continuation', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 3 * NATIVE_BYTES_MIN }),
        fc.nat(),
        fc.nat(),
        (bytes, a, b) => {
          const buf = Buffer.from(bytes)
          const start = buf.length === 0 ? 0 : a % (buf.length + 1)
          const end = start + (b % (buf.length - start + 1))
          const whole = crc32cPure(buf.subarray(start, end))
          assert.equal(crc32c(buf.subarray(start, end)), whole)
          // crc(a ++ b) continues from crc(a), on both implementations.
          const mid = start + ((end - start) >> 1)
          assert.equal(crc32c(buf.subarray(mid, end), crc32c(buf.subarray(start, mid))), whole)
          assert.equal(crc32cPure(buf.subarray(mid, end), crc32cPure(buf.subarray(start, mid))), whole)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('crc32cBatchRun stops where the one-batch-at-a-time reference stops, whatever is broken', (t) => {
    if (crc32cBatchRun === null) {
      t.skip(`Weir's addon is not loaded (${CRC32C_IMPLEMENTATION})`)
      return
    }
    const run = crc32cBatchRun
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: 61, max: 3000 }), fc.constant(3 * 8192 + 100)), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.nat(),
        fc.constantFrom('none', 'flip', 'length', 'cut', 'offset'),
        fc.nat(),
        (sizes, seed, damage, where) => {
          const total = sizes.reduce((a, b) => a + b, 0)
          const buf = Buffer.alloc(total + 16)
          for (let i = 0; i < buf.length; i++) buf[i] = (i * 2654435761 + seed) >>> 24
          const starts: number[] = []
          let at = 0
          for (const size of sizes) {
            starts.push(at)
            buf.writeInt32BE(size - 12, at + 8)
            buf.writeUInt32BE(crc32cPure(buf.subarray(at + 21, at + size)), at + 17)
            at += size
          }
          let start = 0
          let end = total
          if (damage === 'flip') buf[where % total] = buf[where % total]! ^ (1 << (where % 8))
          if (damage === 'length') buf.writeInt32BE((where % 100_000) - 50, starts[where % sizes.length]! + 8)
          if (damage === 'cut') end = where % (total + 1)
          if (damage === 'offset') start = where % (sizes[0]! + 1)
          assert.equal(run(buf, start, end), batchRunReference(buf, start, end))
        },
      ),
      { numRuns: 300 },
    )
  })

  it('agrees on a large buffer (native path, unaligned view)', () => {
    const big = Buffer.alloc(1 << 20)
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24
    assert.equal(crc32c(big.subarray(3, big.length - 5)), crc32cPure(big.subarray(3, big.length - 5)))
    assert.equal(crc32c(big.subarray(7)), crc32cPure(big.subarray(7)))
  })
})
