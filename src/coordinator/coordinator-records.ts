/**
 * The `__consumer_offsets` records of classic groups, as Kafka writes them: a key and a value each
 * prefixed by its int16 schema version (the key's version is the record type), null values as
 * tombstones. Encodes record batches for appends and decodes them for loading; nothing else.
 */

import { GroupId, TopicName } from '../model/index.ts'
import {
  BATCH_HEADER_BYTES,
  ControlRecordType,
  decodeBatch,
  decodeControlKey,
  encodeBatch,
  GroupMetadataKeyData,
  GroupMetadataValueData,
  isControl,
  isTransactional,
  LOG_OVERHEAD,
  lastOffsetOf,
  OffsetCommitKeyData,
  OffsetCommitValueData,
  Reader,
  readBatchHeader,
  Writer,
} from '../protocol/index.ts'

/** Key versions are record types: 0 and 1 offset commits, 2 group metadata, 3+ other group types. */
export const OFFSET_COMMIT_KEY_VERSION = 1
export const GROUP_METADATA_KEY_VERSION = 2
/** Kafka writes OffsetCommitValue v3, or v1 when the commit carries an expire timestamp. */
export const OFFSET_COMMIT_VALUE_VERSION = 3
export const OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
/** Kafka writes GroupMetadataValue v3 (group.instance.id of members). */
export const GROUP_METADATA_VALUE_VERSION = 3

/** A committed offset as the coordinator keeps it and returns it. */
export interface OffsetAndMetadata {
  readonly offset: bigint
  /** -1 when the client gave none. */
  readonly leaderEpoch: number
  readonly metadata: string
  /** Wall-clock ms. */
  readonly commitTimestampMs: number
  /** Wall-clock ms, or null: set only by OffsetCommit v2-4 with a retention time. */
  readonly expireTimestampMs: number | null
}

/** One member as persisted in GroupMetadataValue. */
export interface PersistedMember {
  readonly memberId: string
  readonly groupInstanceId: string | null
  readonly clientId: string
  readonly clientHost: string
  readonly rebalanceTimeoutMs: number
  readonly sessionTimeoutMs: number
  /** The member's metadata for the group's selected protocol. */
  readonly subscription: Buffer
  readonly assignment: Buffer
}

/** A group as persisted in GroupMetadataValue. */
export interface PersistedGroup {
  /** Empty for a group created by offset commits alone. */
  readonly protocolType: string
  readonly generationId: number
  readonly protocolName: string | null
  readonly leaderId: string | null
  /** Wall-clock ms of the last state change, or -1. */
  readonly currentStateTimestampMs: number
  readonly members: readonly PersistedMember[]
}

export type CoordinatorRecord =
  | {
      readonly kind: 'offset'
      readonly groupId: GroupId
      readonly topic: TopicName
      readonly partition: number
      /** Null: a tombstone (the offset is deleted). */
      readonly value: OffsetAndMetadata | null
    }
  | {
      readonly kind: 'group'
      readonly groupId: GroupId
      /** Null: a tombstone (the group is deleted). */
      readonly value: PersistedGroup | null
    }

/** A record of a type this coordinator does not manage (consumer, share groups); skipped on load. */
export interface ForeignRecord {
  readonly kind: 'foreign'
  readonly keyVersion: number
}

export function encodeRecordKey(record: CoordinatorRecord): Buffer {
  const w = new Writer(64)
  if (record.kind === 'offset') {
    w.int16(OFFSET_COMMIT_KEY_VERSION)
    OffsetCommitKeyData.writeOffsetCommitKey(
      w,
      { group: record.groupId, topic: record.topic, partition: record.partition },
      OFFSET_COMMIT_KEY_VERSION,
    )
  } else {
    w.int16(GROUP_METADATA_KEY_VERSION)
    GroupMetadataKeyData.writeGroupMetadataKey(w, { group: record.groupId }, GROUP_METADATA_KEY_VERSION)
  }
  return w.toBuffer()
}

/** The value bytes, or null for a tombstone. */
export function encodeRecordValue(record: CoordinatorRecord): Buffer | null {
  if (record.value === null) return null
  const w = new Writer(128)
  if (record.kind === 'offset') {
    const v = record.value
    const version =
      v.expireTimestampMs === null ? OFFSET_COMMIT_VALUE_VERSION : OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    w.int16(version)
    OffsetCommitValueData.writeOffsetCommitValue(
      w,
      {
        offset: v.offset,
        leaderEpoch: v.leaderEpoch,
        metadata: v.metadata,
        commitTimestamp: BigInt(v.commitTimestampMs),
        expireTimestamp: BigInt(v.expireTimestampMs ?? -1),
      },
      version,
    )
  } else {
    const g = record.value
    w.int16(GROUP_METADATA_VALUE_VERSION)
    GroupMetadataValueData.writeGroupMetadataValue(
      w,
      {
        protocolType: g.protocolType,
        generation: g.generationId,
        protocol: g.protocolName,
        leader: g.leaderId,
        currentStateTimestamp: BigInt(g.currentStateTimestampMs),
        members: g.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          rebalanceTimeout: m.rebalanceTimeoutMs,
          sessionTimeout: m.sessionTimeoutMs,
          subscription: m.subscription,
          assignment: m.assignment,
        })),
      },
      GROUP_METADATA_VALUE_VERSION,
    )
  }
  return w.toBuffer()
}

/**
 * Decodes one record of `__consumer_offsets`. Throws DecodeError on bytes that do not parse (a
 * corrupt record: loading stops there, as Kafka's loader fails the partition load).
 */
export function decodeRecord(key: Buffer, value: Buffer | null): CoordinatorRecord | ForeignRecord {
  const kr = new Reader(key)
  const keyVersion = kr.int16()
  if (keyVersion === 0 || keyVersion === 1) {
    const k = OffsetCommitKeyData.readOffsetCommitKey(kr, keyVersion)
    const groupId = GroupId(k.group)
    const topic = TopicName(k.topic)
    if (value === null) return { kind: 'offset', groupId, topic, partition: k.partition, value }
    const vr = new Reader(value)
    const v = OffsetCommitValueData.readOffsetCommitValue(vr, valueVersion(vr, 4))
    return {
      kind: 'offset',
      groupId,
      topic,
      partition: k.partition,
      value: {
        offset: v.offset,
        leaderEpoch: v.leaderEpoch,
        metadata: v.metadata,
        commitTimestampMs: Number(v.commitTimestamp),
        expireTimestampMs: v.expireTimestamp === -1n ? null : Number(v.expireTimestamp),
      },
    }
  }
  if (keyVersion === 2) {
    const k = GroupMetadataKeyData.readGroupMetadataKey(kr, keyVersion)
    const groupId = GroupId(k.group)
    if (value === null) return { kind: 'group', groupId, value: null }
    const vr = new Reader(value)
    const g = GroupMetadataValueData.readGroupMetadataValue(vr, valueVersion(vr, 4))
    return {
      kind: 'group',
      groupId,
      value: {
        protocolType: g.protocolType,
        generationId: g.generation,
        protocolName: g.protocol,
        leaderId: g.leader,
        currentStateTimestampMs: Number(g.currentStateTimestamp),
        members: g.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          rebalanceTimeoutMs: m.rebalanceTimeout,
          sessionTimeoutMs: m.sessionTimeout,
          subscription: m.subscription,
          assignment: m.assignment,
        })),
      },
    }
  }
  return { kind: 'foreign', keyVersion }
}

/** Reads a value's version; a newer one than known is read as the newest (KIP-915). */
function valueVersion(r: Reader, highest: number): number {
  const v = r.int16()
  return Math.min(v, highest)
}

/** The producer of a transactional write (TxnOffsetCommit): its batch carries them. */
export interface TransactionalProducer {
  readonly producerId: bigint
  readonly producerEpoch: number
  /**
   * KIP-890: the guard the partition gave when the transaction was verified with its coordinator
   * (null: the transaction was open there already). The append is refused if a marker ended the
   * transaction since; undefined: no verification.
   */
  readonly verificationGuard?: object | null
}

/**
 * One record batch (magic v2, no compression) of `records`, stamped `timestampMs`: without a
 * producer id, or, for a transaction's offsets, transactional with the producer's id and epoch and
 * base sequence 0, as Kafka's coordinator runtime writes it.
 */
export function encodeRecordBatch(
  records: readonly CoordinatorRecord[],
  timestampMs: number,
  transaction: TransactionalProducer | null = null,
): Buffer {
  const timestamp = BigInt(timestampMs)
  return encodeBatch({
    records: records.map((r) => ({ key: encodeRecordKey(r), value: encodeRecordValue(r), timestamp })),
    ...(transaction === null
      ? {}
      : {
          producerId: transaction.producerId,
          producerEpoch: transaction.producerEpoch,
          baseSequence: 0,
          transactional: true,
        }),
  })
}

/** A transaction marker (a COMMIT or ABORT control record) read back from the log. */
export interface TransactionMarkerRecord {
  readonly kind: 'marker'
  readonly committed: boolean
}

/** A record read back from the log, with its offset and the producer id of a transactional batch. */
export interface LoggedRecord<R = CoordinatorRecord | ForeignRecord> {
  readonly offset: bigint
  /** The batch's producer id when it is transactional, else -1. */
  readonly producerId: bigint
  readonly record: R | TransactionMarkerRecord
}

/**
 * Decodes whole batches as the log returns them: the records of data batches, and the transaction
 * markers of control batches (other control types skipped). Returns them and the offset after the
 * last whole batch, where the next read starts.
 */
export function decodeRecordBatches(bytes: Buffer): { records: LoggedRecord[]; nextOffset: bigint | null } {
  return decodeKeyedBatches(bytes, decodeRecord)
}

/**
 * `decodeRecordBatches` with another coordinator's record decoder (`__transaction_state`): records
 * without a key are skipped.
 */
export function decodeKeyedBatches<R>(
  bytes: Buffer,
  decode: (key: Buffer, value: Buffer | null) => R,
): { records: LoggedRecord<R>[]; nextOffset: bigint | null } {
  const records: LoggedRecord<R>[] = []
  let nextOffset: bigint | null = null
  let at = 0
  while (bytes.length - at >= BATCH_HEADER_BYTES) {
    const header = readBatchHeader(bytes, at)
    const size = LOG_OVERHEAD + header.batchLength
    if (at + size > bytes.length) break
    const producerId = isTransactional(header.attributes) ? header.producerId : -1n
    const batch = decodeBatch(bytes, at)
    if (isControl(header.attributes)) {
      const first = batch.records[0]
      const type = first === undefined ? null : decodeControlKey(first.key).type
      if (type === ControlRecordType.commit || type === ControlRecordType.abort) {
        records.push({
          offset: first!.offset,
          producerId: header.producerId,
          record: { kind: 'marker', committed: type === ControlRecordType.commit },
        })
      }
    } else {
      for (const r of batch.records) {
        if (r.key === null) continue
        records.push({ offset: r.offset, producerId, record: decode(r.key, r.value) })
      }
    }
    nextOffset = lastOffsetOf(header) + 1n
    at += size
  }
  return { records, nextOffset }
}
