import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { DecodeError } from '../wire/reader.ts'
import {
  AttributeBits,
  BATCH_HEADER_BYTES,
  BatchOffsets,
  batchCrcValid,
  Compression,
  compressionOf,
  hasDeleteHorizon,
  isControl,
  isTransactional,
  LOG_OVERHEAD,
  lastOffsetOf,
  makeAttributes,
  readBatchHeader,
  setBaseOffset,
  setMaxTimestampAndLogAppendTime,
  setPartitionLeaderEpoch,
  TimestampType,
  timestampTypeOf,
} from './batch-header.ts'
import { encodeBatch } from './records.ts'

function sample(): Buffer {
  return encodeBatch({
    records: [
      { key: Buffer.from('a'), value: Buffer.from('one'), timestamp: 1000n },
      { key: null, value: Buffer.from('two'), timestamp: 1500n },
      { value: Buffer.from('three'), timestamp: 1200n },
    ],
    baseOffset: 40n,
    partitionLeaderEpoch: 3,
    producerId: 77n,
    producerEpoch: 2,
    baseSequence: 10,
    transactional: true,
  })
}

describe('batch header', () => {
  it('has the documented sizes', () => {
    assert.equal(LOG_OVERHEAD, 12)
    assert.equal(BATCH_HEADER_BYTES, 61)
    assert.equal(BatchOffsets.recordCount + 4, BATCH_HEADER_BYTES)
  })

  it('reads every field', () => {
    const buf = sample()
    const h = readBatchHeader(buf)
    assert.equal(h.baseOffset, 40n)
    assert.equal(h.batchLength, buf.length - LOG_OVERHEAD)
    assert.equal(h.partitionLeaderEpoch, 3)
    assert.equal(h.magic, 2)
    assert.equal(h.lastOffsetDelta, 2)
    assert.equal(h.baseTimestamp, 1000n)
    assert.equal(h.maxTimestamp, 1500n)
    assert.equal(h.producerId, 77n)
    assert.equal(h.producerEpoch, 2)
    assert.equal(h.baseSequence, 10)
    assert.equal(h.recordCount, 3)
    assert.equal(lastOffsetOf(h), 42n)
    assert.ok(isTransactional(h.attributes))
    assert.ok(!isControl(h.attributes))
    assert.equal(h.crc, buf.readUInt32BE(17))
  })

  it('reads a header at an offset inside a larger buffer', () => {
    const buf = Buffer.concat([Buffer.alloc(5, 0xee), sample()])
    assert.equal(readBatchHeader(buf, 5).baseOffset, 40n)
    assert.ok(batchCrcValid(buf, 5))
  })

  it('refuses to read past the end', () => {
    assert.throws(() => readBatchHeader(sample().subarray(0, 60)), DecodeError)
    assert.throws(() => readBatchHeader(sample(), sample().length - 60), DecodeError)
    assert.throws(() => readBatchHeader(sample(), -1), DecodeError)
    assert.throws(() => batchCrcValid(sample().subarray(0, 70)), DecodeError)
  })

  it('builds and reads attributes', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(0, 1, 2, 3, 4),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        (compression, logAppend, transactional, control, deleteHorizon) => {
          const a = makeAttributes({
            compression: compression as 0 | 1 | 2 | 3 | 4,
            timestampType: logAppend ? TimestampType.logAppendTime : TimestampType.createTime,
            transactional,
            control,
            deleteHorizon,
          })
          assert.equal(compressionOf(a), compression)
          assert.equal(timestampTypeOf(a), logAppend ? 1 : 0)
          assert.equal(isTransactional(a), transactional)
          assert.equal(isControl(a), control)
          assert.equal(hasDeleteHorizon(a), deleteHorizon)
          assert.equal(a & ~0x7f, 0)
        },
      ),
    )
    assert.equal(makeAttributes({ compression: Compression.zstd, control: true }), 4 | AttributeBits.control)
  })

  it('sets the base offset and leader epoch without touching the CRC', () => {
    const buf = sample()
    const crc = buf.readUInt32BE(BatchOffsets.crc)
    setBaseOffset(buf, 0, 123_456_789_012n)
    setPartitionLeaderEpoch(buf, 0, 99)
    const h = readBatchHeader(buf)
    assert.equal(h.baseOffset, 123_456_789_012n)
    assert.equal(h.partitionLeaderEpoch, 99)
    assert.equal(h.crc, crc)
    assert.ok(batchCrcValid(buf))
  })

  it('stamps LogAppendTime: type bit, max and base timestamp, fresh CRC', () => {
    const buf = sample()
    const before = readBatchHeader(buf)
    setMaxTimestampAndLogAppendTime(buf, 0, 1_700_000_000_123n)
    const h = readBatchHeader(buf)
    assert.equal(timestampTypeOf(h.attributes), TimestampType.logAppendTime)
    assert.equal(h.maxTimestamp, 1_700_000_000_123n)
    assert.equal(h.baseTimestamp, 1_700_000_000_123n)
    assert.equal(h.attributes & ~AttributeBits.timestampType, before.attributes)
    assert.notEqual(h.crc, before.crc)
    assert.ok(batchCrcValid(buf))
  })

  it('can leave baseTimestamp alone, as Kafka does in place', () => {
    const buf = sample()
    setMaxTimestampAndLogAppendTime(buf, 0, 5000n, { baseTimestamp: false })
    const h = readBatchHeader(buf)
    assert.equal(h.baseTimestamp, 1000n)
    assert.equal(h.maxTimestamp, 5000n)
    assert.ok(batchCrcValid(buf))
  })

  it('detects any flipped byte inside the CRC range', () => {
    const buf = sample()
    fc.assert(
      fc.property(
        fc.integer({ min: BatchOffsets.attributes, max: buf.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        (i, x) => {
          const copy = Buffer.from(buf)
          copy[i] = copy[i]! ^ x
          assert.equal(batchCrcValid(copy), false)
        },
      ),
      { numRuns: 300 },
    )
  })
})
