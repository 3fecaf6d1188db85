/**
 * Control records: the single record of a control batch. Its key is version int16 + type int16; for
 * transaction markers (abort, commit) the value is version int16 + coordinatorEpoch int32, as Kafka's
 * ControlRecordType and EndTransactionMarker define them. KRaft's own control types (leader change,
 * snapshot header/footer, kraft version, voters) carry generated messages as values: their bytes
 * are left to the caller.
 */
import { DecodeError } from '../wire/reader.ts'
import type { CompressionCodec } from './batch-header.ts'
import { encodeBatch, type KafkaRecord } from './records.ts'

export const ControlRecordType = {
  abort: 0,
  commit: 1,
  leaderChange: 2,
  snapshotHeader: 3,
  snapshotFooter: 4,
  kraftVersion: 5,
  kraftVoters: 6,
} as const
export type ControlRecordType = (typeof ControlRecordType)[keyof typeof ControlRecordType]

export const CONTROL_KEY_VERSION = 0
export const CONTROL_KEY_BYTES = 4
export const END_TXN_MARKER_VERSION = 0
export const END_TXN_MARKER_BYTES = 6

export interface ControlKey {
  version: number
  /** A `ControlRecordType`, or another number a newer peer wrote (Kafka's UNKNOWN). */
  type: number
}

export function encodeControlKey(type: number): Buffer {
  const key = Buffer.allocUnsafe(CONTROL_KEY_BYTES)
  key.writeInt16BE(CONTROL_KEY_VERSION, 0)
  key.writeInt16BE(type, 2)
  return key
}

/** Kafka's ControlRecordType.parse: at least 4 bytes, a non-negative version; later bytes ignored. */
export function decodeControlKey(key: Buffer | null): ControlKey {
  if (key === null || key.length < CONTROL_KEY_BYTES) {
    throw new DecodeError(`control record key needs ${CONTROL_KEY_BYTES} bytes, has ${key?.length ?? 'null'}`)
  }
  const version = key.readInt16BE(0)
  if (version < 0) throw new DecodeError(`invalid control record key version ${version}`)
  return { version, type: key.readInt16BE(2) }
}

export interface EndTxnMarker {
  /** `ControlRecordType.abort` or `ControlRecordType.commit`. */
  type: typeof ControlRecordType.abort | typeof ControlRecordType.commit
  coordinatorEpoch: number
}

export function encodeEndTxnMarkerValue(coordinatorEpoch: number): Buffer {
  const value = Buffer.allocUnsafe(END_TXN_MARKER_BYTES)
  value.writeInt16BE(END_TXN_MARKER_VERSION, 0)
  value.writeInt32BE(coordinatorEpoch, 2)
  return value
}

/** The marker a control record holds; `DecodeError` if it is not an abort or commit marker. */
export function decodeEndTxnMarker(record: Pick<KafkaRecord, 'key' | 'value'>): EndTxnMarker {
  const { type } = decodeControlKey(record.key)
  if (type !== ControlRecordType.abort && type !== ControlRecordType.commit) {
    throw new DecodeError(`control record type ${type} is not a transaction marker`)
  }
  const value = record.value
  if (value === null || value.length < END_TXN_MARKER_BYTES) {
    throw new DecodeError(
      `transaction marker value needs ${END_TXN_MARKER_BYTES} bytes, has ${value?.length ?? 'null'}`,
    )
  }
  const version = value.readInt16BE(0)
  if (version < 0) throw new DecodeError(`invalid transaction marker version ${version}`)
  return { type, coordinatorEpoch: value.readInt32BE(2) }
}

export interface EndTxnMarkerBatchOptions {
  marker: EndTxnMarker
  producerId: bigint
  producerEpoch: number
  /** The marker's timestamp (base and max timestamp of the batch). */
  timestamp: bigint
  baseOffset?: bigint
  partitionLeaderEpoch?: number
  compression?: CompressionCodec
}

/**
 * The control batch the transaction coordinator appends to end a transaction on a partition:
 * transactional and control bits set, no sequence, one record (MemoryRecords.withEndTransactionMarker).
 */
export function encodeEndTxnMarkerBatch(options: EndTxnMarkerBatchOptions): Buffer {
  return encodeBatch({
    records: [
      {
        key: encodeControlKey(options.marker.type),
        value: encodeEndTxnMarkerValue(options.marker.coordinatorEpoch),
        timestamp: options.timestamp,
      },
    ],
    producerId: options.producerId,
    producerEpoch: options.producerEpoch,
    transactional: true,
    control: true,
    ...(options.baseOffset === undefined ? {} : { baseOffset: options.baseOffset }),
    ...(options.partitionLeaderEpoch === undefined
      ? {}
      : { partitionLeaderEpoch: options.partitionLeaderEpoch }),
    ...(options.compression === undefined ? {} : { compression: options.compression }),
  })
}
