/**
 * Walks a buffer of concatenated record batches (a produce request's records, or a log segment's
 * bytes) and validates each header and CRC without decoding records. Failures are values, never
 * exceptions, with Kafka's error name attached so a handler can answer with it.
 */
import {
  BATCH_HEADER_BYTES,
  BATCH_LENGTH_MIN,
  type BatchHeader,
  BatchOffsets,
  Compression,
  CRC_START,
  compressionOf,
  isControl,
  isKnownCompression,
  LOG_OVERHEAD,
  MAGIC_V2,
  NO_PRODUCER_ID,
  readBatchHeader,
} from './batch-header.ts'
import { crc32cRange } from './crc32c.ts'

export interface ScannedBatch {
  /** Byte position of the batch's first byte (its baseOffset) in the scanned buffer. */
  position: number
  /** Total bytes: `LOG_OVERHEAD + header.batchLength`. */
  size: number
  header: BatchHeader
}

/**
 * Kafka's error names for a refused batch; `ErrorCode` maps them to numbers. Not among them:
 * UNSUPPORTED_FOR_MESSAGE_FORMAT, which Kafka 4 no longer answers to a v0/v1 batch (INVALID_RECORD).
 */
export type BatchErrorName =
  | 'CORRUPT_MESSAGE'
  | 'INVALID_RECORD'
  | 'UNSUPPORTED_COMPRESSION_TYPE'
  | 'MESSAGE_TOO_LARGE'

export type BatchScanReason =
  /** The buffer ends inside a batch (a torn log tail, or a short produce payload). */
  | 'truncated'
  /** batchLength is below the 49-byte header or runs past what the limit allows. */
  | 'batch-length-out-of-range'
  /** batchLength is valid but above `batchBytesMax` (max.message.bytes). */
  | 'batch-too-large'
  /** magic 0 or 1 (pre-0.11 message sets) or an unknown magic. */
  | 'unsupported-magic'
  | 'crc-mismatch'
  /** Compression bits 5-7. */
  | 'unknown-compression'
  /** lastOffsetDelta and recordCount disagree, or either is negative. */
  | 'record-count-mismatch'
  /** A client wrote a control batch, which only the transaction coordinator may. */
  | 'client-control-batch'
  /** A client's idempotent batch (producerId set) without a base sequence. */
  | 'missing-sequence'
  /** The buffer holds no batch at all (produce requests must carry one). */
  | 'empty'

export interface BatchScanError {
  reason: BatchScanReason
  errorName: BatchErrorName
  /** Position of the offending batch. */
  position: number
  message: string
}

export type BatchScanResult =
  | { ok: true; batches: ScannedBatch[]; validBytes: number }
  | {
      ok: false
      error: BatchScanError
      /** The valid batches before the error, so the log can keep a prefix after a torn write. */
      batches: ScannedBatch[]
      /** Bytes covered by `batches`. */
      validBytes: number
    }

export interface ScanOptions {
  /**
   * `client` (default): a producer's batches, checked as Kafka's LogValidator checks them
   * (recordCount = lastOffsetDelta + 1 and > 0, no control batches, a sequence when idempotent).
   * `log`: bytes already in a log, where compaction may leave fewer records than the offset range
   * (even none) and control batches are normal.
   */
  origin?: 'client' | 'log'
  /** Refuse a batch larger than this (MESSAGE_TOO_LARGE). Default: no limit beyond the buffer. */
  batchBytesMax?: number
  /** Verify each CRC (default true). */
  verifyCrc?: boolean
  /** Refuse an empty buffer (default: true for `client`, false for `log`). */
  requireBatch?: boolean
}

function fail(
  reason: BatchScanReason,
  errorName: BatchErrorName,
  position: number,
  message: string,
): BatchScanError {
  return { reason, errorName, position, message }
}

/**
 * Check the batch at `position`, however few bytes remain. Returns the batch or the reason it is
 * refused. Reads the header fields and CRCs the body, nothing else.
 */
export function checkBatch(
  buf: Buffer,
  position: number,
  options: ScanOptions = {},
): ScannedBatch | BatchScanError {
  const remaining = buf.length - position
  const origin = options.origin ?? 'client'
  if (remaining < LOG_OVERHEAD) {
    return fail(
      'truncated',
      'CORRUPT_MESSAGE',
      position,
      `${remaining} bytes left, too few for a batch's offset and length`,
    )
  }
  const batchLength = buf.readInt32BE(position + BatchOffsets.batchLength)
  // Magic before anything else: an old message set has a different layout past it.
  if (remaining > BatchOffsets.magic) {
    const magic = buf.readInt8(position + BatchOffsets.magic)
    if (magic !== MAGIC_V2) {
      const message =
        magic === 0 || magic === 1
          ? `record batch magic ${magic} (the pre-0.11 message format) is not supported: Weir accepts only magic 2; upgrade the client or set its message format to v2`
          : `unknown record batch magic ${magic}: Weir accepts only magic 2`
      // Kafka 4 answers INVALID_RECORD here (ProduceRequest.validateRecords: "only allowed to
      // contain record batches with magic version 2").
      return fail('unsupported-magic', 'INVALID_RECORD', position, message)
    }
  }
  if (batchLength < BATCH_LENGTH_MIN) {
    return fail(
      'batch-length-out-of-range',
      'CORRUPT_MESSAGE',
      position,
      `batch length ${batchLength} is smaller than the ${BATCH_LENGTH_MIN}-byte header`,
    )
  }
  const size = LOG_OVERHEAD + batchLength
  if (options.batchBytesMax !== undefined && size > options.batchBytesMax) {
    return fail(
      'batch-too-large',
      'MESSAGE_TOO_LARGE',
      position,
      `batch of ${size} bytes is larger than the limit of ${options.batchBytesMax} bytes`,
    )
  }
  if (size > remaining) {
    return fail(
      'truncated',
      'CORRUPT_MESSAGE',
      position,
      `batch declares ${size} bytes but only ${remaining} remain`,
    )
  }
  const header = readBatchHeader(buf, position)
  if (options.verifyCrc !== false) {
    const crc = crc32cRange(buf, position + CRC_START, position + size)
    if (crc !== header.crc) {
      return fail(
        'crc-mismatch',
        'CORRUPT_MESSAGE',
        position,
        `record batch is corrupt: stored crc ${header.crc} but computed ${crc}`,
      )
    }
  }
  // After the CRC, so a flipped attribute bit reads as corruption, not as an unknown codec.
  const codec = compressionOf(header.attributes)
  if (!isKnownCompression(codec)) {
    return fail(
      'unknown-compression',
      'UNSUPPORTED_COMPRESSION_TYPE',
      position,
      `unknown compression codec id ${codec}`,
    )
  }
  const { lastOffsetDelta, recordCount } = header
  if (origin === 'client') {
    // LogValidator.validateBatch for batches from clients.
    if (recordCount <= 0 || lastOffsetDelta < 0 || lastOffsetDelta + 1 !== recordCount) {
      return fail(
        'record-count-mismatch',
        'INVALID_RECORD',
        position,
        `inconsistent batch: lastOffsetDelta ${lastOffsetDelta} (offset range of ${lastOffsetDelta + 1}) and record count ${recordCount}`,
      )
    }
    if (isControl(header.attributes)) {
      return fail(
        'client-control-batch',
        'INVALID_RECORD',
        position,
        'clients are not allowed to write control records',
      )
    }
    if (header.producerId !== NO_PRODUCER_ID && header.baseSequence < 0) {
      return fail(
        'missing-sequence',
        'INVALID_RECORD',
        position,
        `invalid sequence number ${header.baseSequence} in a batch with producerId ${header.producerId}`,
      )
    }
  } else if (recordCount < 0 || lastOffsetDelta < 0 || recordCount > lastOffsetDelta + 1) {
    // Compaction keeps lastOffsetDelta and may drop records, so fewer records than offsets is fine.
    return fail(
      'record-count-mismatch',
      'CORRUPT_MESSAGE',
      position,
      `inconsistent batch: lastOffsetDelta ${lastOffsetDelta} and record count ${recordCount}`,
    )
  }
  // Each record is at least 7 bytes, so a count the body cannot hold is corrupt (uncompressed only:
  // a compressed body can be smaller than its records).
  if (codec === Compression.none && recordCount > (size - BATCH_HEADER_BYTES) / RECORD_BYTES_MIN) {
    return fail(
      'record-count-mismatch',
      'CORRUPT_MESSAGE',
      position,
      `record count ${recordCount} cannot fit in ${size - BATCH_HEADER_BYTES} bytes of records`,
    )
  }
  return { position, size, header }
}

/** length, attributes, timestampDelta, offsetDelta, key length, value length, header count: 1 byte each. */
export const RECORD_BYTES_MIN = 7

/**
 * Validate every batch in `buf`, in order. Stops at the first refused batch and returns it with the
 * valid prefix. Example: a produce handler answers `result.error.errorName` for the partition; log
 * recovery truncates to `result.validBytes` when `result.error.reason === 'truncated'`.
 */
export function scanBatches(buf: Buffer, options: ScanOptions = {}): BatchScanResult {
  const batches: ScannedBatch[] = []
  let position = 0
  while (position < buf.length) {
    const checked = checkBatch(buf, position, options)
    if ('reason' in checked) return { ok: false, error: checked, batches, validBytes: position }
    batches.push(checked)
    position += checked.size
  }
  const requireBatch = options.requireBatch ?? (options.origin ?? 'client') === 'client'
  if (requireBatch && batches.length === 0) {
    return {
      ok: false,
      error: fail('empty', 'INVALID_RECORD', 0, 'the records hold no record batch'),
      batches,
      validBytes: 0,
    }
  }
  return { ok: true, batches, validBytes: position }
}
