/**
 * Reconciling the partitions this broker hosts to each metadata publication (Kafka's
 * `ReplicaManager.applyDelta`: `applyLocalLeadersDelta`, `applyLocalFollowersDelta`, stopping the
 * replicas of deleted topics): opening or creating logs, becoming leader or follower, starting and
 * stopping fetchers, deleting logs of deleted topics; the log directories' failures and returns
 * (`handleLogDirFailure`); and the serving wait of requests for partitions that the image names
 * this broker a replica or leader of before it serves them so.
 */
import type { EffectiveConfig } from '../config/index.ts'
import {
  type Clock,
  type Disk,
  DiskError,
  isResourceExhausted,
  joinPath,
  type TimerHandle,
} from '../io/index.ts'
import { ConfigResourceType, type ImagePublication, type MetadataImage } from '../metadata/index.ts'
import { assert, type BrokerId, eachAtMost, TopicName, type Uuid } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import {
  LOGS_AT_ONCE,
  type LogHooks,
  type LogManager,
  LogOfflineError,
  logConfigFrom,
  type PartitionLog,
  partitionKey,
} from '../storage/index.ts'
import { type DelayedOperations, Watchers } from './delayed-operations.ts'
import { HighWatermarkCheckpoints } from './high-watermark-checkpoints.ts'
import { Partition, type PartitionAssignment, type PartitionSettings } from './partition.ts'
import { readTopicId, writeTopicId } from './partition-metadata-file.ts'
import type { ReplicaFetcherManager } from './replica-fetcher.ts'
import { ReplicaLogState } from './replica-log-state.ts'
import type { ReplicationStats } from './replication-stats.ts'

interface Work {
  readonly deleted: ReadonlyArray<{ readonly name: TopicName; readonly id: Uuid }>
  /** Partitions to look at: `topic name -> indexes` (all of the topic when null). */
  readonly partitions: ReadonlyMap<TopicName, Set<number> | null>
  /** Topics whose settings changed (all when null). */
  readonly configs: ReadonlySet<TopicName> | null
}

interface Pending {
  full: boolean
  work: Work[]
}

type Log = (level: 'info' | 'warn' | 'error', message: string) => void

/** How soon a partition that failed for want of descriptors or memory is reconciled again. */
const UNRECONCILED_RETRY_MS = 1000

export interface ReplicaReconcilerOptions {
  readonly nodeId: BrokerId
  readonly disk: Disk
  readonly clock: Clock
  /** A topic's effective configs (its dynamic overrides over the broker's) in `image`. */
  readonly topicConfig: (topic: TopicName, image: MetadataImage) => EffectiveConfig
  /** Partitions opened or changed at once while reconciling. */
  readonly reconcileConcurrencyMax: number
  /** The longest a request waits for its partitions to be served as the image says (`whenServed`). */
  readonly servingWaitMsMax: number
  readonly delayed: DelayedOperations
  /** Null without replication. */
  readonly fetchers: ReplicaFetcherManager | null
  readonly stats: ReplicationStats
  readonly log: Log
  /** `p` (partition `key`) leads here now; `joining` are the replicas that are to fetch it anew. */
  readonly onLeading: (p: Partition, key: string, joining: readonly BrokerId[]) => void
}

export class ReplicaReconciler {
  readonly #o: ReplicaReconcilerOptions
  /**
   * Woken after each partition's reconciliation, each reconciliation pass and each publication:
   * requests for partitions this broker is about to serve re-check (`whenServed`).
   */
  readonly #reconciled = new Watchers()
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
  #pending: Pending = { full: true, work: [] }
  #reconciling: Promise<void> = Promise.resolve()
  readonly #hw: HighWatermarkCheckpoints
  /** Partitions whose last reconciliation failed (a disk error), by key. */
  readonly #unreconciled = new Map<string, { topic: TopicName; partition: number }>()
  #retryTimer: TimerHandle | null = null
  /** High watermarks of partitions rebuilt after their log directory came back, until re-opened. */
  readonly #carriedHighWatermarks = new Map<string, bigint>()

  constructor(options: ReplicaReconcilerOptions) {
    this.#o = options
    this.#hw = new HighWatermarkCheckpoints({
      disk: options.disk,
      hosted: (topic, partition) => this.getPartition(topic, partition),
      failLogDir: (e) => this.#failLogDir(e),
      log: options.log,
    })
  }

  /** The latest image published (null before the first). */
  get image(): MetadataImage | null {
    return this.#image
  }

  get started(): boolean {
    return this.#started
  }

  get closed(): boolean {
    return this.#closed
  }

  /** The log directories (empty before start). */
  get managers(): readonly LogManager[] {
    return this.#managers
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
      onWarning: (m) => this.#o.log('warn', m),
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
        onLogsReopened: (dir) => this.#onLogDirOnline(dir),
      })
    this.#reconciling = this.#reconciling.then(() => this.#hw.read(this.#managers))
    this.#scheduleReconcile()
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
      void this.#o.fetchers?.unassign(p)
      p.watchers.wake()
    }
    this.#o.log('error', `log dir ${m.dir} offline (${n} partitions): ${cause.message}`)
  }

  /**
   * A log directory is back, every log in it re-opened through recovery (or some of its logs, taken
   * offline alone for want of descriptors or memory): each partition on a new log is
   * rebuilt on its new log (epoch cache and producer state loaded again, the high watermark it had,
   * clamped to the recovered log end) and reconciled to the latest image, so it leads or follows
   * (fetching from the leader, truncating where it diverged, rejoining the ISR) as after a restart.
   */
  #onLogDirOnline(m: LogManager): void {
    if (this.#closed) return
    this.#reconciling = this.#reconciling.then(async () => {
      if (this.#closed) return
      const partitions = new Map<TopicName, Set<number>>()
      const add = (topic: TopicName, partition: number) => {
        const set = partitions.get(topic) ?? new Set<number>()
        set.add(partition)
        partitions.set(topic, set)
      }
      // Partitions whose reconciliation failed (on any dir) are tried again.
      for (const { topic, partition } of this.#unreconciled.values()) add(topic, partition)
      for (const h of m.logs()) {
        const key = partitionKey(h.topic, h.partition)
        const p = this.#partitions.get(key)
        if (p === undefined || p.log === h.log) continue
        this.#partitions.delete(key)
        await this.#o.fetchers?.unassign(p)
        p.stop()
        this.#carriedHighWatermarks.set(key, p.highWatermark)
        add(p.topic, p.partition)
      }
      this.#o.log(
        'info',
        `log dir ${m.dir}: rebuilding ${this.#carriedHighWatermarks.size} partitions on re-opened logs`,
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
    return this.#hw.write(() => this.#managers)
  }

  /** The metadata loader's publication: reconciles what changed (everything, the first time). */
  onPublish(p: ImagePublication): void {
    if (this.#closed) return
    this.#image = p.image
    this.#reconciled.wake()
    const deleted = p.changes.deletedTopics.map((t) => ({ name: t.name, id: t.id }))
    if (!this.#started) {
      // The first reconciliation looks at every topic; only deletions need remembering until then.
      if (deleted.length > 0) this.#pending.work.push({ deleted, partitions: new Map(), configs: new Set() })
      return
    }
    this.#pending.work.push({ deleted, partitions: changedPartitions(p), configs: changedTopicConfigs(p) })
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
        this.#o.log('error', `replica reconciliation failed: ${(e as Error).stack ?? String(e)}`)
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

  async #reconcile(image: MetadataImage, pending: Pending): Promise<void> {
    for (const w of pending.work) {
      for (const t of w.deleted) await this.#removeTopic(t)
      if (w.configs === null) this.#settings.clear()
      else for (const name of w.configs) this.#settings.delete(name)
    }
    const touched = touchedPartitions(image, pending)
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
    await eachAtMost(tasks, this.#o.reconcileConcurrencyMax, (task) =>
      this.#closed ? Promise.resolve() : task(),
    )
  }

  /** A deleted topic's partitions go, with the logs of it never adopted here. */
  async #removeTopic(t: { readonly name: TopicName; readonly id: Uuid }): Promise<void> {
    for (const [key, p] of [...this.#partitions]) {
      if (p.topic === t.name && p.topicId === t.id) await this.#removePartition(key, p.topic, p.partition)
    }
    // Logs of the topic never adopted here (deleted before this broker reconciled them).
    for (const m of this.#managers) {
      for (const h of m.logs()) {
        if (h.topic !== t.name || this.#partitions.has(partitionKey(h.topic, h.partition))) continue
        const owner = await readTopicId(this.#o.disk, h.log)
        if (owner === null || owner === t.id)
          await this.#removePartition(partitionKey(h.topic, h.partition), h.topic, h.partition)
      }
    }
    this.#settings.delete(t.name)
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
      await this.#becomeLeaderOrFollower(p, key, reg)
    } catch (e) {
      this.#o.log('error', `partition ${key}: ${(e as Error).message}`)
      // Reconciled again when a log dir comes back (a failed write took its dir offline), or soon
      // when the process was out of descriptors or memory.
      this.#unreconciled.set(key, { topic, partition })
      if (isResourceExhausted(e)) this.#retryUnreconciledLater()
      else this.#failLogDir(e)
    }
  }

  /** Kafka's makeLeader / makeFollower of one partition, with its fetcher started or stopped. */
  async #becomeLeaderOrFollower(p: Partition, key: string, reg: PartitionAssignment): Promise<void> {
    if (reg.leader === this.#o.nodeId) {
      await this.#o.fetchers?.unassign(p)
      const newlyLed = p.role !== 'leader' || p.leaderEpoch !== reg.leaderEpoch
      // A reassignment adds replicas without a new leader epoch: they start fetching too.
      const had = newlyLed ? [] : p.replicas
      await p.makeLeader(reg)
      this.#o.onLeading(
        p,
        key,
        reg.replicas.filter((r) => !had.includes(r)),
      )
    } else {
      p.makeFollower(reg)
      if (reg.leader >= 0) await this.#o.fetchers?.assign(p, reg.leader, reg.leaderEpoch)
      else await this.#o.fetchers?.unassign(p)
    }
  }

  /**
   * A disk error on a file of a log dir (partition.metadata, an epoch checkpoint, a snapshot, the
   * high-watermark checkpoint) is that dir's failure, as in Kafka: it goes offline and comes back
   * through recovery, which rebuilds its partitions. Other errors are left to their callers.
   */
  #failLogDir(e: unknown): void {
    if (!(e instanceof DiskError) || e.code === 'ENOENT') return
    if (isResourceExhausted(e)) {
      // Not the disk: the log whose file it was goes offline alone and is re-opened (a directory
      // file, the high-watermark checkpoint, is written again at its next interval).
      for (const m of this.#managers)
        for (const h of m.logs()) if (e.path.startsWith(joinPath(h.log.dir, ''))) h.log.markOffline(e)
      return
    }
    for (const m of this.#managers) {
      if (e.path === m.dir || e.path.startsWith(joinPath(m.dir, ''))) m.markOffline(e)
    }
  }

  /** Reconcile the partitions that failed for want of descriptors or memory again, in a second. */
  #retryUnreconciledLater(): void {
    if (this.#retryTimer !== null || this.#closed) return
    this.#retryTimer = this.#o.clock.setTimer(UNRECONCILED_RETRY_MS, () => {
      this.#retryTimer = null
      if (this.#closed || this.#unreconciled.size === 0) return
      const partitions = new Map<TopicName, Set<number>>()
      for (const { topic, partition } of this.#unreconciled.values())
        partitions.set(topic, (partitions.get(topic) ?? new Set<number>()).add(partition))
      this.#pending.work.push({ deleted: [], partitions, configs: new Set() })
      this.#scheduleReconcile()
    })
  }

  /** The log directory holding the log of that topic and partition, with the log, or null. */
  managerOf(topic: string, partition: number): { manager: LogManager; log: PartitionLog } | null {
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
    const found =
      (await this.#adoptLog(topic, topicId, partition, settings)) ??
      (await this.#createLog(topic, topicId, partition, settings))
    const state = this.#states.get(key)
    assert(state !== undefined, `log ${key} was opened without the replica manager's hooks`)
    if (!state.loaded) await state.load(found.log)
    const carried = this.#carriedHighWatermarks.get(key)
    this.#carriedHighWatermarks.delete(key)
    await this.#hw.clamp(found.manager, key, found.log.logEndOffset)
    const checkpointed = carried ?? this.#hw.checkpointed(found.manager.dir, key)
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
      stats: this.#o.stats,
    })
    this.#partitions.set(key, p)
    return p
  }

  /**
   * The log already in a log dir for this partition, updated to its settings and named this topic
   * id; null when there is none, or it was an earlier topic's of the same name (deleted while this
   * broker was away: then it is deleted).
   */
  async #adoptLog(
    topic: TopicName,
    topicId: Uuid,
    partition: number,
    settings: PartitionSettings,
  ): Promise<{ manager: LogManager; log: PartitionLog } | null> {
    const found = this.managerOf(topic, partition)
    if (found === null) return null
    const owner = await readTopicId(this.#o.disk, found.log)
    if (owner !== null && owner !== topicId) {
      const key = partitionKey(topic, partition)
      this.#o.log('warn', `deleting log ${key} of an earlier topic id ${owner} (now ${topicId})`)
      this.#states.get(key)?.abandon()
      this.#states.delete(key)
      await found.manager.deleteLog(topic, partition)
      return null
    }
    found.log.updateConfig(settings.logConfig)
    if (owner === null) await writeTopicId(this.#o.disk, found.log, topicId)
    return found
  }

  /** A new log, in the online log dir with the fewest logs (counting those being created). */
  async #createLog(
    topic: TopicName,
    topicId: Uuid,
    partition: number,
    settings: PartitionSettings,
  ): Promise<{ manager: LogManager; log: PartitionLog }> {
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
    await writeTopicId(this.#o.disk, log, topicId)
    return { manager, log }
  }

  async #removePartition(key: string, topic: string, partition: number): Promise<void> {
    const p = this.#partitions.get(key)
    this.#partitions.delete(key)
    await this.#o.fetchers?.unassign({ topic, partition })
    p?.stop()
    this.#states.get(key)?.abandon()
    this.#states.delete(key)
    const found = this.managerOf(topic, partition)
    if (found !== null) await found.manager.deleteLog(topic, partition)
    this.#o.log('info', `partition ${key} removed`)
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
   * never meet that window; here a request for such a partition waits for it (`whenServed`) instead
   * of being answered NOT_LEADER_OR_FOLLOWER, which clients retry behind their later requests (a
   * producer without idempotence then stores a key's records out of order) or count as failed sends.
   * Not for partitions whose reconciliation failed or whose log dir is offline: they answer at once.
   */
  #becomingServed(topic: string, partition: number): boolean {
    if (!this.#started || this.#closed) return false
    const t = this.#image?.topicsByName.get(TopicName(topic))
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
  whenServed(
    parts: readonly { readonly topic: string; readonly partition: number }[],
    timeoutMs = this.#o.servingWaitMsMax,
  ): Promise<unknown> | null {
    const becoming = (x: { readonly topic: string; readonly partition: number }) =>
      this.#becomingServed(x.topic, x.partition)
    let from = parts.findIndex(becoming)
    if (from < 0) return null
    // Each wake checks on from the first partition still waiting: a partition served stays so
    // (should it change again, the request meets that as any other would), and a request naming
    // thousands of partitions is not checked whole at every partition opened.
    const served = () => {
      while (from < parts.length && !becoming(parts[from]!)) from++
      return from === parts.length
    }
    const waitMs = timeoutMs > 0 ? Math.min(timeoutMs, this.#o.servingWaitMsMax) : this.#o.servingWaitMsMax
    return this.#o.delayed.wait([this.#reconciled], served, waitMs, 'fetch')
  }

  /** The error for a partition not hosted here: unknown to metadata, or led elsewhere. */
  unhosted(topic: string, partition: number): ErrorCode {
    const t = this.#image?.topicsByName.get(TopicName(topic))
    if (t === undefined || !t.partitions.has(partition)) return ErrorCode.UnknownTopicOrPartition
    return ErrorCode.NotLeaderOrFollower
  }

  // ---------------------------------------------------------------- shutdown

  /** Shutdown began: no reconciliation, publication or log dir event is acted on from now. */
  markClosed(): void {
    this.#closed = true
    if (this.#retryTimer !== null) this.#o.clock.clearTimer(this.#retryTimer)
    this.#retryTimer = null
  }

  /** Writes every partition's producer snapshot at its log end (clean shutdown). */
  async closeStates(): Promise<void> {
    await eachAtMost(this.#states.values(), LOGS_AT_ONCE, (state) => state.close())
  }
}

/** The partitions a publication changed: `topic name -> indexes` (all of a created topic: null). */
function changedPartitions(p: ImagePublication): Map<TopicName, Set<number> | null> {
  const partitions = new Map<TopicName, Set<number> | null>()
  for (const t of p.changes.createdTopics) partitions.set(t.name, null)
  for (const c of p.changes.changedPartitions) {
    const set = partitions.get(c.topic.name)
    if (set === null) continue
    if (set === undefined) partitions.set(c.topic.name, new Set([c.partition]))
    else set.add(c.partition)
  }
  return partitions
}

/** Topics whose config a publication changed; null when a broker config changed (every topic). */
function changedTopicConfigs(p: ImagePublication): Set<TopicName> | null {
  let configs: Set<TopicName> | null = new Set()
  for (const key of p.changes.changedConfigs) {
    const at = key.indexOf(':')
    const type = Number(key.slice(0, at))
    if (type === ConfigResourceType.Topic) configs?.add(TopicName(key.slice(at + 1)))
    else if (type === ConfigResourceType.Broker) configs = null
  }
  return configs
}

/** The partitions a reconciliation pass looks at: every topic's on a full pass, plus the work's. */
function touchedPartitions(image: MetadataImage, pending: Pending): Map<TopicName, Set<number> | null> {
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
  return touched
}
