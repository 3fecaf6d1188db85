/**
 * The persistence port of a coordinator: append record batches to, and read them back from, the
 * partitions of its internal topic (`__consumer_offsets`, `__transaction_state`) this broker leads. Replication implements it for a cluster;
 * `LocalOffsetsLog` implements it over storage's PartitionLog for one replica (and for tests).
 */

import type { TopicName } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import type { ReplicaManager } from '../replication/index.ts'
import { LogOfflineError, type PartitionLog } from '../storage/index.ts'
import { GROUP_METADATA_TOPIC_NAME } from './coordinator-locator.ts'

export type OffsetsLogAppendResult =
  | { readonly errorCode: 0; readonly baseOffset: bigint }
  | { readonly errorCode: Exclude<ErrorCode, 0>; readonly errorMessage?: string }

export type OffsetsLogReadResult =
  | { readonly errorCode: 0; readonly records: Buffer }
  | { readonly errorCode: Exclude<ErrorCode, 0> }

export interface OffsetsLogBounds {
  readonly logStartOffset: bigint
  /** Loading reads up to here: the log end (the leader has it all; a new leader's high watermark lags). */
  readonly highWatermark: bigint
}

export interface OffsetsLog {
  /**
   * Append one record batch (offsets assigned by the log) to `partition`, which this broker leads.
   * Resolves once the batch is committed (durable, and replicated as acks=all would wait for), or
   * with a Kafka error code: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, KAFKA_STORAGE_ERROR, ...
   * `verificationGuard`: KIP-890's, for a transactional batch (TransactionalProducer's).
   */
  append(partition: number, batch: Buffer, verificationGuard?: object | null): Promise<OffsetsLogAppendResult>
  /** Whole batches from the one holding `offset`, about `maxBytes` (at least one), below the high watermark. */
  read(partition: number, offset: bigint, maxBytes: number): Promise<OffsetsLogReadResult>
  /** Null when this broker does not host the partition. */
  bounds(partition: number): OffsetsLogBounds | null
}

/**
 * OffsetsLog over local PartitionLogs: committed means durable (the append waits for the fsync),
 * the high watermark is the log end offset (one replica).
 */
export class LocalOffsetsLog implements OffsetsLog {
  readonly #logs: (partition: number) => PartitionLog | undefined

  constructor(logs: (partition: number) => PartitionLog | undefined) {
    this.#logs = logs
  }

  async append(partition: number, batch: Buffer): Promise<OffsetsLogAppendResult> {
    const log = this.#logs(partition)
    if (log === undefined) return { errorCode: ErrorCode.NotLeaderOrFollower }
    try {
      const r = await log.append(batch, { origin: 'coordinator', flush: true })
      if (r.errorCode !== ErrorCode.None) return { errorCode: r.errorCode, errorMessage: r.errorMessage }
      return { errorCode: 0, baseOffset: r.baseOffset }
    } catch (e) {
      if (e instanceof LogOfflineError) return { errorCode: e.errorCode, errorMessage: e.message }
      throw e
    }
  }

  async read(partition: number, offset: bigint, maxBytes: number): Promise<OffsetsLogReadResult> {
    const log = this.#logs(partition)
    if (log === undefined) return { errorCode: ErrorCode.NotLeaderOrFollower }
    try {
      const r = await log.read(offset, maxBytes)
      if (r.errorCode !== ErrorCode.None) return { errorCode: r.errorCode }
      return { errorCode: 0, records: r.records }
    } catch (e) {
      if (e instanceof LogOfflineError) return { errorCode: e.errorCode }
      throw e
    }
  }

  bounds(partition: number): OffsetsLogBounds | null {
    const log = this.#logs(partition)
    if (log === undefined) return null
    return { logStartOffset: log.logStartOffset, highWatermark: log.logEndOffset }
  }
}

/**
 * OffsetsLog over the replica manager: appends as the coordinator with acks=all (answered once the ISR
 * has the batch, durable with `flush.on.ack`, or REQUEST_TIMED_OUT after `commitTimeoutMs`, Kafka's
 * offsets.commit.timeout.ms); reads and bounds up to the leader's log end, as Kafka's coordinator
 * loads: a new (or restarted) leader's high watermark can lag behind commits already acknowledged,
 * and loading only up to it would answer OffsetFetch with older offsets.
 */
export class ReplicaOffsetsLog implements OffsetsLog {
  readonly #replicas: ReplicaManager
  readonly #commitTimeoutMs: number
  readonly #topic: TopicName

  /** `topic`: the coordinator's internal topic, `__consumer_offsets` unless given. */
  constructor(replicas: ReplicaManager, options: { commitTimeoutMs: number; topic?: TopicName }) {
    this.#replicas = replicas
    this.#commitTimeoutMs = options.commitTimeoutMs
    this.#topic = options.topic ?? GROUP_METADATA_TOPIC_NAME
  }

  async append(
    partition: number,
    batch: Buffer,
    verificationGuard?: object | null,
  ): Promise<OffsetsLogAppendResult> {
    // Kafka's AppendOrigin.COORDINATOR: the coordinator's transactional batches (TxnOffsetCommit)
    // all start at sequence 0, so they get no duplicate or sequence check, only the epoch check.
    const options = { acks: -1, timeoutMs: this.#commitTimeoutMs, origin: 'coordinator' as const }
    const [r] = await this.#replicas.appendRecords(
      [
        {
          topic: this.#topic,
          partition,
          records: batch,
          ...(verificationGuard === undefined ? {} : { verificationGuard }),
        },
      ],
      options,
    )
    if (r === undefined) return { errorCode: ErrorCode.UnknownServerError }
    if (r.errorCode !== ErrorCode.None) {
      return { errorCode: r.errorCode as Exclude<ErrorCode, 0>, errorMessage: r.errorMessage ?? '' }
    }
    return { errorCode: 0, baseOffset: r.baseOffset }
  }

  async read(partition: number, offset: bigint, maxBytes: number): Promise<OffsetsLogReadResult> {
    const p = this.#replicas.getPartition(this.#topic, partition)
    if (p === undefined || !p.isLeader) return { errorCode: ErrorCode.NotLeaderOrFollower }
    const r = await p.read({
      fetchOffset: offset,
      maxBytes,
      currentLeaderEpoch: -1,
      lastFetchedEpoch: -1,
      upTo: 'logEndOffset',
      fetchOnlyFromLeader: true,
      atLeastOneBatch: true,
    })
    if (r.errorCode !== ErrorCode.None) return { errorCode: r.errorCode as Exclude<ErrorCode, 0> }
    return { errorCode: 0, records: r.records }
  }

  bounds(partition: number): OffsetsLogBounds | null {
    const p = this.#replicas.getPartition(this.#topic, partition)
    if (p === undefined || !p.isLeader) return null
    return { logStartOffset: p.logStartOffset, highWatermark: p.logEndOffset }
  }
}
