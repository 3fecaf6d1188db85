/**
 * One log directory: its `meta.properties`, the partition logs in it, the per-directory checkpoint
 * files, the clean-shutdown marker, and the schedule for flushes, retention and the cleaner.
 */
import {
  type Clock,
  type Disk,
  isNotFound,
  isResourceExhausted,
  joinPath,
  parentDir,
  type TimerHandle,
} from '../io/index.ts'
import { assert, eachAtMost } from '../model/index.ts'
import { type CleanerStats, LogCleaner } from './log-cleaner.ts'
import {
  DEFAULT_LOG_CONFIG,
  DEFAULT_LOG_MANAGER_CONFIG,
  type LogConfig,
  type LogManagerConfig,
  NEVER_MS,
} from './log-config.ts'
import {
  formatMetaProperties,
  type MetaProperties,
  MetaPropertiesError,
  parseMetaProperties,
} from './meta-properties.ts'
import {
  CheckpointFormatError,
  type OffsetCheckpoint,
  partitionKey,
  readOffsetCheckpoint,
  writeFileDurably,
  writeOffsetCheckpoint,
} from './offset-checkpoint-file.ts'
import { type LogHooks, LogOfflineError, PartitionLog } from './partition-log.ts'
import type { ReadBuffers } from './read-buffer-pool.ts'
import { BROKER_TAIL_BYTES_MAX, TAIL_BUDGET_BYTES_DEFAULT, TailBudget } from './write-tail.ts'

/** The KRaft metadata log's topic (`__cluster_metadata-0`), which only the quorum touches. */
export const KRAFT_METADATA_TOPIC = '__cluster_metadata'

/** Kafka's per-directory file names. */
export const LogDirFile = {
  metaProperties: 'meta.properties',
  recoveryPointCheckpoint: 'recovery-point-offset-checkpoint',
  logStartOffsetCheckpoint: 'log-start-offset-checkpoint',
  cleanerOffsetCheckpoint: 'cleaner-offset-checkpoint',
  cleanShutdown: '.kafka_cleanshutdown',
} as const

export interface LogManagerOptions {
  readonly disk: Disk
  readonly clock: Clock
  /** The cluster this directory belongs to; checked against meta.properties. */
  readonly clusterId: string
  /** This node's id; checked against meta.properties. */
  readonly nodeId: number
  /** directory.id written into a new meta.properties. */
  readonly directoryId?: string
  /** Write meta.properties when missing (default true; Kafka wants `kafka-storage format`). */
  readonly formatIfMissing?: boolean
  readonly config?: LogManagerConfig
  /** The broker's log defaults (`log.*` keys). */
  readonly defaultLogConfig?: LogConfig
  /** The config of a topic's logs (topic overrides over the defaults). */
  readonly topicConfig?: (topic: string) => LogConfig
  /** Leader-epoch and producer-state hooks for a partition (replication's). */
  readonly hooksFor?: (topic: string, partition: number) => LogHooks
  /**
   * How far the cleaner may go in a partition (exclusive): its last stable offset, so records not
   * yet committed, and those of a transaction still open, are never compacted. Default: up to the
   * active segment.
   */
  readonly cleanerUpperBound?: (topic: string, partition: number) => bigint | undefined
  /** Non-fatal events. */
  readonly onWarning?: (message: string) => void
  /** Each completed flush of a partition log, its duration in ms. */
  readonly onFlushed?: (ms: number) => void
  /** How the directory probes for its way back after a failure (defaults: `DEFAULT_LOG_DIR_PROBE`). */
  readonly probe?: Partial<LogDirProbeConfig>
  /** The node's buffer pool: its logs retain appended bytes it lent (`PartitionLogOptions.pool`). */
  readonly pool?: ReadBuffers
}

/**
 * A log directory's health. Kafka takes a directory offline on its first I/O error and needs a
 * restart to bring it back; Weir also probes it and re-opens its logs through recovery once the
 * disk takes a durable write again (space freed, a transient error gone).
 *
 * ```
 * online --(any log's write/fsync fails, or a checkpoint's)--> offline
 * offline --(probe timer: write+fsync+remove a small file)--> recovering
 * recovering --(every log re-opened through recovery, checkpoint written)--> online
 * recovering --(the probe or a re-open fails)--> offline (the next probe waits longer)
 * ```
 */
export type LogDirState = 'online' | 'offline' | 'recovering'

/** The offline directory's probe: a bounded exponential backoff on the Clock. */
export interface LogDirProbeConfig {
  /** The first probe's delay after the directory goes offline. */
  readonly backoffMs: number
  /** The longest wait between probes (the delay doubles up to it). */
  readonly backoffMsMax: number
}

export const DEFAULT_LOG_DIR_PROBE: LogDirProbeConfig = { backoffMs: 500, backoffMsMax: 10_000 }

/** The probe's file, written, fsynced and removed in the directory. */
export const LOG_DIR_PROBE_FILE = '.weir-probe'

/** Told when the directory changes state (the replica manager, the broker's heartbeat). */
export interface LogDirListener {
  /** Every log in the directory is offline now (each throws LogOfflineError). */
  readonly onOffline?: (manager: LogManager, cause: Error) => void
  /** Every log was re-opened through recovery: `getLog` returns the new logs. */
  readonly onOnline?: (manager: LogManager) => void
  /**
   * Some logs, taken offline alone because the process ran out of a resource (descriptors,
   * memory) rather than the disk failing, were re-opened through recovery: `getLog` returns them.
   */
  readonly onLogsReopened?: (manager: LogManager) => void
}

interface HostedLog {
  readonly topic: string
  readonly partition: number
  readonly log: PartitionLog
}

/** `topic-partition` directory name -> its parts; null for other entries (`-delete` dirs, files). */
export function parsePartitionDir(name: string): { topic: string; partition: number } | null {
  if (/\.[0-9a-zA-Z_-]+-(delete|future|stray)$/.test(name)) return null
  const dash = name.lastIndexOf('-')
  if (dash <= 0) return null
  const partition = name.slice(dash + 1)
  if (!/^\d+$/.test(partition)) return null
  return { topic: name.slice(0, dash), partition: Number(partition) }
}

/**
 * Logs opened at start, or flushed and closed at shutdown, at once: each waits on its own file
 * reads and fsyncs, so a node with many partitions keeps the disk and the I/O threads busy instead
 * of taking them one at a time.
 */
export const LOGS_AT_ONCE = 32

/** A serial lock per checkpoint file, so writes never interleave. */
class Serial {
  #tail: Promise<unknown> = Promise.resolve()
  run<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#tail.then(fn)
    this.#tail = p.catch(() => undefined)
    return p
  }
}

/** How often the logs that ran out of descriptors or memory are told of, at most. */
export const EXHAUSTION_LOG_INTERVAL_MS = 10_000

/**
 * The warnings of logs that go offline for want of descriptors or memory, and come back: the first
 * at once, the rest counted and told in one line at the end of each EXHAUSTION_LOG_INTERVAL_MS, so
 * a thousand partitions meeting EMFILE together write two lines, not thousands.
 */
class ExhaustionLog {
  readonly #clock: Clock
  readonly #warn: (message: string) => void
  #timer: TimerHandle | null = null
  /** Logs that went offline (again) in this interval, in order. */
  #offline = new Set<string>()
  #cause = ''
  #reopened = 0

  constructor(clock: Clock, warn: (message: string) => void) {
    this.#clock = clock
    this.#warn = warn
  }

  offline(key: string, cause: string): void {
    if (this.#timer === null) {
      this.#warn(`log ${key} offline for want of resources, ${cause}`)
      this.#arm()
      return
    }
    this.#offline.add(key)
    this.#cause = cause
  }

  reopened(key: string): void {
    if (this.#timer === null) {
      this.#warn(`log ${key} re-opened`)
      this.#arm()
      return
    }
    this.#reopened++
  }

  close(): void {
    if (this.#timer !== null) this.#clock.clearTimer(this.#timer)
    this.#timer = null
  }

  #arm(): void {
    this.#timer = this.#clock.setTimer(EXHAUSTION_LOG_INTERVAL_MS, () => {
      this.#timer = null
      const offline = [...this.#offline]
      const reopened = this.#reopened
      if (offline.length === 0 && reopened === 0) return
      this.#offline.clear()
      this.#reopened = 0
      const parts: string[] = []
      if (offline.length > 0) {
        const named = offline.slice(0, 5).join(', ') + (offline.length > 5 ? ', ...' : '')
        parts.push(`${offline.length} logs offline for want of resources (${named}), the last ${this.#cause}`)
      }
      if (reopened > 0) parts.push(`${reopened} logs re-opened`)
      this.#warn(`in the last ${EXHAUSTION_LOG_INTERVAL_MS / 1000} s: ${parts.join('; ')}`)
      this.#arm()
    })
  }
}

export class LogManager {
  readonly dir: string
  readonly #disk: Disk
  readonly #clock: Clock
  readonly #options: LogManagerOptions
  readonly config: LogManagerConfig
  readonly defaultLogConfig: LogConfig
  #meta!: MetaProperties
  #hadCleanShutdown = false
  readonly #logs = new Map<string, HostedLog>()
  readonly #opening = new Map<string, Promise<PartitionLog>>()
  #cleanerOffsets: OffsetCheckpoint = new Map()
  readonly #checkpointSerial = new Serial()
  /** The directory's recovery and single logs' re-opening, one at a time. */
  readonly #reopenSerial = new Serial()
  /** What logs that ran out of descriptors or memory say, once an interval however many they are. */
  readonly #exhaustion: ExhaustionLog
  readonly #cleaner: LogCleaner
  #timers: TimerHandle[] = []
  #running = new Set<string>()
  #closed = false
  #deleteSeq = 0
  #state: LogDirState = 'online'
  #offlineCause: Error | null = null
  #probeTimer: TimerHandle | null = null
  #probeDelayMs = 0
  readonly #probe: LogDirProbeConfig
  readonly #listeners: LogDirListener[] = []
  /** Times the directory went offline, and came back (for tests and logs). */
  #failures = 0
  #recoveries = 0
  /** A failure while re-opening (a log's callback), thrown by #recover. */
  #recoveryFailure: Error | null = null
  /** Closed while offline: no checkpoint is written (they would drop the offline logs' entries). */
  #closedOffline = false
  #loaded = false

  private constructor(dir: string, options: LogManagerOptions) {
    this.dir = dir
    this.#disk = options.disk
    this.#clock = options.clock
    this.#options = options
    this.config = options.config ?? DEFAULT_LOG_MANAGER_CONFIG
    this.defaultLogConfig = options.defaultLogConfig ?? DEFAULT_LOG_CONFIG
    this.#probe = { ...DEFAULT_LOG_DIR_PROBE, ...options.probe }
    this.#exhaustion = new ExhaustionLog(this.#clock, (m) => this.#warn(`${dir}: ${m}`))
    assert(
      this.#probe.backoffMs >= 1 && this.#probe.backoffMsMax >= this.#probe.backoffMs,
      'log dir probe: 1 <= backoffMs <= backoffMsMax',
    )
    this.#cleaner = new LogCleaner({
      dedupeBufferBytes: this.config.cleanerDedupeBufferBytes,
      ioBufferBytes: this.config.cleanerIoBufferBytes,
      loadFactor: this.config.cleanerIoBufferLoadFactor,
      clock: options.clock,
    })
  }

  /**
   * Open a log directory: check or write meta.properties, read the checkpoints and the clean-shutdown
   * marker, open (and if needed recover) every partition log in it, then remove the marker durably
   * before anything is written.
   */
  static async open(dir: string, options: LogManagerOptions): Promise<LogManager> {
    const m = new LogManager(dir, options)
    await m.#load()
    return m
  }

  get metaProperties(): MetaProperties {
    return this.#meta
  }

  /** Whether the directory was shut down cleanly last time (recovery was skipped). */
  get hadCleanShutdown(): boolean {
    return this.#hadCleanShutdown
  }

  /** The cleaner's counters. */
  get cleanerStats(): CleanerStats {
    return this.#cleaner.stats
  }

  #warn(message: string): void {
    this.#options.onWarning?.(message)
  }

  #path(name: string): string {
    return joinPath(this.dir, name)
  }

  async #readCheckpoint(name: string): Promise<OffsetCheckpoint> {
    try {
      return await readOffsetCheckpoint(this.#disk, this.#path(name))
    } catch (e) {
      if (!(e instanceof CheckpointFormatError)) throw e
      // A damaged checkpoint costs a full recovery, never a wrong one.
      this.#warn(`${this.dir}: ignoring damaged ${name}: ${e.message}`)
      return new Map()
    }
  }

  async #load(): Promise<void> {
    const disk = this.#disk
    if (!(await disk.exists(this.dir))) {
      // A new log directory's name must be durable too (as Kafka's createAndValidateLogDirs flushes
      // its parent): else a power loss takes every log in it, however well each was fsynced.
      await disk.mkdir(this.dir)
      await disk.syncDir(parentDir(this.dir))
    }
    await this.#loadMeta()
    this.#hadCleanShutdown = await disk.exists(this.#path(LogDirFile.cleanShutdown))
    const recoveryPoints = await this.#readCheckpoint(LogDirFile.recoveryPointCheckpoint)
    const logStartOffsets = await this.#readCheckpoint(LogDirFile.logStartOffsetCheckpoint)
    this.#cleanerOffsets = await this.#readCheckpoint(LogDirFile.cleanerOffsetCheckpoint)
    const found: Array<{ name: string; topic: string; partition: number }> = []
    for (const name of await disk.list(this.dir)) {
      if (/-delete$/.test(name)) {
        await disk.removeTree(this.#path(name)) // a deleted partition whose removal was cut short
        continue
      }
      const tp = parsePartitionDir(name)
      if (tp === null || !(await disk.stat(this.#path(name))).isDirectory) continue
      // The KRaft metadata log shares the directory when metadata.log.dir is a log dir; the quorum
      // owns it, so (as Kafka's LogManager) it is never loaded, retained or cleaned here.
      if (tp.topic === KRAFT_METADATA_TOPIC) continue
      found.push({ name, ...tp })
    }
    const opened: HostedLog[] = []
    await eachAtMost(found.entries(), LOGS_AT_ONCE, async ([i, { name, topic, partition }]) => {
      const key = partitionKey(topic, partition)
      const rp = recoveryPoints.get(key)?.offset
      const lso = logStartOffsets.get(key)?.offset
      const log = await PartitionLog.open(this.#path(name), this.#configFor(topic), {
        ...this.#logOptions(topic, partition),
        // Without a checkpointed recovery point, scan everything.
        recoveryPoint: rp ?? 0n,
        ...(lso !== undefined ? { logStartOffset: lso } : {}),
        hadCleanShutdown: this.#hadCleanShutdown && rp !== undefined,
      })
      opened[i] = { topic, partition, log }
    })
    for (const h of opened) this.#logs.set(partitionKey(h.topic, h.partition), h)
    if (this.#hadCleanShutdown) {
      // From here on a crash must recover: the marker goes before any write.
      await disk.remove(this.#path(LogDirFile.cleanShutdown))
      await disk.syncDir(this.dir)
    }
    await this.checkpointRecoveryPoints()
    this.#loaded = true
  }

  async #loadMeta(): Promise<void> {
    const path = this.#path(LogDirFile.metaProperties)
    let text: string | null = null
    try {
      text = (await this.#disk.readFile(path)).toString('utf8')
    } catch (e) {
      if (!isNotFound(e)) throw e
    }
    if (text === null) {
      if (this.#options.formatIfMissing === false) {
        throw new MetaPropertiesError(`${path} is missing: format the directory first`)
      }
      const meta: MetaProperties = {
        version: 1,
        clusterId: this.#options.clusterId,
        nodeId: this.#options.nodeId,
        ...(this.#options.directoryId !== undefined ? { directoryId: this.#options.directoryId } : {}),
      }
      await writeFileDurably(this.#disk, path, Buffer.from(formatMetaProperties(meta), 'utf8'))
      this.#meta = meta
      return
    }
    const meta = parseMetaProperties(text)
    if (meta.clusterId !== this.#options.clusterId) {
      throw new MetaPropertiesError(
        `${path}: cluster.id ${meta.clusterId} does not match this cluster's ${this.#options.clusterId}`,
      )
    }
    if (meta.nodeId !== this.#options.nodeId) {
      throw new MetaPropertiesError(
        `${path}: node.id ${meta.nodeId} does not match this node's ${this.#options.nodeId}`,
      )
    }
    this.#meta = meta
  }

  #configFor(topic: string): LogConfig {
    return this.#options.topicConfig?.(topic) ?? this.defaultLogConfig
  }

  /** What the directory's logs keep of their last writes, together (`write-tail.ts`). */
  readonly #tailBudget = new TailBudget(TAIL_BUDGET_BYTES_DEFAULT)

  #logOptions(topic: string, partition: number) {
    const hooks = this.#options.hooksFor?.(topic, partition)
    return {
      disk: this.#disk,
      clock: this.#clock,
      ...(hooks !== undefined ? { hooks } : {}),
      onRecoveryPointLowered: () => this.checkpointRecoveryPoints(),
      onWarning: (m: string) => this.#warn(m),
      onOffline: (cause: Error) =>
        isResourceExhausted(cause) && this.#state === 'online'
          ? this.#reopenLater(topic, partition, cause, this.#probe.backoffMs)
          : this.markOffline(cause),
      ...(this.#options.onFlushed !== undefined ? { onFlushed: this.#options.onFlushed } : {}),
      tailBudget: this.#tailBudget,
      tailBytesMax: BROKER_TAIL_BYTES_MAX,
      ...(this.#options.pool === undefined ? {} : { pool: this.#options.pool }),
    }
  }

  // ---------------------------------------------------------------- health

  /** What the directory's logs keep of their last writes, and how often reads found it there. */
  get tailBudget(): TailBudget {
    return this.#tailBudget
  }

  get state(): LogDirState {
    return this.#state
  }

  /** Whether the directory is offline (or re-opening its logs): its partitions answer KAFKA_STORAGE_ERROR. */
  get isOffline(): boolean {
    return this.#state !== 'online'
  }

  /** Why the directory last went offline, or null while it never did. */
  get offlineCause(): Error | null {
    return this.#offlineCause
  }

  /** How often the directory went offline, and came back online. */
  get health(): { readonly failures: number; readonly recoveries: number } {
    return { failures: this.#failures, recoveries: this.#recoveries }
  }

  /** The directory's id (meta.properties `directory.id`, else the one given at open), or null. */
  get directoryId(): string | null {
    return this.#meta.directoryId ?? this.#options.directoryId ?? null
  }

  subscribe(listener: LogDirListener): void {
    this.#listeners.push(listener)
  }

  /**
   * The directory failed (a log's write or fsync, a checkpoint): every log in it goes offline at
   * once, as in Kafka (one bad disk, one decision), the listeners hear it, and the probe starts.
   */
  markOffline(cause: Error): void {
    // Before open completes a failure is open's own error (the broker does not start).
    if (this.#closed || !this.#loaded) return
    if (this.#state === 'recovering') {
      // A re-opened log or the probe failed: #recover sends the directory back offline.
      this.#recoveryFailure ??= cause
      return
    }
    if (this.#state === 'offline') return
    this.#state = 'offline'
    this.#offlineCause = cause
    this.#failures++
    this.#probeDelayMs = this.#probe.backoffMs
    this.#warn(`${this.dir}: log directory offline: ${cause.message}`)
    for (const h of this.#logs.values()) h.log.markOffline(cause)
    for (const l of this.#listeners) l.onOffline?.(this, cause)
    this.#armProbe()
  }

  /**
   * A log failed because the process ran out of descriptors or memory, not because the disk did:
   * the directory stays online and only this log is offline (its partition answers
   * KAFKA_STORAGE_ERROR, which clients retry) until it is re-opened through recovery, after the
   * probe's backoff, longer each time the resource is still short.
   */
  #reopenLater(topic: string, partition: number, cause: Error, delayMs: number): void {
    const key = partitionKey(topic, partition)
    this.#exhaustion.offline(key, `re-opening in ${delayMs} ms: ${cause.message}`)
    const timer = this.#clock.setTimer(delayMs, () => {
      this.#timers = this.#timers.filter((t) => t !== timer)
      void this.#reopenSerial.run(() => this.#reopen(key, delayMs))
    })
    this.#timers.push(timer)
  }

  async #reopen(key: string, delayMs: number): Promise<void> {
    const h = this.#logs.get(key)
    // Deleted meanwhile, or the directory's own recovery re-opens every log.
    if (this.#closed || this.#state !== 'online' || h === undefined || h.log.offlineCause === null) return
    const old = h.log
    await old.close()
    let log: PartitionLog
    try {
      log = await PartitionLog.open(old.dir, old.config, {
        ...this.#logOptions(h.topic, h.partition),
        recoveryPoint: old.recoveryPoint,
        logStartOffset: old.logStartOffset,
        hadCleanShutdown: false,
      })
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e))
      if (this.#closed || this.#logs.get(key) !== h) return
      if (isResourceExhausted(err) && this.#state === 'online')
        this.#reopenLater(h.topic, h.partition, err, Math.min(delayMs * 2, this.#probe.backoffMsMax))
      else this.markOffline(err)
      return
    }
    if (this.#closed || this.#state !== 'online' || this.#logs.get(key) !== h) {
      await log.close()
      return
    }
    this.#logs.set(key, { topic: h.topic, partition: h.partition, log })
    this.#exhaustion.reopened(key)
    for (const l of this.#listeners) l.onLogsReopened?.(this)
  }

  #armProbe(): void {
    if (this.#closed || this.#probeTimer !== null) return
    this.#probeTimer = this.#clock.setTimer(this.#probeDelayMs, () => {
      this.#probeTimer = null
      void this.#recover()
    })
  }

  /** A durable write in the directory: the disk takes writes again. Throws if not. */
  async #probeWrite(): Promise<void> {
    const path = this.#path(LOG_DIR_PROBE_FILE)
    const file = await this.#disk.open(path, { create: true, truncate: true })
    try {
      await file.write([Buffer.alloc(4096, 0x77)], 0)
      await file.sync()
    } finally {
      await file.close()
    }
    await this.#disk.remove(path)
    await this.#disk.syncDir(this.dir)
  }

  /**
   * The way back: the probe, then every log closed (nothing of an offline log is written) and
   * re-opened from its last recovery point through normal recovery, which validates what was
   * written past it and cuts a torn or half-written tail, so nothing unwritten is ever served. A
   * failure on the way goes back offline with a longer wait.
   */
  async #recover(): Promise<void> {
    if (this.#closed || this.#state !== 'offline') return
    await this.#reopenSerial.run(() => this.#recoverLogs())
  }

  async #recoverLogs(): Promise<void> {
    if (this.#closed || this.#state !== 'offline') return
    this.#state = 'recovering'
    this.#recoveryFailure = null
    try {
      await this.#probeWrite()
      for (const [key, h] of [...this.#logs]) {
        const old = h.log
        await old.close()
        if (this.#closed) return
        const log = await PartitionLog.open(old.dir, old.config, {
          ...this.#logOptions(h.topic, h.partition),
          recoveryPoint: old.recoveryPoint,
          logStartOffset: old.logStartOffset,
          hadCleanShutdown: false,
        })
        this.#logs.set(key, { topic: h.topic, partition: h.partition, log })
        if (this.#recoveryFailure !== null) throw this.#recoveryFailure
      }
      this.#state = 'online'
      await this.checkpointRecoveryPoints()
      await this.checkpointLogStartOffsets()
      if (this.#state !== 'online') throw this.#offlineCause ?? new Error('offline again')
    } catch (e) {
      if (this.#closed) return
      const err = e instanceof Error ? e : new Error(String(e))
      this.#warn(`${this.dir}: log directory still offline: ${err.message}`)
      // Logs re-opened before the failure go offline with the rest (their callbacks see 'offline').
      this.#state = 'offline'
      this.#offlineCause = err
      for (const h of this.#logs.values()) if (h.log.offlineCause === null) h.log.markOffline(err)
      this.#probeDelayMs = Math.min(this.#probeDelayMs * 2, this.#probe.backoffMsMax)
      this.#armProbe()
      return
    }
    this.#recoveries++
    this.#offlineCause = null
    this.#warn(`${this.dir}: log directory online again (${this.#logs.size} logs re-opened)`)
    for (const l of this.#listeners) l.onOnline?.(this)
  }

  // ---------------------------------------------------------------- logs

  /** The log of a hosted partition, or undefined. */
  getLog(topic: string, partition: number): PartitionLog | undefined {
    return this.#logs.get(partitionKey(topic, partition))?.log
  }

  /** Every hosted log. */
  logs(): { topic: string; partition: number; log: PartitionLog }[] {
    return [...this.#logs.values()]
  }

  /** The partition's log, created (directory synced) when it does not exist yet. */
  getOrCreateLog(topic: string, partition: number, config?: LogConfig): Promise<PartitionLog> {
    assert(!this.#closed, 'log manager is closed')
    const key = partitionKey(topic, partition)
    const hosted = this.#logs.get(key)
    if (hosted !== undefined) return Promise.resolve(hosted.log)
    if (this.#state !== 'online')
      return Promise.reject(
        new LogOfflineError(`log directory ${this.dir} is offline`, { cause: this.#offlineCause }),
      )
    let opening = this.#opening.get(key)
    if (opening === undefined) {
      opening = (async () => {
        const log = await PartitionLog.open(this.#path(key), config ?? this.#configFor(topic), {
          ...this.#logOptions(topic, partition),
          recoveryPoint: 0n,
        })
        this.#logs.set(key, { topic, partition, log })
        return log
      })().finally(() => this.#opening.delete(key))
      this.#opening.set(key, opening)
    }
    return opening
  }

  /**
   * Delete a partition's log (topic deletion, reassignment): close it, rename its directory to
   * `<topic>-<partition>.<id>-delete` durably, then remove it after `file.delete.delay.ms`.
   */
  async deleteLog(topic: string, partition: number): Promise<void> {
    const key = partitionKey(topic, partition)
    const hosted = this.#logs.get(key)
    if (hosted === undefined) return
    this.#logs.delete(key)
    this.#cleanerOffsets.delete(key)
    await hosted.log.close()
    const unique = `${this.#clock.nowMs().toString(16)}${(this.#deleteSeq++).toString(16)}`.padStart(32, '0')
    const doomed = this.#path(`${key}.${unique}-delete`)
    await this.#disk.rename(this.#path(key), doomed)
    await this.#disk.syncDir(this.dir)
    await this.checkpointRecoveryPoints()
    await this.checkpointLogStartOffsets()
    const timer = this.#clock.setTimer(hosted.log.config.fileDeleteDelayMs, () => {
      this.#disk
        .removeTree(doomed)
        .catch((e: unknown) => this.#warn(`${doomed}: removal failed: ${String(e)}`))
    })
    this.#timers.push(timer)
  }

  // ---------------------------------------------------------------- checkpoints

  /**
   * A checkpoint write: skipped while the directory is offline (its logs' offsets are not
   * trustworthy, and a partial file would lose entries); a failure takes the directory offline,
   * unless the process ran out of descriptors or memory: the last checkpoint stays, as after a
   * crash before this write, and the next interval writes it again.
   */
  #checkpoint(write: () => Promise<void>): Promise<void> {
    return this.#checkpointSerial.run(async () => {
      if (this.#state === 'offline' || this.#closedOffline) return
      try {
        await write()
      } catch (e) {
        if (!isResourceExhausted(e)) this.markOffline(e instanceof Error ? e : new Error(String(e)))
        throw e
      }
    })
  }

  /** Write recovery-point-offset-checkpoint from every online log (durably). */
  checkpointRecoveryPoints(): Promise<void> {
    return this.#checkpoint(() =>
      writeOffsetCheckpoint(
        this.#disk,
        this.#path(LogDirFile.recoveryPointCheckpoint),
        this.logs()
          .filter((h) => h.log.offlineCause === null)
          .map((h) => ({ topic: h.topic, partition: h.partition, offset: h.log.recoveryPoint })),
      ),
    )
  }

  /** Write log-start-offset-checkpoint (durably). */
  checkpointLogStartOffsets(): Promise<void> {
    return this.#checkpoint(() =>
      writeOffsetCheckpoint(
        this.#disk,
        this.#path(LogDirFile.logStartOffsetCheckpoint),
        this.logs()
          .filter((h) => h.log.offlineCause === null && h.log.logStartOffset > h.log.segments[0]!.baseOffset)
          .map((h) => ({ topic: h.topic, partition: h.partition, offset: h.log.logStartOffset })),
      ),
    )
  }

  /** Write cleaner-offset-checkpoint (durably). */
  checkpointCleanerOffsets(): Promise<void> {
    return this.#checkpoint(() =>
      writeOffsetCheckpoint(
        this.#disk,
        this.#path(LogDirFile.cleanerOffsetCheckpoint),
        this.#cleanerOffsets.values(),
      ),
    )
  }

  // ---------------------------------------------------------------- maintenance

  /** Flush the logs whose `flush.ms` has passed (the flush scheduler's task). */
  async flushDirtyLogs(): Promise<number> {
    let n = 0
    const now = this.#clock.nowMs()
    for (const h of this.logs()) {
      try {
        if (await h.log.flushIfDue(now)) n++
      } catch (e) {
        this.#warn(`${h.topic}-${h.partition}: flush failed: ${String(e)}`)
      }
    }
    return n
  }

  /** Retention over every log; returns the segments deleted. Checkpoints log start offsets after. */
  async runRetention(): Promise<number> {
    let n = 0
    for (const h of this.logs()) {
      if (h.log.offlineCause !== null || h.log.isClosed) continue
      try {
        n += await h.log.deleteOldSegments()
      } catch (e) {
        this.#warn(`${h.topic}-${h.partition}: retention failed: ${String(e)}`)
      }
    }
    if (n > 0) await this.checkpointLogStartOffsets()
    return n
  }

  /**
   * One pass of the cleaner: clean the compacted log with the highest dirty ratio at or above its
   * `min.cleanable.dirty.ratio` (or past `max.compaction.lag.ms`). Returns what it did, or null.
   * `upperBound` caps what may be cleaned (the last stable offset), per partition.
   */
  async runCleanerOnce(
    upperBound: ((topic: string, partition: number) => bigint | undefined) | undefined = this.#options
      .cleanerUpperBound,
  ): Promise<CleanerStats | null> {
    const candidates = this.logs()
      .filter((h) => h.log.config.cleanupPolicy.compact && h.log.offlineCause === null && !h.log.isClosed)
      .map((h) => {
        const key = partitionKey(h.topic, h.partition)
        return {
          key,
          hosted: h,
          firstDirty: this.#cleanerOffsets.get(key)?.offset ?? h.log.logStartOffset,
          bound: upperBound?.(h.topic, h.partition),
        }
      })
    const chosen = this.#cleaner.choose(
      candidates.map((c) => ({
        log: c.hosted.log,
        firstDirty: c.firstDirty,
        ...(c.bound !== undefined ? { upperBound: c.bound } : {}),
      })),
    )
    if (chosen === null) return null
    const c = candidates.find((x) => x.hosted.log === chosen.log)!
    const result = await this.#cleaner.clean(chosen)
    if (result === null) return null
    this.#cleanerOffsets.set(c.key, {
      topic: c.hosted.topic,
      partition: c.hosted.partition,
      offset: result.endOffset,
    })
    await this.checkpointCleanerOffsets()
    return result.stats
  }

  /**
   * Start the background tasks on the clock: retention every `log.retention.check.interval.ms`,
   * flushes every `log.flush.scheduler.interval.ms`, the two checkpoints, and the cleaner.
   */
  start(): void {
    const c = this.config
    this.#every('retention', c.retentionCheckIntervalMs, () => this.runRetention())
    this.#every('flush', c.flushSchedulerIntervalMs, () => this.flushDirtyLogs())
    this.#every('recovery-point-checkpoint', c.recoveryPointCheckpointIntervalMs, () =>
      this.checkpointRecoveryPoints(),
    )
    this.#every('log-start-offset-checkpoint', c.logStartOffsetCheckpointIntervalMs, () =>
      this.checkpointLogStartOffsets(),
    )
    if (c.cleanerEnable) this.#every('cleaner', c.cleanerBackoffMs, () => this.#cleanUntilIdle())
  }

  async #cleanUntilIdle(): Promise<void> {
    // Keep cleaning while there is work, then back off (log.cleaner.backoff.ms).
    for (let i = 0; i < 100 && !this.#closed; i++) if ((await this.runCleanerOnce()) === null) return
  }

  #every(name: string, intervalMs: number, task: () => Promise<unknown>): void {
    if (intervalMs >= NEVER_MS) return
    const arm = () => {
      if (this.#closed) return
      const timer = this.#clock.setTimer(Math.max(1, intervalMs), () => {
        this.#timers = this.#timers.filter((t) => t !== timer)
        if (this.#running.has(name)) return arm()
        this.#running.add(name)
        task()
          .catch((e: unknown) => this.#warn(`${this.dir}: ${name} failed: ${String(e)}`))
          .finally(() => {
            this.#running.delete(name)
            arm()
          })
      })
      this.#timers.push(timer)
    }
    arm()
  }

  /**
   * Stop the tasks, close every log (each flushes and writes its indexes), write the checkpoints,
   * and, when every log closed cleanly, the clean-shutdown marker (so the next start skips recovery).
   */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closedOffline = this.#state !== 'online'
    this.#closed = true
    if (this.#probeTimer !== null) this.#clock.clearTimer(this.#probeTimer)
    this.#probeTimer = null
    for (const t of this.#timers) this.#clock.clearTimer(t)
    this.#timers = []
    this.#exhaustion.close()
    this.#cleaner.stop()
    await this.#cleaner.idle()
    let clean = true
    await eachAtMost(this.logs(), LOGS_AT_ONCE, async (h) => {
      if (!(await h.log.close())) clean = false
    })
    await this.checkpointRecoveryPoints()
    await this.checkpointLogStartOffsets()
    await this.checkpointCleanerOffsets()
    if (clean) {
      await writeFileDurably(
        this.#disk,
        this.#path(LogDirFile.cleanShutdown),
        Buffer.from('{"version":0,"brokerEpoch":-1}\n'),
      )
    }
  }
}
