import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { DecodeError } from '../wire/reader.ts'
import {
  BATCH_HEADER_BYTES,
  BatchOffsets,
  Compression,
  type CompressionCodec,
  isTransactional,
  readBatchHeader,
  TimestampType,
  updateBatchCrc,
} from './batch-header.ts'
import { GOLDEN_URL, type Golden, jsonPayload } from './fixtures/golden.ts'
import {
  BatchDecodeError,
  decodeBatch,
  type EncodeBatchOptions,
  encodeBatch,
  type RecordInput,
} from './records.ts'

const golden = JSON.parse(readFileSync(GOLDEN_URL, 'utf8')) as Golden

const CODECS: CompressionCodec[] = [
  Compression.none,
  Compression.gzip,
  Compression.snappy,
  Compression.lz4,
  Compression.zstd,
]

/** Max of bigints (Math.max takes numbers only). */
function maxOf(values: bigint[]): bigint {
  let m = -1n
  for (const v of values) if (v > m) m = v
  return m
}

const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'))
const bytesOrNull = (h: string | null) => (h === null ? null : Buffer.from(h, 'hex'))

function reason(f: () => unknown): string {
  try {
    f()
    return 'ok'
  } catch (e) {
    assert.ok(e instanceof BatchDecodeError, `expected BatchDecodeError, got ${String(e)}`)
    assert.ok(e instanceof DecodeError)
    return e.reason
  }
}

const recordArb: fc.Arbitrary<RecordInput> = fc.record({
  key: fc.option(fc.uint8Array({ maxLength: 40 }).map(Buffer.from), { nil: null }),
  value: fc.option(fc.uint8Array({ maxLength: 300 }).map(Buffer.from), { nil: null }),
  headers: fc.array(
    fc.record({
      key: fc.string({ maxLength: 12 }),
      value: fc.option(fc.uint8Array({ maxLength: 20 }).map(Buffer.from), { nil: null }),
    }),
    { maxLength: 3 },
  ),
  timestamp: fc.bigInt({ min: 1_600_000_000_000n, max: 1_800_000_000_000n }),
})

describe('records', () => {
  it('decodes batches written by kafka-python, for every codec', () => {
    for (const g of golden.batches) {
      const buf = Buffer.from(g.hex, 'hex')
      const { header, records } = decodeBatch(buf)
      assert.equal(header.attributes & 7, g.codec, g.name)
      assert.equal(isTransactional(header.attributes), g.transactional, g.name)
      assert.equal(header.producerId, g.transactional ? 123456789n : -1n, g.name)
      assert.equal(header.baseSequence, g.transactional ? 42 : -1, g.name)
      assert.equal(records.length, golden.records.length, g.name)
      records.forEach((r, i) => {
        const want = golden.records[i]!
        assert.equal(r.offsetDelta, want.offsetDelta)
        assert.equal(r.offset, header.baseOffset + BigInt(want.offsetDelta))
        assert.equal(r.timestamp, BigInt(want.timestamp), `${g.name} record ${i}`)
        assert.equal(hex(r.key), want.key)
        assert.equal(hex(r.value), want.value)
        assert.deepEqual(
          r.headers.map((h) => [h.key, hex(h.value)]),
          want.headers,
        )
      })
    }
  })

  it('re-encodes kafka-python uncompressed batches to the same bytes', () => {
    for (const g of golden.batches.filter((b) => b.codec === 0)) {
      const buf = Buffer.from(g.hex, 'hex')
      const { header } = decodeBatch(buf)
      const again = encodeBatch({
        records: golden.records.map((r) => ({
          key: bytesOrNull(r.key),
          value: bytesOrNull(r.value),
          headers: r.headers.map(([key, value]) => ({ key, value: bytesOrNull(value) })),
          timestamp: BigInt(r.timestamp),
          offsetDelta: r.offsetDelta,
        })),
        baseOffset: header.baseOffset,
        partitionLeaderEpoch: header.partitionLeaderEpoch,
        producerId: header.producerId,
        producerEpoch: header.producerEpoch,
        baseSequence: header.baseSequence,
        transactional: g.transactional,
      })
      assert.equal(again.toString('hex'), g.hex, g.name)
    }
  })

  it('round-trips any records with every codec and producer fields', () => {
    fc.assert(
      fc.property(
        fc.array(recordArb, { minLength: 1, maxLength: 8 }),
        fc.constantFrom(...CODECS),
        fc.bigInt({ min: 0n, max: 2n ** 62n }),
        fc.boolean(),
        (records, compression, baseOffset, transactional) => {
          const options: EncodeBatchOptions = {
            records,
            compression,
            baseOffset,
            partitionLeaderEpoch: 7,
            producerId: 1234n,
            producerEpoch: 3,
            baseSequence: 99,
            transactional,
          }
          const buf = encodeBatch(options)
          const { header, records: out } = decodeBatch(buf)
          assert.equal(header.baseOffset, baseOffset)
          assert.equal(header.recordCount, records.length)
          assert.equal(header.lastOffsetDelta, records.length - 1)
          assert.equal(header.baseTimestamp, records[0]!.timestamp)
          assert.equal(header.maxTimestamp, maxOf(records.map((r) => r.timestamp!)))
          assert.equal(isTransactional(header.attributes), transactional)
          assert.equal(header.attributes & 7, compression)
          out.forEach((r, i) => {
            const want = records[i]!
            assert.equal(r.offset, baseOffset + BigInt(i))
            assert.equal(r.timestamp, want.timestamp)
            assert.deepEqual(r.key, want.key)
            assert.deepEqual(r.value, want.value)
            assert.deepEqual(
              r.headers.map((h) => [h.key, h.value]),
              want.headers!.map((h) => [h.key, h.value]),
            )
          })
        },
      ),
      { numRuns: 150 },
    )
  })

  it('round-trips large values with every codec', () => {
    const records = [
      { key: Buffer.from('big'), value: jsonPayload(300_000), timestamp: 1n },
      { key: null, value: jsonPayload(10_000, 2), timestamp: 2n },
    ]
    for (const compression of CODECS) {
      const { records: out } = decodeBatch(encodeBatch({ records, compression }))
      assert.deepEqual(out[0]!.value, records[0]!.value)
      assert.deepEqual(out[1]!.value, records[1]!.value)
    }
  })

  it('keeps keys, values and header values as views into the batch (no copies)', () => {
    const buf = encodeBatch({
      records: [
        {
          key: Buffer.from('key'),
          value: jsonPayload(5000),
          headers: [{ key: 'h', value: Buffer.from('v') }],
        },
      ],
    })
    const [r] = decodeBatch(buf).records
    for (const view of [r!.key!, r!.value!, r!.headers[0]!.value!]) {
      assert.equal(view.buffer, buf.buffer)
      assert.ok(
        view.byteOffset >= buf.byteOffset + BATCH_HEADER_BYTES &&
          view.byteOffset < buf.byteOffset + buf.length,
      )
    }
  })

  it('decodes a batch at an offset inside a larger buffer', () => {
    const a = encodeBatch({ records: [{ value: Buffer.from('first') }] })
    const b = encodeBatch({ records: [{ value: Buffer.from('second') }], baseOffset: 1n })
    const both = Buffer.concat([a, b])
    assert.equal(decodeBatch(both, a.length).records[0]!.value!.toString(), 'second')
  })

  it('gives every record the append time under LogAppendTime', () => {
    const buf = encodeBatch({
      records: [
        { value: Buffer.from('a'), timestamp: 10n },
        { value: Buffer.from('b'), timestamp: 20n },
      ],
      timestampType: TimestampType.logAppendTime,
      logAppendTime: 99n,
    })
    const { header, records } = decodeBatch(buf)
    assert.equal(header.maxTimestamp, 99n)
    assert.deepEqual(
      records.map((r) => r.timestamp),
      [99n, 99n],
    )
  })

  it('encodes compacted batches: offset gaps, preserved lastOffsetDelta, delete horizon', () => {
    const buf = encodeBatch({
      records: [
        { value: Buffer.from('a'), offsetDelta: 2, timestamp: 50n },
        { value: null, offsetDelta: 5, timestamp: 60n },
      ],
      lastOffsetDelta: 9,
      baseOffset: 100n,
      deleteHorizonMs: 1000n,
    })
    const { header, records } = decodeBatch(buf)
    assert.equal(header.lastOffsetDelta, 9)
    assert.equal(header.baseTimestamp, 1000n)
    assert.deepEqual(
      records.map((r) => [r.offset, r.timestamp]),
      [
        [102n, 50n],
        [105n, 60n],
      ],
    )
    assert.equal(readBatchHeader(encodeBatch({ records: [], lastOffsetDelta: 4 })).recordCount, 0)
  })

  it('asserts on programmer errors', () => {
    assert.throws(() => encodeBatch({ records: [{ offsetDelta: 1 }, { offsetDelta: 1 }] }), /must increase/)
    assert.throws(
      () => encodeBatch({ records: [{}], timestampType: TimestampType.logAppendTime }),
      /logAppendTime/,
    )
  })

  it('refuses a bad CRC and an incomplete batch', () => {
    const buf = encodeBatch({ records: [{ value: Buffer.from('x') }] })
    const bad = Buffer.from(buf)
    bad[BatchOffsets.crc] = bad[BatchOffsets.crc]! ^ 1
    assert.equal(
      reason(() => decodeBatch(bad)),
      'crc-mismatch',
    )
    assert.equal(
      reason(() => decodeBatch(bad, 0, { verifyCrc: false })),
      'ok',
    )
    assert.equal(
      reason(() => decodeBatch(buf.subarray(0, buf.length - 1))),
      'truncated',
    )
  })

  it('refuses records that do not fill the batch exactly', () => {
    // Values long enough that a third record could fit, so decoding (not the header check) finds it.
    const buf = encodeBatch({ records: [{ value: Buffer.alloc(20) }, { value: Buffer.alloc(20) }] })
    const fewer = Buffer.from(buf)
    fewer.writeInt32BE(1, BatchOffsets.recordCount)
    fewer.writeInt32BE(0, BatchOffsets.lastOffsetDelta)
    updateBatchCrc(fewer)
    assert.equal(
      reason(() => decodeBatch(fewer)),
      'corrupt-records',
    )
    const more = Buffer.from(buf)
    more.writeInt32BE(3, BatchOffsets.recordCount)
    more.writeInt32BE(2, BatchOffsets.lastOffsetDelta)
    updateBatchCrc(more)
    assert.equal(
      reason(() => decodeBatch(more)),
      'corrupt-records',
    )
  })

  it('bounds decompression and reports corrupt compressed bodies', () => {
    const buf = encodeBatch({ records: [{ value: Buffer.alloc(1 << 20) }], compression: Compression.zstd })
    assert.equal(
      reason(() => decodeBatch(buf, 0, { decompressedBytesMax: 4096 })),
      'decompressed-too-large',
    )
    const broken = Buffer.from(buf)
    broken.fill(0x41, BATCH_HEADER_BYTES, BATCH_HEADER_BYTES + 8)
    updateBatchCrc(broken)
    assert.equal(
      reason(() => decodeBatch(broken)),
      'corrupt-compression',
    )
  })

  it('throws only BatchDecodeError on any mutated record bytes (CRC fixed up)', () => {
    const samples = CODECS.map((compression) =>
      encodeBatch({
        records: [
          {
            key: Buffer.from('k1'),
            value: jsonPayload(200),
            headers: [{ key: 'a', value: Buffer.from('b') }],
          },
          { key: null, value: jsonPayload(100, 3), timestamp: 5n },
        ],
        compression,
      }),
    )
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), (which, at, x) => {
        const b = Buffer.from(samples[which % samples.length]!)
        const i = BATCH_HEADER_BYTES + (at % (b.length - BATCH_HEADER_BYTES))
        b[i] = b[i]! ^ x
        updateBatchCrc(b)
        reason(() => decodeBatch(b))
      }),
      { numRuns: 400 },
    )
  })
})
