/**
 * A log's segments on disk (Kafka's LocalLog): the directory, the ordered segments, rolling to a new
 * segment, cutting them at an offset or removing them all, the cleaner's swap, and deleting retired
 * ones after `file.delete.delay.ms`. The offsets, the append pipeline, reads and failure handling
 * are the caller's (`PartitionLog`): errors propagate.
 */
import type { Clock, Disk, TimerHandle } from '../io/index.ts'
import { type BatchHeader, type EndTxnMarker, isControl } from '../protocol/index.ts'
import { endTxnMarkerAt } from './appended-header.ts'
import { FileBatchReader, isProblem } from './file-batch-reader.ts'
import type { LogConfig } from './log-config.ts'
import { LogSegment, SegmentFile, type SegmentSettings } from './log-segment.ts'
import { LogSegments } from './log-segments.ts'
import type { WriteTail } from './write-tail.ts'

export interface LocalLogOptions {
  readonly disk: Disk
  readonly clock: Clock
  /** Buffer for walking segment files. */
  readonly readBufferBytes: number
  /** Recently written bytes of the active segment (null: none kept). */
  readonly tail: WriteTail | null
  /** Awaited before a retired segment's files are removed (a flush under way finishes first). */
  readonly beforeReap: () => Promise<unknown> | undefined
  readonly warn: (message: string) => void
}

export class LocalLog {
  readonly dir: string
  readonly segments = new LogSegments()
  config: LogConfig
  /** A roll changed the directory's listing since it was last synced (`PartitionLog` syncs it). */
  dirDirty = false
  readonly #disk: Disk
  readonly #clock: Clock
  readonly #options: LocalLogOptions
  /** Physical deletions waiting for `file.delete.delay.ms`. */
  /** Made at the first retired segment (a Map is ~220 B, and most logs of a large node never retire one). */
  #deleteTimers: Map<LogSegment, TimerHandle> | null = null

  constructor(dir: string, config: LogConfig, options: LocalLogOptions) {
    this.dir = dir
    this.config = config
    this.#disk = options.disk
    this.#clock = options.clock
    this.#options = options
  }

  get settings(): SegmentSettings {
    return {
      indexIntervalBytes: this.config.indexIntervalBytes,
      segmentIndexBytes: this.config.segmentIndexBytes,
      readBufferBytes: this.#options.readBufferBytes,
      ...(this.#options.tail === null ? {} : { tail: this.#options.tail }),
    }
  }

  /** A new segment file at `baseOffset` (suffix `.cleaned` for the cleaner). */
  createSegment(baseOffset: bigint, nowMs: number, suffix?: string): Promise<LogSegment> {
    return LogSegment.create(this.#disk, this.dir, baseOffset, this.settings, nowMs, suffix)
  }

  /**
   * Close the active segment and start one at `baseOffset`. The old segment is synced with its
   * indexes before the new file exists, so after any crash every segment but the last is whole.
   * An empty active segment is replaced rather than kept (offsets jumped past it). `rolled` (the
   * log's offsets and hooks) runs once the new segment is in place, and the roll resolves after
   * what it returns.
   */
  async roll(
    baseOffset: bigint,
    nowMs: number,
    rolled: () => Promise<void> | undefined,
  ): Promise<LogSegment> {
    const old = this.segments.active
    const replaceActive = old.isEmpty
    if (replaceActive) {
      await old.changeSuffix(SegmentFile.deleted)
      await old.deleteFiles()
    } else {
      await old.seal()
    }
    await this.#disk.syncDir(this.dir)
    const segment = await this.createSegment(baseOffset, nowMs)
    this.segments.roll(segment, replaceActive)
    this.dirDirty = true
    await rolled()
    return segment
  }

  /** Sync the directory (its listing after a roll). */
  syncDir(): Promise<void> {
    return this.#disk.syncDir(this.dir)
  }

  /**
   * Cut the log at `offset` (above the first segment's base): later segments retired, the one
   * holding it cut. Returns the new end offset. The later segments' renames are durable before the
   * cut is: else a crash after the cut's sync brings them back behind a cut segment, a hole in the
   * offsets.
   */
  async truncateTo(offset: bigint): Promise<bigint> {
    const doomed = this.segments.removeAbove(offset)
    await this.retire(doomed)
    if (doomed.length > 0) await this.#disk.syncDir(this.dir)
    const active = this.segments.active
    await active.truncateTo(offset)
    // A closed segment becoming active again: its index files now hold the cut entries.
    await active.openIndexFiles()
    await active.sync()
    await this.#disk.syncDir(this.dir)
    return active.nextOffset!
  }

  /** Retire every segment and start over with one empty segment at `offset`. */
  async truncateFully(offset: bigint): Promise<void> {
    await this.retire(this.segments.clear())
    const segment = await this.createSegment(offset, this.#clock.nowMs())
    await this.#disk.syncDir(this.dir)
    this.segments.reset([segment])
  }

  /**
   * Put `cleaned` (files synced, suffix `.cleaned`) in place of the `old` segments from `at`:
   * rename to `.swap`, retire the old ones, rename to live names (Kafka's order, so recovery can
   * finish an interrupted swap).
   */
  async swapIn(at: number, old: readonly LogSegment[], cleaned: LogSegment): Promise<void> {
    await cleaned.changeSuffix(SegmentFile.swap)
    await this.#disk.syncDir(this.dir)
    await this.retire(old)
    await cleaned.changeSuffix('')
    await this.#disk.syncDir(this.dir)
    this.segments.swap(at, old.length, cleaned)
  }

  /**
   * Rename segments to `.deleted` now and remove them after `file.delete.delay.ms` (Kafka's
   * asynchronous delete): readers holding them finish first.
   */
  async retire(doomed: readonly LogSegment[]): Promise<void> {
    for (const s of doomed) await s.changeSuffix(SegmentFile.deleted)
    for (const s of doomed) {
      const timer = this.#clock.setTimer(this.config.fileDeleteDelayMs, () => {
        this.#deleteTimers?.delete(s)
        void this.#reap(s)
      })
      this.#deleteTimers ??= new Map()
      this.#deleteTimers.set(s, timer)
    }
  }

  async #reap(segment: LogSegment): Promise<void> {
    try {
      await this.#options.beforeReap()
      await segment.deleteFiles()
    } catch (e) {
      this.#options.warn(
        `log ${this.dir}: could not remove deleted segment ${segment.baseOffset}: ${String(e)}`,
      )
    }
  }

  /** Forget the deletions still waiting (close: the files stay as `.deleted`, removed at the next load). */
  cancelDeletes(): void {
    for (const timer of this.#deleteTimers?.values() ?? []) this.#clock.clearTimer(timer)
    this.#deleteTimers = null
  }

  /** Seal the active segment (its indexes written, files cut and synced) and sync the directory. */
  async sealActive(): Promise<void> {
    await this.segments.active.seal()
    await this.#disk.syncDir(this.dir)
  }

  /** Close every segment's files, ignoring failures. */
  async closeFiles(): Promise<void> {
    for (const s of this.segments.all) await s.close().catch(() => undefined)
  }
}

/**
 * Call `fn` with the header of every batch in `segments` from the one holding `fromOffset` to the
 * end.
 */
export async function scanBatchHeaders(
  segments: readonly LogSegment[],
  fromOffset: bigint,
  fn: (header: BatchHeader, marker: EndTxnMarker | null) => void,
  readBufferBytes: number,
): Promise<void> {
  for (const s of segments) {
    if (s.nextOffset !== null && s.nextOffset <= fromOffset) continue
    const start = await s.translateOffset(fromOffset)
    if (start === null) continue
    const reader = new FileBatchReader(s.file, start.position, s.writtenSize, readBufferBytes)
    for (;;) {
      const b = await reader.next('header')
      if (b === null || isProblem(b)) break
      let marker: EndTxnMarker | null = null
      if (isControl(b.header.attributes)) {
        const bytes = Buffer.allocUnsafe(b.size)
        if ((await s.file.read(bytes, b.position, b.size)) === b.size)
          marker = endTxnMarkerAt(bytes, 0, b.header.attributes)
      }
      fn(b.header, marker)
    }
  }
}
