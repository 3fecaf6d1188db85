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
    const first = LOG_OVERHEAD + int32(buf, BatchOffsets.batchLength)
    if (first >= BATCH_HEADER_BYTES && first < end) crcCheckedEnd = crc32cBatchRun(buf, 0, end)
  }
  while (position < end) {
    let size = fastCheck(buf, position, end - position, client, batchBytesMax, crcCheckedEnd)
    if (size > 0) {
      records += int32(buf, position + BatchOffsets.recordCount)
    } else {
      const checked = checkBatch(buf, position, options)
      if ('reason' in checked) return checked
      records += checked.header.recordCount
      size = checked.size
    }
    offsets += int32(buf, position + BatchOffsets.lastOffsetDelta) + 1
    const batchMsMax = readInt64AsNumber(buf, position + BatchOffsets.maxTimestamp)
    if (batchMsMax > maxTimestampMs) maxTimestampMs = batchMsMax
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
  const batchLength = int32(buf, at + BatchOffsets.batchLength)
  if (batchLength < BATCH_LENGTH_MIN) return 0
  const size = LOG_OVERHEAD + batchLength
  if (size > batchBytesMax || size > remaining) return 0
  if (
    at + size > crcCheckedEnd &&
    crc32cRange(buf, at + CRC_START, at + size) !== uint32(buf, at + BatchOffsets.crc)
  )
    return 0
  const attributes = int32(buf, at + BatchOffsets.attributes) >> 16
  const codec = attributes & ATTRIBUTE_CODEC_MASK
  if (codec > CODEC_MAX) return 0
  const lastOffsetDelta = int32(buf, at + BatchOffsets.lastOffsetDelta)
  const recordCount = int32(buf, at + BatchOffsets.recordCount)
  if (client) {
    if (recordCount <= 0 || lastOffsetDelta < 0 || lastOffsetDelta + 1 !== recordCount) return 0
    if ((attributes & ATTRIBUTE_CONTROL) !== 0) return 0
    const noProducerId =
      int32(buf, at + BatchOffsets.producerId) === -1 && int32(buf, at + BatchOffsets.producerId + 4) === -1
    if (!noProducerId && int32(buf, at + BatchOffsets.baseSequence) < 0) return 0
  } else if (recordCount < 0 || lastOffsetDelta < 0 || recordCount > lastOffsetDelta + 1) {
    return 0
  }
  if (codec === CODEC_NONE && recordCount > (size - BATCH_HEADER_BYTES) / RECORD_BYTES_MIN) return 0
  return size
}

/** An int64 field (a timestamp) as a number, rounded as `Number(readBigInt64BE)` rounds it. */
export function readInt64AsNumber(buf: Buffer, at: number): number {
  return int32(buf, at) * 0x100000000 + uint32(buf, at + 4)
}

/**
 * The big-endian int32 at `buf[at]`, which the caller has bounds-checked (Buffer's readInt32BE
 * checks again and, in the append path's profile, was not inlined: 6-7% of a 64-batch append).
 */
function int32(buf: Buffer, at: number): number {
  return (buf[at]! << 24) | (buf[at + 1]! << 16) | (buf[at + 2]! << 8) | buf[at + 3]!
}

/** The big-endian uint32 at `buf[at]`, bounds-checked by the caller. */
function uint32(buf: Buffer, at: number): number {
  return int32(buf, at) >>> 0
}

/** Bytes of the (validated) batch at `at`. */
export function batchSize(buf: Buffer, at: number): number {
  return LOG_OVERHEAD + buf.readInt32BE(at + BatchOffsets.batchLength)
}
