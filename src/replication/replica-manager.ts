/**
 * The replica manager: reconciles the partitions this broker hosts to each metadata publication
 * (open logs, become leader or follower, delete logs of deleted topics) and serves the data path on
 * them: appends with acks and their delayed completion, fetches with long polls, offsets by time,
 * leader-epoch ends, record deletion. It decides nothing about leaders or ISR: metadata does.
 */
import type { EffectiveConfig } from '../config/index.ts'
import { type Clock, type Disk, DiskError, isNotFound, joinPath, type TimerHandle } from '../io/index.ts'
import { ConfigResourceType, type ImagePublication, type MetadataImage } from '../metadata/index.ts'
import { assert, type BrokerId, type TopicName, type Uuid } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import {
  type LogHooks,
  type LogManager,
  LogOfflineError,
  logConfigFrom,
  type OffsetCheckpoint,
  type PartitionLog,
  partitionKey,
  type ReadBuffers,
  readOffsetCheckpoint,
  writeFileDurably,
  writeOffsetCheckpoint,
} from '../storage/index.ts'
import { AlterPartitionManager, type AlterPartitionManagerOptions } from './alter-partition-manager.ts'
import { DelayedOperations, Watchers } from './delayed-operations.ts'
import {
  type OffsetForTimestamp,
  Partition,
  type PartitionAssignment,
  type PartitionSettings,
  type ReadOutcome,
  type ReadParams,
} from './partition.ts'
import type { ProducerEntry } from './producer-state.ts'
import { readError } from './read-outcome.ts'
import { type ReplicaSelectorKind, selectReadReplica } from './read-replica-selector.ts'
import { type LeaderLink, ReplicaFetcherManager, type ReplicaFetcherSettings } from './replica-fetcher.ts'
import { ReplicaLogState } from './replica-log-state.ts'
import { ReplicationStats } from './replication-stats.ts'

/** Kafka's replica ids of requests that are not from a follower. */
export const CONSUMER_REPLICA_ID = -1
export const DEBUGGING_REPLICA_ID = -2
/** Kafka's `partition.metadata` file: the topic id a partition directory belongs to. */
export const PARTITION_METADATA_FILE = 'partition.metadata'
/** Kafka's per-directory high-watermark checkpoint. */
export const REPLICATION_OFFSET_CHECKPOINT_FILE = 'replication-offset-checkpoint'

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

export interface ProduceEntry {
  readonly topic: TopicName
  readonly partition: number
  /** Exactly one record batch, as the producer sent it. */
  readonly records: Buffer
}

export interface ProduceResult {
  readonly errorCode: number
  readonly errorMessage: string | null
  /** -1 with an error. */
  readonly baseOffset: bigint
  readonly logAppendTimeMs: number
  readonly logStartOffset: bigint
}

export interface FetchSpec {
  readonly topic: TopicName
  readonly partition: number
  readonly fetchOffset: bigint
  readonly maxBytes: number
  readonly currentLeaderEpoch: number
  readonly lastFetchedEpoch: number
}

export interface FetchParams {
  /** -1 for consumers; a broker id for followers. */
  readonly replicaId: number
  readonly maxWaitMs: number
  readonly minBytes: number
  /** The response's byte budget (`fetch.max.bytes` already applied). */
  readonly maxBytes: number
  /** 0 read_uncommitted, 1 read_committed. */
  readonly isolationLevel: number
  /**
   * A consumer's client metadata (Fetch v11+): its rack, '' when none. Present, the consumer may
   * read from a follower (up to that follower's high watermark) and be pointed at one (KIP-392).
   */
  readonly clientRack?: string
  /** A follower's broker epoch (Fetch v15+ replicaState), -1 when not sent. */
  readonly replicaEpoch?: bigint
  /**
   * Where file reads get their buffers (storage's `ReadBufferPool`): the caller releases every
   * returned `records` to it once the response is written. Reads a long poll discards are
   * released here.
   */
  readonly readBuffers?: ReadBuffers
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

function produceError(
  errorCode: number,
  errorMessage: string | null = null,
  logStartOffset = -1n,
): ProduceResult {
  return { errorCode, errorMessage, baseOffset: -1n, logAppendTimeMs: -1, logStartOffset }
}

/**
 * How long a partition newly led here (or given new replicas) keeps its followers' fetches from
 * parking until they name it (`#joining`): replica.fetch.wait.max.ms's default, past which a plain
 * long poll would have ended.
 */
const JOIN_WAIT_MS = 500

/**
 * The append errors Kafka answers without the partition's log start offset (ReplicaManager's
 * `UNKNOWN_LOG_APPEND_INFO` cases); every other refusal of a hosted partition carries it.
 */
const ERRORS_WITHOUT_LOG_START: ReadonlySet<number> = new Set([
  ErrorCode.UnknownTopicOrPartition,
  ErrorCode.NotLeaderOrFollower,
  ErrorCode.MessageTooLarge,
  ErrorCode.RecordListTooLarge,
  ErrorCode.CorruptMessage,
  ErrorCode.KafkaStorageError,
  ErrorCode.UnknownTopicId,
])

/** The topic id a `partition.metadata` file names (Kafka's format), or null. */
export function parsePartitionMetadata(text: string): Uuid | null {
  const m = /^topic_id: *(\S+)$/m.exec(text)
  return m === null ? null : (m[1] as Uuid)
}

export function formatPartitionMetadata(topicId: Uuid): string {
  return `version: 0\ntopic_id: ${topicId}\n`
}

interface Work {
  readonly deleted: ReadonlyArray<{ readonly name: TopicName; readonly id: Uuid }>
  /** Partitions to look at: `topic name -> indexes` (all of the topic when null). */
  readonly partitions: ReadonlyMap<TopicName, Set<number> | null>
  /** Topics whose settings changed (all when null). */
  readonly configs: ReadonlySet<TopicName> | null
}

export class ReplicaManager {
  readonly #o: ReplicaManagerOptions
  readonly #limits: ReplicaManagerLimits
  readonly #delayed: DelayedOperations
  /**
   * Partitions that became led here (or that a reassignment gave a new replica) and that a follower
   * has yet to fetch, by follower: until a fetch of that follower names them (or JOIN_WAIT_MS
   * passed), its fetches are answered at once rather than parked, and the one parked when they
   * became led is woken (`#followerWatchers`).
   * Otherwise a follower's long poll for its other partitions, sent before it knew of the new one,
   * held every acks=all write to it for up to replica.fetch.wait.max.ms (a new topic's first
   * writes on 3 nodes: p99 300-400 ms at 20,000 records/s; docs/performance.md, "Known bottlenecks").
   */
  readonly #joining = new Map<BrokerId, Map<string, number>>()
  /**
   * Woken after each partition's reconciliation, each reconciliation pass and each publication:
   * requests for partitions this broker is about to serve re-check (`#whenServed`).
   */
  readonly #reconciled = new Watchers()
  /** Per follower: woken when a partition it is to fetch becomes led here. */
  readonly #followerWatchers = new Map<BrokerId, Watchers>()
  /** Per log: its epoch cache and producer state, made when the log opens (`hooksFor`). */
  readonly #states = new Map<string, ReplicaLogState>()
  readonly #partitions = new Map<string, Partition>()
  readonly #settings = new Map<TopicName, PartitionSettings>()
  #managers: readonly LogManager[] = []
  /** Logs being created per log dir: partitions created together spread over the dirs too. */
  readonly #creating = new Map<LogManager, number>()
  #image: MetadataImage | null = null
  #started = false
  #closed = false
  /** Work accumulated before start, or between reconciliations. */
  #pending: { full: boolean; work: Work[] } = { full: true, work: [] }
  #reconciling: Promise<void> = Promise.resolve()
  #expiryTimer: TimerHandle | null = null
  #isrTimer: TimerHandle | null = null
  #checkpointTimer: TimerHandle | null = null
  readonly #fetchers: ReplicaFetcherManager | null
  readonly #alterPartition: AlterPartitionManager | null
  /** Each log directory's replication-offset-checkpoint as read at start. */
  readonly #hwCheckpoints = new Map<string, OffsetCheckpoint>()
  /** Partitions whose last reconciliation failed (a disk error), by key. */
  readonly #unreconciled = new Map<string, { topic: TopicName; partition: number }>()
  /** Serializes writes of the replication-offset-checkpoint files. */
  #hwCheckpointTail: Promise<void> = Promise.resolve()
  /** High watermarks of partitions rebuilt after their log directory came back, until re-opened. */
  readonly #carriedHighWatermarks = new Map<string, bigint>()

  /** Counters of the replicated write path (read and reset by the broker). */
  readonly stats = new ReplicationStats()

  constructor(options: ReplicaManagerOptions) {
    this.#o = options
    this.#limits = { ...DEFAULT_REPLICA_MANAGER_LIMITS, ...options.limits }
    this.#delayed = new DelayedOperations(options.clock, {
      operationsMax: this.#limits.delayedOperationsMax,
    })
    const r = options.replication
    const log = (level: 'info' | 'warn' | 'error', message: string) => this.#log(level, message)
    this.#fetchers =
      r === undefined
        ? null
        : new ReplicaFetcherManager({
            nodeId: options.nodeId,
            brokerEpoch: r.brokerEpoch,
            clock: options.clock,
            settings: r.fetcher,
            connect: r.connect,
            log,
            stats: this.stats,
          })
    this.#alterPartition =
      r === undefined
        ? null
        : new AlterPartitionManager({
            nodeId: options.nodeId,
            brokerEpoch: r.brokerEpoch,
            send: r.alterPartition,
            clock: options.clock,
            retryBackoffMs: r.alterPartitionRetryBackoffMs,
            log,
          })
  }

  #log(level: 'info' | 'warn' | 'error', message: string): void {
    this.#o.log?.(level, message)
  }

  /**
   * The hooks of a log opening (give it to LogManager's `hooksFor`): the partition's epoch cache and
   * producer state follow every batch from the moment the log opens, recovery included.
   */
  hooksFor(topic: string, partition: number): LogHooks {
    const key = partitionKey(topic, partition)
    const state = new ReplicaLogState({
      disk: this.#o.disk,
      clock: this.#o.clock,
      onWarning: (m) => this.#log('warn', m),
      onDiskError: (e) => this.#failLogDir(e),
    })
    this.#states.get(key)?.abandon()
    this.#states.set(key, state)
    return state.hooks
  }

  /**
   * Starts reconciling with the log directories (opened with `hooksFor`) and the latest image,
   * once each directory's `replication-offset-checkpoint` is read.
   */
  start(managers: readonly LogManager[]): void {
    assert(!this.#started, 'replica manager started twice')
    assert(managers.length > 0, 'a broker needs a log directory')
    this.#managers = managers
    this.#started = true
    for (const m of managers)
      m.subscribe({
        onOffline: (dir, cause) => this.#onLogDirOffline(dir, cause),
        onOnline: (dir) => this.#onLogDirOnline(dir),
      })
    this.#reconciling = this.#reconciling.then(() => this.#readHighWatermarkCheckpoints())
    this.#scheduleReconcile()
    this.#armExpiry()
    this.#armIsrCheck()
    this.#armCheckpoint()
  }

  async #readHighWatermarkCheckpoints(): Promise<void> {
    for (const m of this.#managers) {
      const path = joinPath(m.dir, REPLICATION_OFFSET_CHECKPOINT_FILE)
      try {
        this.#hwCheckpoints.set(m.dir, await readOffsetCheckpoint(this.#o.disk, path))
      } catch (e) {
        // A damaged checkpoint costs the high watermark (it restarts at the log start), never data.
        this.#log('warn', `${path}: ${(e as Error).message}; high watermarks start at the log start`)
      }
    }
  }

  /**
   * A log directory failed: its partitions' logs are offline (produce, fetch and offsets answer
   * KAFKA_STORAGE_ERROR, waiting produces too), their fetchers stop, and they stay so, whatever
   * metadata says, until the directory is back (the broker's heartbeats report it offline meanwhile,
   * so the controller moves leaderships to other replicas).
   */
  #onLogDirOffline(m: LogManager, cause: Error): void {
    if (this.#closed) return
    let n = 0
    for (const p of this.#partitions.values()) {
      if (m.getLog(p.topic, p.partition) !== p.log) continue
      n++
      void this.#fetchers?.unassign(p)
      p.watchers.wake()
    }
    this.#log('error', `log dir ${m.dir} offline (${n} partitions): ${cause.message}`)
  }

  /**
   * A log directory is back, every log in it re-opened through recovery: each of its partitions is
   * rebuilt on its new log (epoch cache and producer state loaded again, the high watermark it had,
   * clamped to the recovered log end) and reconciled to the latest image, so it leads or follows
   * (fetching from the leader, truncating where it diverged, rejoining the ISR) as after a restart.
   */
  #onLogDirOnline(m: LogManager): void {
    if (this.#closed) return
    this.#reconciling = this.#reconciling.then(async () => {
      if (this.#closed) return
      const partitions = new Map<TopicName, Set<number>>()
      // Partitions whose reconciliation failed (on any dir) are tried again.
      for (const { topic, partition } of this.#unreconciled.values()) {
        const set = partitions.get(topic) ?? new Set<number>()
        set.add(partition)
        partitions.set(topic, set)
      }
      for (const h of m.logs()) {
        const key = partitionKey(h.topic, h.partition)
        const p = this.#partitions.get(key)
        if (p === undefined || p.log === h.log) continue
        this.#partitions.delete(key)
        await this.#fetchers?.unassign(p)
        p.stop()
        this.#carriedHighWatermarks.set(key, p.highWatermark)
        const set = partitions.get(p.topic) ?? new Set<number>()
        set.add(p.partition)
        partitions.set(p.topic, set)
      }
      this.#log(
        'info',
        `log dir ${m.dir} online again: rebuilding ${this.#carriedHighWatermarks.size} partitions`,
      )
      this.#pending.work.push({ deleted: [], partitions, configs: new Set() })
    })
    this.#scheduleReconcile()
  }

  /**
   * Writes every directory's `replication-offset-checkpoint` (Kafka's format) durably: each hosted
   * partition's high watermark, and for a log not adopted yet the value read at start (clamped to
   * its log end once known), so a restart before it is adopted still finds it.
   */
  checkpointHighWatermarks(): Promise<void> {
    const run = this.#hwCheckpointTail.then(async () => {
      for (const m of this.#managers) {
        try {
          await this.#writeHighWatermarks(m)
        } catch (e) {
          this.#log(
            'warn',
            `${m.dir}: writing ${REPLICATION_OFFSET_CHECKPOINT_FILE} failed: ${(e as Error).message}`,
          )
          this.#failLogDir(e)
        }
      }
    })
    this.#hwCheckpointTail = run.catch(() => undefined)
    return run
  }

  async #writeHighWatermarks(m: LogManager): Promise<void> {
    // An offline directory's file stays as it was: its partitions' offsets are not to be trusted.
    if (m.isOffline) return
    const read = this.#hwCheckpoints.get(m.dir)
    const entries: Array<{ topic: string; partition: number; offset: bigint }> = []
    for (const h of m.logs()) {
      const p = this.getPartition(h.topic, h.partition)
      if (p !== undefined && p.log === h.log)
        entries.push({ topic: h.topic, partition: h.partition, offset: p.highWatermark })
      else {
        const was = read?.get(partitionKey(h.topic, h.partition))
        if (was !== undefined) entries.push(was)
      }
    }
    await writeOffsetCheckpoint(this.#o.disk, joinPath(m.dir, REPLICATION_OFFSET_CHECKPOINT_FILE), entries)
  }

  /**
   * A checkpointed high watermark past the log end (the log lost its tail to a crash) is rewritten
   * as the log end durably before the partition takes any write: else the appends of a new history
   * would sit below a stale high watermark after the next restart, claimed committed though no ISR
   * ever held them (cluster simulation seed 3361).
   */
  async #clampCheckpointedHighWatermark(m: LogManager, key: string, logEndOffset: bigint): Promise<void> {
    const read = this.#hwCheckpoints.get(m.dir)
    const was = read?.get(key)
    if (read === undefined || was === undefined || was.offset <= logEndOffset) return
    this.#log(
      'info',
      `partition ${key}: checkpointed high watermark ${was.offset} past the log end ${logEndOffset}`,
    )
    read.set(key, { ...was, offset: logEndOffset })
    const run = this.#hwCheckpointTail.then(() => this.#writeHighWatermarks(m))
    this.#hwCheckpointTail = run.catch(() => undefined)
    // A failed write is the directory's failure (it goes offline); the partition opens regardless.
    await run.catch((e: unknown) => {
      this.#log(
        'warn',
        `${m.dir}: writing ${REPLICATION_OFFSET_CHECKPOINT_FILE} failed: ${(e as Error).message}`,
      )
      this.#failLogDir(e)
    })
  }

  /** Every `replica.high.watermark.checkpoint.interval.ms` (with replication; close writes it always). */
  #armCheckpoint(): void {
    const r = this.#o.replication
    if (r === undefined || this.#closed) return
    this.#checkpointTimer = this.#o.clock.setTimer(r.highWatermarkCheckpointIntervalMs, () => {
      this.#checkpointTimer = null
      void this.checkpointHighWatermarks().finally(() => this.#armCheckpoint())
    })
  }

  /** Kafka's isr-expiration task: every half `replica.lag.time.max.ms`, lagging followers are proposed out. */
  #armIsrCheck(): void {
    const r = this.#o.replication
    if (r === undefined || this.#closed) return
    this.#isrTimer = this.#o.clock.setTimer(Math.max(1, Math.floor(r.lagTimeMsMax / 2)), () => {
      this.#isrTimer = null
      this.maybeShrinkIsrs()
      this.#armIsrCheck()
    })
  }

  /** Proposes every lagging follower out of its leader's ISR (also run by the timer). */
  maybeShrinkIsrs(): void {
    const r = this.#o.replication
    if (r === undefined) return
    for (const p of this.#partitions.values()) {
      const change = p.maybeShrinkIsr(r.lagTimeMsMax)
      if (change !== null) {
        this.#log(
          'info',
          `partition ${p.topic}-${p.partition}: shrinking ISR ${p.isr.join(',')} to ${change.isr.join(',')}`,
        )
        this.#submitIsrChange(p, change)
      }
    }
  }

  #submitIsrChange(p: Partition, change: NonNullable<Partition['pendingIsrChange']>): void {
    this.#alterPartition?.submit({
      topic: p.topic,
      topicId: p.topicId,
      partition: p.partition,
      change,
      wanted: () => p.pendingIsrChange === change && this.getPartition(p.topic, p.partition) === p,
      answer: (a) => p.onIsrChangeAnswer(change, a),
    })
  }

  /** KIP-841: a follower may join the ISR only while registered, unfenced, not shutting down, in its current broker epoch. */
  #isrEligible(id: BrokerId, brokerEpoch: bigint): boolean {
    const b = this.#image?.brokers.get(id)
    return (
      b !== undefined && !b.fenced && !b.inControlledShutdown && (brokerEpoch < 0n || b.epoch === brokerEpoch)
    )
  }

  /** The metadata loader's publication: reconciles what changed (everything, the first time). */
  onPublish(p: ImagePublication): void {
    if (this.#closed) return
    this.#image = p.image
    this.#reconciled.wake()
    if (!this.#started) {
      // The first reconciliation looks at every topic; only deletions need remembering until then.
      if (p.changes.deletedTopics.length > 0) {
        this.#pending.work.push({
          deleted: p.changes.deletedTopics.map((t) => ({ name: t.name, id: t.id })),
          partitions: new Map(),
          configs: new Set(),
        })
      }
      return
    }
    const partitions = new Map<TopicName, Set<number> | null>()
    for (const t of p.changes.createdTopics) partitions.set(t.name, null)
    for (const c of p.changes.changedPartitions) {
      const set = partitions.get(c.topic.name)
      if (set === null) continue
      if (set === undefined) partitions.set(c.topic.name, new Set([c.partition]))
      else set.add(c.partition)
    }
    let configs: Set<TopicName> | null = new Set()
    for (const key of p.changes.changedConfigs) {
      const at = key.indexOf(':')
      const type = Number(key.slice(0, at))
      if (type === ConfigResourceType.Topic) configs?.add(key.slice(at + 1) as TopicName)
      else if (type === ConfigResourceType.Broker) configs = null
    }
    this.#pending.work.push({
      deleted: p.changes.deletedTopics.map((t) => ({ name: t.name, id: t.id })),
      partitions,
      configs,
    })
    this.#scheduleReconcile()
  }

  #scheduleReconcile(): void {
    if (!this.#started || this.#closed) return
    this.#reconciling = this.#reconciling.then(async () => {
      const image = this.#image
      const pending = this.#pending
      if (image === null || (pending.work.length === 0 && !pending.full)) return
      this.#pending = { full: false, work: [] }
      try {
        await this.#reconcile(image, pending)
      } catch (e) {
        this.#log('error', `replica reconciliation failed: ${(e as Error).stack ?? String(e)}`)
      } finally {
        this.#reconciled.wake()
      }
    })
  }

  /**
   * Calls `fn` after each partition's reconciliation, each reconciliation pass and each publication
   * (the group coordinator loads a `__consumer_offsets` partition as soon as it is led here).
   */
  onReconciled(fn: () => void): void {
    this.#reconciled.add(fn)
  }

  /** Resolves once every publication seen so far is reconciled (tests, startup). */
  async settled(): Promise<void> {
    let last: Promise<void>
    do {
      last = this.#reconciling
      await last
    } while (last !== this.#reconciling)
  }

  async #reconcile(image: MetadataImage, pending: { full: boolean; work: Work[] }): Promise<void> {
    for (const w of pending.work) {
      for (const t of w.deleted) {
        for (const [key, p] of [...this.#partitions]) {
          if (p.topic === t.name && p.topicId === t.id) await this.#removePartition(key, p.topic, p.partition)
        }
        // Logs of the topic never adopted here (deleted before this broker reconciled them).
        for (const m of this.#managers) {
          for (const h of m.logs()) {
            if (h.topic !== t.name || this.#partitions.has(partitionKey(h.topic, h.partition))) continue
            const owner = await this.#readTopicId(h.log)
            if (owner === null || owner === t.id)
              await this.#removePartition(partitionKey(h.topic, h.partition), h.topic, h.partition)
          }
        }
        this.#settings.delete(t.name)
      }
      if (w.configs === null) this.#settings.clear()
      else for (const name of w.configs) this.#settings.delete(name)
    }
    const touched = new Map<TopicName, Set<number> | null>()
    if (pending.full) for (const name of image.topicsByName.keys()) touched.set(name, null)
    for (const w of pending.work) {
      for (const [name, set] of w.partitions) {
        const have = touched.get(name)
        if (have === null) continue
        if (set === null || have === undefined) touched.set(name, set === null ? null : new Set(set))
        else for (const i of set) have.add(i)
      }
    }
    // Settings first, so that partitions keep running with their topic's current config.
    for (const p of this.#partitions.values()) {
      const s = this.#settingsFor(p.topic, image)
      if (s !== p.settings) p.updateSettings(s)
    }
    const tasks: Array<() => Promise<void>> = []
    for (const [name, indexes] of touched) {
      const topic = image.topicsByName.get(name)
      if (topic === undefined) continue
      for (const [partition, reg] of topic.partitions) {
        if (indexes !== null && !indexes.has(partition)) continue
        tasks.push(() =>
          this.#reconcilePartition(name, topic.id, partition, reg, image).finally(() =>
            this.#reconciled.wake(),
          ),
        )
      }
    }
    // Partitions are independent; each opening costs a few fsyncs, so a few run at once.
    let next = 0
    const worker = async () => {
      while (next < tasks.length && !this.#closed) await tasks[next++]!()
    }
    await Promise.all(
      Array.from({ length: Math.min(this.#limits.reconcileConcurrencyMax, tasks.length) }, worker),
    )
  }

  #settingsFor(topic: TopicName, image: MetadataImage): PartitionSettings {
    let s = this.#settings.get(topic)
    if (s === undefined) {
      const c = this.#o.topicConfig(topic, image)
      s = { logConfig: logConfigFrom(c), insyncReplicasMin: c.int('min.insync.replicas') }
      this.#settings.set(topic, s)
    }
    return s
  }

  async #reconcilePartition(
    topic: TopicName,
    topicId: Uuid,
    partition: number,
    reg: PartitionAssignment,
    image: MetadataImage,
  ): Promise<void> {
    const key = partitionKey(topic, partition)
    this.#unreconciled.delete(key)
    let p = this.#partitions.get(key)
    if (p !== undefined && p.topicId !== topicId) {
      await this.#removePartition(key, topic, partition)
      p = undefined
    }
    if (!reg.replicas.includes(this.#o.nodeId)) {
      if (p !== undefined) await this.#removePartition(key, topic, partition)
      return
    }
    // A partition on an offline directory waits for it (#onLogDirOnline reconciles it then).
    if (p !== undefined && p.log.offlineCause !== null) return
    try {
      p ??= await this.#openPartition(topic, topicId, partition, image)
      if (reg.leader === this.#o.nodeId) {
        await this.#fetchers?.unassign(p)
        const newlyLed = p.role !== 'leader' || p.leaderEpoch !== reg.leaderEpoch
        // A reassignment adds replicas without a new leader epoch: they start fetching too.
        const had = newlyLed ? [] : p.replicas
        await p.makeLeader(reg)
        const joining = reg.replicas.filter((r) => !had.includes(r))
        if (joining.length > 0) this.#awaitJoins(key, joining)
        const recovered = this.#alterPartition === null ? null : p.maybeCompleteRecovery()
        if (recovered !== null) {
          this.#log('info', `partition ${key}: elected uncleanly; reporting its recovery done`)
          this.#submitIsrChange(p, recovered)
        }
      } else {
        p.makeFollower(reg)
        if (reg.leader >= 0) await this.#fetchers?.assign(p, reg.leader, reg.leaderEpoch)
        else await this.#fetchers?.unassign(p)
      }
    } catch (e) {
      this.#log('error', `partition ${key}: ${(e as Error).message}`)
      // Reconciled again when a log dir comes back (a failed write took its dir offline).
      this.#unreconciled.set(key, { topic, partition })
      this.#failLogDir(e)
    }
  }

  /** `key` is led here from now on, or has new replicas: they are to fetch it (`#joining`). */
  #awaitJoins(key: string, replicas: readonly BrokerId[]): void {
    const untilMs = this.#o.clock.monotonicMs() + JOIN_WAIT_MS
    for (const r of replicas) {
      if (r === this.#o.nodeId) continue
      let m = this.#joining.get(r)
      if (m === undefined) {
        m = new Map()
        this.#joining.set(r, m)
      }
      m.set(key, untilMs)
      this.#followerWatchers.get(r)?.wake()
    }
  }

  /**
   * Whether `replicaId` has a partition to start fetching here that `specs` do not name (those they
   * name, and those waited for too long, are forgotten).
   */
  #joinPending(replicaId: BrokerId, specs: readonly FetchSpec[]): boolean {
    const m = this.#joining.get(replicaId)
    if (m === undefined) return false
    for (const s of specs) if (m.size > 0) m.delete(partitionKey(s.topic, s.partition))
    const nowMs = this.#o.clock.monotonicMs()
    for (const [key, untilMs] of m) if (untilMs <= nowMs) m.delete(key)
    if (m.size === 0) {
      this.#joining.delete(replicaId)
      return false
    }
    return true
  }

  /**
   * A disk error on a file of a log dir (partition.metadata, an epoch checkpoint, a snapshot, the
   * high-watermark checkpoint) is that dir's failure, as in Kafka: it goes offline and comes back
   * through recovery, which rebuilds its partitions. Other errors are left to their callers.
   */
  #failLogDir(e: unknown): void {
    if (!(e instanceof DiskError) || e.code === 'ENOENT') return
    for (const m of this.#managers) {
      if (e.path === m.dir || e.path.startsWith(joinPath(m.dir, ''))) m.markOffline(e)
    }
  }

  #managerOf(topic: string, partition: number): { manager: LogManager; log: PartitionLog } | null {
    for (const manager of this.#managers) {
      const log = manager.getLog(topic, partition)
      if (log !== undefined) return { manager, log }
    }
    return null
  }

  async #openPartition(
    topic: TopicName,
    topicId: Uuid,
    partition: number,
    image: MetadataImage,
  ): Promise<Partition> {
    const key = partitionKey(topic, partition)
    const settings = this.#settingsFor(topic, image)
    let found = this.#managerOf(topic, partition)
    if (found !== null) {
      const owner = await this.#readTopicId(found.log)
      if (owner !== null && owner !== topicId) {
        // A log of an earlier topic of the same name (deleted while this broker was away).
        this.#log('warn', `deleting log ${key} of an earlier topic id ${owner} (now ${topicId})`)
        this.#states.get(key)?.abandon()
        this.#states.delete(key)
        await found.manager.deleteLog(topic, partition)
        found = null
      } else {
        found.log.updateConfig(settings.logConfig)
        if (owner === null) await this.#writeTopicId(found.log, topicId)
      }
    }
    if (found === null) {
      const load = (m: LogManager) => m.logs().length + (this.#creating.get(m) ?? 0)
      const manager = this.#managers.filter((m) => !m.isOffline).sort((a, b) => load(a) - load(b))[0]
      if (manager === undefined) throw new LogOfflineError('every log directory is offline')
      this.#creating.set(manager, (this.#creating.get(manager) ?? 0) + 1)
      let log: PartitionLog
      try {
        log = await manager.getOrCreateLog(topic, partition, settings.logConfig)
      } finally {
        this.#creating.set(manager, this.#creating.get(manager)! - 1)
      }
      await this.#writeTopicId(log, topicId)
      found = { manager, log }
    }
    const state = this.#states.get(key)
    assert(state !== undefined, `log ${key} was opened without the replica manager's hooks`)
    if (!state.loaded) await state.load(found.log)
    const carried = this.#carriedHighWatermarks.get(key)
    this.#carriedHighWatermarks.delete(key)
    await this.#clampCheckpointedHighWatermark(found.manager, key, found.log.logEndOffset)
    const checkpointed = carried ?? this.#hwCheckpoints.get(found.manager.dir)?.get(key)?.offset
    const p = new Partition({
      topic,
      partition,
      topicId,
      log: found.log,
      state,
      nodeId: this.#o.nodeId,
      clock: this.#o.clock,
      settings,
      ...(checkpointed === undefined ? {} : { highWatermark: checkpointed }),
      stats: this.stats,
    })
    this.#partitions.set(key, p)
    return p
  }

  async #readTopicId(log: PartitionLog): Promise<Uuid | null> {
    try {
      const text = await this.#o.disk.readFile(joinPath(log.dir, PARTITION_METADATA_FILE))
      return parsePartitionMetadata(text.toString('utf8'))
    } catch (e) {
      if (isNotFound(e)) return null
      throw e
    }
  }

  #writeTopicId(log: PartitionLog, topicId: Uuid): Promise<void> {
    return writeFileDurably(
      this.#o.disk,
      joinPath(log.dir, PARTITION_METADATA_FILE),
      Buffer.from(formatPartitionMetadata(topicId)),
    )
  }

  async #removePartition(key: string, topic: string, partition: number): Promise<void> {
    const p = this.#partitions.get(key)
    this.#partitions.delete(key)
    await this.#fetchers?.unassign({ topic, partition })
    p?.stop()
    this.#states.get(key)?.abandon()
    this.#states.delete(key)
    const found = this.#managerOf(topic, partition)
    if (found !== null) await found.manager.deleteLog(topic, partition)
    this.#log('info', `partition ${key} removed`)
  }

  // ---------------------------------------------------------------- lookups

  /** A hosted partition, or undefined. */
  getPartition(topic: string, partition: number): Partition | undefined {
    return this.#partitions.get(partitionKey(topic, partition))
  }

  /** Every hosted partition. */
  partitions(): IterableIterator<Partition> {
    return this.#partitions.values()
  }

  /**
   * Whether the metadata this broker answers clients from names it a replica of a partition, or its
   * leader at an epoch, that the replica manager does not serve so yet: a partition being opened (a
   * topic just created: Metadata answers from the image at once, reconciliation opens the logs with
   * fsyncs) or being made leader (a new leader records its epoch durably first). Kafka applies a
   * metadata delta to its replica manager in the same step as its metadata cache, so its clients
   * never meet that window; here a request for such a partition waits for it (`#whenServed`) instead
   * of being answered NOT_LEADER_OR_FOLLOWER, which clients retry behind their later requests (a
   * producer without idempotence then stores a key's records out of order) or count as failed sends.
   * Not for partitions whose reconciliation failed or whose log dir is offline: they answer at once.
   */
  #becomingServed(topic: string, partition: number): boolean {
    if (!this.#started || this.#closed) return false
    const t = this.#image?.topicsByName.get(topic as TopicName)
    const reg = t?.partitions.get(partition)
    if (t === undefined || reg === undefined || !reg.replicas.includes(this.#o.nodeId)) return false
    const key = partitionKey(topic, partition)
    const p = this.#partitions.get(key)
    if (p === undefined || p.topicId !== t.id) return !this.#unreconciled.has(key)
    if (p.log.offlineCause !== null || reg.leader !== this.#o.nodeId) return false
    return !p.isLeader || p.leaderEpoch < reg.leaderEpoch
  }

  /**
   * Resolves once every partition named is served as the metadata says (`#becomingServed`), or
   * `timeoutMs` (at most `servingWaitMsMax`) passed, or shutdown began; null when none has to wait,
   * so the hot paths take no extra promise. Waiters wake in the order they came, so produces queued
   * behind an opening partition append in the order they arrived.
   */
  #whenServed(
    parts: readonly { readonly topic: string; readonly partition: number }[],
    timeoutMs = this.#limits.servingWaitMsMax,
  ): Promise<unknown> | null {
    const becoming = (x: { readonly topic: string; readonly partition: number }) =>
      this.#becomingServed(x.topic, x.partition)
    if (!parts.some(becoming)) return null
    const waitMs =
      timeoutMs > 0 ? Math.min(timeoutMs, this.#limits.servingWaitMsMax) : this.#limits.servingWaitMsMax
    return this.#delayed.wait([this.#reconciled], () => !parts.some(becoming), waitMs, 'fetch')
  }

  /** The error for a partition not hosted here: unknown to metadata, or led elsewhere. */
  #unhosted(topic: string, partition: number): ErrorCode {
    const t = this.#image?.topicsByName.get(topic as TopicName)
    if (t === undefined || !t.partitions.has(partition)) return ErrorCode.UnknownTopicOrPartition
    return ErrorCode.NotLeaderOrFollower
  }

  // ---------------------------------------------------------------- produce

  /**
   * Appends each entry to its partition as leader, concurrently across partitions. With acks=-1 the
   * answer waits until the ISR has every appended batch (the high watermark passes it; with
   * `flush.on.ack` that includes the fsync) or `timeoutMs` passes (REQUEST_TIMED_OUT).
   */
  async appendRecords(
    entries: readonly ProduceEntry[],
    options: { readonly acks: number; readonly timeoutMs: number },
  ): Promise<ProduceResult[]> {
    const startMs = this.#o.clock.monotonicMs()
    const serving = this.#whenServed(entries, options.timeoutMs)
    if (serving !== null) await serving
    // Every entry settles before an error is thrown: the records are views of the request's frame,
    // which its connection gives back (to the node's pool) once the handler is done, so no append
    // may still be on its way to a log then.
    const settled = await Promise.allSettled(
      entries.map(async (e) => {
        const p = this.getPartition(e.topic, e.partition)
        if (p === undefined) return { p, r: produceError(this.#unhosted(e.topic, e.partition)) }
        // An offline partition (its log dir failed) is Kafka's HostedPartition.Offline, whatever its role.
        if (p.log.offlineCause !== null) return { p, r: produceError(ErrorCode.KafkaStorageError) }
        const a = await p.appendAsLeader(e.records, options.acks)
        if (a.errorCode !== ErrorCode.None || !('firstOffset' in a)) {
          const logStart = ERRORS_WITHOUT_LOG_START.has(a.errorCode) ? -1n : p.log.logStartOffset
          return { p, r: produceError(a.errorCode, 'errorMessage' in a ? a.errorMessage : null, logStart) }
        }
        const r: ProduceResult = {
          errorCode: 0,
          errorMessage: null,
          baseOffset: a.firstOffset,
          logAppendTimeMs: a.logAppendTimeMs,
          logStartOffset: a.logStartOffset,
        }
        return { p, r, required: a.lastOffset + 1n }
      }),
    )
    const appended = settled.map((o) => {
      if (o.status === 'rejected') throw o.reason
      return o.value
    })
    if (options.acks !== -1) return appended.map((a) => a.r)
    const waiting = appended.filter(
      (a): a is { p: Partition; r: ProduceResult; required: bigint } => 'required' in a && a.p !== undefined,
    )
    if (waiting.length === 0) return appended.map((a) => a.r)
    const appendedMs = this.#o.clock.monotonicMs()
    const elapsedMs = appendedMs - startMs
    let bytes = 0
    for (const e of entries) bytes += e.records.length
    this.stats.produceAllBytes.add(bytes)
    const outcome = await this.#delayed.wait(
      waiting.map((w) => w.p.watchers),
      () => waiting.every((w) => w.p.checkEnoughReplicasReachOffset(w.required).done),
      options.timeoutMs - elapsedMs,
      'produce',
    )
    const answeredMs = this.#o.clock.monotonicMs()
    this.stats.produceAllWaitMs.add(answeredMs - appendedMs)
    if (outcome === 'completed') {
      let hwMs = 0
      for (const w of waiting) hwMs = Math.max(hwMs, w.p.lastHighWatermarkMoveMs)
      if (hwMs >= appendedMs) this.stats.produceAfterHwMs.add(answeredMs - hwMs)
    }
    return appended.map((a) => {
      if (!('required' in a) || a.p === undefined) return a.r
      const c = a.p.checkEnoughReplicasReachOffset(a.required)
      if (!c.done) {
        return produceError(
          outcome === 'shutdown' ? ErrorCode.NotLeaderOrFollower : ErrorCode.RequestTimedOut,
        )
      }
      return c.errorCode === ErrorCode.None ? a.r : produceError(c.errorCode)
    })
  }

  // ---------------------------------------------------------------- fetch

  #upTo(params: FetchParams): ReadParams['upTo'] {
    if (params.replicaId >= 0) return 'logEndOffset'
    return params.isolationLevel === 1 ? 'lastStableOffset' : 'highWatermark'
  }

  /**
   * Reads the partitions in order within the response budget (Kafka's `readFromLog`): each gets at
   * most its own max bytes and what is left of the budget; until some partition returned bytes, the
   * first batch is returned whole even when larger.
   */
  async #readAll(specs: readonly FetchSpec[], params: FetchParams): Promise<ReadOutcome[]> {
    const out: ReadOutcome[] = []
    try {
      return await this.#readInto(out, specs, params)
    } catch (e) {
      // The caller never sees these: what they hold of the pool goes back here.
      for (const r of out) params.readBuffers?.release(r.records)
      throw e
    }
  }

  async #readInto(
    out: ReadOutcome[],
    specs: readonly FetchSpec[],
    params: FetchParams,
  ): Promise<ReadOutcome[]> {
    const upTo = this.#upTo(params)
    let budget = params.maxBytes
    let atLeastOneBatch = true
    for (const s of specs) {
      const p = this.getPartition(s.topic, s.partition)
      if (p === undefined) {
        out.push(readError(this.#unhosted(s.topic, s.partition)))
        continue
      }
      if (p.log.offlineCause !== null) {
        out.push(readError(ErrorCode.KafkaStorageError))
        continue
      }
      const preferred = this.#preferredReadReplica(p, s, params)
      if (preferred !== null) {
        out.push(preferred)
        continue
      }
      const r = await p.read({
        fetchOffset: s.fetchOffset,
        maxBytes: Math.max(0, Math.min(s.maxBytes, budget)),
        currentLeaderEpoch: s.currentLeaderEpoch,
        lastFetchedEpoch: s.lastFetchedEpoch,
        upTo,
        // As Kafka's FetchParams.fetchOnlyLeader: followers, and consumers without client metadata.
        fetchOnlyFromLeader:
          params.replicaId >= 0 ||
          (params.replicaId !== DEBUGGING_REPLICA_ID && params.clientRack === undefined),
        atLeastOneBatch,
        ...(params.readBuffers === undefined ? {} : { buffers: params.readBuffers }),
      })
      if (r.records.length > 0) {
        atLeastOneBatch = false
        budget = Math.max(0, budget - r.records.length)
      }
      if (params.replicaId >= 0 && r.errorCode === ErrorCode.None && r.divergingEpoch === null) {
        const replicaId = params.replicaId as BrokerId
        p.updateFollowerFetchState(replicaId, s.fetchOffset, params.replicaEpoch ?? -1n)
        if (this.#alterPartition !== null) {
          const change = p.maybeExpandIsr(replicaId, (id, epoch) => this.#isrEligible(id, epoch))
          if (change !== null) {
            this.#log(
              'info',
              `partition ${p.topic}-${p.partition}: expanding ISR ${p.isr.join(',')} to ${change.isr.join(',')}`,
            )
            this.#submitIsrChange(p, change)
          }
        }
      }
      out.push(r)
    }
    return out
  }

  /**
   * KIP-392 (Kafka's findPreferredReadReplica): a leader asked by a consumer with client metadata
   * answers, instead of records, the in-sync follower `replica.selector.class` prefers for it, with
   * its own high watermark and log start; null to read here.
   */
  #preferredReadReplica(p: Partition, s: FetchSpec, params: FetchParams): ReadOutcome | null {
    const kind = this.#o.replicaSelector ?? null
    if (kind === null || params.replicaId !== CONSUMER_REPLICA_ID || params.clientRack === undefined)
      return null
    if (!p.isLeader || this.#image === null) return null
    const brokers = this.#image.brokers
    const states = p.followerStates()
    const followers = p.isr.flatMap((id) => {
      const f = states.get(id)
      return id === this.#o.nodeId || f === undefined
        ? []
        : [
            {
              id,
              rack: brokers.get(id)?.rack ?? null,
              logEndOffset: f.logEndOffset,
              lastFetchMs: f.lastFetchMs,
            },
          ]
    })
    const chosen = selectReadReplica(kind, {
      leader: { id: this.#o.nodeId, rack: brokers.get(this.#o.nodeId)?.rack ?? null },
      followers,
      fetchOffset: s.fetchOffset,
      clientRack: params.clientRack,
    })
    if (chosen === null) return null
    return {
      errorCode: ErrorCode.None,
      highWatermark: p.highWatermark,
      lastStableOffset: p.lastStableOffset,
      logStartOffset: p.logStartOffset,
      logEndOffset: p.logEndOffset,
      records: Buffer.alloc(0),
      divergingEpoch: null,
      preferredReadReplica: chosen,
    }
  }

  /**
   * A fetch: read at once; answer when there are at least `minBytes`, an error, or no wait asked;
   * otherwise wait (woken by appends and high-watermark moves on the partitions, never polling)
   * until enough bytes are estimated to be there, a partition changed leadership, or `maxWaitMs`
   * passed, and read again.
   */
  async fetchMessages(specs: readonly FetchSpec[], params: FetchParams): Promise<ReadOutcome[]> {
    const serving = this.#whenServed(specs)
    if (serving !== null) await serving
    const readStartMs = this.#o.clock.monotonicMs()
    const first = await this.#readAll(specs, params)
    if (params.replicaId >= 0) this.stats.followerReadMs.add(this.#o.clock.monotonicMs() - readStartMs)
    let bytes = 0
    let error = false
    for (const r of first) {
      bytes += r.records.length
      if (r.errorCode !== ErrorCode.None || r.divergingEpoch !== null || r.preferredReadReplica !== undefined)
        error = true
    }
    const maxWaitMs = Math.min(params.maxWaitMs, this.#limits.fetchWaitMsMax)
    const follower = params.replicaId >= 0
    const replicaId = params.replicaId as BrokerId
    if (
      maxWaitMs <= 0 ||
      specs.length === 0 ||
      bytes >= params.minBytes ||
      error ||
      (follower && this.#joinPending(replicaId, specs))
    ) {
      if (follower) this.stats.followerFetchBytes.add(bytes)
      return first
    }
    const upTo = this.#upTo(params)
    const watched: Array<{ s: FetchSpec; p: Partition; epoch: number; role: string }> = []
    for (const s of specs) {
      const p = this.getPartition(s.topic, s.partition)
      if (p !== undefined) watched.push({ s, p, epoch: p.leaderEpoch, role: p.role })
    }
    const check = (): boolean => {
      let available = 0
      for (const w of watched) {
        const { p, s } = w
        if (this.getPartition(p.topic, p.partition) !== p || p.leaderEpoch !== w.epoch || p.role !== w.role)
          return true
        if (s.fetchOffset < p.logStartOffset || s.fetchOffset > p.logEndOffset) return true
        const b = p.bytesAvailable(s.fetchOffset, upTo)
        if (b === null) return true
        available += Math.min(b, s.maxBytes)
        if (available >= params.minBytes) return true
      }
      return follower && this.#joinPending(replicaId, specs)
    }
    const watchers: Watchers[] = watched.map((w) => w.p.watchers)
    if (follower) {
      let w = this.#followerWatchers.get(replicaId)
      if (w === undefined) {
        w = new Watchers()
        this.#followerWatchers.set(replicaId, w)
      }
      watchers.push(w)
    }
    // The first reads are not answered (fewer than minBytes): read again after the wait.
    for (const r of first) params.readBuffers?.release(r.records)
    const parkedMs = this.#o.clock.monotonicMs()
    const outcome = await this.#delayed.wait(watchers, check, maxWaitMs, 'fetch')
    const again = await this.#readAll(specs, params)
    if (follower) {
      const nowMs = this.#o.clock.monotonicMs()
      this.stats.followerParkedMs.add(nowMs - parkedMs)
      if (outcome === 'expired') this.stats.followerParkedExpired++
      let appendMs = 0
      for (const w of watched) appendMs = Math.max(appendMs, w.p.lastAppendMs)
      if (outcome === 'completed' && appendMs >= parkedMs)
        this.stats.followerWakeAfterAppendMs.add(nowMs - appendMs)
      let b = 0
      for (const r of again) b += r.records.length
      this.stats.followerFetchBytes.add(b)
    }
    return again
  }

  // ---------------------------------------------------------------- offsets

  /** The hosted partition once served as the metadata says (`#whenServed`), or the error why none. */
  async #leaderFor(topic: string, partition: number): Promise<Partition | number> {
    const serving = this.#whenServed([{ topic, partition }])
    if (serving !== null) await serving
    const p = this.getPartition(topic, partition)
    if (p === undefined) return this.#unhosted(topic, partition)
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
  ): Promise<{ errorCode: number; leaderEpoch: number; endOffset: bigint }> {
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
  ): Promise<{ errorCode: number; lowWatermark: bigint }> {
    const p = await this.#leaderFor(topic, partition)
    if (typeof p === 'number') return { errorCode: p, lowWatermark: -1n }
    const r = await p.deleteRecordsOnLeader(offset)
    if (r.errorCode === ErrorCode.None)
      await this.#managerOf(topic, partition)?.manager.checkpointLogStartOffsets()
    return r
  }

  /** DescribeProducers for one partition (leader only). */
  async activeProducers(
    topic: string,
    partition: number,
  ): Promise<{ errorCode: number; producers: readonly ProducerEntry[] }> {
    const p = await this.#leaderFor(topic, partition)
    if (typeof p === 'number') return { errorCode: p, producers: [] }
    if (!p.isLeader) return { errorCode: ErrorCode.NotLeaderOrFollower, producers: [] }
    return { errorCode: ErrorCode.None, producers: [...p.state.producers.entries()] }
  }

  /** DescribeLogDirs: each directory and the partitions in it. */
  describeLogDirs(): LogDirDescription[] {
    return this.#managers.map((m) => ({
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
          topic: h.topic as TopicName,
          partition: h.partition,
          sizeBytes: h.log.sizeBytes,
          offsetLag: lag,
        }
      }),
    }))
  }

  /** The high watermark of a hosted partition (the cleaner's upper bound), or undefined. */
  highWatermark(topic: string, partition: number): bigint | undefined {
    return this.getPartition(topic, partition)?.highWatermark
  }

  // ---------------------------------------------------------------- lifecycle

  #armExpiry(): void {
    if (this.#closed) return
    this.#expiryTimer = this.#o.clock.setTimer(this.#limits.producerExpirationCheckIntervalMs, () => {
      this.#expiryTimer = null
      const now = this.#o.clock.nowMs()
      for (const p of this.#partitions.values()) p.state.producers.expire(now, this.#o.producerIdExpirationMs)
      this.#armExpiry()
    })
  }

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
    if (this.#closed) return
    this.#closed = true
    await this.#fetchers?.close()
    this.#alterPartition?.close()
    this.#delayed.completeAll()
    for (const t of [this.#expiryTimer, this.#isrTimer, this.#checkpointTimer])
      if (t !== null) this.#o.clock.clearTimer(t)
    await this.settled()
    if (this.#started) await this.checkpointHighWatermarks()
    for (const state of this.#states.values()) await state.close()
  }
}
