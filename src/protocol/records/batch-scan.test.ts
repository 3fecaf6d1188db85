import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { BatchOffsets, Compression, LOG_OVERHEAD, updateBatchCrc } from './batch-header.ts'
import { type BatchScanResult, scanBatches } from './batch-scan.ts'
import { ControlRecordType, encodeEndTxnMarkerBatch } from './control-record.ts'
import { jsonPayload } from './fixtures/golden.ts'
import { encodeBatch } from './records.ts'

function batch(n: number, options: { compression?: 0 | 1 | 2 | 3 | 4; baseOffset?: bigint } = {}): Buffer {
  return encodeBatch({
    records: Array.from({ length: n }, (_, i) => ({
      key: Buffer.from(`k${i}`),
      value: jsonPayload(40 + i, i + 1),
      timestamp: 1_700_000_000_000n + BigInt(i),
    })),
    ...options,
  })
}

/** Change header bytes and fix the CRC, so the check under test is the one that fires. */
function patched(buf: Buffer, patch: (b: Buffer) => void): Buffer {
  const b = Buffer.from(buf)
  patch(b)
  updateBatchCrc(b)
  return b
}

function error(result: BatchScanResult): { reason: string; errorName: string; message: string } {
  assert.equal(result.ok, false, 'expected a refused batch')
  if (result.ok) throw new Error('unreachable')
  return result.error
}

describe('scanBatches', () => {
  const three = [
    batch(3),
    batch(1, { compression: Compression.lz4 }),
    batch(5, { compression: Compression.gzip }),
  ]
  const stream = Buffer.concat(three)

  it('finds every batch with its position, size and header', () => {
    const result = scanBatches(stream)
    assert.ok(result.ok)
    assert.equal(result.validBytes, stream.length)
    assert.deepEqual(
      result.batches.map((b) => [b.position, b.size, b.header.recordCount]),
      [
        [0, three[0]!.length, 3],
        [three[0]!.length, three[1]!.length, 1],
        [three[0]!.length + three[1]!.length, three[2]!.length, 5],
      ],
    )
  })

  it('reports any truncation as a value, keeping the valid prefix', () => {
    const boundaries = [0, three[0]!.length, three[0]!.length + three[1]!.length, stream.length]
    for (let cut = 0; cut < stream.length; cut++) {
      const result = scanBatches(stream.subarray(0, cut), { origin: 'log' })
      const prefix = Math.max(...boundaries.filter((b) => b <= cut))
      assert.equal(result.validBytes, prefix, `cut ${cut}`)
      if (cut === prefix) assert.ok(result.ok, `cut ${cut}`)
      else {
        const e = error(result)
        assert.equal(e.reason, 'truncated', `cut ${cut}`)
        assert.equal(e.errorName, 'CORRUPT_MESSAGE')
      }
    }
  })

  it('detects any flipped byte in the CRC range as a CRC mismatch', () => {
    const one = three[2]!
    fc.assert(
      fc.property(
        fc.integer({ min: BatchOffsets.attributes, max: one.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        (i, x) => {
          const b = Buffer.from(one)
          b[i] = b[i]! ^ x
          const e = error(scanBatches(b))
          assert.equal(e.reason, 'crc-mismatch')
          assert.equal(e.errorName, 'CORRUPT_MESSAGE')
        },
      ),
      { numRuns: 300 },
    )
  })

  it('never throws, whatever byte of the stream is changed', () => {
    fc.assert(
      fc.property(
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        fc.constantFrom<'client' | 'log'>('client', 'log'),
        (at, x, origin) => {
          const b = Buffer.from(stream)
          const i = at % b.length
          b[i] = b[i]! ^ x
          const result = scanBatches(b, { origin })
          if (i >= BatchOffsets.attributes && i < three[0]!.length) assert.equal(result.ok, false)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('refuses a batch length below the header', () => {
    const b = Buffer.from(three[0]!)
    b.writeInt32BE(10, BatchOffsets.batchLength)
    const e = error(scanBatches(b))
    assert.equal(e.reason, 'batch-length-out-of-range')
    assert.equal(e.errorName, 'CORRUPT_MESSAGE')
    b.writeInt32BE(-5, BatchOffsets.batchLength)
    assert.equal(error(scanBatches(b)).reason, 'batch-length-out-of-range')
  })

  it('refuses old message formats (magic 0 and 1) with a clear message', () => {
    // A v1 message: offset, size, crc, magic 1, attributes, timestamp, key -1, value "x".
    const v1 = Buffer.alloc(LOG_OVERHEAD + 4 + 1 + 1 + 8 + 4 + 4 + 1)
    v1.writeInt32BE(v1.length - LOG_OVERHEAD, 8)
    v1.writeInt8(1, 16)
    v1.writeInt32BE(-1, 26)
    v1.writeInt32BE(1, 30)
    for (const magic of [0, 1]) {
      v1.writeInt8(magic, 16)
      const e = error(scanBatches(v1))
      assert.equal(e.reason, 'unsupported-magic')
      assert.equal(e.errorName, 'INVALID_RECORD')
      assert.match(e.message, new RegExp(`magic ${magic}.*Weir accepts only magic 2`))
    }
    const future = patched(three[0]!, (b) => b.writeInt8(3, BatchOffsets.magic))
    assert.equal(error(scanBatches(future)).reason, 'unsupported-magic')
  })

  it('refuses inconsistent lastOffsetDelta and recordCount from clients', () => {
    const b = patched(three[0]!, (x) => x.writeInt32BE(2, BatchOffsets.recordCount))
    const e = error(scanBatches(b))
    assert.equal(e.reason, 'record-count-mismatch')
    assert.equal(e.errorName, 'INVALID_RECORD')
    const negative = patched(three[0]!, (x) => x.writeInt32BE(-1, BatchOffsets.lastOffsetDelta))
    assert.equal(error(scanBatches(negative)).reason, 'record-count-mismatch')
  })

  it('lets the log hold compacted batches with fewer records than offsets, not more', () => {
    const compacted = encodeBatch({
      records: [{ value: Buffer.from('kept'), offsetDelta: 4, timestamp: 5n }],
      lastOffsetDelta: 9,
    })
    assert.ok(scanBatches(compacted, { origin: 'log' }).ok)
    assert.equal(error(scanBatches(compacted)).reason, 'record-count-mismatch')
    const empty = encodeBatch({ records: [], lastOffsetDelta: 3 })
    assert.ok(scanBatches(empty, { origin: 'log' }).ok)
    const tooMany = patched(compacted, (x) => x.writeInt32BE(11, BatchOffsets.recordCount))
    const e = error(scanBatches(tooMany, { origin: 'log' }))
    assert.equal(e.reason, 'record-count-mismatch')
    assert.equal(e.errorName, 'CORRUPT_MESSAGE')
  })

  it('refuses a record count the uncompressed body cannot hold', () => {
    const b = patched(three[0]!, (x) => {
      x.writeInt32BE(100_000, BatchOffsets.recordCount)
      x.writeInt32BE(99_999, BatchOffsets.lastOffsetDelta)
    })
    assert.equal(error(scanBatches(b)).reason, 'record-count-mismatch')
  })

  it('refuses control batches from clients, accepts them in the log', () => {
    const marker = encodeEndTxnMarkerBatch({
      marker: { type: ControlRecordType.commit, coordinatorEpoch: 1 },
      producerId: 9n,
      producerEpoch: 0,
      timestamp: 1n,
    })
    const e = error(scanBatches(marker))
    assert.equal(e.reason, 'client-control-batch')
    assert.equal(e.errorName, 'INVALID_RECORD')
    assert.ok(scanBatches(marker, { origin: 'log' }).ok)
  })

  it('refuses an idempotent batch without a sequence', () => {
    const b = encodeBatch({ records: [{ value: Buffer.from('x') }], producerId: 5n, producerEpoch: 0 })
    const e = error(scanBatches(b))
    assert.equal(e.reason, 'missing-sequence')
    assert.equal(e.errorName, 'INVALID_RECORD')
    const ok = encodeBatch({
      records: [{ value: Buffer.from('x') }],
      producerId: 5n,
      producerEpoch: 0,
      baseSequence: 0,
    })
    assert.ok(scanBatches(ok).ok)
  })

  it('refuses unknown compression codecs', () => {
    const b = patched(three[0]!, (x) => x.writeInt16BE(6, BatchOffsets.attributes))
    const e = error(scanBatches(b))
    assert.equal(e.reason, 'unknown-compression')
    assert.equal(e.errorName, 'UNSUPPORTED_COMPRESSION_TYPE')
  })

  it('refuses a batch over batchBytesMax', () => {
    const e = error(scanBatches(stream, { batchBytesMax: three[0]!.length - 1 }))
    assert.equal(e.reason, 'batch-too-large')
    assert.equal(e.errorName, 'MESSAGE_TOO_LARGE')
    assert.ok(scanBatches(stream, { batchBytesMax: Math.max(...three.map((b) => b.length)) }).ok)
  })

  it('refuses an empty produce payload, accepts an empty log range', () => {
    assert.equal(error(scanBatches(Buffer.alloc(0))).reason, 'empty')
    assert.ok(scanBatches(Buffer.alloc(0), { origin: 'log' }).ok)
  })

  it('skips CRCs when asked', () => {
    const b = Buffer.from(three[0]!)
    b[b.length - 1] = b[b.length - 1]! ^ 1
    assert.equal(error(scanBatches(b)).reason, 'crc-mismatch')
    assert.ok(scanBatches(b, { verifyCrc: false }).ok)
  })
})
