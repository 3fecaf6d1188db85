/**
 * Reads from a segment: one file read from where the previous read ended or from the index entry,
 * and what invalidates the remembered positions (a cut of the file).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeAll, openSimLog, valuesBatch } from '../../test/storage/fixtures.ts'
import { LOG_OVERHEAD } from '../protocol/index.ts'
import type { PartitionLog } from './partition-log.ts'

/** The [baseOffset, lastOffset] of each batch in `bytes`. */
function spans(bytes: Buffer): [number, number][] {
  const out: [number, number][] = []
  for (let at = 0; at < bytes.length; at += LOG_OVERHEAD + bytes.readInt32BE(at + 8)) {
    const base = Number(bytes.readBigInt64BE(at))
    out.push([base, base + bytes.readInt32BE(at + 23)])
  }
  return out
}

async function readOk(log: PartitionLog, offset: bigint, maxBytes: number): Promise<Buffer> {
  const r = await log.read(offset, maxBytes)
  assert.ok(r.errorCode === 0 && 'records' in r, `read at ${offset}: ${r.errorCode}`)
  return r.records
}

describe('LogSegment reads', () => {
  it('a consumer reading on, and reads from any offset in any order, see the batches that hold them', async () => {
    const { log } = await openSimLog({ indexIntervalBytes: 300, segmentBytes: 1_000_000 })
    const sizes = [1, 5, 2, 9, 1, 1, 3, 20, 4, 1, 7, 2, 1, 12, 3]
    const bounds: [number, number][] = []
    for (let round = 0; round < 4; round++) {
      for (const [i, n] of sizes.entries()) {
        const r = await log.append(valuesBatch(n, `r${round}b${i}-`))
        assert.ok(r.errorCode === 0)
        bounds.push([Number(r.baseOffset), Number(r.lastOffset)])
      }
    }
    const end = Number(log.logEndOffset)
    // Reading on with several budgets: every batch once, in order.
    for (const maxBytes of [1, 200, 700, 5000]) {
      const seen: [number, number][] = []
      let offset = 0n
      while (offset < log.logEndOffset) {
        const got = spans(await readOk(log, offset, maxBytes))
        assert.ok(got.length > 0)
        seen.push(...got)
        offset = BigInt(got.at(-1)![1] + 1)
      }
      assert.deepEqual(seen, bounds, `maxBytes ${maxBytes}`)
    }
    // Any offset, mid-batch included, in a scrambled order: the first batch returned holds it.
    for (let k = 0; k < end; k++) {
      const offset = (k * 37) % end
      const first = spans(await readOk(log, BigInt(offset), 1))[0]!
      assert.ok(first[0] <= offset && offset <= first[1], `offset ${offset} in ${first}`)
      assert.deepEqual(
        first,
        bounds.find(([b, l]) => b <= offset && offset <= l),
      )
    }
  })

  it('after a truncation and new appends with other batch boundaries, reads find the new batches', async () => {
    const { log } = await openSimLog({ segmentBytes: 1_000_000 })
    for (let i = 0; i < 6; i++) await log.append(valuesBatch(3, `old${i}-`))
    // Reads that end at offsets 6, 9 and 12: those positions are remembered.
    assert.deepEqual(spans(await readOk(log, 0n, 200)), [
      [0, 2],
      [3, 5],
    ])
    await readOk(log, 6n, 1)
    await readOk(log, 9n, 1)
    await log.truncateTo(4n) // whole batches: the log ends at 3
    assert.equal(log.logEndOffset, 3n)
    const r = await log.append(valuesBatch(10, 'new-')) // offsets 3-12: one batch across the old bounds
    assert.ok(r.errorCode === 0 && r.baseOffset === 3n)
    for (const offset of [3n, 6n, 9n, 12n]) {
      const records = decodeAll(await readOk(log, offset, 1))
      assert.deepEqual(
        records.map((x) => [x.offset, x.value]),
        Array.from({ length: 10 }, (_, i) => [BigInt(3 + i), `new-${i}`]),
        `read at ${offset}`,
      )
    }
  })

  it('returns a first batch larger than the budget whole, and one larger than a read, in full', async () => {
    const { log } = await openSimLog({ segmentBytes: 10_000_000, messageBytesMax: 2_000_000 })
    await log.append(valuesBatch(2, 'small-'))
    const big = valuesBatch(1, 'x'.repeat(100_000))
    await log.append(big)
    await log.append(valuesBatch(2, 'after-'))
    await readOk(log, 0n, 1) // remembers where offset 2 (the big batch) starts
    for (const offset of [2n, 2n]) {
      const bytes = await readOk(log, offset, 10)
      assert.deepEqual(spans(bytes), [[2, 2]])
      assert.equal(decodeAll(bytes)[0]!.value, `${'x'.repeat(100_000)}0`)
    }
    const r = await log.read(2n, 10, { atLeastOneBatch: false })
    assert.ok(r.errorCode === 0 && 'records' in r && r.records.length === 0)
  })
})
