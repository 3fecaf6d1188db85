/**
 * What a partition log carries beside its segments: the leader-epoch cache and idempotent-producer
 * state, kept current through the log's hooks and persisted in the partition directory in Kafka's
 * files (`leader-epoch-checkpoint`, `<offset>.snapshot`), and a bounded record of bytes per offset
 * that delayed fetches estimate with. It reaches disk only through the Disk port.
 */
import { type Clock, type Disk, isNotFound, joinPath } from '../io/index.ts'
import { assert } from '../model/index.ts'
import {
  type BatchHeader,
  ControlRecordType,
  crc32c,
  type EndTxnMarker,
  isControl,
  isTransactional,
  LOG_OVERHEAD,
} from '../protocol/index.ts'
import {
  type LogHooks,
  offsetFileName,
  type PartitionLog,
  parseSegmentFileName,
  writeFileDurably,
} from '../storage/index.ts'
import {
  EPOCH_ENTRIES_MAX,
  type EpochEntry,
  formatLeaderEpochCheckpoint,
  LEADER_EPOCH_CHECKPOINT_FILE,
  LeaderEpochCache,
  LeaderEpochCheckpointError,
  parseLeaderEpochCheckpoint,
} from './leader-epoch-cache.ts'
import { type ProducerBatchInfo, ProducerSnapshotError, ProducerStateManager } from './producer-state.ts'

const SNAPSHOT_SUFFIX = '.snapshot'
/** Producer snapshots kept per partition (the newest; an older one serves if the newest is damaged). */
export const PRODUCER_SNAPSHOTS_KEPT = 2
/** Entries of the bytes-per-offset record (one per appended batch, the oldest overwritten). */
export const APPENDED_BATCHES_TRACKED = 1024

export interface ReplicaLogStateOptions {
  readonly disk: Disk
  readonly clock: Clock
  readonly onWarning?: (message: string) => void
  /** A background file write (epoch checkpoint, snapshot) failed: its log dir is failing. */
  readonly onDiskError?: (e: unknown) => void
}

/** The producer fields of a batch header. */
export function producerInfo(h: BatchHeader): ProducerBatchInfo {
  return {
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    lastOffsetDelta: h.lastOffsetDelta,
    maxTimestamp: h.maxTimestamp,
    isTransactional: isTransactional(h.attributes),
  }
}

/**
 * Cumulative bytes appended, by end offset, for the last APPENDED_BATCHES_TRACKED batches: how many
 * bytes lie between two offsets, without touching the log. A ring that starts small and doubles up
 * to that bound, so that an idle partition costs a few entries, not the whole window.
 */
export class AppendedBytes {
  #ends = new BigInt64Array(4)
  #totals = new Float64Array(4)
  #next = 0
  #count = 0
  #total = 0

  reset(endOffset: bigint): void {
    this.#count = 0
    this.#next = 0
    this.push(endOffset, 0)
  }

  push(endOffset: bigint, bytes: number): void {
    if (this.#count === this.#ends.length && this.#count < APPENDED_BATCHES_TRACKED) this.#grow()
    this.#total += bytes
    this.#ends[this.#next] = endOffset
    this.#totals[this.#next] = this.#total
    this.#next = (this.#next + 1) % this.#ends.length
    if (this.#count < this.#ends.length) this.#count++
  }

  /** Twice the room, the entries oldest first from index 0. */
  #grow(): void {
    const size = this.#ends.length
    const ends = new BigInt64Array(Math.min(size * 2, APPENDED_BATCHES_TRACKED))
    const totals = new Float64Array(ends.length)
    for (let i = 0; i < this.#count; i++) {
      const at = (this.#next - this.#count + i + size) % size
      ends[i] = this.#ends[at]!
      totals[i] = this.#totals[at]!
    }
    this.#ends = ends
    this.#totals = totals
    this.#next = this.#count
  }

  #at(back: number): number {
    const size = this.#ends.length
    return (this.#next - back + size) % size
  }

  /** Drops entries past `endOffset` (truncation). */
  truncateTo(endOffset: bigint): void {
    while (this.#count > 0) {
      const last = this.#at(1)
      if (this.#ends[last]! <= endOffset) break
      this.#next = last
      this.#count--
      this.#total = this.#count > 0 ? this.#totals[this.#at(1)]! : 0
    }
  }

  /** Total bytes recorded at the last entry ending at or before `offset`; null when older than all. */
  #totalAt(offset: bigint): number | null {
    for (let i = 1; i <= this.#count; i++) {
      const at = this.#at(i)
      if (this.#ends[at]! <= offset) return this.#totals[at]!
    }
    return null
  }

  /** Bytes appended between two batch boundaries; null when `from` is older than what is kept. */
  between(from: bigint, to: bigint): number | null {
    if (to <= from) return 0
    const a = this.#totalAt(from)
    const b = this.#totalAt(to)
    if (a === null || b === null) return null
    return b - a
  }
}

export class ReplicaLogState {
  readonly epochs = new LeaderEpochCache()
  #producers = new ProducerStateManager()
  readonly #disk: Disk
  readonly #clock: Clock
  readonly #options: ReplicaLogStateOptions
  readonly #appended = new AppendedBytes()
  #log: PartitionLog | null = null
  #loaded = false
  #closed = false
  /** The log is being deleted: its directory is going away, so nothing more is written. */
  #abandoned = false
  /** Epochs met while the log recovered at open, before the checkpoint file was read. */
  #recoveredEpochs: EpochEntry[] = []
  /** Serializes this partition's file writes (checkpoint, snapshots, deletions). */
  #files: Promise<void> = Promise.resolve()
  #epochWriteQueued = false

  /** The log's hooks: pass them to the log when it opens. */
  readonly hooks: LogHooks

  constructor(options: ReplicaLogStateOptions) {
    this.#disk = options.disk
    this.#clock = options.clock
    this.#options = options
    this.hooks = {
      onBatch: (h, source, marker) => this.#onBatch(h, source, marker),
      onTruncateTo: (end) => this.#onTruncateTo(end),
      onTruncateFully: (start) => this.#onTruncateFully(start),
      onLogStartOffset: (start) => {
        if (this.#loaded && this.epochs.truncateFromStart(start)) this.#queueEpochWrite()
      },
      onRoll: (base) => this.#onRoll(base),
    }
  }

  get producers(): ProducerStateManager {
    return this.#producers
  }

  get loaded(): boolean {
    return this.#loaded
  }

  /** Bytes appended between two offsets since load (null: unknown, older than what is tracked). */
  bytesBetween(from: bigint, to: bigint): number | null {
    return this.#appended.between(from, to)
  }

  #warn(message: string): void {
    this.#options.onWarning?.(message)
  }

  #path(name: string): string {
    assert(this.#log !== null, 'replica log state is not loaded')
    return joinPath(this.#log.dir, name)
  }

  #onBatch(h: BatchHeader, source: 'append' | 'recovery', marker: EndTxnMarker | null): void {
    if (source === 'recovery' && !this.#loaded) {
      // Kafka's recovery assigns an epoch only when newer than every known one.
      const last = this.#recoveredEpochs.at(-1)
      if (h.partitionLeaderEpoch >= 0 && (last === undefined || h.partitionLeaderEpoch > last.epoch)) {
        this.#recoveredEpochs.push({ epoch: h.partitionLeaderEpoch, startOffset: h.baseOffset })
        if (this.#recoveredEpochs.length > EPOCH_ENTRIES_MAX) this.#recoveredEpochs.shift()
      }
      return
    }
    const lastOffset = h.baseOffset + BigInt(h.lastOffsetDelta)
    if (h.partitionLeaderEpoch >= 0 && this.epochs.assign(h.partitionLeaderEpoch, h.baseOffset)) {
      this.#queueEpochWrite()
    }
    this.#updateProducers(h, marker, this.#clock.nowMs())
    this.#appended.push(lastOffset + 1n, LOG_OVERHEAD + h.batchLength)
  }

  /**
   * Producer state follows a batch (Kafka's `UnifiedLog.updateProducers`): a data batch with a
   * producer id, or a marker ending its producer's transaction; an aborted transaction goes to the
   * `.txnindex` of the marker's segment. Other control batches (KRaft's) carry no producer.
   */
  #updateProducers(h: BatchHeader, marker: EndTxnMarker | null, nowMs: number): void {
    if (h.producerId < 0n) return
    if (!isControl(h.attributes)) {
      this.#producers.update(producerInfo(h), h.baseOffset, h.baseOffset + BigInt(h.lastOffsetDelta), nowMs)
      return
    }
    if (marker === null) return
    const completed = this.#producers.completeTxn(
      {
        producerId: h.producerId,
        producerEpoch: h.producerEpoch,
        coordinatorEpoch: marker.coordinatorEpoch,
        committed: marker.type === ControlRecordType.commit,
      },
      h.baseOffset,
      nowMs,
    )
    const log = this.#log
    if (completed === null || !completed.aborted || log === null) return
    const txn = {
      producerId: completed.producerId,
      firstOffset: completed.firstOffset,
      lastOffset: completed.lastOffset,
      lastStableOffset: completed.lastStableOffset,
    }
    // Started now, not when the file queue reaches it: a read_committed fetch waits for the index
    // writes begun before it, and one that found the marker without its entry would hand out the
    // aborted records. Queued too, so a later producer snapshot (which replay at load starts from)
    // is written only once the entry is durable.
    const write = log.appendAbortedTxn(txn)
    write.catch(() => undefined) // reported by the file queue
    this.#queueFile(() => write)
  }

  #onTruncateTo(end: bigint): void {
    if (this.epochs.truncateFromEnd(end)) this.#queueEpochWrite()
    this.#producers.truncateTo(end)
    this.#appended.truncateTo(end)
    if (this.#log !== null) this.#queueFile(() => this.#deleteSnapshots((o) => o > end))
  }

  #onTruncateFully(start: bigint): void {
    if (this.epochs.clear()) this.#queueEpochWrite()
    this.#producers.clear()
    this.#appended.reset(start)
    if (this.#log !== null) this.#queueFile(() => this.#deleteSnapshots(() => true))
  }

  async #onRoll(baseOffset: bigint): Promise<void> {
    if (!this.#loaded || this.#abandoned) return
    await this.#runFile(() => this.#writeSnapshot(baseOffset))
  }

  /** Runs `fn` after every earlier file operation; its failure is reported, not thrown to others. */
  #queueFile(fn: () => Promise<void>): void {
    this.#files = this.#files.then(fn).catch((e: unknown) => {
      if (this.#abandoned) return
      this.#warn(`${this.#log?.dir}: ${String(e)}`)
      this.#options.onDiskError?.(e)
    })
  }

  /** Like #queueFile, but the caller waits for it and sees its failure. */
  #runFile<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#files.then(fn)
    this.#files = run.then(
      () => undefined,
      () => undefined,
    )
    return run
  }

  #queueEpochWrite(): void {
    if (this.#log === null || this.#epochWriteQueued) return
    this.#epochWriteQueued = true
    this.#queueFile(async () => {
      this.#epochWriteQueued = false
      await this.#writeEpochCheckpoint()
    })
  }

  async #writeEpochCheckpoint(): Promise<void> {
    if (this.#abandoned) return
    const text = formatLeaderEpochCheckpoint(this.epochs.entries)
    await writeFileDurably(this.#disk, this.#path(LEADER_EPOCH_CHECKPOINT_FILE), Buffer.from(text))
  }

  /**
   * Records that `epoch` starts at `startOffset` and makes the checkpoint durable before resolving:
   * what a new leader does before it takes writes (Kafka's `maybeAssignEpochStartOffset`).
   */
  async assignEpochDurably(epoch: number, startOffset: bigint): Promise<void> {
    if (!this.epochs.assign(epoch, startOffset)) return
    await this.#runFile(() => this.#writeEpochCheckpoint())
  }

  // ---------------------------------------------------------------- load

  /**
   * Loads the state of `log` (opened, and recovered, with this state's hooks): the epoch cache from
   * its checkpoint (cut at the log end, plus epochs recovery met), producer state from the newest
   * good snapshot at or below the log end, replaying the batches after it. A missing or damaged
   * checkpoint is rebuilt from the batch headers.
   */
  async load(log: PartitionLog): Promise<void> {
    assert(!this.#loaded, 'replica log state loaded twice')
    this.#log = log
    const end = log.logEndOffset
    let rebuildEpochs = false
    try {
      const text = (await this.#disk.readFile(this.#path(LEADER_EPOCH_CHECKPOINT_FILE))).toString('utf8')
      for (const e of parseLeaderEpochCheckpoint(text)) this.epochs.assign(e.epoch, e.startOffset)
    } catch (e) {
      if (e instanceof LeaderEpochCheckpointError) {
        this.#warn(`${log.dir}: rebuilding the leader-epoch cache: ${e.message}`)
        rebuildEpochs = true
      } else if (isNotFound(e)) {
        rebuildEpochs = end > log.logStartOffset
      } else throw e
    }
    let epochsChanged = this.epochs.truncateFromEnd(end)
    for (const r of this.#recoveredEpochs)
      if (this.epochs.assignIfNewer(r.epoch, r.startOffset)) epochsChanged = true
    this.#recoveredEpochs = []

    const snapshotOffset = await this.#loadProducerSnapshot(end)
    const producersFrom = snapshotOffset ?? log.logStartOffset
    const scanFrom = rebuildEpochs ? log.logStartOffset : producersFrom
    if (scanFrom < end) {
      const nowMs = this.#clock.nowMs()
      await log.scanBatchHeaders(scanFrom, (h, marker) => {
        if (h.baseOffset < scanFrom) return
        if (rebuildEpochs && this.epochs.assignIfNewer(h.partitionLeaderEpoch, h.baseOffset))
          epochsChanged = true
        // Replaying the markers also writes back `.txnindex` entries a crash or a recovery cut.
        if (h.baseOffset >= producersFrom) this.#updateProducers(h, marker, nowMs)
      })
    }
    if (this.epochs.truncateFromStart(log.logStartOffset)) epochsChanged = true
    this.#appended.reset(end)
    this.#loaded = true
    if (epochsChanged || rebuildEpochs) await this.#runFile(() => this.#writeEpochCheckpoint())
  }

  /**
   * Rebuilds producer state after a truncation (Kafka's `truncateAndReload`): from the newest good
   * snapshot at or below the new log end, replaying the batches after it, so a transaction whose
   * marker the truncation cut is open again. The hooks' quick cut (`onTruncateTo`) only drops
   * what lies past the end.
   */
  async reloadProducers(): Promise<void> {
    const log = this.#log
    if (!this.#loaded || log === null) return
    const end = log.logEndOffset
    try {
      const snapshotOffset = await this.#runFile(() => this.#loadProducerSnapshot(end))
      if (snapshotOffset === null) this.#producers = new ProducerStateManager()
      const from = snapshotOffset ?? log.logStartOffset
      const nowMs = this.#clock.nowMs()
      await log.scanBatchHeaders(from, (h, marker) => {
        if (h.baseOffset >= from && h.baseOffset < end) this.#updateProducers(h, marker, nowMs)
      })
    } catch (e) {
      // The quick cut stands; a failing disk takes the log dir offline.
      this.#warn(`${log.dir}: reloading producer state after a truncation: ${String(e)}`)
      this.#options.onDiskError?.(e)
    }
  }

  /** Loads the newest good snapshot at or below `end`; deletes later and damaged ones. */
  async #loadProducerSnapshot(end: bigint): Promise<bigint | null> {
    const offsets = await this.#snapshotOffsets()
    for (const o of offsets.filter((x) => x > end)) await this.#remove(this.#snapshotPath(o))
    for (const o of offsets.filter((x) => x <= end).reverse()) {
      try {
        const data = await this.#disk.readFile(this.#snapshotPath(o))
        this.#producers = ProducerStateManager.fromSnapshot(data, crc32c, this.#clock.nowMs())
        return o
      } catch (e) {
        if (!(e instanceof ProducerSnapshotError) && !isNotFound(e)) throw e
        this.#warn(`${this.#log?.dir}: discarding producer snapshot ${o}: ${String(e)}`)
        await this.#remove(this.#snapshotPath(o))
      }
    }
    return null
  }

  #snapshotPath(offset: bigint): string {
    return this.#path(`${offsetFileName(offset)}${SNAPSHOT_SUFFIX}`)
  }

  async #snapshotOffsets(): Promise<bigint[]> {
    const out: bigint[] = []
    for (const name of await this.#disk.list(this.#log!.dir)) {
      const parsed = parseSegmentFileName(name)
      if (parsed !== null && parsed.ext === SNAPSHOT_SUFFIX && parsed.suffix === '')
        out.push(parsed.baseOffset)
    }
    return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  }

  async #remove(path: string): Promise<void> {
    try {
      await this.#disk.remove(path)
    } catch (e) {
      if (!isNotFound(e)) throw e
    }
  }

  async #deleteSnapshots(doomed: (offset: bigint) => boolean): Promise<void> {
    for (const o of await this.#snapshotOffsets()) if (doomed(o)) await this.#remove(this.#snapshotPath(o))
  }

  /** Writes `<offset>.snapshot` (Kafka's format) durably, then keeps only the newest few. */
  async #writeSnapshot(offset: bigint): Promise<void> {
    if (this.#abandoned) return
    await writeFileDurably(this.#disk, this.#snapshotPath(offset), this.#producers.snapshot(crc32c))
    const offsets = await this.#snapshotOffsets()
    for (const o of offsets.slice(0, Math.max(0, offsets.length - PRODUCER_SNAPSHOTS_KEPT)))
      await this.#remove(this.#snapshotPath(o))
  }

  // ---------------------------------------------------------------- close

  /**
   * Clean shutdown, before the log closes: a producer snapshot at the log end (so the next start
   * replays nothing) and every queued file write finished.
   */
  async close(): Promise<void> {
    if (this.#closed) return
    const log = this.#log
    if (this.#loaded && log !== null && !log.isClosed && log.offlineCause === null) {
      const end = log.logEndOffset
      await this.#runFile(async () => {
        const existing = await this.#snapshotOffsets()
        if (!existing.includes(end) || this.#producers.size > 0) await this.#writeSnapshot(end)
      }).catch((e: unknown) => this.#warn(`${log.dir}: producer snapshot at shutdown: ${String(e)}`))
    }
    this.#closed = true
    await this.#files
  }

  /** The log is being deleted: stop writing files (its directory is going away). */
  abandon(): void {
    this.#abandoned = true
    this.#closed = true
  }
}
