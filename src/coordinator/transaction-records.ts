/**
 * The `__transaction_state` records, as Kafka's transaction coordinator writes them: a key
 * (TransactionLogKey v0, the transactional id) and a value (TransactionLogValue), each prefixed by
 * its int16 schema version; a null value is a tombstone (an expired transactional id). Encodes and
 * decodes one record; nothing else.
 */

import {
  DecodeError,
  Reader,
  TransactionLogKeyData,
  TransactionLogValueData,
  Writer,
} from '../protocol/index.ts'

/** The only key version: Kafka skips a key of another version on load (a record type it does not know). */
export const TRANSACTION_LOG_KEY_VERSION = 0
/** The newest TransactionLogValue version Kafka 4 reads; a value of another version is skipped. */
export const TRANSACTION_LOG_VALUE_VERSION_MAX = 1

/** Kafka's TransactionState, by the name DescribeTransactions and ListTransactions report. */
export type TransactionState =
  | 'Empty'
  | 'Ongoing'
  | 'PrepareCommit'
  | 'PrepareAbort'
  | 'CompleteCommit'
  | 'CompleteAbort'
  | 'Dead'
  | 'PrepareEpochFence'

/** Each state's id, TransactionLogValue's TransactionStatus: the index in this list. */
export const TRANSACTION_STATES: readonly TransactionState[] = [
  'Empty',
  'Ongoing',
  'PrepareCommit',
  'PrepareAbort',
  'CompleteCommit',
  'CompleteAbort',
  'Dead',
  'PrepareEpochFence',
]

export function transactionStateId(state: TransactionState): number {
  return TRANSACTION_STATES.indexOf(state)
}

/** One partition of a transaction. */
export interface TxnPartition {
  readonly topic: string
  readonly partition: number
}

/** A transactional id's metadata as TransactionLogValue persists it. */
export interface PersistedTransaction {
  readonly producerId: bigint
  /** -1 when none; persisted from value v1 only. */
  readonly previousProducerId: bigint
  /** -1 when none; persisted from value v1 only. */
  readonly nextProducerId: bigint
  readonly producerEpoch: number
  readonly txnTimeoutMs: number
  readonly state: TransactionState
  /** Grouped by topic in the bytes; empty (null in the bytes) in state Empty. */
  readonly partitions: readonly TxnPartition[]
  /** Wall-clock ms the transaction started (its first partition), or -1. */
  readonly txnStartTimestampMs: number
  /** Wall-clock ms of the last change; expiry counts from it. */
  readonly txnLastUpdateTimestampMs: number
  /** The client's transaction.version level (2: KIP-890 epoch bump on every EndTxn); v1 values only. */
  readonly clientTransactionVersion: number
}

export interface TransactionLogRecord {
  readonly transactionalId: string
  /** Null: a tombstone (the transactional id expired). */
  readonly value: PersistedTransaction | null
}

/**
 * A key or value of a version this coordinator does not know; skipped on load, as Kafka 4 skips it
 * (with a warning). `valueVersion` is null when the key's version is the unknown one.
 */
export interface ForeignTransactionLogRecord {
  readonly kind: 'foreign'
  readonly keyVersion: number
  readonly valueVersion: number | null
}

export function encodeTransactionLogKey(transactionalId: string): Buffer {
  const w = new Writer(32)
  w.int16(TRANSACTION_LOG_KEY_VERSION)
  TransactionLogKeyData.writeTransactionLogKey(w, { transactionalId }, TRANSACTION_LOG_KEY_VERSION)
  return w.toBuffer()
}

/**
 * The value bytes, or null for a tombstone. `transactionVersionLevel` is the cluster's finalized
 * transaction.version: Kafka writes value v1 (flexible, with the tagged producer ids and client
 * version) from level 1, v0 below it.
 */
export function encodeTransactionLogValue(
  value: PersistedTransaction | null,
  transactionVersionLevel: number,
): Buffer | null {
  if (value === null) return null
  if (value.state === 'Empty' && value.partitions.length > 0) {
    throw new RangeError('a transaction in state Empty has no partitions')
  }
  const version = transactionVersionLevel >= 1 ? 1 : 0
  const w = new Writer(128)
  w.int16(version)
  TransactionLogValueData.writeTransactionLogValue(
    w,
    {
      producerId: value.producerId,
      ...(version >= 1
        ? {
            previousProducerId: value.previousProducerId,
            nextProducerId: value.nextProducerId,
            clientTransactionVersion: value.clientTransactionVersion,
          }
        : {}),
      producerEpoch: value.producerEpoch,
      transactionTimeoutMs: value.txnTimeoutMs,
      transactionStatus: transactionStateId(value.state),
      transactionPartitions: value.state === 'Empty' ? null : groupByTopic(value.partitions),
      transactionLastUpdateTimestampMs: BigInt(value.txnLastUpdateTimestampMs),
      transactionStartTimestampMs: BigInt(value.txnStartTimestampMs),
    },
    version,
  )
  return w.toBuffer()
}

function groupByTopic(partitions: readonly TxnPartition[]): { topic: string; partitionIds: number[] }[] {
  const byTopic = new Map<string, number[]>()
  for (const p of partitions) {
    const ids = byTopic.get(p.topic)
    if (ids === undefined) byTopic.set(p.topic, [p.partition])
    else ids.push(p.partition)
  }
  return [...byTopic].map(([topic, partitionIds]) => ({ topic, partitionIds }))
}

/**
 * Decodes one record of `__transaction_state`. Throws DecodeError on bytes that do not parse or
 * name an unknown state (a corrupt record: Kafka's loader fails the partition load there).
 */
export function decodeTransactionLogRecord(
  key: Buffer,
  value: Buffer | null,
): TransactionLogRecord | ForeignTransactionLogRecord {
  const kr = new Reader(key)
  const keyVersion = kr.int16()
  if (keyVersion !== TRANSACTION_LOG_KEY_VERSION) return { kind: 'foreign', keyVersion, valueVersion: null }
  const { transactionalId } = TransactionLogKeyData.readTransactionLogKey(kr, keyVersion)
  if (value === null) return { transactionalId, value: null }
  const vr = new Reader(value)
  const version = vr.int16()
  if (version < 0 || version > TRANSACTION_LOG_VALUE_VERSION_MAX) {
    return { kind: 'foreign', keyVersion, valueVersion: version }
  }
  const v = TransactionLogValueData.readTransactionLogValue(vr, version)
  const state = TRANSACTION_STATES[v.transactionStatus]
  if (state === undefined) throw new DecodeError(`unknown transaction state id ${v.transactionStatus}`)
  return {
    transactionalId,
    value: {
      producerId: v.producerId,
      previousProducerId: v.previousProducerId,
      nextProducerId: v.nextProducerId,
      producerEpoch: v.producerEpoch,
      txnTimeoutMs: v.transactionTimeoutMs,
      state,
      partitions: (v.transactionPartitions ?? []).flatMap((t) =>
        t.partitionIds.map((partition) => ({ topic: t.topic, partition })),
      ),
      txnStartTimestampMs: Number(v.transactionStartTimestampMs),
      txnLastUpdateTimestampMs: Number(v.transactionLastUpdateTimestampMs),
      clientTransactionVersion: v.clientTransactionVersion,
    },
  }
}
