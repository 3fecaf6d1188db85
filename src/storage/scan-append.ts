/**
 * The append path's batch check: the same checks as the protocol's `checkBatch`, reading only the
 * int32 fields they need (no header object, no BigInt), with every refusal worded by `checkBatch`.
 */
import {
  BATCH_HEADER_BYTES,
  BATCH_LENGTH_MIN,
  BatchOffsets,
  type BatchScanError,
  CRC_START,
  checkBatch,
  crc32cBatchRun,
  crc32cRange,
  LOG_OVERHEAD,
  MAGIC_V2,
  RECORD_BYTES_MIN,
  type ScanOptions,
} from '../protocol/index.ts'

/** What a scan found; reused by the caller across appends. */
export interface AppendScan {
  /** Batches in the buffer, which they fill exactly. */
  batches: number
  /** Sum of their recordCount fields. */
  records: number
  /** Offsets they span: the sum of `lastOffsetDelta + 1`. */
  offsets: number
  /** Largest batch maxTimestamp (ms, as `readInt64AsNumber` reads it), -1 when none is larger. */
  maxTimestampMs: number
}

const ATTRIBUTE_CODEC_MASK = 0x07
const ATTRIBUTE_CONTROL = 0x20
const CODEC_MAX = 4
const CODEC_NONE = 0

/**
 * Validate every batch in `buf` as `checkBatch(buf, position, options)` would, in order, filling
 * `out`; returns null when all pass, else the first refusal (as `checkBatch` words it, so that the
 * answer to a client is the same whichever path found it). `options.verifyCrc` must not be false.
 *
 * The fast path only accepts what `checkBatch` accepts: each of its tests is a condition below, and
 * any batch failing one is handed to `checkBatch` for the verdict.
 */
export function scanAppend(buf: Buffer, options: ScanOptions, out: AppendScan): BatchScanError | null {
  const client = (options.origin ?? 'client') === 'client'
  const batchBytesMax = options.batchBytesMax ?? Number.POSITIVE_INFINITY
  const end = buf.length
  let batches = 0
  let records = 0
  let offsets = 0
  let maxTimestampMs = -1
  let position = 0
  // Several batches (a follower's fetch, a producer's batches for one partition): their CRCs in one
  // native call; a batch below `crcCheckedEnd` needs none computed again. One batch: the usual call.
  let crcCheckedEnd = 0
  if (crc32cBatchRun !== null && end > BATCH_HEADER_BYTES) {
    const first = LOG_OVERHEAD + buf.readInt32BE(BatchOffsets.batchLength)
    if (first >= BATCH_HEADER_BYTES && first < end) crcCheckedEnd = crc32cBatchRun(buf, 0, end)
  }
  while (position < end) {
    let size = fastCheck(buf, position, end - position, client, batchBytesMax, crcCheckedEnd)
    if (size > 0) {
      records += buf.readInt32BE(position + BatchOffsets.recordCount)
    } else {
      const checked = checkBatch(buf, position, options)
      if ('reason' in checked) return checked
      records += checked.header.recordCount
      size = checked.size
    }
    offsets += buf.readInt32BE(position + BatchOffsets.lastOffsetDelta) + 1
    const batchMaxMs = readInt64AsNumber(buf, position + BatchOffsets.maxTimestamp)
    if (batchMaxMs > maxTimestampMs) maxTimestampMs = batchMaxMs
    position += size
    batches++
  }
  out.batches = batches
  out.records = records
  out.offsets = offsets
  out.maxTimestampMs = maxTimestampMs
  return null
}

/**
 * The batch's size when it passes every check, else 0 (then `checkBatch` decides). Its CRC is known
 * right when it ends at or below `crcCheckedEnd` (`crc32cBatchRun` checked it with its neighbours).
 */
function fastCheck(
  buf: Buffer,
  at: number,
  remaining: number,
  client: boolean,
  batchBytesMax: number,
  crcCheckedEnd: number,
): number {
  if (remaining < BATCH_HEADER_BYTES) return 0
  if (buf[at + BatchOffsets.magic] !== MAGIC_V2) return 0
  const batchLength = buf.readInt32BE(at + BatchOffsets.batchLength)
  if (batchLength < BATCH_LENGTH_MIN) return 0
  const size = LOG_OVERHEAD + batchLength
  if (size > batchBytesMax || size > remaining) return 0
  if (
    at + size > crcCheckedEnd &&
    crc32cRange(buf, at + CRC_START, at + size) !== buf.readUInt32BE(at + BatchOffsets.crc)
  )
    return 0
  const attributes = buf.readInt16BE(at + BatchOffsets.attributes)
  const codec = attributes & ATTRIBUTE_CODEC_MASK
  if (codec > CODEC_MAX) return 0
  const lastOffsetDelta = buf.readInt32BE(at + BatchOffsets.lastOffsetDelta)
  const recordCount = buf.readInt32BE(at + BatchOffsets.recordCount)
  if (client) {
    if (recordCount <= 0 || lastOffsetDelta < 0 || lastOffsetDelta + 1 !== recordCount) return 0
    if ((attributes & ATTRIBUTE_CONTROL) !== 0) return 0
    const noProducerId =
      buf.readInt32BE(at + BatchOffsets.producerId) === -1 &&
      buf.readInt32BE(at + BatchOffsets.producerId + 4) === -1
    if (!noProducerId && buf.readInt32BE(at + BatchOffsets.baseSequence) < 0) return 0
  } else if (recordCount < 0 || lastOffsetDelta < 0 || recordCount > lastOffsetDelta + 1) {
    return 0
  }
  if (codec === CODEC_NONE && recordCount > (size - BATCH_HEADER_BYTES) / RECORD_BYTES_MIN) return 0
  return size
}

/** An int64 field (a timestamp) as a number, rounded as `Number(readBigInt64BE)` rounds it. */
export function readInt64AsNumber(buf: Buffer, at: number): number {
  return buf.readInt32BE(at) * 0x100000000 + buf.readUInt32BE(at + 4)
}
