/**
 * The header a `LogHooks.onBatch` gets for an appended batch, read with as few allocations as the
 * values allow: the protocol's `readBatchHeader` makes four BigInts per batch through
 * `readBigInt64BE`, which with a hook set (the broker's leader-epoch and producer state) cost ~0.3 us
 * of a 1 KiB append's ~0.85 (bench/storage-cpu.ts HOOK=1). Here an int64 that is a safe integer (an
 * offset, a millisecond timestamp) is one `BigInt(number)`, -1 (no producer id) a shared constant,
 * and only anything else is read as `readBigInt64BE` reads it. The same values, the same type.
 */

import { assert } from '../model/index.ts'
import {
  BATCH_HEADER_BYTES,
  type BatchHeader,
  BatchOffsets,
  decodeBatch,
  decodeEndTxnMarker,
  type EndTxnMarker,
  isControl,
} from '../protocol/index.ts'

const MINUS_ONE = -1n
/** An int64 whose high int32 is in [-2^21, 2^21) is a safe integer: hi * 2^32 + lo is exact. */
const SAFE_HIGH = 0x200000

/** The int64 at `buf[at]`, exactly as `buf.readBigInt64BE(at)`. */
export function int64At(buf: Buffer, at: number): bigint {
  const high = buf.readInt32BE(at)
  const low = buf.readUInt32BE(at + 4)
  if (high === -1 && low === 0xffffffff) return MINUS_ONE
  if (high >= -SAFE_HIGH && high < SAFE_HIGH) return BigInt(high * 0x100000000 + low)
  return buf.readBigInt64BE(at)
}

/**
 * `readBatchHeader(buf, at)` for a batch the log validated, with `baseOffset` when the caller has it
 * (the offset it assigned) as a BigInt already.
 */
export function appendedHeader(buf: Buffer, at: number, baseOffset?: bigint): BatchHeader {
  if (buf.length - at < BATCH_HEADER_BYTES) assert(false, 'an appended batch has a whole header')
  return {
    baseOffset: baseOffset ?? int64At(buf, at + BatchOffsets.baseOffset),
    batchLength: buf.readInt32BE(at + BatchOffsets.batchLength),
    partitionLeaderEpoch: buf.readInt32BE(at + BatchOffsets.partitionLeaderEpoch),
    magic: buf.readInt8(at + BatchOffsets.magic),
    crc: buf.readUInt32BE(at + BatchOffsets.crc),
    attributes: buf.readInt16BE(at + BatchOffsets.attributes),
    lastOffsetDelta: buf.readInt32BE(at + BatchOffsets.lastOffsetDelta),
    baseTimestamp: int64At(buf, at + BatchOffsets.baseTimestamp),
    maxTimestamp: int64At(buf, at + BatchOffsets.maxTimestamp),
    producerId: int64At(buf, at + BatchOffsets.producerId),
    producerEpoch: buf.readInt16BE(at + BatchOffsets.producerEpoch),
    baseSequence: buf.readInt32BE(at + BatchOffsets.baseSequence),
    recordCount: buf.readInt32BE(at + BatchOffsets.recordCount),
  }
}

/**
 * The COMMIT or ABORT marker a control batch at `buf[at]` holds (its first record, Kafka's
 * EndTransactionMarker), or null: not a control batch, another control type (KRaft's), or a record
 * that does not parse as a marker. Control batches are rare and small: decoding one costs nothing
 * that matters.
 */
export function endTxnMarkerAt(buf: Buffer, at: number, attributes: number): EndTxnMarker | null {
  if (!isControl(attributes)) return null
  try {
    const record = decodeBatch(buf, at, { verifyCrc: false }).records[0]
    return record === undefined ? null : decodeEndTxnMarker(record)
  } catch {
    return null
  }
}
