/**
 * The replica manager: the facade over reconciling the partitions this broker hosts to each
 * metadata publication (`replica-reconciler.ts`) and the data path on them: appends with acks and
 * their delayed completion (`append-records.ts`), fetches with long polls (`fetch-messages.ts`),
 * offsets by time, leader-epoch ends, record deletion, producers. It decides nothing about leaders
 * or ISR: metadata does.
 */
import type { EffectiveConfig } from '../config/index.ts'
import type { Clock, Disk, TimerHandle } from '../io/index.ts'
import type { ImagePublication, MetadataImage } from '../metadata/index.ts'
import { type BrokerId, TopicName } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import type { LogHooks, LogManager } from '../storage/index.ts'
import { AlterPartitionManager, type AlterPartitionManagerOptions } from './alter-partition-manager.ts'
import {
  type AppendContext,
  type AppendRecordsOptions,
  appendRecords,
  appendTxnMarkers,
  type ProduceEntry,
  type ProduceResult,
  type TxnMarkerEntry,
} from './append-records.ts'
import { DelayedOperations } from './delayed-operations.ts'
import {
  CONSUMER_REPLICA_ID,
  DEBUGGING_REPLICA_ID,
  type FetchContext,
  type FetchParams,
  type FetchSpec,
  fetchMessages,
} from './fetch-messages.ts'
import { FollowerJoins } from './follower-joins.ts'
import { IsrProposals } from './isr-proposals.ts'
import type { OffsetForTimestamp, Partition, ReadOutcome } from './partition.ts'
import type { ProducerEntry } from './producer-state.ts'
import type { ReplicaSelectorKind } from './read-replica-selector.ts'
import { type LeaderLink, ReplicaFetcherManager, type ReplicaFetcherSettings } from './replica-fetcher.ts'
import { ReplicaReconciler } from './replica-reconciler.ts'
import { ReplicationStats } from './replication-stats.ts'

// The data path's types and Kafka's names, as the replica manager's API has them.
export type { AppendRecordsOptions, ProduceEntry, ProduceResult, TxnMarkerEntry } from './append-records.ts'
export {
  CONSUMER_REPLICA_ID,
  DEBUGGING_REPLICA_ID,
  type FetchParams,
  type FetchSpec,
} from './fetch-messages.ts'
export { REPLICATION_OFFSET_CHECKPOINT_FILE } from './high-watermark-checkpoints.ts'
export {
  formatPartitionMetadata,
  PARTITION_METADATA_FILE,
  parsePartitionMetadata,
} from './partition-metadata-file.ts'

/** What multi-broker replication needs: links to leaders, the controller, and Kafka's settings. */
export interface ReplicationOptions {
  /** A link to a leader broker (for its fetcher). */
  readonly connect: (leader: BrokerId) => LeaderLink
  /** This broker's epoch (its registration's), -1 before it registered. */
  readonly brokerEpoch: () => bigint
  /** AlterPartition to the active controller. */
  readonly alterPartition: AlterPartitionManagerOptions['send']
  readonly fetcher: ReplicaFetcherSettings
  /** `replica.lag.time.max.ms` */
  readonly lagTimeMsMax: number
  /** `replica.high.watermark.checkpoint.interval.ms` */
  readonly highWatermarkCheckpointIntervalMs: number
  /** Wait before resending a failed AlterPartition. */
  readonly alterPartitionRetryBackoffMs: number
}

export interface ReplicaManagerLimits {
  /** Delayed produces and fetches waiting at once (each connection has at most one). */
  readonly delayedOperationsMax: number
  /** The longest a fetch may wait for bytes, whatever it asks. */
  readonly fetchWaitMsMax: number
  /** How often idle producers are expired (Kafka's `producer.id.expiration.check.interval.ms`). */
  readonly producerExpirationCheckIntervalMs: number
  /** Partitions opened or changed at once while reconciling. */
  readonly reconcileConcurrencyMax: number
  /**
   * The longest a request for a partition waits for this broker to serve it as the metadata it
   * answers says (a partition being opened, or being made leader here), before it is answered
   * NOT_LEADER_OR_FOLLOWER as one not led here.
   */
  readonly servingWaitMsMax: number
}

export const DEFAULT_REPLICA_MANAGER_LIMITS: ReplicaManagerLimits = {
  delayedOperationsMax: 100_000,
  fetchWaitMsMax: 30 * 60_000,
  producerExpirationCheckIntervalMs: 10 * 60_000,
  reconcileConcurrencyMax: 16,
  servingWaitMsMax: 5_000,
}

export interface ReplicaManagerOptions {
  readonly nodeId: BrokerId
  readonly disk: Disk
  readonly clock: Clock
  /** A topic's effective configs (its dynamic overrides over the broker's) in `image`. */
  readonly topicConfig: (topic: TopicName, image: MetadataImage) => EffectiveConfig
  /** `producer.id.expiration.ms` */
  readonly producerIdExpirationMs: number
  readonly limits?: Partial<ReplicaManagerLimits>
  /** `replica.selector.class` (KIP-392): null answers no preferred read replica, as Kafka's default. */
  readonly replicaSelector?: ReplicaSelectorKind | null
  /** Followers fetch and leaders change the ISR only with this (a lone broker needs neither). */
  readonly replication?: ReplicationOptions
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void
}

export interface ListOffsetParams {
  readonly timestamp: bigint
  readonly currentLeaderEpoch: number
  readonly isolationLevel: number
  readonly replicaId: number
}

export interface LogDirDescription {
  readonly dir: string
  readonly offline: boolean
  readonly partitions: ReadonlyArray<{
    readonly topic: TopicName
    readonly partition: number
    readonly sizeBytes: number
    readonly offsetLag: bigint
  }>
}

export class ReplicaManager {
  readonly #o: ReplicaManagerOptions
  readonly #limits: ReplicaManagerLimits
  readonly #delayed: DelayedOperations
  readonly #replicas: ReplicaReconciler
  readonly #isr: IsrProposals
  readonly #joins: FollowerJoins
  readonly #produce: AppendContext
  readonly #fetch: FetchContext
  #expiryTimer: TimerHandle | null = null
  #isrTimer: TimerHandle | null = null
  #checkpointTimer: TimerHandle | null = null
  readonly #fetchers: ReplicaFetcherManager | null
  readonly #alterPartition: AlterPartitionManager | null

  /** Counters of the replicated write path (read and reset by the broker). */
  readonly stats = new ReplicationStats()

  constructor(options: ReplicaManagerOptions) {
    this.#o = options
    this.#limits = { ...DEFAULT_REPLICA_MANAGER_LIMITS, ...options.limits }
    this.#delayed = new DelayedOperations(options.clock, {
      operationsMax: this.#limits.delayedOperationsMax,
    })
    const log = (level: 'info' | 'warn' | 'error', message: string) => this.#log(level, message)
    this.#fetchers = this.#makeFetchers(log)
    this.#alterPartition = this.#makeAlterPartition(log)
    this.#joins = new FollowerJoins(options.nodeId, options.clock)
    this.#replicas = new ReplicaReconciler({
      nodeId: options.nodeId,
      disk: options.disk,
      clock: options.clock,
      topicConfig: options.topicConfig,
      reconcileConcurrencyMax: this.#limits.reconcileConcurrencyMax,
      servingWaitMsMax: this.#limits.servingWaitMsMax,
      delayed: this.#delayed,
      fetchers: this.#fetchers,
      stats: this.stats,
      log,
      onLeading: (p, key, joining) => this.#onLeading(p, key, joining),
    })
    this.#isr = new IsrProposals({
      hosted: this.#replicas,
      alterPartition: this.#alterPartition,
      lagTimeMsMax: options.replication?.lagTimeMsMax ?? null,
      log,
      totals: this.stats.totals,
    })
    const { clock } = options
    this.#produce = { clock, delayed: this.#delayed, stats: this.stats, replicas: this.#replicas }
    this.#fetch = {
      nodeId: options.nodeId,
      clock,
      delayed: this.#delayed,
      stats: this.stats,
      fetchWaitMsMax: this.#limits.fetchWaitMsMax,
      replicaSelector: options.replicaSelector ?? null,
      replicas: this.#replicas,
      isr: this.#isr,
      joins: this.#joins,
    }
  }

  #makeFetchers(log: NonNullable<ReplicaManagerOptions['log']>): ReplicaFetcherManager | null {
    const r = this.#o.replication
    if (r === undefined) return null
    return new ReplicaFetcherManager({
      nodeId: this.#o.nodeId,
      brokerEpoch: r.brokerEpoch,
      clock: this.#o.clock,
      settings: r.fetcher,
      connect: r.connect,
      log,
      stats: this.stats,
    })
  }

  #makeAlterPartition(log: NonNullable<ReplicaManagerOptions['log']>): AlterPartitionManager | null {
    const r = this.#o.replication
    if (r === undefined) return null
    return new AlterPartitionManager({
      nodeId: this.#o.nodeId,
      brokerEpoch: r.brokerEpoch,
      send: r.alterPartition,
      clock: this.#o.clock,
      retryBackoffMs: r.alterPartitionRetryBackoffMs,
      log,
    })
  }

  #log(level: 'info' | 'warn' | 'error', message: string): void {
    this.#o.log?.(level, message)
  }

  /** `p` leads here now: its new followers are awaited, and an unclean leader reports its recovery. */
  #onLeading(p: Partition, key: string, joining: readonly BrokerId[]): void {
    if (joining.length > 0) this.#joins.await(key, joining)
    this.#isr.maybeCompleteRecovery(p, key)
  }

  // ---------------------------------------------------------------- reconciling

  /**
   * The hooks of a log opening (give it to LogManager's `hooksFor`): the partition's epoch cache and
   * producer state follow every batch from the moment the log opens, recovery included.
   */
  hooksFor(topic: string, partition: number): LogHooks {
    return this.#replicas.hooksFor(topic, partition)
  }

  /**
   * Starts reconciling with the log directories (opened with `hooksFor`) and the latest image,
   * once each directory's `replication-offset-checkpoint` is read.
   */
  start(managers: readonly LogManager[]): void {
    this.#replicas.start(managers)
    this.#armExpiry()
    this.#armIsrCheck()
    this.#armCheckpoint()
  }

  /** The metadata loader's publication: reconciles what changed (everything, the first time). */
  onPublish(p: ImagePublication): void {
    this.#replicas.onPublish(p)
  }

  /**
   * Calls `fn` after each partition's reconciliation, each reconciliation pass and each publication
   * (the group coordinator loads a `__consumer_offsets` partition as soon as it is led here).
   */
  onReconciled(fn: () => void): void {
    this.#replicas.onReconciled(fn)
  }

  /** Resolves once every publication seen so far is reconciled (tests, startup). */
  settled(): Promise<void> {
    return this.#replicas.settled()
  }

  /**
   * Writes every directory's `replication-offset-checkpoint` (Kafka's format) durably: each hosted
   * partition's high watermark, and for a log not adopted yet the value read at start (clamped to
   * its log end once known), so a restart before it is adopted still finds it.
   */
  checkpointHighWatermarks(): Promise<void> {
    return this.#replicas.checkpointHighWatermarks()
  }

  /** Proposes every lagging follower out of its leader's ISR (also run by the timer). */
  maybeShrinkIsrs(): void {
    this.#isr.maybeShrinkIsrs()
  }

  // ---------------------------------------------------------------- lookups

  /** A hosted partition, or undefined. */
  getPartition(topic: string, partition: number): Partition | undefined {
    return this.#replicas.getPartition(topic, partition)
  }

  /** Every hosted partition. */
  partitions(): IterableIterator<Partition> {
    return this.#replicas.partitions()
  }

  // ---------------------------------------------------------------- produce and fetch

  /**
   * Appends each entry to its partition as leader, concurrently across partitions. With acks=-1 the
   * answer waits until the ISR has every appended batch (the high watermark passes it; with
   * `flush.on.ack` that includes the fsync) or `timeoutMs` passes (REQUEST_TIMED_OUT).
   */
  /**
   * KIP-890: null when the producer's transaction of this epoch is open on the partition, else the
   * guard of its verification; undefined when the partition is not led here (yet).
   */
  startTxnVerification(
    topic: string,
    partition: number,
    producerId: bigint,
    producerEpoch: number,
  ): object | null | undefined {
    const p = this.getPartition(topic, partition)
    if (p === undefined || p.role !== 'leader') return undefined
    return p.state.producers.startVerification(producerId, producerEpoch)
  }

  appendRecords(entries: readonly ProduceEntry[], options: AppendRecordsOptions): Promise<ProduceResult[]> {
    return appendRecords(this.#produce, entries, options)
  }

  /**
   * WriteTxnMarkers: each marker appended as a control batch to its partition as leader, answered
   * once the ISR has it or `timeoutMs` passed. A partition not hosted here, or offline, is
   * UNKNOWN_TOPIC_OR_PARTITION (Kafka's `onlinePartition` finds none); a follower answers
   * NOT_LEADER_OR_FOLLOWER.
   */
  async appendTxnMarkers(entries: readonly TxnMarkerEntry[], timeoutMs: number): Promise<ProduceResult[]> {
    const results = await appendTxnMarkers(this.#produce, entries, timeoutMs)
    return results.map((r, i) => {
      const e = entries[i]!
      const p = this.getPartition(e.topic, e.partition)
      if (r.errorCode === ErrorCode.None || (p !== undefined && p.log.offlineCause === null)) return r
      return { ...r, errorCode: ErrorCode.UnknownTopicOrPartition, errorMessage: null }
    })
  }

  /**
   * A fetch: read at once; answer when there are at least `minBytes`, an error, or no wait asked;
   * otherwise wait (woken by appends and high-watermark moves on the partitions, never polling)
   * until enough bytes are estimated to be there, a partition changed leadership, or `maxWaitMs`
   * passed, and read again.
   */
  fetchMessages(specs: readonly FetchSpec[], params: FetchParams): Promise<ReadOutcome[]> {
    return fetchMessages(this.#fetch, specs, params)
  }

  // ---------------------------------------------------------------- offsets

  /** The hosted partition once served as the metadata says (`whenServed`), or the error why none. */
  async #leaderFor(topic: string, partition: number): Promise<Partition | ErrorCode> {
    const serving = this.#replicas.whenServed([{ topic, partition }])
    if (serving !== null) await serving
    const p = this.getPartition(topic, partition)
    if (p === undefined) return this.#replicas.unhosted(topic, partition)
    return p.log.offlineCause !== null ? ErrorCode.KafkaStorageError : p
  }

  /** ListOffsets v1+ for one partition. Consumers (replica -1) see the high watermark or LSO. */
  async listOffset(topic: string, partition: number, params: ListOffsetParams): Promise<OffsetForTimestamp> {
    const p = await this.#leaderFor(topic, partition)
    if (typeof p === 'number') return { errorCode: p, timestamp: -1n, offset: -1n, leaderEpoch: -1 }
    return p.fetchOffsetForTimestamp(params.timestamp, {
      currentLeaderEpoch: params.currentLeaderEpoch,
      isolationLevel: params.replicaId === CONSUMER_REPLICA_ID ? params.isolationLevel : null,
      fetchOnlyFromLeader: params.replicaId !== DEBUGGING_REPLICA_ID,
    })
  }

  /** OffsetForLeaderEpoch for one partition. */
  async lastOffsetForLeaderEpoch(
    topic: string,
    partition: number,
    params: { currentLeaderEpoch: number; leaderEpoch: number; replicaId: number },
  ): Promise<{ errorCode: ErrorCode; leaderEpoch: number; endOffset: bigint }> {
    const p = await this.#leaderFor(topic, partition)
    if (typeof p === 'number') return { errorCode: p, leaderEpoch: -1, endOffset: -1n }
    return p.lastOffsetForLeaderEpoch(
      params.currentLeaderEpoch,
      params.leaderEpoch,
      params.replicaId !== DEBUGGING_REPLICA_ID,
    )
  }

  /**
   * DeleteRecords for one partition: the leader moves its log start; the low watermark is
   * checkpointed before the answer so a restart keeps it. (With followers, the answer will wait
   * for their log starts too.)
   */
  async deleteRecords(
    topic: string,
    partition: number,
    offset: bigint,
  ): Promise<{ errorCode: ErrorCode; lowWatermark: bigint }> {
    const p = await this.#leaderFor(topic, partition)
    if (typeof p === 'number') return { errorCode: p, lowWatermark: -1n }
    const r = await p.deleteRecordsOnLeader(offset)
    if (r.errorCode === ErrorCode.None)
      await this.#replicas.managerOf(topic, partition)?.manager.checkpointLogStartOffsets()
    return r
  }

  /**
   * DescribeProducers for one partition: any replica answers from its own producer state, as
   * Kafka's does (`kafka-transactions find-hanging --broker-id` asks a broker about every partition
   * it holds, followers too).
   */
  async activeProducers(
    topic: string,
    partition: number,
  ): Promise<{ errorCode: ErrorCode; producers: readonly ProducerEntry[] }> {
    const p = await this.#leaderFor(topic, partition)
    if (typeof p === 'number') return { errorCode: p, producers: [] }
    return { errorCode: ErrorCode.None, producers: [...p.state.producers.entries()] }
  }

  /** DescribeLogDirs: each directory and the partitions in it. */
  describeLogDirs(): LogDirDescription[] {
    return this.#replicas.managers.map((m) => ({
      dir: m.dir,
      offline: m.isOffline,
      partitions: m.logs().map((h) => {
        const p = this.getPartition(h.topic, h.partition)
        const lag =
          p === undefined
            ? -1n
            : p.highWatermark > h.log.logEndOffset
              ? p.highWatermark - h.log.logEndOffset
              : 0n
        return {
          topic: TopicName(h.topic),
          partition: h.partition,
          sizeBytes: h.log.sizeBytes,
          offsetLag: lag,
        }
      }),
    }))
  }

  /** The high watermark of a hosted partition, or undefined. */
  highWatermark(topic: string, partition: number): bigint | undefined {
    return this.getPartition(topic, partition)?.highWatermark
  }

  /**
   * The last stable offset of a hosted partition, or undefined: the cleaner's upper bound (Kafka's
   * first uncleanable offset is below the first unstable offset and the high watermark), so it
   * never compacts records of a transaction still open.
   */
  lastStableOffset(topic: string, partition: number): bigint | undefined {
    return this.getPartition(topic, partition)?.lastStableOffset
  }

  // ---------------------------------------------------------------- periodic tasks

  #armExpiry(): void {
    if (this.#replicas.closed) return
    this.#expiryTimer = this.#o.clock.setTimer(this.#limits.producerExpirationCheckIntervalMs, () => {
      this.#expiryTimer = null
      const now = this.#o.clock.nowMs()
      for (const p of this.partitions()) p.state.producers.expire(now, this.#o.producerIdExpirationMs)
      this.#armExpiry()
    })
  }

  /** Kafka's isr-expiration task: every half `replica.lag.time.max.ms`, lagging followers are proposed out. */
  #armIsrCheck(): void {
    const r = this.#o.replication
    if (r === undefined || this.#replicas.closed) return
    this.#isrTimer = this.#o.clock.setTimer(Math.max(1, Math.floor(r.lagTimeMsMax / 2)), () => {
      this.#isrTimer = null
      this.maybeShrinkIsrs()
      this.#armIsrCheck()
    })
  }

  /** Every `replica.high.watermark.checkpoint.interval.ms` (with replication; close writes it always). */
  #armCheckpoint(): void {
    const r = this.#o.replication
    if (r === undefined || this.#replicas.closed) return
    this.#checkpointTimer = this.#o.clock.setTimer(r.highWatermarkCheckpointIntervalMs, () => {
      this.#checkpointTimer = null
      void this.checkpointHighWatermarks().finally(() => this.#armCheckpoint())
    })
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Shutdown begins: long polls answer now and new ones do not wait; produces waiting for their
   * fsync or the ISR may still finish (`close` ends them).
   */
  completeDelayed(): void {
    this.#delayed.complete('fetch')
  }

  /**
   * Clean shutdown, before the log directories close: waiting operations answer, reconciliation
   * stops, and every partition writes its producer snapshot at its log end.
   */
  async close(): Promise<void> {
    if (this.#replicas.closed) return
    this.#replicas.markClosed()
    await this.#fetchers?.close()
    this.#alterPartition?.close()
    this.#delayed.completeAll()
    for (const t of [this.#expiryTimer, this.#isrTimer, this.#checkpointTimer])
      if (t !== null) this.#o.clock.clearTimer(t)
    await this.settled()
    if (this.#replicas.started) await this.checkpointHighWatermarks()
    await this.#replicas.closeStates()
  }
}
