import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { batch, valuesBatch } from '../../test/storage/fixtures.ts'
import {
  Compression,
  ControlRecordType,
  encodeBatch,
  encodeEndTxnMarkerBatch,
  type ScanOptions,
  scanBatches,
  updateBatchCrc,
} from '../protocol/index.ts'
import { type AppendScan, readInt64AsNumber, scanAppend } from './scan-append.ts'

/** scanAppend must give scanBatches' verdict on every input: the same batches or the same error. */
function assertSameVerdict(buf: Buffer, options: ScanOptions, what: string): void {
  const expected = scanBatches(buf, { ...options, requireBatch: false })
  const out: AppendScan = { batches: -1, records: -1, offsets: -1, maxTimestampMs: -2 }
  const error = scanAppend(buf, options, out)
  if (expected.ok) {
    assert.equal(error, null, `${what}: refused ${JSON.stringify(error)}`)
    assert.equal(out.batches, expected.batches.length, what)
    assert.equal(
      out.records,
      expected.batches.reduce((n, b) => n + b.header.recordCount, 0),
      what,
    )
    assert.equal(
      out.offsets,
      expected.batches.reduce((n, b) => n + b.header.lastOffsetDelta + 1, 0),
      what,
    )
    assert.equal(
      out.maxTimestampMs,
      expected.batches.reduce((m, b) => Math.max(m, Number(b.header.maxTimestamp)), -1),
      what,
    )
  } else {
    assert.deepEqual(error, expected.error, what)
  }
}

const idempotent = batch([{ value: 'a' }, { value: 'b' }], { producerId: 7n })
const bases: [string, Buffer][] = [
  ['plain', valuesBatch(3, 'v')],
  ['idempotent', idempotent],
  ['gzip', batch([{ value: 'x'.repeat(200) }, { value: 'y' }], { compression: Compression.gzip })],
  [
    'control',
    encodeEndTxnMarkerBatch({
      marker: { type: ControlRecordType.commit, coordinatorEpoch: 1 },
      producerId: 9n,
      producerEpoch: 0,
      timestamp: 1000n,
    }),
  ],
  ['two batches', Buffer.concat([valuesBatch(2, 'a'), valuesBatch(1, 'b')])],
  ['empty', Buffer.alloc(0)],
  ['no records', encodeBatch({ records: [], lastOffsetDelta: 4 })],
]
const optionSets: [string, ScanOptions][] = [
  ['client', { origin: 'client' }],
  ['client max 100', { origin: 'client', batchBytesMax: 100 }],
  ['log', { origin: 'log' }],
]

describe('scanAppend', () => {
  it('agrees with scanBatches on valid batches', () => {
    for (const [name, buf] of bases)
      for (const [o, options] of optionSets) assertSameVerdict(buf, options, `${name} ${o}`)
  })

  it('agrees with scanBatches on every header byte changed, with the CRC left stale or fixed', () => {
    for (const [name, base] of bases) {
      if (base.length === 0) continue
      const headerEnd = Math.min(base.length, 70)
      for (let at = 0; at < headerEnd; at++) {
        for (const mask of [0x01, 0x02, 0x20, 0x80, 0xff]) {
          for (const fixCrc of [false, true]) {
            const buf = Buffer.from(base)
            buf[at]! ^= mask
            if (fixCrc) {
              try {
                updateBatchCrc(buf, 0)
              } catch {
                continue // the length no longer fits: nothing to fix
              }
            }
            for (const [o, options] of optionSets)
              assertSameVerdict(buf, options, `${name} byte ${at} ^ ${mask} crc ${fixCrc} ${o}`)
          }
        }
      }
    }
  })

  it('agrees with scanBatches on every truncation and on trailing bytes', () => {
    for (const [name, base] of bases) {
      for (let n = 0; n < base.length; n++)
        for (const [o, options] of optionSets)
          assertSameVerdict(base.subarray(0, n), options, `${name} [0,${n}) ${o}`)
      for (const tail of [1, 11, 12, 61]) {
        const buf = Buffer.concat([base, Buffer.alloc(tail, 2)])
        for (const [o, options] of optionSets) assertSameVerdict(buf, options, `${name} + ${tail} ${o}`)
      }
    }
  })

  it('reads an int64 timestamp as Number(readBigInt64BE) does', () => {
    const buf = Buffer.alloc(8)
    for (const v of [
      0n,
      1n,
      -1n,
      1_700_000_000_000n,
      2n ** 53n + 1n,
      2n ** 62n + 12345n,
      -(2n ** 63n),
      2n ** 63n - 1n,
    ]) {
      buf.writeBigInt64BE(v)
      assert.equal(readInt64AsNumber(buf, 0), Number(v), String(v))
    }
  })
})
