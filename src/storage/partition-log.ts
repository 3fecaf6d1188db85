/**
 * A partition's log: the segments in `<log.dirs>/<topic>-<partition>/`. Assigns offsets to batches
 * kept as bytes, reads by offset and time, group-commits flushes, recovers, truncates, retains.
 * The facade (Kafka's UnifiedLog): it holds the offsets and the write pipeline, and leaves opening
 * to `LogLoader`, an append's checks to `LogValidator` and the segments on disk to `LocalLog`.
 */
import type { Clock, Disk } from '../io/index.ts'
import { assert } from '../model/index.ts'
import { type BatchHeader, BatchOffsets, type EndTxnMarker, ErrorCode } from '../protocol/index.ts'
import { appendedHeader, endTxnMarkerAt } from './appended-header.ts'
import { LocalLog, scanBatchHeaders } from './local-log.ts'
import type { LogConfig } from './log-config.ts'
import { LogLoader, type RecoveryReport } from './log-loader.ts'
import { type FoundTimestamp, type LogSegment, SegmentFile } from './log-segment.ts'
import { LogValidator } from './log-validator.ts'
import { type InFlightRound, PendingAppend, releaseAll, settle } from './pending-append.ts'
import type { ReadBuffers } from './read-buffer-pool.ts'
import { type AppendScan, batchSize, readInt64AsNumber } from './scan-append.ts'
import type { AbortedTxn } from './transaction-index.ts'
import { TAIL_BYTES_MAX_DEFAULT, TailBudget, WriteTail } from './write-tail.ts'

export type { RecoveryReport } from './log-loader.ts'

/** Special timestamps of ListOffsets (Kafka's ListOffsetsRequest constants). */
export const ListOffsetsTimestamp = {
  latest: -1,
  earliest: -2,
  maxTimestamp: -3,
  earliestLocal: -4,
} as const

/**
 * Where leader-epoch and producer state (replication's) plug in. Called in offset order, inside the
 * log's serialization, before the call that caused them resolves.
 */
export interface LogHooks {
  /**
   * A batch appended (`append`) or found past the recovery point at startup (`recovery`); `marker`
   * is the COMMIT or ABORT a transaction marker (a control batch) holds, else null.
   */
  onBatch?(header: BatchHeader, source: 'append' | 'recovery', marker: EndTxnMarker | null): void
  /** Offsets at or after `endOffset` are gone (truncateTo). */
  onTruncateTo?(endOffset: bigint): void
  /** Everything is gone; the log restarts at `startOffset` (truncateFullyAndStartAt). */
  onTruncateFully?(startOffset: bigint): void
  /** The log start offset moved forward (retention, DeleteRecords). */
  onLogStartOffset?(startOffset: bigint): void
  /** The active segment rolled; the new one starts at `baseOffset` (producer snapshots go here). */
  onRoll?(baseOffset: bigint): Promise<void>
}

export interface PartitionLogOptions {
  readonly disk: Disk
  readonly clock: Clock
  /** From recovery-point-offset-checkpoint: segments from the one holding it are scanned. Default 0. */
  readonly recoveryPoint?: bigint
  /** From log-start-offset-checkpoint. */
  readonly logStartOffset?: bigint
  /** The directory's clean-shutdown marker was present: skip the scan. */
  readonly hadCleanShutdown?: boolean
  readonly hooks?: LogHooks
  /** Awaited after the recovery point moves back (truncation), to rewrite the checkpoint first. */
  readonly onRecoveryPointLowered?: () => Promise<void>
  /** Non-fatal events (a recovered tail, a failed background delete). */
  readonly onWarning?: (message: string) => void
  /** Called once, when the log goes offline (a disk failure): its manager takes the directory offline. */
  readonly onOffline?: (cause: Error) => void
  /** Each completed flush's duration in ms (the node's flush latency metric). */
  readonly onFlushed?: (ms: number) => void
  /** Buffer for walking segment files. Default 1 MiB. */
  readonly readBufferBytes?: number
  /**
   * The recently written bytes kept in memory to answer reads near the end without a file read
   * (`write-tail.ts`): at most `tailBytesMax` for this log (default 1 MiB, 0: none), within
   * `tailBudget` shared with other logs (the log directory's, 32 MiB; default: the log's own).
   */
  readonly tailBytesMax?: number
  readonly tailBudget?: TailBudget
  /**
   * The node's buffer pool (`read-buffer-pool.ts`). Appended bytes in a buffer it lent (a produce
   * frame) are retained until written, and the write tail retains what it keeps; whoever lent them
   * may release its own hold as soon as `append` has returned.
   */
  readonly pool?: ReadBuffers
  /** Appends waiting to be written, in bytes, before `append` waits. Default 64 MiB. */
  readonly appendQueueBytesMax?: number
  /**
   * Queued bytes at which an append hands a write round to the disk itself, while another round
   * is in flight or just completed, instead of waiting for the end of the event-loop turn: the
   * write then overlaps the validation of the turn's later appends. Default 256 KiB.
   */
  readonly earlyRoundBytes?: number
  /** Write rounds in flight at once (positional writes to consecutive ranges). Default 3. */
  readonly writeRoundsInFlight?: number
  /**
   * A round of `flush` appends written while no fsync runs takes at most this many bytes, so that
   * its fsync starts while the rest of a burst is written. Default 512 KiB.
   */
  readonly flushRoundBytesFirst?: number
}

export interface AppendOptions {
  /**
   * `client` (default): a producer's batches, validated as Kafka's LogValidator does; offsets assigned.
   * `coordinator`: Weir's own writers (control and internal batches); offsets assigned.
   * `replication`: a follower copying the leader's batches; offsets kept, must follow the log end.
   */
  readonly origin?: 'client' | 'coordinator' | 'replication'
  /** Stamp this partitionLeaderEpoch on every batch (the leader's appends). */
  readonly leaderEpoch?: number
  /** Resolve only once the batches are durable (one group-commit fsync for many appends). */
  readonly flush?: boolean
}

export type AppendResult =
  | {
      readonly errorCode: 0
      /** First offset assigned; with no batches, the log end offset. */
      readonly baseOffset: bigint
      readonly lastOffset: bigint
      /** Largest batch maxTimestamp, ms (-1 when none). */
      readonly maxTimestampMs: number
      /** The broker's time under LogAppendTime, else -1. */
      readonly logAppendTimeMs: number
      readonly logStartOffset: bigint
      readonly recordCount: number
    }
  | { readonly errorCode: Exclude<ErrorCode, 0>; readonly errorMessage: string }

export interface ReadOptions {
  /** Exclusive bound: only batches whose last offset is below it (the high watermark). */
  readonly offsetMax?: bigint
  /** Return the first batch whole even when larger than `maxBytes` (default true, as Kafka). */
  readonly atLeastOneBatch?: boolean
  /**
   * Where file reads get their buffers (`read-buffer-pool.ts`); the caller then releases the
   * returned `records` to it once written. Default: a new buffer per read, left to the GC.
   */
  readonly buffers?: ReadBuffers
}

export type ReadResult =
  | {
      readonly errorCode: 0
      /** Whole batches as stored (a view of one read); empty when nothing is readable yet. */
      readonly records: Buffer
      readonly logStartOffset: bigint
      readonly logEndOffset: bigint
    }
  | {
      readonly errorCode: Exclude<ErrorCode, 0>
      readonly logStartOffset: bigint
      readonly logEndOffset: bigint
    }

/** The log failed on its disk and serves nothing more (Kafka's KAFKA_STORAGE_ERROR). */
export class LogOfflineError extends Error {
  override name = 'LogOfflineError'
  readonly errorCode = ErrorCode.KafkaStorageError
}

/** A replication append that does not start at or after the log end (the fetcher truncates). */
export class UnexpectedAppendOffsetError extends Error {
  override name = 'UnexpectedAppendOffsetError'
  readonly firstOffset: bigint
  readonly logEndOffset: bigint

  constructor(firstOffset: bigint, logEndOffset: bigint) {
    super(`append at offset ${firstOffset} is below the log end offset ${logEndOffset}`)
    this.firstOffset = firstOffset
    this.logEndOffset = logEndOffset
  }
}

const READ_BUFFER_BYTES_DEFAULT = 1024 * 1024
const APPEND_QUEUE_BYTES_MAX_DEFAULT = 64 * 1024 * 1024
/** One write round takes at most this many queued bytes (one writev). */
const WRITE_ROUND_BYTES_MAX = 1024 * 1024
/**
 * A round of appends waiting for an fsync, written while no fsync runs, takes at most this many
 * bytes: the fsync then starts after them while the rest of the burst is validated and written,
 * instead of after all of it (two cohorts whose CPU and writes overlap each other's fsync).
 */
const FLUSH_ROUND_BYTES_FIRST = WRITE_ROUND_BYTES_MAX / 2
/**
 * Write rounds in flight at once (positional writes to consecutive ranges): while one is written,
 * the next are assigned offsets and handed to the disk, and the appends it acknowledges come back.
 * Three, not two: a closed-loop window of 1 MiB splits into about four early rounds of 256 KiB, and
 * with two in flight the third waited in the queue, unissued, until the oldest completed, leaving
 * libuv's pool one write to work on at each completion. With three the pool always has the next
 * write queued (16 KiB x 64 in flight, 8 rounds interleaved at load 2-3: 2042 MB/s against 1710,
 * min 1872 against 1074; 64 x 1 KiB x 8: 1607 against 1398; src/storage/README.md, Benchmark).
 */
const WRITE_ROUNDS_IN_FLIGHT = 3
/**
 * `PartitionLogOptions.earlyRoundBytes` by default: a quarter round. Once the CRC got cheap (Weir's
 * addon), writing a burst's first 256 KiB while the rest is validated won clearly on the shared
 * 2-core VM (5 rounds interleaved against a full 1 MiB round, load 4-5: 16 KiB x 64 in flight 1899
 * against 446 MB/s, 64 x 1 KiB x 8 1944 against 977, group commit the same or better; a window of
 * 64 KiB never reaches it); with the CRC at three times the cost it had lost (src/storage/README.md,
 * Benchmark).
 */
const EARLY_ROUND_BYTES_DEFAULT = WRITE_ROUND_BYTES_MAX / 4
const EMPTY = Buffer.alloc(0)

const INT32_MAX = 0x7fffffff
const INT32_MAX_BIG = BigInt(INT32_MAX)

const NO_WRITE = Promise.resolve()

/**
 * The big-endian int32 at `buf[at]`, a validated batch's header field (so in bounds): byte stores,
 * where Buffer's writeInt32BE checks bounds and value again.
 */
function setInt32(buf: Buffer, at: number, value: number): void {
  buf[at] = value >>> 24
  buf[at + 1] = value >>> 16
  buf[at + 2] = value >>> 8
  buf[at + 3] = value
}

export class PartitionLog {
  readonly dir: string
  readonly #clock: Clock
  readonly #onFlushed: ((ms: number) => void) | undefined
  #config: LogConfig
  /** The segments on disk. */
  readonly #local: LocalLog
  readonly #validator: LogValidator
  readonly #hooks: LogHooks
  readonly #options: PartitionLogOptions
  /** Recently written bytes of the active segment (null: none kept). */
  readonly #tail: WriteTail | null
  /** The tail's bound as the log was opened with it (`setTailBytesMax` never goes above it). */
  readonly #tailBytesMaxOpened: number
  #logStartOffset = 0n
  /** Next offset to assign (includes appends being written). */
  #nextOffset = 0n
  /** Offset after the last batch written: what readers may see. */
  #logEndOffset = 0n
  #recoveryPoint = 0n
  #offline: Error | null = null
  /** The last `appendAbortedTxn`: reads of the index wait for it. */
  #abortedTxnWrites: Promise<void> = Promise.resolve()
  #closed = false
  #closing = false
  /** Reports from the recovery at open. */
  readonly recoveryReports: RecoveryReport[] = []

  // Serialization of structural changes (append rounds, truncation, deletion, swaps, close).
  #lockTail: Promise<unknown> = Promise.resolve()

  // Append queue and writer.
  #queue: PendingAppend[] = []
  #queuedBytes = 0
  /** The writer, from the append that found it idle until the queue is empty. */
  #writing: Promise<void> | null = null
  /** Write rounds handed to the disk, oldest first (at most WRITE_ROUNDS_IN_FLIGHT). */
  readonly #inFlight: InFlightRound[] = []
  /** Set while the writer waits for its one write in flight: an append wakes it to write beside. */
  #wake: (() => void) | null = null
  /**
   * Set while the writer holds the lock and waits (for a write, or for appends): an append may then
   * hand a round to the disk itself (`#issueEarly`), so that its write overlaps the appends still
   * being validated in the same turn.
   */
  #issueOpen = false
  /** Queued bytes at which an append issues a round itself while `#issueOpen`. */
  readonly #earlyRoundBytes: number
  /** Write rounds in flight at most (`writeRoundsInFlight`). */
  readonly #roundsInFlightMax: number
  /** `flushRoundBytesFirst`. */
  readonly #flushRoundBytesFirst: number
  /** Callers waiting for the lock: the writer lets them in between its rounds. */
  #lockWaiters = 0
  #spaceWaiters: (() => void)[] = []

  // Group commit.
  #flushRound: Promise<void> | null = null
  #flushNext: Promise<void> | null = null
  #messagesWritten = 0
  #messagesFlushed = 0
  #lastFlushMs: number
  #truncations = 0

  private constructor(dir: string, config: LogConfig, options: PartitionLogOptions) {
    this.dir = dir
    this.#clock = options.clock
    this.#onFlushed = options.onFlushed
    this.#config = config
    this.#hooks = options.hooks ?? {}
    this.#options = options
    const tailBytesMax = options.tailBytesMax ?? TAIL_BYTES_MAX_DEFAULT
    this.#tailBytesMaxOpened = tailBytesMax
    this.#tail =
      tailBytesMax > 0
        ? new WriteTail(options.tailBudget ?? new TailBudget(tailBytesMax), tailBytesMax, options.pool)
        : null
    this.#local = new LocalLog(dir, config, {
      disk: options.disk,
      clock: options.clock,
      readBufferBytes: options.readBufferBytes ?? READ_BUFFER_BYTES_DEFAULT,
      tail: this.#tail,
      beforeReap: () => this.#flushRound?.catch(() => undefined),
      warn: (message) => this.#warn(message),
    })
    this.#validator = new LogValidator(options.clock)
    this.#lastFlushMs = options.clock.nowMs()
    this.#earlyRoundBytes = options.earlyRoundBytes ?? EARLY_ROUND_BYTES_DEFAULT
    assert(this.#earlyRoundBytes > 0, 'earlyRoundBytes must be positive')
    this.#roundsInFlightMax = options.writeRoundsInFlight ?? WRITE_ROUNDS_IN_FLIGHT
    assert(this.#roundsInFlightMax >= 1, 'writeRoundsInFlight must be at least 1')
    this.#flushRoundBytesFirst = options.flushRoundBytesFirst ?? FLUSH_ROUND_BYTES_FIRST
  }

  /**
   * Open (or create) the log in `dir`: finish or undo interrupted deletions and cleanings, load the
   * segments, and unless `hadCleanShutdown`, scan every segment from the recovery point (lengths,
   * CRC), cut a torn or corrupt tail, and rebuild missing or damaged indexes.
   */
  static async open(dir: string, config: LogConfig, options: PartitionLogOptions): Promise<PartitionLog> {
    const log = new PartitionLog(dir, config, options)
    await log.#load()
    return log
  }

  get config(): LogConfig {
    return this.#config
  }

  /**
   * The bound of this log's write tail (bytes of memory; its directory's budget still applies), or
   * nothing where the log keeps none; never above the bound the log was opened with. The replica
   * manager gives logs without followers a small one.
   */
  setTailBytesMax(bytes: number): void {
    this.#tail?.setBytesMax(Math.min(bytes, this.#tailBytesMaxOpened))
  }

  /** The bound of this log's write tail, 0 where it keeps none. */
  get tailBytesMax(): number {
    return this.#tail?.bytesMax ?? 0
  }

  /** Apply a changed topic config (segment and retention settings apply from now on). */
  updateConfig(config: LogConfig): void {
    this.#config = config
    this.#local.config = config
  }

  /** First offset readable. */
  get logStartOffset(): bigint {
    return this.#logStartOffset
  }

  /** Offset after the last batch written (readable now). */
  get logEndOffset(): bigint {
    return this.#logEndOffset
  }

  /** Everything below this offset is durable (synced). */
  get recoveryPoint(): bigint {
    return this.#recoveryPoint
  }

  /** Bytes in all segments. */
  get sizeBytes(): number {
    return this.#local.segments.sizeBytes
  }

  /** The segments, oldest first (a snapshot: the array is never mutated). */
  get segments(): readonly LogSegment[] {
    return this.#local.segments.all
  }

  get activeSegment(): LogSegment {
    return this.#local.segments.active
  }

  /** Records appended but not yet flushed. */
  get unflushedMessages(): number {
    return this.#messagesWritten - this.#messagesFlushed
  }

  /** Wall time (ms) of the last completed flush. */
  get lastFlushMs(): number {
    return this.#lastFlushMs
  }

  /** Why the log went offline, or null. */
  get offlineCause(): Error | null {
    return this.#offline
  }

  get isClosed(): boolean {
    return this.#closed
  }

  #checkUsable(): void {
    if (this.#offline !== null)
      throw new LogOfflineError(`log ${this.dir} is offline: ${this.#offline.message}`, {
        cause: this.#offline,
      })
    if (this.#closed || this.#closing) throw new LogOfflineError(`log ${this.dir} is closed`)
  }

  /**
   * Takes the log offline from outside (its directory failed elsewhere): appends waiting and to come
   * fail with LogOfflineError; nothing more is written. Only a fresh `open` brings the data back.
   */
  markOffline(cause: Error): void {
    this.#fail(cause)
  }

  #fail(e: unknown): Error {
    const err = e instanceof Error ? e : new Error(String(e))
    const first = this.#offline === null
    if (first) this.#offline = err
    const queued = this.#queue
    this.#queue = []
    this.#queuedBytes = 0
    for (const p of queued) {
      p.release() // never issued
      p.reject(new LogOfflineError(`log ${this.dir} is offline: ${err.message}`, { cause: err }))
    }
    for (const w of this.#spaceWaiters.splice(0)) w()
    if (first) this.#options.onOffline?.(err)
    return err
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    this.#lockWaiters++
    const run = this.#lockTail.then(() => {
      this.#lockWaiters--
      return fn()
    })
    this.#lockTail = run.catch(() => undefined)
    return run
  }

  // ---------------------------------------------------------------- load and recovery

  async #load(): Promise<void> {
    const options = this.#options
    const onBatch = this.#hooks.onBatch
    const loaded = await new LogLoader(this.dir, {
      disk: options.disk,
      clock: this.#clock,
      settings: this.#local.settings,
      recoveryPoint: options.recoveryPoint,
      logStartOffset: options.logStartOffset,
      hadCleanShutdown: options.hadCleanShutdown,
      onBatch: onBatch === undefined ? undefined : (h, m) => this.#hooks.onBatch?.(h, 'recovery', m),
      warn: (message) => this.#warn(message),
    }).load()
    this.recoveryReports.push(...loaded.recoveryReports)
    const segments = this.#local.segments
    segments.reset(loaded.segments)
    const end = segments.active.nextOffset!
    this.#nextOffset = this.#logEndOffset = end
    this.#recoveryPoint = end
    const lso = options.logStartOffset ?? 0n
    const first = segments.first.baseOffset
    this.#logStartOffset = lso > first ? lso : first
    if (this.#logStartOffset > end) {
      // The checkpointed start is past everything that survived: start afresh there (Kafka does).
      this.#warn(`log ${this.dir}: log start offset ${this.#logStartOffset} is past the recovered end ${end}`)
      await this.#truncateFully(this.#logStartOffset)
    }
    this.#assertOffsets()
  }

  /**
   * Records an aborted transaction in the `.txnindex` of the segment holding its marker
   * (`txn.lastOffset`), durably, as Kafka's `UnifiedLog.updateProducers` does; an entry the index
   * has already (a replay at load) is skipped (`LogSegment.appendAbortedTxn`). Not under the log's
   * lock: the hooks that call it run inside it, and a roll waits for them. Starts the write before
   * it returns (so a read_committed read after the call waits for it); an unusable log rejects.
   */
  async appendAbortedTxn(txn: AbortedTxn): Promise<void> {
    this.#checkUsable()
    const segments = this.#local.segments
    const at = segments.floorIndex(txn.lastOffset)
    if (at < 0 || txn.lastOffset < this.#logStartOffset) return
    const run = segments.all[at]!.appendAbortedTxn(txn)
    this.#abortedTxnWrites = run.catch(() => undefined)
    await run
  }

  /**
   * The aborted transactions a read of `[fetchOffset, upperBoundOffset)` must report to a
   * read_committed consumer (Kafka's `collectAbortedTransactions`): from the segment holding
   * `fetchOffset` on, until an entry's last stable offset reaches the bound (or the last segment).
   */
  async collectAbortedTxns(fetchOffset: bigint, upperBoundOffset: bigint): Promise<AbortedTxn[]> {
    await this.#abortedTxnWrites
    const segments = this.#local.segments.all
    const out: AbortedTxn[] = []
    // No stop at a segment past the bound: an aborted transaction that began inside the read is
    // indexed in the segment of its marker, which may start after the records read end.
    for (let i = Math.max(0, this.#local.segments.floorIndex(fetchOffset)); i < segments.length; i++) {
      const s = segments[i]!
      const found = (await s.transactionIndex()).collectAbortedTxns(fetchOffset, upperBoundOffset)
      out.push(...found.abortedTransactions)
      if (found.isComplete) break
    }
    // The index holds transactions in the order they completed; a consumer walks the list beside
    // the records and kafkajs only ever looks at its head, so interleaved transactions are given
    // in the order they began (Java and librdkafka sort them themselves, so this costs them nothing).
    return out.sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0))
  }

  /**
   * Call `fn` with the header of every batch from the one holding `fromOffset` to the end: how
   * leader-epoch and producer state rebuild past their own snapshots.
   */
  scanBatchHeaders(
    fromOffset: bigint,
    fn: (header: BatchHeader, marker: EndTxnMarker | null) => void,
    segments: readonly LogSegment[] = this.#local.segments.all,
  ): Promise<void> {
    return scanBatchHeaders(segments, fromOffset, fn, this.#local.settings.readBufferBytes)
  }

  /**
   * What holds whenever no roll is half done: the log start and the recovery point at or below the
   * log end, the next offset at or past it. (A follower's batch past the log end that rolls moves
   * the first two to its offset before the round completes and moves the log end past it.)
   */
  #assertOffsets(): void {
    assert(this.#logStartOffset <= this.#logEndOffset, 'logStartOffset <= logEndOffset')
    assert(this.#recoveryPoint <= this.#logEndOffset, 'recoveryPoint <= logEndOffset')
    assert(this.#logEndOffset <= this.#nextOffset, 'logEndOffset <= nextOffset')
  }

  #warn(message: string): void {
    this.#options.onWarning?.(message)
  }

  // ---------------------------------------------------------------- append

  /**
   * Append record batches given as bytes (a produce request's records). Takes ownership of `batches`:
   * base offsets (and partitionLeaderEpoch, and timestamps under LogAppendTime) are rewritten in
   * place. Validates headers and CRCs; does not decode records, except to refuse null keys in a
   * compacted log. Resolves once the bytes are written (readable), or durable with `flush`.
   * Refusals are values (`errorCode`); a disk failure throws LogOfflineError.
   *
   * Appends made in the same event-loop turn, or while a write is under way, are written together
   * (one vectored write), and `flush` appends share fsyncs (group commit).
   *
   * ```ts
   * const r = await log.append(produceRecords, { leaderEpoch: 3, flush: config.flushOnAck })
   * if (r.errorCode === ErrorCode.None) respond(r.baseOffset)
   * ```
   */
  append(batches: Buffer, options: AppendOptions = {}): Promise<AppendResult> {
    let refused: AppendResult | null
    const validator = this.#validator
    try {
      this.#checkUsable()
      refused = validator.validate(batches, options.origin ?? 'client', this.#config)
    } catch (e) {
      return Promise.reject(e)
    }
    if (refused !== null) return Promise.resolve(refused)
    const scan = validator.scan
    const logAppendTimeMs = validator.logAppendTimeMs
    if (scan.batches === 0) {
      return Promise.resolve({
        errorCode: 0,
        baseOffset: this.#nextOffset,
        lastOffset: this.#nextOffset - 1n,
        maxTimestampMs: -1,
        logAppendTimeMs,
        logStartOffset: this.#logStartOffset,
        recordCount: 0,
      })
    }
    const appendQueueBytesMax = this.#options.appendQueueBytesMax ?? APPEND_QUEUE_BYTES_MAX_DEFAULT
    if (this.#queuedBytes > 0 && this.#queuedBytes + batches.length > appendQueueBytesMax) {
      return this.#appendWhenRoom(batches, options, { ...scan }, logAppendTimeMs)
    }
    return new Promise<AppendResult>((resolve, reject) => {
      this.#enqueue(
        new PendingAppend(batches, scan, options, logAppendTimeMs, resolve, reject, this.#options.pool),
      )
    })
  }

  /** The slow path of `append`: wait for room in the append queue (`appendQueueBytesMax`). */
  async #appendWhenRoom(
    batches: Buffer,
    options: AppendOptions,
    scan: AppendScan,
    logAppendTimeMs: number,
  ): Promise<AppendResult> {
    const appendQueueBytesMax = this.#options.appendQueueBytesMax ?? APPEND_QUEUE_BYTES_MAX_DEFAULT
    while (this.#queuedBytes > 0 && this.#queuedBytes + batches.length > appendQueueBytesMax) {
      await new Promise<void>((resolve) => this.#spaceWaiters.push(resolve))
      this.#checkUsable()
    }
    return new Promise<AppendResult>((resolve, reject) => {
      this.#enqueue(
        new PendingAppend(batches, scan, options, logAppendTimeMs, resolve, reject, this.#options.pool),
      )
    })
  }

  #enqueue(p: PendingAppend): void {
    this.#queue.push(p)
    this.#queuedBytes += p.buf.length
    if (this.#writing === null) {
      this.#writing = this.#drain()
      return
    }
    if (
      this.#issueOpen &&
      this.#queuedBytes >= this.#earlyRoundBytes &&
      this.#inFlight.length < this.#roundsInFlightMax &&
      this.#lockWaiters === 0 &&
      this.#offline === null
    ) {
      this.#issueEarly()
    }
    if (this.#wake !== null) this.#wake()
  }

  /**
   * Hand the queue's next round to the disk now, from inside an append, while the writer holds the
   * lock and waits (`#issueOpen`). Only a round that needs no roll (a roll awaits): else it stays
   * queued for the writer.
   */
  #issueEarly(): void {
    const round = this.#takeRound()
    if (!this.#fitsActiveSegment(round)) {
      let bytes = 0
      for (const p of round) bytes += p.buf.length
      this.#queue = round.concat(this.#queue)
      this.#queuedBytes += bytes
      this.#issueOpen = false // not again before the writer has run (and rolled)
      return
    }
    if (this.#spaceWaiters.length > 0) for (const w of this.#spaceWaiters.splice(0)) w()
    try {
      this.#issueInActiveSegment(round)
    } catch (e) {
      const err = this.#fail(e)
      // No write of the round is under way: issueWrite, whose write is its last step, is the last
      // call here that can throw.
      releaseAll(round)
      for (const p of round)
        p.reject(new LogOfflineError(`log ${this.dir} is offline: ${err.message}`, { cause: err }))
    }
  }

  /**
   * The writer: takes queued appends in rounds of at most WRITE_ROUND_BYTES_MAX, each written with
   * one vectored write per segment. It starts a microtask after the append that found it idle, so
   * that the appends of the rest of that turn join the first round. Up to WRITE_ROUNDS_IN_FLIGHT
   * rounds are written at once, to consecutive ranges; they complete (become readable, resolve or
   * go to a flush) in order. It holds the log's lock while rounds are in flight and lets other
   * holders in between them.
   */
  async #drain(): Promise<void> {
    try {
      await null
      while (this.#queue.length > 0 && this.#offline === null) await this.#exclusive(() => this.#pipeline())
    } finally {
      this.#writing = null
    }
  }

  /** Write rounds until the queue is empty (or the lock is wanted) and nothing is in flight. Inside the lock. */
  async #pipeline(): Promise<void> {
    const inFlight = this.#inFlight
    let taken: PendingAppend[] | null = null
    try {
      for (;;) {
        while (
          inFlight.length < this.#roundsInFlightMax &&
          this.#queue.length > 0 &&
          this.#offline === null &&
          this.#lockWaiters === 0
        ) {
          taken = this.#takeRound()
          if (this.#spaceWaiters.length > 0) for (const w of this.#spaceWaiters.splice(0)) w()
          if (this.#fitsActiveSegment(taken)) this.#issueInActiveSegment(taken)
          else await this.#issueRound(taken)
          taken = null
        }
        const oldest = inFlight[0]
        if (oldest === undefined) return
        if (!oldest.done && inFlight.length < this.#roundsInFlightMax && this.#lockWaiters === 0) {
          // Wait for the write, or for appends to write beside it.
          this.#issueOpen = true
          await new Promise<void>((resolve) => {
            this.#wake = resolve
            oldest.write.then(resolve, resolve)
          })
          this.#issueOpen = false
          this.#wake = null
          continue
        }
        // The appends this completion resolves come back (validated, queued) while it is awaited.
        this.#issueOpen = true
        await this.#completeOldest()
        this.#issueOpen = false
      }
    } catch (e) {
      this.#issueOpen = false
      this.#wake = null
      const err = this.#fail(e)
      const failed = inFlight.splice(0)
      const offline = () => new LogOfflineError(`log ${this.dir} is offline: ${err.message}`, { cause: err })
      // A failed round fails every round after it: their bytes follow a hole.
      for (const f of failed) for (const p of f.round) p.reject(offline())
      if (taken !== null) for (const p of taken) p.reject(offline())
      await Promise.allSettled(failed.map((f) => f.write))
      // Only now: the pool must not lend memory that a write still reads.
      for (const f of failed) releaseAll(f.round)
      if (taken !== null) releaseAll(taken)
    }
  }

  /** Wait for the oldest round's write, then make it readable and resolve (or flush) its appends. */
  async #completeOldest(): Promise<void> {
    const f = this.#inFlight[0]!
    await f.write // a failure stays in #inFlight: the pipeline fails it and those after it
    this.#inFlight.shift()
    releaseAll(f.round) // written: what the tail keeps of them it retained itself
    f.segment.completeWrite(f.endPosition)
    const indexWrite = f.segment.entriesWritten(f.offsetEntries, f.timeEntries)
    if (indexWrite !== null) indexWrite.catch((e: unknown) => this.#fail(e))
    assert(f.endOffset >= this.#logEndOffset, 'the log end offset only increases')
    this.#logEndOffset = f.endOffset
    this.#assertOffsets()
    this.#messagesWritten += f.records
    const round = f.round
    let needFlush = this.#messagesWritten - this.#messagesFlushed >= this.#config.flushMessages
    for (let i = 0; i < round.length && !needFlush; i++) needFlush = round[i]!.flush
    if (needFlush) {
      // The round resolves when a flush covering it completes; meanwhile the next round is
      // written, so the following fsync covers it too (group commit with pipelining).
      this.flush().then(
        () => settle(round),
        (e: unknown) => {
          for (const p of round) p.reject(e)
        },
      )
    } else {
      settle(round)
    }
  }

  /**
   * The next round: the whole queue up to WRITE_ROUND_BYTES_MAX. A queue found with no write in
   * flight is not split to make two cohorts: measured on the shared 2-core VM, halving the writes
   * (and fsyncs) cost more than the overlap won (src/storage/README.md, Benchmark).
   */
  #takeRound(): PendingAppend[] {
    const queue = this.#queue
    const max =
      this.#flushRound === null && queue[0]!.flush ? this.#flushRoundBytesFirst : WRITE_ROUND_BYTES_MAX
    if (this.#queuedBytes <= max) {
      this.#queue = []
      this.#queuedBytes = 0
      return queue
    }
    let bytes = queue[0]!.buf.length
    let n = 1
    while (n < queue.length && bytes + queue[n]!.buf.length <= max) {
      bytes += queue[n]!.buf.length
      n++
    }
    this.#queuedBytes -= bytes
    return queue.splice(0, n)
  }

  /**
   * Whether `round` goes whole into the active segment, with no batch that would roll it (by size,
   * index room, offset range or segment.ms): sufficient conditions, judged per append from what
   * validation found. A round that fails them takes `#issueRound`'s path, which rolls.
   */
  #fitsActiveSegment(round: readonly PendingAppend[]): boolean {
    const segment = this.activeSegment
    if (segment.size === 0) return false // the first batch sets the rolling timestamp
    const config = this.#config
    let bytes = 0
    let batches = 0
    let offsets = 0
    let maxTimestampMs = -1
    for (const p of round) {
      if (!p.assignOffsets) return false
      bytes += p.buf.length
      batches += p.batchCount
      offsets += p.offsetCount
      if (p.maxTimestampMs > maxTimestampMs) maxTimestampMs = p.maxTimestampMs
    }
    if (segment.size + bytes > config.segmentBytes) return false
    if (!segment.hasIndexRoomFor(batches)) return false
    if (Number(this.#nextOffset - segment.baseOffset) + offsets - 1 > INT32_MAX) return false
    // Read once per round (also what CreateTime bounds are judged against until the next).
    const nowMs = this.#validator.readClock()
    const rolling = segment.rollingBasedTimestampMs
    const waitedMs = rolling !== null && rolling >= 0 ? maxTimestampMs - rolling : nowMs - segment.createdMs
    return waitedMs <= config.segmentMs
  }

  /**
   * `#issueRound` for a round that `#fitsActiveSegment`: synchronous (no roll to await). Assigns
   * offsets, registers the batches, hands the bytes to the disk as one write and adds the round to
   * #inFlight.
   */
  #issueInActiveSegment(round: PendingAppend[]): void {
    const onBatch = this.#hooks.onBatch
    const segment = this.activeSegment
    const base = segment.baseOffset
    const buffers: Buffer[] = new Array(round.length)
    let bytes = 0
    let records = 0
    /** The next offset as a number relative to the base (for the segment) and as a BigInt. */
    let next = Number(this.#nextOffset - base)
    let nextOffset = this.#nextOffset
    for (let j = 0; j < round.length; j++) {
      const p = round[j]!
      const buf = p.buf
      const stamped = p.logAppendTimeMs
      if (p.batchCount === 1) {
        // One batch, filling the buffer (the common produce): what the scan read stands.
        segment.writeOffset(buf, 0, next)
        if (p.leaderEpoch !== undefined) setInt32(buf, BatchOffsets.partitionLeaderEpoch, p.leaderEpoch)
        next += p.offsetCount
        segment.registerAppend(buf.length, next - 1, p.maxTimestampMs)
        if (onBatch !== undefined) onAppended(onBatch, buf, 0, nextOffset)
      } else {
        for (let i = 0, at = 0; i < p.batchCount; i++) {
          const size = batchSize(buf, at)
          const lastOffsetDelta = buf.readInt32BE(at + BatchOffsets.lastOffsetDelta)
          const batchMsMax = stamped >= 0 ? stamped : readInt64AsNumber(buf, at + BatchOffsets.maxTimestamp)
          segment.writeOffset(buf, at, next)
          if (p.leaderEpoch !== undefined)
            buf.writeInt32BE(p.leaderEpoch, at + BatchOffsets.partitionLeaderEpoch)
          next += lastOffsetDelta
          segment.registerAppend(size, next, batchMsMax)
          next++
          if (onBatch !== undefined) onAppended(onBatch, buf, at)
          at += size
        }
      }
      buffers[j] = buf
      bytes += buf.length
      records += p.recordCount
      const baseOffset = nextOffset
      const lastOffset = p.offsetCount === 1 ? baseOffset : baseOffset + BigInt(p.offsetCount - 1)
      nextOffset = lastOffset + 1n
      p.result = {
        errorCode: 0,
        baseOffset,
        lastOffset,
        maxTimestampMs: p.maxTimestampMs,
        logAppendTimeMs: stamped,
        logStartOffset: this.#logStartOffset,
        recordCount: p.recordCount,
      }
    }
    // The offsets written into the batches (counted from the segment's base) are those reported:
    // each append's base offset was the next offset.
    assert(base + BigInt(next) === nextOffset, 'written offsets match the assigned ones')
    this.#nextOffset = nextOffset
    this.#addInFlight(round, segment, segment.issueWrite(buffers, bytes), records)
  }

  #addInFlight(
    round: readonly PendingAppend[],
    segment: LogSegment,
    write: Promise<void>,
    records: number,
  ): void {
    const previous = this.#inFlight[this.#inFlight.length - 1]
    assert(
      this.#nextOffset >= (previous === undefined ? this.#logEndOffset : previous.endOffset),
      'the next offset only increases',
    )
    const f: InFlightRound = {
      round,
      segment,
      write,
      endPosition: segment.issuedSize,
      endOffset: this.#nextOffset,
      records,
      offsetEntries: segment.offsetIndexEntries,
      timeEntries: segment.timeIndexEntries,
      done: false,
    }
    const done = () => {
      f.done = true
    }
    write.then(done, done)
    this.#inFlight.push(f)
  }

  /**
   * Assign offsets, roll as needed, register one round of appends and hand its bytes to the disk
   * (adding it to #inFlight). Inside the lock. A roll first completes the rounds in flight (the old
   * segment is sealed whole). Offsets are counted relative to the active segment as numbers (a
   * segment spans at most 2^31 offsets); BigInts are made once per append, for its result.
   */
  async #issueRound(round: PendingAppend[]): Promise<void> {
    const nowMs = this.#validator.readClock()
    const onBatch = this.#hooks.onBatch
    let segment = this.activeSegment
    let buffers: Buffer[] = []
    let bytes = 0
    let records = 0
    let next = Number(this.#nextOffset - segment.baseOffset)
    for (const p of round) {
      const buf = p.buf
      const assign = p.assignOffsets
      if (!assign) {
        const firstOffset = buf.readBigInt64BE(0)
        const nextOffset = segment.baseOffset + BigInt(next)
        if (firstOffset < nextOffset) {
          p.error = new UnexpectedAppendOffsetError(firstOffset, nextOffset)
          continue
        }
      }
      let baseOffset = -1n
      let maxTimestampMs = -1
      let sliceStart = 0
      let at = 0
      for (let i = 0; i < p.batchCount; i++) {
        const size = batchSize(buf, at)
        const lastOffsetDelta = buf.readInt32BE(at + BatchOffsets.lastOffsetDelta)
        const batchMsMax =
          p.logAppendTimeMs >= 0 ? p.logAppendTimeMs : readInt64AsNumber(buf, at + BatchOffsets.maxTimestamp)
        // A replicated batch keeps its offset, which may be far past the segment's range.
        const firstOffset = assign ? null : buf.readBigInt64BE(at)
        let first = firstOffset === null ? next : relativeOrOutside(firstOffset, segment.baseOffset)
        if (this.#shouldRoll(segment, size, first + lastOffsetDelta, batchMsMax, nowMs)) {
          if (at > sliceStart) buffers.push(buf.subarray(sliceStart, at))
          sliceStart = at
          while (this.#inFlight.length > 0) await this.#completeOldest()
          await segment.write(buffers)
          buffers = []
          bytes = 0
          const written = segment.baseOffset + BigInt(next)
          assert(written >= this.#logEndOffset, 'the log end offset only increases')
          this.#nextOffset = this.#logEndOffset = written
          segment = await this.#roll(firstOffset ?? this.#nextOffset, nowMs)
          first = 0
        }
        if (assign) segment.writeOffset(buf, at, first)
        if (p.leaderEpoch !== undefined)
          buf.writeInt32BE(p.leaderEpoch, at + BatchOffsets.partitionLeaderEpoch)
        const last = first + lastOffsetDelta
        segment.registerAppend(size, last, batchMsMax)
        if (batchMsMax > maxTimestampMs) maxTimestampMs = batchMsMax
        if (i === 0) baseOffset = firstOffset ?? segment.baseOffset + BigInt(first)
        next = last + 1
        if (onBatch !== undefined) onAppended(onBatch, buf, at)
        at += size
      }
      const tail = sliceStart === 0 ? buf : buf.subarray(sliceStart)
      buffers.push(tail)
      bytes += tail.length
      records += p.recordCount
      p.result = {
        errorCode: 0,
        baseOffset,
        lastOffset: segment.baseOffset + BigInt(next - 1),
        maxTimestampMs,
        logAppendTimeMs: p.logAppendTimeMs,
        logStartOffset: this.#logStartOffset,
        recordCount: p.recordCount,
      }
    }
    this.#nextOffset = segment.baseOffset + BigInt(next)
    this.#addInFlight(round, segment, bytes === 0 ? NO_WRITE : segment.issueWrite(buffers, bytes), records)
  }

  /** Whether a batch of `batchBytes` whose last offset is `lastRelative` past the base must roll first. */
  #shouldRoll(
    segment: LogSegment,
    batchBytes: number,
    lastRelative: number,
    batchMsMax: number,
    nowMs: number,
  ): boolean {
    const config = this.#config
    if (segment.size > 0 && segment.size + batchBytes > config.segmentBytes) return true
    if (segment.indexFull) return true
    if (lastRelative > INT32_MAX) return true
    if (segment.size > 0) {
      // Kafka's timeWaitedForRoll: by record time when the first batch had one, else by wall time.
      const rolling = segment.rollingBasedTimestampMs
      const waitedMs = rolling !== null && rolling >= 0 ? batchMsMax - rolling : nowMs - segment.createdMs
      if (waitedMs > config.segmentMs) return true
    }
    return false
  }

  /**
   * Close the active segment and start one at `baseOffset` (`LocalLog.roll`: the old segment is
   * synced with its indexes before the new file exists).
   */
  #roll(baseOffset: bigint, nowMs: number): Promise<LogSegment> {
    return this.#local.roll(baseOffset, nowMs, () => this.#afterRoll(baseOffset))
  }

  /** The log's side of a roll to `baseOffset`; `LocalLog.roll` awaits what it returns before it resolves. */
  #afterRoll(baseOffset: bigint): Promise<void> | undefined {
    if (this.#local.segments.length === 1 && this.#logStartOffset < baseOffset) {
      // The only segment was empty and replaced: the log now starts at the new one.
      this.#logStartOffset = baseOffset
      this.#hooks.onLogStartOffset?.(baseOffset)
    }
    // Every earlier segment is synced (each roll seals the one before): all below is durable.
    if (baseOffset > this.#recoveryPoint) this.#recoveryPoint = baseOffset
    return this.#hooks.onRoll?.(baseOffset)
  }

  // ---------------------------------------------------------------- flush

  /**
   * Make everything written so far durable: fsync the segments with unsynced bytes (and the
   * directory after a roll). Concurrent callers share fsyncs: a call made while one is running
   * waits for the next, which then covers every caller that arrived meanwhile (group commit).
   */
  flush(): Promise<void> {
    if (this.#offline !== null)
      return Promise.reject(new LogOfflineError(`log ${this.dir} is offline`, { cause: this.#offline }))
    if (this.#flushRound === null) return this.#startFlushRound()
    this.#flushNext ??= this.#flushRound.then(
      () => {
        this.#flushNext = null
        return this.flush()
      },
      () => {
        this.#flushNext = null
        return this.flush()
      },
    )
    return this.#flushNext
  }

  #startFlushRound(): Promise<void> {
    const round = this.#syncAll()
    this.#flushRound = round
    const clear = () => {
      if (this.#flushRound === round) this.#flushRound = null
    }
    round.then(clear, clear)
    return round
  }

  async #syncAll(): Promise<void> {
    const startMs = this.#clock.monotonicMs()
    const upTo = this.#logEndOffset
    const messages = this.#messagesWritten
    const truncations = this.#truncations
    const local = this.#local
    try {
      // The index entries of what is written go to the active segment's files too, unsynced (a
      // crash recovers that segment from its log): after a process crash they are there.
      // (No segment at all while a truncation replaces them all.) Inline, not a LocalLog method:
      // an await of one more async function would delay every group commit by a few microtasks.
      const indexWrite = local.segments.all.at(-1)?.writeIndexEntries() ?? null
      for (const s of local.segments.all) if (s.unsynced) await s.sync()
      if (local.dirDirty) {
        local.dirDirty = false
        await local.syncDir()
      }
      await indexWrite
    } catch (e) {
      throw this.#fail(e)
    }
    if (truncations === this.#truncations && upTo > this.#recoveryPoint) this.#recoveryPoint = upTo
    if (messages > this.#messagesFlushed) this.#messagesFlushed = messages
    this.#lastFlushMs = this.#clock.nowMs()
    this.#onFlushed?.(this.#clock.monotonicMs() - startMs)
  }

  /** Flush if `flush.ms` has passed since the last flush (the manager's flush scheduler). */
  async flushIfDue(nowMs: number): Promise<boolean> {
    if (this.#offline !== null || this.#closed) return false
    if (nowMs - this.#lastFlushMs < this.#config.flushMs) return false
    if (this.#recoveryPoint >= this.#logEndOffset && !this.#local.dirDirty) return false
    await this.flush()
    return true
  }

  // ---------------------------------------------------------------- read

  /**
   * Read whole batches from the one containing `offset`, up to `maxBytes` (the first batch whole
   * even when larger, unless `atLeastOneBatch: false`), below `offsetMax`. An offset outside
   * [logStartOffset, logEndOffset] is OFFSET_OUT_OF_RANGE.
   */
  async read(offset: bigint, maxBytes: number, options: ReadOptions = {}): Promise<ReadResult> {
    this.#checkUsable()
    const logStartOffset = this.#logStartOffset
    const logEndOffset = this.#logEndOffset
    if (offset < logStartOffset || offset > logEndOffset) {
      return { errorCode: ErrorCode.OffsetOutOfRange, logStartOffset, logEndOffset }
    }
    const offsetMax =
      options.offsetMax !== undefined && options.offsetMax < logEndOffset ? options.offsetMax : logEndOffset
    const ok = (records: Buffer): ReadResult => ({ errorCode: 0, records, logStartOffset, logEndOffset })
    if (offset >= offsetMax) return ok(EMPTY)
    // The segments walked here, not in LocalLog: a fetch then awaits no async function more.
    const segments = this.#local.segments
    const all = segments.all
    const atLeastOneBatch = options.atLeastOneBatch !== false
    for (let i = Math.max(0, segments.floorIndex(offset)); i < all.length; i++) {
      const segment = all[i]!
      if (segment.baseOffset >= offsetMax) break
      let bytes: Buffer | null
      try {
        bytes = await segment.read(offset, maxBytes, offsetMax, atLeastOneBatch, options.buffers)
      } catch (e) {
        // A segment deleted by retention while we read: the offset is now below the log start.
        if (this.#offline === null && !this.#local.segments.includes(segment)) {
          return { errorCode: ErrorCode.OffsetOutOfRange, logStartOffset: this.#logStartOffset, logEndOffset }
        }
        throw this.#fail(e)
      }
      if (bytes !== null) return ok(bytes)
    }
    return ok(EMPTY)
  }

  /**
   * ListOffsets: the first offset whose record timestamp is >= `timestampMs`, or the special
   * values (-1 latest, -2 earliest, -3 max timestamp, -4 earliest local). Null when no record is
   * that late. `leaderEpoch` is the batch's partitionLeaderEpoch (-1 for latest/earliest).
   */
  async offsetForTimestamp(timestampMs: number): Promise<FoundTimestamp | null> {
    this.#checkUsable()
    const end = this.#logEndOffset
    if (timestampMs === ListOffsetsTimestamp.latest) return { offset: end, timestampMs: -1, leaderEpoch: -1 }
    if (timestampMs === ListOffsetsTimestamp.earliest || timestampMs === ListOffsetsTimestamp.earliestLocal) {
      return { offset: this.#logStartOffset, timestampMs: -1, leaderEpoch: -1 }
    }
    const segments = this.#local.segments.all
    if (timestampMs === ListOffsetsTimestamp.maxTimestamp) {
      let best: LogSegment | null = null
      for (const s of segments) if (best === null || s.maxTimestampMs > best.maxTimestampMs) best = s
      if (best === null || best.maxTimestampMs < 0) return null
      const found = await best.findOffsetByTimestamp(best.maxTimestampMs, this.#logStartOffset)
      return found !== null && found.offset < end ? found : null
    }
    if (timestampMs < 0) return null
    for (const s of segments) {
      if (s.maxTimestampMs < timestampMs) continue
      if (s.nextOffset !== null && s.nextOffset <= this.#logStartOffset) continue
      const found = await s.findOffsetByTimestamp(timestampMs, this.#logStartOffset)
      if (found !== null) return found.offset < end ? found : null
    }
    return null
  }

  // ---------------------------------------------------------------- truncation

  /**
   * Remove every batch from the one holding `offset` on (a follower diverged from its leader). The
   * cut is synced before this resolves. No-op when `offset >= logEndOffset`.
   */
  async truncateTo(offset: bigint): Promise<void> {
    this.#checkUsable()
    await this.#idle()
    await this.#exclusive(async () => {
      if (offset >= this.#nextOffset) return
      await this.#flushRound?.catch(() => undefined)
      try {
        if (offset <= this.#local.segments.first.baseOffset) {
          await this.#truncateFully(offset)
          return
        }
        this.#truncations++
        const end = await this.#local.truncateTo(offset)
        this.#nextOffset = this.#logEndOffset = end
        if (this.#logStartOffset > end) this.#logStartOffset = end
        if (this.#recoveryPoint > end) this.#recoveryPoint = end
        this.#assertOffsets()
        this.#hooks.onTruncateTo?.(end)
      } catch (e) {
        throw this.#fail(e)
      }
      await this.#options.onRecoveryPointLowered?.()
    })
  }

  /** Delete everything and restart the log at `offset` (a follower far behind or ahead). */
  async truncateFullyAndStartAt(offset: bigint): Promise<void> {
    this.#checkUsable()
    await this.#idle()
    await this.#exclusive(async () => {
      await this.#flushRound?.catch(() => undefined)
      try {
        await this.#truncateFully(offset)
      } catch (e) {
        throw this.#fail(e)
      }
      await this.#options.onRecoveryPointLowered?.()
    })
  }

  async #truncateFully(offset: bigint): Promise<void> {
    this.#truncations++
    await this.#local.truncateFully(offset)
    this.#nextOffset = this.#logEndOffset = offset
    this.#logStartOffset = offset
    this.#recoveryPoint = offset
    this.#hooks.onTruncateFully?.(offset)
  }

  /** Wait until no append is queued or being written. */
  async #idle(): Promise<void> {
    while (this.#writing !== null) await this.#writing
  }

  // ---------------------------------------------------------------- retention

  /**
   * DeleteRecords: move the log start offset forward to `offset` (at most the log end) and delete
   * the segments wholly below it. Returns the new low watermark.
   */
  async deleteRecordsBefore(
    offset: bigint,
  ): Promise<{ errorCode: 0 | typeof ErrorCode.OffsetOutOfRange; lowWatermark: bigint }> {
    this.#checkUsable()
    if (offset > this.#logEndOffset || offset < 0n) {
      return { errorCode: ErrorCode.OffsetOutOfRange, lowWatermark: this.#logStartOffset }
    }
    if (offset > this.#logStartOffset) {
      this.#logStartOffset = offset
      this.#hooks.onLogStartOffset?.(offset)
    }
    await this.deleteOldSegments()
    return { errorCode: 0, lowWatermark: this.#logStartOffset }
  }

  /**
   * Retention: delete closed segments (never the active one) that are wholly below the log start
   * offset, and under `cleanup.policy=delete` those whose largest timestamp is older than
   * `retention.ms` or that put the log over `retention.bytes` (oldest first). Returns how many.
   */
  async deleteOldSegments(nowMs: number = this.#clock.nowMs()): Promise<number> {
    this.#checkUsable()
    return this.#exclusive(async () => {
      const segments = this.#local.segments
      const count = segmentsToDelete(segments.all, this.#config, this.#logStartOffset, nowMs)
      if (count === 0) return 0
      const doomed = segments.removeOldest(count)
      const newStart = segments.first.baseOffset
      if (newStart > this.#logStartOffset) {
        this.#logStartOffset = newStart
        this.#hooks.onLogStartOffset?.(newStart)
      }
      this.#assertOffsets()
      try {
        await this.#local.retire(doomed)
      } catch (e) {
        throw this.#fail(e)
      }
      return count
    })
  }

  // ---------------------------------------------------------------- cleaner support

  /**
   * Replace `old` (contiguous closed segments) with `cleaned` (written with suffix `.cleaned`, its
   * files synced): rename to `.swap`, retire the old ones, rename to live names (Kafka's order, so
   * recovery can finish an interrupted swap). Returns false, deleting `cleaned`, when the log
   * changed meanwhile (retention, truncation).
   */
  async replaceSegments(old: readonly LogSegment[], cleaned: LogSegment): Promise<boolean> {
    this.#checkUsable()
    return this.#exclusive(async () => {
      const at = this.#local.segments.indexOfClosedRun(old)
      if (at < 0) {
        await cleaned.deleteFiles()
        return false
      }
      try {
        await this.#local.swapIn(at, old, cleaned)
      } catch (e) {
        throw this.#fail(e)
      }
      return true
    })
  }

  /** Create a segment file for the cleaner (suffix `.cleaned`). */
  createCleanedSegment(baseOffset: bigint): Promise<LogSegment> {
    return this.#local.createSegment(baseOffset, this.#clock.nowMs(), SegmentFile.cleaned)
  }

  // ---------------------------------------------------------------- close

  /**
   * Write what is queued, flush, write the active segment's indexes and close every file. Returns
   * whether the log closed cleanly (so the manager may write the clean-shutdown marker).
   */
  async close(): Promise<boolean> {
    if (this.#closed) return this.#offline === null
    this.#closing = true
    await this.#idle()
    const clean = await this.#exclusive(async () => {
      this.#local.cancelDeletes()
      let ok = this.#offline === null
      if (ok) {
        try {
          await this.flush()
          await this.#local.sealActive()
        } catch (e) {
          this.#fail(e)
          ok = false
        }
      }
      await this.#local.closeFiles()
      return ok
    })
    this.#closed = true
    return clean
  }
}

/** `offset - base` when it can be a segment's relative offset, else a number past INT32_MAX. */
function relativeOrOutside(offset: bigint, base: bigint): number {
  const rel = offset - base
  return rel <= INT32_MAX_BIG ? Number(rel) : INT32_MAX + 1
}

/**
 * How many of the oldest closed segments (never the active one) retention deletes: those wholly
 * below the log start offset, and under `cleanup.policy=delete` those whose largest timestamp is
 * older than `retention.ms` or that put the log over `retention.bytes`.
 */
function segmentsToDelete(
  segments: readonly LogSegment[],
  config: LogConfig,
  logStartOffset: bigint,
  nowMs: number,
): number {
  const closed = segments.slice(0, -1)
  let count = 0
  // Below the log start offset: the next segment starts at or before it.
  while (count < closed.length && segments[count + 1]!.baseOffset <= logStartOffset) count++
  if (!config.cleanupPolicy.delete) return count
  if (config.retentionMs >= 0) {
    while (count < closed.length) {
      const ts = closed[count]!.maxTimestampMs
      if (ts < 0 || nowMs - ts <= config.retentionMs) break
      count++
    }
  }
  if (config.retentionBytes >= 0) {
    let excess = -config.retentionBytes
    for (const s of segments) excess += s.size
    for (let i = 0; i < count; i++) excess -= closed[i]!.size
    while (count < closed.length && excess - closed[count]!.size >= 0) {
      excess -= closed[count]!.size
      count++
    }
  }
  return count
}

assert(WRITE_ROUND_BYTES_MAX <= APPEND_QUEUE_BYTES_MAX_DEFAULT, 'a write round fits the append queue')

/** Calls the hook for the appended batch at `buf[at]` (its marker decoded only for a control batch). */
function onAppended(
  onBatch: NonNullable<LogHooks['onBatch']>,
  buf: Buffer,
  at: number,
  baseOffset?: bigint,
): void {
  const h = appendedHeader(buf, at, baseOffset)
  onBatch(h, 'append', endTxnMarkerAt(buf, at, h.attributes))
}
