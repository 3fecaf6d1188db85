/**
 * The 61-byte header of a record batch (magic 2), its attribute bits, and the in-place setters the log
 * uses on the append path without decoding records. Offsets below are from the batch's first byte.
 */
import { DecodeError } from '../wire/reader.ts'
import { crc32cRange } from './crc32c.ts'

/** baseOffset (int64) + batchLength (int32): the bytes before what `batchLength` counts. */
export const LOG_OVERHEAD = 12
/** Everything up to and including recordCount; records (or the compressed records) follow. */
export const BATCH_HEADER_BYTES = 61
/** The only batch format Weir reads or writes. */
export const MAGIC_V2 = 2
/** The smallest legal `batchLength`: a header with no records. */
export const BATCH_LENGTH_MIN = BATCH_HEADER_BYTES - LOG_OVERHEAD

/** Field positions, Kafka's DefaultRecordBatch layout. */
export const BatchOffsets = {
  baseOffset: 0,
  batchLength: 8,
  partitionLeaderEpoch: 12,
  magic: 16,
  crc: 17,
  attributes: 21,
  lastOffsetDelta: 23,
  baseTimestamp: 27,
  maxTimestamp: 35,
  producerId: 43,
  producerEpoch: 51,
  baseSequence: 53,
  recordCount: 57,
} as const

/** The CRC covers attributes through the end of the batch; offset and leader epoch are outside it. */
export const CRC_START = BatchOffsets.attributes

/** RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP. */
export const NO_PRODUCER_ID = -1n
export const NO_PRODUCER_EPOCH = -1
export const NO_SEQUENCE = -1
export const NO_PARTITION_LEADER_EPOCH = -1
export const NO_TIMESTAMP = -1n

export interface BatchHeader {
  baseOffset: bigint
  /** Bytes after the batchLength field: the whole batch is `LOG_OVERHEAD + batchLength` bytes. */
  batchLength: number
  partitionLeaderEpoch: number
  magic: number
  /** Unsigned 32-bit CRC-32C as stored. */
  crc: number
  attributes: number
  lastOffsetDelta: number
  baseTimestamp: bigint
  maxTimestamp: bigint
  producerId: bigint
  producerEpoch: number
  baseSequence: number
  recordCount: number
}

/** Compression codec ids, attribute bits 0-2. */
export const Compression = {
  none: 0,
  gzip: 1,
  snappy: 2,
  lz4: 3,
  zstd: 4,
} as const
export type CompressionCodec = (typeof Compression)[keyof typeof Compression]

export const TimestampType = {
  createTime: 0,
  logAppendTime: 1,
} as const
export type TimestampType = (typeof TimestampType)[keyof typeof TimestampType]

/** Attribute bit masks (int16). Bits 7-15 are unused and written as zero. */
export const AttributeBits = {
  compression: 0x07,
  timestampType: 0x08,
  transactional: 0x10,
  control: 0x20,
  deleteHorizon: 0x40,
} as const

/** The codec id in bits 0-2; values 5-7 are not a known codec (see `isKnownCompression`). */
export function compressionOf(attributes: number): number {
  return attributes & AttributeBits.compression
}

export function isKnownCompression(codec: number): codec is CompressionCodec {
  return codec >= Compression.none && codec <= Compression.zstd
}

export function timestampTypeOf(attributes: number): TimestampType {
  return (attributes & AttributeBits.timestampType) === 0
    ? TimestampType.createTime
    : TimestampType.logAppendTime
}

export function isTransactional(attributes: number): boolean {
  return (attributes & AttributeBits.transactional) !== 0
}

export function isControl(attributes: number): boolean {
  return (attributes & AttributeBits.control) !== 0
}

/** Set by the log cleaner: baseTimestamp then holds the delete horizon (KIP-534). */
export function hasDeleteHorizon(attributes: number): boolean {
  return (attributes & AttributeBits.deleteHorizon) !== 0
}

export interface AttributeOptions {
  compression?: CompressionCodec
  timestampType?: TimestampType
  transactional?: boolean
  control?: boolean
  deleteHorizon?: boolean
}

/** The int16 attributes for these flags. */
export function makeAttributes(options: AttributeOptions): number {
  let a = options.compression ?? Compression.none
  if (options.timestampType === TimestampType.logAppendTime) a |= AttributeBits.timestampType
  if (options.transactional === true) a |= AttributeBits.transactional
  if (options.control === true) a |= AttributeBits.control
  if (options.deleteHorizon === true) a |= AttributeBits.deleteHorizon
  return a
}

function checkHeaderBounds(buf: Buffer, at: number): void {
  if (!Number.isInteger(at) || at < 0 || buf.length - at < BATCH_HEADER_BYTES) {
    throw new DecodeError(
      `batch header needs ${BATCH_HEADER_BYTES} bytes at ${at}, ${buf.length - at} remain`,
    )
  }
}

/**
 * The header of the batch starting at `buf[at]`. Reads fields only: it checks that 61 bytes exist
 * (else `DecodeError`), not the magic, lengths or CRC (that is `scanBatches`' job).
 */
export function readBatchHeader(buf: Buffer, at = 0): BatchHeader {
  checkHeaderBounds(buf, at)
  return {
    baseOffset: buf.readBigInt64BE(at + BatchOffsets.baseOffset),
    batchLength: buf.readInt32BE(at + BatchOffsets.batchLength),
    partitionLeaderEpoch: buf.readInt32BE(at + BatchOffsets.partitionLeaderEpoch),
    magic: buf.readInt8(at + BatchOffsets.magic),
    crc: buf.readUInt32BE(at + BatchOffsets.crc),
    attributes: buf.readInt16BE(at + BatchOffsets.attributes),
    lastOffsetDelta: buf.readInt32BE(at + BatchOffsets.lastOffsetDelta),
    baseTimestamp: buf.readBigInt64BE(at + BatchOffsets.baseTimestamp),
    maxTimestamp: buf.readBigInt64BE(at + BatchOffsets.maxTimestamp),
    producerId: buf.readBigInt64BE(at + BatchOffsets.producerId),
    producerEpoch: buf.readInt16BE(at + BatchOffsets.producerEpoch),
    baseSequence: buf.readInt32BE(at + BatchOffsets.baseSequence),
    recordCount: buf.readInt32BE(at + BatchOffsets.recordCount),
  }
}

/** Total bytes of the batch at `at` as its length field says (`LOG_OVERHEAD + batchLength`), unchecked. */
export function batchSizeAt(buf: Buffer, at: number): number {
  return LOG_OVERHEAD + buf.readInt32BE(at + BatchOffsets.batchLength)
}

/** The batch's last offset: baseOffset + lastOffsetDelta. */
export function lastOffsetOf(header: BatchHeader): bigint {
  return header.baseOffset + BigInt(header.lastOffsetDelta)
}

function batchEnd(buf: Buffer, at: number): number {
  checkHeaderBounds(buf, at)
  const end = at + batchSizeAt(buf, at)
  if (end < at + BATCH_HEADER_BYTES || end > buf.length) {
    throw new DecodeError(`batch at ${at} declares ${end - at} bytes; ${buf.length - at} available`)
  }
  return end
}

/** CRC-32C of the batch's attributes..end, as it should be stored in its crc field. */
export function computeBatchCrc(buf: Buffer, at = 0): number {
  return crc32cRange(buf, at + CRC_START, batchEnd(buf, at))
}

/** True when the stored CRC matches attributes..end. Throws `DecodeError` if the batch is not all there. */
export function batchCrcValid(buf: Buffer, at = 0): boolean {
  return computeBatchCrc(buf, at) === buf.readUInt32BE(at + BatchOffsets.crc)
}

/** Recompute and store the CRC after changing a field it covers. */
export function updateBatchCrc(buf: Buffer, at = 0): void {
  buf.writeUInt32BE(computeBatchCrc(buf, at), at + BatchOffsets.crc)
}

/**
 * Assign the batch's base offset in place (the leader's append). Outside the CRC: no recompute.
 * Example: `setBaseOffset(batch, 0, logEndOffset)`.
 */
export function setBaseOffset(buf: Buffer, at: number, offset: bigint): void {
  checkHeaderBounds(buf, at)
  buf.writeBigInt64BE(offset, at + BatchOffsets.baseOffset)
}

/** Stamp the leader epoch in place (the leader's append). Outside the CRC: no recompute. */
export function setPartitionLeaderEpoch(buf: Buffer, at: number, epoch: number): void {
  checkHeaderBounds(buf, at)
  buf.writeInt32BE(epoch, at + BatchOffsets.partitionLeaderEpoch)
}

export interface LogAppendTimeOptions {
  /**
   * Also set baseTimestamp to `timestamp` (default true). Kafka's in-place path
   * (DefaultRecordBatch.setMaxTimestamp) leaves baseTimestamp alone; pass false to produce its exact
   * bytes. Consumers read every record's timestamp from maxTimestamp under LogAppendTime either way.
   */
  baseTimestamp?: boolean
}

/**
 * For `message.timestamp.type=LogAppendTime`: set the timestamp-type bit, maxTimestamp (and by
 * default baseTimestamp) to the broker's append time, then recompute the CRC. The records are not
 * touched, so a compressed batch is not recompressed. Throws `DecodeError` if the batch is not whole.
 */
export function setMaxTimestampAndLogAppendTime(
  buf: Buffer,
  at: number,
  timestamp: bigint,
  options: LogAppendTimeOptions = {},
): void {
  const end = batchEnd(buf, at)
  const attributes = buf.readInt16BE(at + BatchOffsets.attributes)
  buf.writeInt16BE(attributes | AttributeBits.timestampType, at + BatchOffsets.attributes)
  buf.writeBigInt64BE(timestamp, at + BatchOffsets.maxTimestamp)
  // With the delete-horizon bit, baseTimestamp holds the horizon, which is not ours to move.
  const keepBase = options.baseTimestamp === false || (attributes & AttributeBits.deleteHorizon) !== 0
  if (!keepBase) buf.writeBigInt64BE(timestamp, at + BatchOffsets.baseTimestamp)
  buf.writeUInt32BE(crc32cRange(buf, at + CRC_START, end), at + BatchOffsets.crc)
}
