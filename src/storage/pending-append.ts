/**
 * The append pipeline's units: an append call waiting in the queue (its validated bytes, what the
 * scan found, its promise, its hold on a pooled buffer) and a write round handed to the disk.
 */
import type { LogSegment } from './log-segment.ts'
import type { AppendOptions, AppendResult } from './partition-log.ts'
import type { ReadBuffers } from './read-buffer-pool.ts'
import type { AppendScan } from './scan-append.ts'

/** One append call waiting in the queue: its bytes (whole, validated batches) and its promise. */
export class PendingAppend {
  readonly buf: Buffer
  readonly batchCount: number
  /** False for replication: the batches keep their offsets. */
  readonly assignOffsets: boolean
  readonly leaderEpoch: number | undefined
  readonly flush: boolean
  readonly recordCount: number
  /** Offsets the batches span (sum of lastOffsetDelta + 1). */
  readonly offsetCount: number
  /** Largest batch maxTimestamp (the LogAppendTime when stamped), -1 when none. */
  readonly maxTimestampMs: number
  readonly logAppendTimeMs: number
  result: AppendResult | null = null
  error: unknown = null
  readonly resolve: (r: AppendResult) => void
  readonly reject: (e: unknown) => void
  /** The pool `buf` is retained from until its write settled, or null. */
  #pool: ReadBuffers | null

  constructor(
    buf: Buffer,
    scan: AppendScan,
    options: AppendOptions,
    logAppendTimeMs: number,
    resolve: (r: AppendResult) => void,
    reject: (e: unknown) => void,
    pool: ReadBuffers | undefined,
  ) {
    this.buf = buf
    this.#pool = pool !== undefined && pool.retain(buf) ? pool : null
    this.batchCount = scan.batches
    this.recordCount = scan.records
    this.offsetCount = scan.offsets
    this.maxTimestampMs = logAppendTimeMs >= 0 ? logAppendTimeMs : scan.maxTimestampMs
    this.assignOffsets = options.origin !== 'replication'
    this.leaderEpoch = options.leaderEpoch
    this.flush = options.flush === true
    this.logAppendTimeMs = logAppendTimeMs
    this.resolve = resolve
    this.reject = reject
  }

  /**
   * The log is done with `buf`: its write completed or failed, or it was never issued. Once only.
   * (Where a write of it may still be under way, it is never called: the pool only lends less.)
   */
  release(): void {
    const pool = this.#pool
    if (pool === null) return
    this.#pool = null
    pool.release(this.buf)
  }
}

export function releaseAll(appends: readonly PendingAppend[]): void {
  for (const p of appends) p.release()
}

/** A write round handed to the disk and not yet completed (the log completes them in order). */
export interface InFlightRound {
  readonly round: readonly PendingAppend[]
  readonly segment: LogSegment
  readonly write: Promise<void>
  /** The segment's written size and the log end offset once this round and those before complete. */
  readonly endPosition: number
  readonly endOffset: bigint
  readonly records: number
  /** The segment's index entries once this round was registered: written to the index files after it. */
  readonly offsetEntries: number
  readonly timeEntries: number
  /** The write has settled (completed or failed). */
  done: boolean
}

/** Resolve (or reject, for a refused append) every append of a written round. */
export function settle(round: readonly PendingAppend[]): void {
  for (const p of round) {
    if (p.error !== null) p.reject(p.error)
    else p.resolve(p.result!)
  }
}
