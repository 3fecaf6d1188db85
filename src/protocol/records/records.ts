/**
 * The records inside a v2 batch: decoding a whole batch (decompressing as needed) and encoding one
 * with a valid CRC. Decoded keys, values and header values are views into the batch (or into the
 * decompressed buffer), never copies.
 */
import { assert } from '../../model/index.ts'
import { DecodeError, Reader } from '../wire/reader.ts'
import { Writer } from '../wire/writer.ts'
import {
  BATCH_HEADER_BYTES,
  type BatchHeader,
  BatchOffsets,
  Compression,
  type CompressionCodec,
  CRC_START,
  compressionOf,
  LOG_OVERHEAD,
  MAGIC_V2,
  makeAttributes,
  NO_PARTITION_LEADER_EPOCH,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  NO_TIMESTAMP,
  TimestampType,
  timestampTypeOf,
} from './batch-header.ts'
import { type BatchErrorName, type BatchScanReason, checkBatch, RECORD_BYTES_MIN } from './batch-scan.ts'
import { compress, decompress } from './compression.ts'
import { CompressionError } from './compression-error.ts'
import { crc32c } from './crc32c.ts'

/** Default bound on a batch's decompressed records when the caller gives none. */
export const DECOMPRESSED_BYTES_MAX_DEFAULT = 64 * 1024 * 1024
/** Smallest record body after its length varint: attributes, and one byte for each varint field. */
const RECORD_BODY_BYTES_MIN = RECORD_BYTES_MIN - 1
/** Smallest encoded header: key length and value length varints. */
const HEADER_BYTES_MIN = 2

export interface RecordHeader {
  key: string
  value: Buffer | null
}

/** One decoded record. `offset` and `timestamp` are absolute, computed from the batch header. */
export interface KafkaRecord {
  /** Unused by Kafka (bits 0-7 reserved); kept to re-encode the same bytes. */
  attributes: number
  offsetDelta: number
  timestampDelta: bigint
  offset: bigint
  /** baseTimestamp + timestampDelta, or the batch's maxTimestamp under LogAppendTime. */
  timestamp: bigint
  key: Buffer | null
  value: Buffer | null
  headers: RecordHeader[]
}

export interface DecodedBatch {
  header: BatchHeader
  records: KafkaRecord[]
}

export type BatchDecodeReason =
  | BatchScanReason
  | 'corrupt-records'
  | 'corrupt-compression'
  | 'decompressed-too-large'
  | 'unsupported-compression'

/** A batch that cannot be decoded, with the Kafka error name a handler answers with. */
export class BatchDecodeError extends DecodeError {
  override name = 'BatchDecodeError'
  readonly reason: BatchDecodeReason
  readonly errorName: BatchErrorName

  constructor(reason: BatchDecodeReason, errorName: BatchErrorName, message: string) {
    super(message)
    this.reason = reason
    this.errorName = errorName
  }
}

export interface DecodeBatchOptions {
  /** Check the CRC before decoding (default true). */
  verifyCrc?: boolean
  /** Bound on the decompressed records section (default `DECOMPRESSED_BYTES_MAX_DEFAULT`). */
  decompressedBytesMax?: number
}

/**
 * Decode the batch at `buf[at]`: its header and every record, decompressing first if needed.
 * Throws `BatchDecodeError` (a `DecodeError`) for anything malformed, including a body that
 * decompresses to more than `decompressedBytesMax`.
 */
export function decodeBatch(buf: Buffer, at = 0, options: DecodeBatchOptions = {}): DecodedBatch {
  const checked = checkBatch(buf, at, { origin: 'log', verifyCrc: options.verifyCrc ?? true })
  if ('reason' in checked) throw new BatchDecodeError(checked.reason, checked.errorName, checked.message)
  const { header, size } = checked
  const codec = compressionOf(header.attributes) as CompressionCodec
  const bodyStart = at + BATCH_HEADER_BYTES
  const bodyEnd = at + size
  let records: KafkaRecord[]
  if (codec === Compression.none) {
    records = decodeRecords(buf, bodyStart, bodyEnd, header)
  } else {
    const limit = options.decompressedBytesMax ?? DECOMPRESSED_BYTES_MAX_DEFAULT
    let plain: Buffer
    try {
      plain = decompress(codec, buf.subarray(bodyStart, bodyEnd), limit)
    } catch (e) {
      if (!(e instanceof CompressionError)) throw e
      if (e.kind === 'too-large')
        throw new BatchDecodeError('decompressed-too-large', 'CORRUPT_MESSAGE', e.message)
      if (e.kind === 'unsupported')
        throw new BatchDecodeError('unsupported-compression', 'CORRUPT_MESSAGE', e.message)
      throw new BatchDecodeError('corrupt-compression', 'CORRUPT_MESSAGE', e.message)
    }
    records = decodeRecords(plain, 0, plain.length, header)
  }
  return { header, records }
}

function corruptRecords(message: string): BatchDecodeError {
  return new BatchDecodeError('corrupt-records', 'CORRUPT_MESSAGE', message)
}

/** Decode exactly `header.recordCount` records filling `buf[start, end)`. */
function decodeRecords(buf: Buffer, start: number, end: number, header: BatchHeader): KafkaRecord[] {
  const count = header.recordCount
  // Refuse a count the bytes cannot hold before allocating anything for it.
  if (count < 0 || count > (end - start) / RECORD_BYTES_MIN) {
    throw corruptRecords(`record count ${count} cannot fit in ${end - start} bytes of records`)
  }
  const logAppendTime = timestampTypeOf(header.attributes) === TimestampType.logAppendTime
  const r = new Reader(buf, start, end)
  const records: KafkaRecord[] = []
  try {
    for (let i = 0; i < count; i++) {
      const length = r.varint()
      if (length < RECORD_BODY_BYTES_MIN || length > r.remaining) {
        throw corruptRecords(`record ${i} declares ${length} bytes; ${r.remaining} remain`)
      }
      const recordEnd = r.offset + length
      const attributes = r.int8()
      const timestampDelta = r.varlong()
      const offsetDelta = r.varint()
      const key = nullableBytes(r, 'key')
      const value = nullableBytes(r, 'value')
      const headerCount = r.varint()
      if (headerCount < 0 || headerCount > (recordEnd - r.offset) / HEADER_BYTES_MIN) {
        throw corruptRecords(`record ${i} declares ${headerCount} headers`)
      }
      const headers: RecordHeader[] = []
      for (let h = 0; h < headerCount; h++) {
        const keyLength = r.varint()
        if (keyLength < 0) throw corruptRecords(`record ${i} has a header with key length ${keyLength}`)
        const headerKey = r.raw(keyLength).toString('utf8')
        headers.push({ key: headerKey, value: nullableBytes(r, 'header value') })
      }
      if (r.offset !== recordEnd) {
        throw corruptRecords(
          `record ${i} declares ${length} bytes but its fields take ${r.offset - recordEnd + length}`,
        )
      }
      records.push({
        attributes,
        offsetDelta,
        timestampDelta,
        offset: header.baseOffset + BigInt(offsetDelta),
        timestamp: logAppendTime ? header.maxTimestamp : header.baseTimestamp + timestampDelta,
        key,
        value,
        headers,
      })
    }
  } catch (e) {
    if (e instanceof BatchDecodeError) throw e
    if (e instanceof DecodeError) throw corruptRecords(`malformed record: ${e.message}`)
    throw e
  }
  if (r.remaining !== 0) {
    throw corruptRecords(`${r.remaining} bytes remain after the batch's ${count} declared records`)
  }
  return records
}

/** A varint length then bytes; -1 is null, other negatives are corrupt. */
function nullableBytes(r: Reader, what: string): Buffer | null {
  const n = r.varint()
  if (n === -1) return null
  if (n < 0) throw corruptRecords(`negative ${what} length ${n}`)
  return r.raw(n)
}

export interface RecordHeaderInput {
  key: string
  value: Uint8Array | null
}

export interface RecordInput {
  key?: Uint8Array | null
  value?: Uint8Array | null
  headers?: readonly RecordHeaderInput[]
  /** Create time in ms; default `NO_TIMESTAMP` (-1). */
  timestamp?: bigint
  /** Default: the record's index. Must increase; gaps are for batches rewritten by compaction. */
  offsetDelta?: number
}

export interface EncodeBatchOptions {
  records: readonly RecordInput[]
  /** Default 0: the leader assigns the real one with `setBaseOffset`. */
  baseOffset?: bigint
  partitionLeaderEpoch?: number
  compression?: CompressionCodec
  /** gzip or zstd level; default Kafka's. */
  compressionLevel?: number
  /** With `logAppendTime`, maxTimestamp is that time and the type bit is set. */
  timestampType?: TimestampType
  logAppendTime?: bigint
  producerId?: bigint
  producerEpoch?: number
  baseSequence?: number
  transactional?: boolean
  control?: boolean
  /** Sets the delete-horizon bit and stores the horizon in baseTimestamp (the cleaner's rewrite). */
  deleteHorizonMs?: bigint
  /** Default: the last record's offsetDelta (0 with no records); compaction keeps the original. */
  lastOffsetDelta?: number
}

/** Bytes of `v` as a zigzag varint (int32). */
function varintSize(v: number): number {
  let x = ((v << 1) ^ (v >> 31)) >>> 0
  let n = 1
  while (x > 0x7f) {
    x >>>= 7
    n++
  }
  return n
}

/** Bytes of `v` as a zigzag varlong (int64). */
function varlongSize(v: bigint): number {
  let x = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n))
  let n = 1
  while (x > 0x7fn) {
    x >>= 7n
    n++
  }
  return n
}

function bytesFieldSize(b: Uint8Array | null | undefined): number {
  return b == null ? 1 : varintSize(b.length) + b.length
}

/**
 * Encode one complete v2 batch: header, records (compressed with `compression`), and its CRC.
 * Example: `encodeBatch({ records: [{ key: null, value: Buffer.from('hi'), timestamp: 1700000000000n }] })`.
 * Programmer errors (offset deltas not increasing, lastOffsetDelta below a record's, LogAppendTime
 * without its time) fail an assertion. A control batch may hold several records: KRaft snapshots put
 * the header, kraft version and voters records in one.
 */
export function encodeBatch(options: EncodeBatchOptions): Buffer {
  const { records } = options
  const compression = options.compression ?? Compression.none
  const first = records[0]
  const baseTimestamp = options.deleteHorizonMs ?? first?.timestamp ?? NO_TIMESTAMP
  let maxTimestamp = NO_TIMESTAMP
  let previousDelta = -1
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!
    const ts = record.timestamp ?? NO_TIMESTAMP
    if (ts > maxTimestamp) maxTimestamp = ts
    const delta = record.offsetDelta ?? i
    assert(
      Number.isInteger(delta) && delta > previousDelta,
      `record ${i}: offsetDelta ${delta} must increase`,
    )
    previousDelta = delta
  }
  const lastOffsetDelta = options.lastOffsetDelta ?? Math.max(previousDelta, 0)
  assert(lastOffsetDelta >= previousDelta, `lastOffsetDelta ${lastOffsetDelta} is below a record's delta`)
  const timestampType = options.timestampType ?? TimestampType.createTime
  if (timestampType === TimestampType.logAppendTime) {
    assert(options.logAppendTime !== undefined, 'LogAppendTime needs logAppendTime')
    maxTimestamp = options.logAppendTime
  }
  const attributes = makeAttributes({
    compression,
    timestampType,
    transactional: options.transactional ?? false,
    control: options.control ?? false,
    deleteHorizon: options.deleteHorizonMs !== undefined,
  })

  const w = new Writer(BATCH_HEADER_BYTES + 64 * records.length)
  // The header is patched in once the body's size is known.
  const body = compression === Compression.none ? w : new Writer(64 * records.length + 16)
  if (body === w) w.raw(HEADER_PLACEHOLDER)
  for (let i = 0; i < records.length; i++) writeRecord(body, records[i]!, i, baseTimestamp)
  if (body !== w) {
    w.raw(HEADER_PLACEHOLDER)
    w.raw(compress(compression, body.toBuffer(), levelOption(options.compressionLevel)))
  }
  const out = w.toBuffer()
  // toBuffer may return a shared view when the writer held one piece; the bytes are ours either way.
  out.writeBigInt64BE(options.baseOffset ?? 0n, BatchOffsets.baseOffset)
  out.writeInt32BE(out.length - LOG_OVERHEAD, BatchOffsets.batchLength)
  out.writeInt32BE(
    options.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH,
    BatchOffsets.partitionLeaderEpoch,
  )
  out.writeInt8(MAGIC_V2, BatchOffsets.magic)
  out.writeInt16BE(attributes, BatchOffsets.attributes)
  out.writeInt32BE(lastOffsetDelta, BatchOffsets.lastOffsetDelta)
  out.writeBigInt64BE(baseTimestamp, BatchOffsets.baseTimestamp)
  out.writeBigInt64BE(maxTimestamp, BatchOffsets.maxTimestamp)
  out.writeBigInt64BE(options.producerId ?? NO_PRODUCER_ID, BatchOffsets.producerId)
  out.writeInt16BE(options.producerEpoch ?? NO_PRODUCER_EPOCH, BatchOffsets.producerEpoch)
  out.writeInt32BE(options.baseSequence ?? NO_SEQUENCE, BatchOffsets.baseSequence)
  out.writeInt32BE(records.length, BatchOffsets.recordCount)
  out.writeUInt32BE(crc32c(out.subarray(CRC_START)), BatchOffsets.crc)
  return out
}

const HEADER_PLACEHOLDER = new Uint8Array(BATCH_HEADER_BYTES)

function levelOption(level: number | undefined): { level?: number } {
  return level === undefined ? {} : { level }
}

function writeRecord(w: Writer, record: RecordInput, index: number, baseTimestamp: bigint): void {
  const timestampDelta = (record.timestamp ?? NO_TIMESTAMP) - baseTimestamp
  const offsetDelta = record.offsetDelta ?? index
  const headers = record.headers ?? []
  const headerKeys: Buffer[] = []
  let size = 1 + varlongSize(timestampDelta) + varintSize(offsetDelta)
  size += bytesFieldSize(record.key) + bytesFieldSize(record.value) + varintSize(headers.length)
  for (const h of headers) {
    const k = Buffer.from(h.key, 'utf8')
    headerKeys.push(k)
    size += varintSize(k.length) + k.length + bytesFieldSize(h.value)
  }
  w.varint(size)
  w.int8(0)
  w.varlong(timestampDelta)
  w.varint(offsetDelta)
  writeNullableBytes(w, record.key)
  writeNullableBytes(w, record.value)
  w.varint(headers.length)
  for (let h = 0; h < headers.length; h++) {
    const k = headerKeys[h]!
    w.varint(k.length)
    w.raw(k)
    writeNullableBytes(w, headers[h]!.value)
  }
}

function writeNullableBytes(w: Writer, b: Uint8Array | null | undefined): void {
  if (b == null) {
    w.varint(-1)
    return
  }
  w.varint(b.length)
  w.raw(b)
}
