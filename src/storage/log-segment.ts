/**
 * One segment of a partition log: `<base>.log` with its `.index` and `.timeindex`, Kafka's files,
 * all three created together. Only the log's active segment takes appends; a closed segment is
 * immutable. The log serializes calls.
 */
import { type Disk, type DiskFile, isNotFound, joinPath } from '../io/index.ts'
import { assert } from '../model/index.ts'
import { BATCH_HEADER_BYTES, BatchOffsets, decodeBatch, LOG_OVERHEAD } from '../protocol/index.ts'
import { type FileBatch, FileBatchReader, isProblem, type ReadMode } from './file-batch-reader.ts'
import { OFFSET_INDEX_ENTRY_BYTES, OffsetIndex } from './offset-index.ts'
import type { ReadBuffers } from './read-buffer-pool.ts'
import { TIME_INDEX_ENTRY_BYTES, TimeIndex } from './time-index.ts'
import { type AbortedTxn, CorruptTransactionIndexError, TransactionIndex } from './transaction-index.ts'
import type { WriteTail } from './write-tail.ts'

/** File name parts, as Kafka names them. */
export const SegmentFile = {
  log: '.log',
  index: '.index',
  timeIndex: '.timeindex',
  /** The aborted-transaction index (`transaction-index.ts`), present once the segment holds an ABORT marker. */
  txnIndex: '.txnindex',
  /** Renamed to on deletion, removed after `file.delete.delay.ms`. */
  deleted: '.deleted',
  /** A segment the cleaner is writing. */
  cleaned: '.cleaned',
  /** A cleaned segment about to replace the originals. */
  swap: '.swap',
  /** An index file being written. */
  tmp: '.tmp',
} as const

const OFFSET_DIGITS = 20
/**
 * The active segment writes its new index entries to the index files once its log file has grown
 * this much since they were last written (and at every flush): a crash leaves them at most this far
 * behind the log, for two small writes per MiB of log.
 */
const INDEX_WRITE_BYTES = 1024 * 1024
const INT32_MAX = 0x7fffffff
const INT32_MAX_BIG = BigInt(INT32_MAX)
const UINT32_RANGE = 0x100000000

/** `00000000000000000042` for 42n: the 20-digit base offset Kafka names files with. */
export function offsetFileName(offset: bigint): string {
  return offset.toString().padStart(OFFSET_DIGITS, '0')
}

/** The base offset and extension of a segment file name, or null when it is not one. */
export function parseSegmentFileName(
  name: string,
): { baseOffset: bigint; ext: string; suffix: string } | null {
  const m =
    /^(\d{20})(\.log|\.index|\.timeindex|\.snapshot|\.txnindex)(\.deleted|\.cleaned|\.swap|\.tmp)?$/.exec(
      name,
    )
  if (m === null) return null
  return { baseOffset: BigInt(m[1]!), ext: m[2]!, suffix: m[3] ?? '' }
}

/** Limits a segment works within; units in the names. */
export interface SegmentSettings {
  /** `index.interval.bytes`. */
  readonly indexIntervalBytes: number
  /** `segment.index.bytes`. */
  readonly segmentIndexBytes: number
  /** Buffer for walking batches (recovery, index rebuilds, lookups). */
  readonly readBufferBytes: number
  /** The log's recently written bytes, shared by its segments: reads near the end come from it. */
  readonly tail?: WriteTail
}

/** What a full scan of the file found. */
export interface ScanOutcome {
  /** Bytes of valid batches from the start. */
  readonly validBytes: number
  /** Why the scan stopped before the end of the file, or null. */
  readonly problem: string | null
}

/** The first offset at or after a time, with the batch it is in. */
export interface FoundTimestamp {
  readonly offset: bigint
  readonly timestampMs: number
  readonly leaderEpoch: number
}

export class LogSegment {
  readonly baseOffset: bigint
  readonly dir: string
  readonly #disk: Disk
  readonly #file: DiskFile
  readonly #settings: SegmentSettings
  /** The suffix the files currently carry ('' for a live segment). */
  #suffix: string
  #offsetIndex: OffsetIndex | null = null
  #timeIndex: TimeIndex | null = null
  /** The `.txnindex`, opened on first use (most segments never have one). */
  #txnIndex: Promise<TransactionIndex> | null = null
  /** The same once open (a sync flushes it only when it holds entries: no await otherwise). */
  #txnIndexOpen: TransactionIndex | null = null
  /** The last `appendAbortedTxn`: truncation, renames and closing wait for it. */
  #txnWrites: Promise<void> = Promise.resolve()
  #loadingIndexes: Promise<void> | null = null
  /** Bytes registered, including appends not yet written. */
  size: number
  /** Bytes written to the file, every write below completed: the limit for readers. */
  writtenSize: number
  /** Bytes handed to the disk (writes completed or in flight): where the next write goes. */
  #issuedSize: number
  /** The offset after the last batch, relative to the base (null when not known yet). */
  #nextRelative: number | null = null
  /** Largest batch maxTimestamp seen (ms), -1 when none; with the last offset of that batch. */
  maxTimestampMs = -1
  /** `offsetOfMaxTimestamp` relative to the base. */
  #relativeOffsetOfMaxTimestamp = 0
  /** The base offset as two uint32 halves, to write absolute offsets without BigInt arithmetic. */
  readonly #baseHigh: number
  readonly #baseLow: number
  /** The first batch's maxTimestamp, what `segment.ms` is judged by (null until known). */
  rollingBasedTimestampMs: number | null = null
  /** When this process created or opened the segment (ms): `segment.ms` fallback. */
  readonly createdMs: number
  #bytesSinceLastIndexEntry = 0
  /**
   * Bytes of the file a completed sync covers, counting only writes that had completed when that
   * sync started (a write still in flight then may reach the file after the fsync). -1 after a
   * truncation until a sync that started after it completes.
   */
  #syncedSize: number
  /** Truncations so far: a sync that spans one does not vouch for the new size. */
  #truncations = 0
  /** Whether the index files on disk match the in-memory indexes. */
  indexFilesCurrent = false
  /**
   * The index files, open while the segment takes appends (created with it, or opened when it
   * becomes active again): entries are written through to them as the segment grows, never synced
   * until the segment is sealed. Null for a closed segment, whose files are written whole.
   */
  #indexFiles: { readonly offset: DiskFile; readonly time: DiskFile } | null = null
  /** Entries of each index in its file: a prefix of the in-memory entries. */
  #offsetEntriesInFile = 0
  #timeEntriesInFile = 0
  /**
   * Entries whose batches' writes have completed: only these go to the files, so that an index
   * file never points past what the log file holds.
   */
  #offsetEntriesReady = 0
  #timeEntriesReady = 0
  /** `writtenSize` when entries were last written to the index files. */
  #indexWrittenAt = 0
  /** The index writes under way (a failure is kept for the next seal or close to throw). */
  #indexWrites: Promise<void> = Promise.resolve()
  /**
   * Where recent reads ended: the offset after a read's last batch -> that next batch's position.
   * Cleared by every cut of the file (positions past the cut are gone).
   */
  /** Made at the first read that leaves a hint (most segments of a large node are never read). */
  #readHints: Map<bigint, number> | null = null

  private constructor(
    disk: Disk,
    dir: string,
    baseOffset: bigint,
    file: DiskFile,
    settings: SegmentSettings,
    nowMs: number,
    suffix: string,
  ) {
    this.#disk = disk
    this.dir = dir
    this.baseOffset = baseOffset
    this.#file = file
    this.#settings = settings
    this.size = file.size()
    this.writtenSize = this.size
    this.#issuedSize = this.size
    this.#syncedSize = this.size
    this.createdMs = nowMs
    this.#suffix = suffix
    this.#baseHigh = Number(baseOffset >> 32n)
    this.#baseLow = Number(baseOffset & 0xffffffffn)
  }

  /**
   * Create an empty segment: its `.index` and `.timeindex` (empty), then its `.log`, so that a
   * crash leaves no log file without its index files (index files without their log are removed
   * on load, as Kafka's orphans are). An existing empty log file is reused.
   */
  static async create(
    disk: Disk,
    dir: string,
    baseOffset: bigint,
    settings: SegmentSettings,
    nowMs: number,
    suffix = '',
  ): Promise<LogSegment> {
    const name = offsetFileName(baseOffset)
    const path = joinPath(dir, `${name}${SegmentFile.log}${suffix}`)
    const existing = await disk.stat(path).catch((e: unknown) => {
      if (isNotFound(e)) return null
      throw e
    })
    if (existing !== null && existing.size !== 0) {
      throw new Error(`segment file ${path} already exists with ${existing.size} bytes`)
    }
    // Empty, not preallocated to segment.index.bytes as Kafka's are until trimmed: Kafka's readers
    // take the zeros past the entries for entries (kafka-dump-log reads a file without entries as
    // one, the base offset at position 0, and stops only at a second).
    const indexFiles = await openIndexPair(
      disk,
      joinPath(dir, `${name}${SegmentFile.index}${suffix}`),
      joinPath(dir, `${name}${SegmentFile.timeIndex}${suffix}`),
      true,
    )
    let file: DiskFile
    try {
      file = await disk.open(path, { create: true })
    } catch (e) {
      await indexFiles.offset.close().catch(NOTHING)
      await indexFiles.time.close().catch(NOTHING)
      throw e
    }
    const segment = new LogSegment(disk, dir, baseOffset, file, settings, nowMs, suffix)
    segment.#offsetIndex = new OffsetIndex(settings.segmentIndexBytes)
    segment.#timeIndex = new TimeIndex(settings.segmentIndexBytes)
    segment.#nextRelative = 0
    segment.#indexFiles = indexFiles
    segment.indexFilesCurrent = true
    return segment
  }

  /**
   * Open an existing segment; its indexes load when first needed. Its index files stay closed
   * unless it becomes the active segment (`openIndexFiles`).
   */
  static async open(
    disk: Disk,
    dir: string,
    baseOffset: bigint,
    settings: SegmentSettings,
    nowMs: number,
    suffix = '',
  ): Promise<LogSegment> {
    const path = joinPath(dir, `${offsetFileName(baseOffset)}${SegmentFile.log}${suffix}`)
    const file = await disk.open(path)
    return new LogSegment(disk, dir, baseOffset, file, settings, nowMs, suffix)
  }

  /** Path of one of this segment's files as currently named. */
  path(ext: string): string {
    return joinPath(this.dir, `${offsetFileName(this.baseOffset)}${ext}${this.#suffix}`)
  }

  /** The file, for the log's writes and syncs. */
  get file(): DiskFile {
    return this.#file
  }

  /** The offset after the last batch, when known (always for the active segment). */
  get nextOffset(): bigint | null {
    return this.#nextRelative === null ? null : this.baseOffset + BigInt(this.#nextRelative)
  }

  /** The offset after the last batch relative to the base (the active segment always knows it). */
  get nextRelativeOffset(): number | null {
    return this.#nextRelative
  }

  /** The last offset of the batch holding `maxTimestampMs` (the base offset when none). */
  get offsetOfMaxTimestamp(): bigint {
    return this.baseOffset + BigInt(this.#relativeOffsetOfMaxTimestamp)
  }

  get isEmpty(): boolean {
    return this.size === 0
  }

  /** Whether another batch would find no room in an index (the log rolls first). */
  get indexFull(): boolean {
    return (this.#offsetIndex?.isFull ?? false) || (this.#timeIndex?.isFull ?? false)
  }

  /** Entries in the offset index (0 when not loaded). */
  get offsetIndexEntries(): number {
    return this.#offsetIndex?.entries ?? 0
  }

  /** Entries in the time index (0 when not loaded). */
  get timeIndexEntries(): number {
    return this.#timeIndex?.entries ?? 0
  }

  /**
   * Whether `batches` more batches can be appended without either index filling up first (each
   * batch adds at most one entry to each): the log then need not check `indexFull` per batch.
   */
  hasIndexRoomFor(batches: number): boolean {
    const offsetIndex = this.#offsetIndex
    const timeIndex = this.#timeIndex
    if (offsetIndex === null || timeIndex === null) return false
    return (
      offsetIndex.entries + batches <= offsetIndex.entriesMax &&
      timeIndex.entries + batches <= timeIndex.entriesMax
    )
  }

  /** The offset relative to the base, which must fit an int32 (else the log rolls). */
  relative(offset: bigint): number {
    const rel = offset - this.baseOffset
    if (!(rel >= 0n && rel <= INT32_MAX_BIG))
      assert(false, `offset ${offset} is outside segment ${this.baseOffset}`)
    return Number(rel)
  }

  /**
   * Write `baseOffset + relativeOffset` as the int64 at `buf[at]` (a batch's baseOffset field), with
   * number arithmetic: the append path assigns offsets without allocating BigInts.
   */
  writeOffset(buf: Buffer, at: number, relativeOffset: number): void {
    let low = this.#baseLow + relativeOffset
    let high = this.#baseHigh
    if (low >= UINT32_RANGE) {
      low -= UINT32_RANGE
      high++
      if (high > INT32_MAX) assert(false, `offset overflows int64 in segment ${this.baseOffset}`)
    }
    // Byte stores: Buffer's writeUInt32BE checks its bounds and value again (the batch was
    // validated whole, so its header is in the buffer), and was not inlined in the append profile.
    buf[at] = high >>> 24
    buf[at + 1] = high >>> 16
    buf[at + 2] = high >>> 8
    buf[at + 3] = high
    buf[at + 4] = low >>> 24
    buf[at + 5] = low >>> 16
    buf[at + 6] = low >>> 8
    buf[at + 7] = low
  }

  /** Whether `offset` fits this segment's relative-offset range. */
  canHoldOffset(offset: bigint): boolean {
    const rel = offset - this.baseOffset
    return rel >= 0n && rel <= INT32_MAX_BIG
  }

  /** Load the index files, rebuilding them from the log when missing or not sane. */
  ensureIndexes(): Promise<void> {
    if (this.#offsetIndex !== null && this.#timeIndex !== null) return Promise.resolve()
    this.#loadingIndexes ??= this.#loadIndexes().finally(() => {
      this.#loadingIndexes = null
    })
    return this.#loadingIndexes
  }

  async #loadIndexes(): Promise<void> {
    const offsetBytes = await readIfExists(this.#disk, this.path(SegmentFile.index))
    const timeBytes = await readIfExists(this.#disk, this.path(SegmentFile.timeIndex))
    const { segmentIndexBytes } = this.#settings
    const offsetIndex =
      offsetBytes === null ? null : OffsetIndex.fromBytes(offsetBytes, segmentIndexBytes, this.writtenSize)
    const timeIndex = timeBytes === null ? null : TimeIndex.fromBytes(timeBytes, segmentIndexBytes)
    const last = offsetIndex?.lastEntry ?? null
    const timeLast = timeIndex?.lastEntry
    if (offsetIndex === null || timeIndex === null || (last !== null && last.position >= this.writtenSize)) {
      const { problem } = await this.rebuild('header')
      if (problem !== null) throw new Error(`segment ${this.path(SegmentFile.log)} is damaged ${problem}`)
      await this.writeIndexFiles()
      return
    }
    this.#offsetIndex = offsetIndex
    this.#timeIndex = timeIndex
    if (timeLast !== null && timeLast !== undefined && timeLast.timestampMs > this.maxTimestampMs) {
      this.maxTimestampMs = timeLast.timestampMs
      this.#relativeOffsetOfMaxTimestamp = timeLast.relativeOffset
    }
    this.indexFilesCurrent = true
  }

  /** Read only the largest timestamp from the time index's last entry (cheap, for retention). */
  async loadLargestTimestamp(): Promise<void> {
    if (this.#timeIndex !== null) return
    const path = this.path(SegmentFile.timeIndex)
    const bytes = await readIfExists(this.#disk, path)
    const index =
      bytes === null
        ? null
        : TimeIndex.fromBytes(bytes, Math.max(this.#settings.segmentIndexBytes, bytes.length))
    const last = index?.lastEntry
    if (index === null || ((last === null || last === undefined) && this.writtenSize > 0)) {
      await this.ensureIndexes() // missing or damaged: rebuild, which also finds the timestamp
      return
    }
    if (last !== null && last !== undefined) {
      this.maxTimestampMs = last.timestampMs
      this.#relativeOffsetOfMaxTimestamp = last.relativeOffset
    }
  }

  /**
   * Rebuild the indexes and metadata by walking every batch: `header` trusts the bytes (a flushed
   * segment), `validate` checks each batch's structure and CRC (recovery). Stops at the first
   * problem, which is returned with the bytes before it; changes neither the file nor `size`.
   */
  async rebuild(mode: ReadMode): Promise<ScanOutcome> {
    await this.#settleIndexWrites()
    // Nothing of the new indexes goes to open files before the walk ends (they are rewritten then).
    this.#offsetEntriesInFile = this.#offsetEntriesReady = 0
    this.#timeEntriesInFile = this.#timeEntriesReady = 0
    const { segmentIndexBytes } = this.#settings
    this.#offsetIndex = new OffsetIndex(segmentIndexBytes)
    this.#timeIndex = new TimeIndex(segmentIndexBytes)
    this.maxTimestampMs = -1
    this.#relativeOffsetOfMaxTimestamp = 0
    this.rollingBasedTimestampMs = null
    this.#bytesSinceLastIndexEntry = 0
    this.#nextRelative = 0
    this.indexFilesCurrent = false
    const reader = new FileBatchReader(this.#file, 0, this.writtenSize, this.#settings.readBufferBytes)
    let previousLast = this.baseOffset - 1n
    let validBytes = 0
    let problem: string | null = null
    for (;;) {
      const b = await reader.next(mode)
      if (b === null) break
      if (isProblem(b)) {
        problem = `at position ${b.position}: ${b.reason}`
        break
      }
      const { baseOffset } = b.header
      if (baseOffset <= previousLast || !this.canHoldOffset(b.lastOffset)) {
        problem = `at position ${b.position}: batch offsets ${baseOffset}..${b.lastOffset} out of order after ${previousLast}`
        break
      }
      this.#register(b.position, b.size, this.relative(b.lastOffset), Number(b.header.maxTimestamp), true)
      previousLast = b.lastOffset
      validBytes = b.position + b.size
    }
    // Open index files (a segment created just before) hold the entries the walk found.
    if (this.#indexFiles !== null) await this.#rewriteIndexFiles()
    return { validBytes, problem }
  }

  /**
   * Recover after an unclean shutdown: validate every batch, rebuild the indexes, and cut the file at
   * the first invalid byte (synced). Returns the bytes cut and why.
   */
  async recover(): Promise<{ truncatedBytes: number; problem: string | null }> {
    const before = this.#file.size()
    this.writtenSize = this.size = this.#issuedSize = before
    const { validBytes, problem } = await this.rebuild('validate')
    const truncatedBytes = before - validBytes
    this.size = this.writtenSize = this.#issuedSize = validBytes
    if (truncatedBytes > 0) {
      await this.#truncateFile(validBytes)
      // The sizes are set first: a sync records the size it covers from writtenSize, and recording
      // the size before the cut would later vouch for unsynced appends that reach that length.
      await this.sync()
    }
    // Aborted transactions whose markers the cut took go with them (the log's replay adds back
    // what the batches left still say).
    const next = this.nextOffset
    await this.#txnWrites
    const txnIndex = await this.transactionIndex()
    if (next === null) await txnIndex.reset()
    else await txnIndex.truncateTo(next)
    return { truncatedBytes, problem }
  }

  /**
   * For a segment opened after a clean shutdown: load the indexes and walk the batches after the last
   * index entry to find the next offset (and the first batch's timestamp, for `segment.ms`).
   */
  async loadEnd(): Promise<void> {
    await this.ensureIndexes()
    if (this.#nextRelative !== null && this.rollingBasedTimestampMs !== null) return
    const first = await new FileBatchReader(this.#file, 0, this.writtenSize, 4096).next('header')
    if (first !== null && !isProblem(first)) this.rollingBasedTimestampMs = Number(first.header.maxTimestamp)
    const from = this.#offsetIndex?.lastEntry?.position ?? 0
    const reader = new FileBatchReader(this.#file, from, this.writtenSize, this.#settings.readBufferBytes)
    let next = 0
    for (;;) {
      const b = await reader.next('header')
      if (b === null) break
      if (isProblem(b)) throw new Error(`segment ${this.path(SegmentFile.log)} is damaged ${b.reason}`)
      const ts = Number(b.header.maxTimestamp)
      const lastRelative = this.relative(b.lastOffset)
      if (ts > this.maxTimestampMs) {
        this.maxTimestampMs = ts
        this.#relativeOffsetOfMaxTimestamp = lastRelative
      }
      next = lastRelative + 1
    }
    // A segment whose every batch precedes the last index entry's position cannot exist.
    this.#nextRelative = next
    this.#bytesSinceLastIndexEntry = this.writtenSize - from
  }

  /**
   * Index one batch placed at `position` whose last offset is `lastRelative` past the base; updates
   * size, next offset and timestamps.
   */
  #register(
    position: number,
    size: number,
    lastRelative: number,
    maxTimestampMs: number,
    rebuilding: boolean,
  ): void {
    if (maxTimestampMs > this.maxTimestampMs) {
      this.maxTimestampMs = maxTimestampMs
      this.#relativeOffsetOfMaxTimestamp = lastRelative
    }
    if (this.#bytesSinceLastIndexEntry > this.#settings.indexIntervalBytes) {
      const offsetIndex = this.#offsetIndex!
      const timeIndex = this.#timeIndex!
      // A rebuild under a smaller segment.index.bytes than the data was written with: sparser index.
      if (!(rebuilding && (offsetIndex.isFull || timeIndex.isFull))) {
        offsetIndex.append(lastRelative, position)
        timeIndex.maybeAppend(this.maxTimestampMs, this.#relativeOffsetOfMaxTimestamp)
      }
      this.#bytesSinceLastIndexEntry = 0
    }
    this.#bytesSinceLastIndexEntry += size
    if (this.rollingBasedTimestampMs === null) this.rollingBasedTimestampMs = maxTimestampMs
    this.#nextRelative = lastRelative + 1
    const end = position + size
    if (end > this.size) this.size = end
  }

  /**
   * Register a batch about to be appended at the end (the active segment only): `size` bytes whose
   * last offset is `lastRelative` past the base (at most 2^31 - 1: the log rolls first). The caller
   * then writes its bytes with `write`; until then readers do not see it.
   */
  registerAppend(size: number, lastRelative: number, maxTimestampMs: number): void {
    if (this.#offsetIndex === null) assert(false, 'append to a segment whose indexes are not loaded')
    this.indexFilesCurrent = false
    this.#register(this.size, size, lastRelative, maxTimestampMs, false)
  }

  /**
   * Hand `bytes` registered bytes (`buffers`) to the disk as one positional vectored write right
   * after those issued before, which may still be in flight. Readers see them only once
   * `completeWrite` is called with an end at or past them. The buffers must not change afterwards:
   * the log's write tail may keep them to answer reads.
   */
  issueWrite(buffers: readonly Buffer[], bytes: number): Promise<void> {
    const position = this.#issuedSize
    if (position + bytes > this.size) assert(false, 'written bytes must match the registered batches')
    this.#issuedSize = position + bytes
    this.#settings.tail?.add(this, buffers, position)
    return this.#file.write(buffers, position)
  }

  /** Bytes handed to the disk so far (the end of the last issued write). */
  get issuedSize(): number {
    return this.#issuedSize
  }

  /** Every write below `end` has completed: readers (and syncs) may count the bytes up to it. */
  completeWrite(end: number): void {
    if (end > this.writtenSize) this.writtenSize = end
  }

  /** Write registered bytes (one vectored write) and make them visible to readers. */
  async write(buffers: readonly Buffer[]): Promise<void> {
    let n = 0
    for (const b of buffers) n += b.length
    if (n === 0) return
    const end = this.#issuedSize + n
    assert(end === this.size, 'written bytes must match the registered batches')
    await this.issueWrite(buffers, n)
    this.completeWrite(end)
    // Nothing registered is unwritten now: every entry may go to the index files.
    this.#offsetEntriesReady = this.offsetIndexEntries
    this.#timeEntriesReady = this.timeIndexEntries
  }

  /**
   * The first `offsetEntries` and `timeEntries` index entries point at batches whose writes have
   * completed (the counts when those writes were issued): they may go to the index files. Writes
   * them once the log file has grown INDEX_WRITE_BYTES since the index files were last written, and
   * returns that write (the caller handles its failure), else null.
   */
  entriesWritten(offsetEntries: number, timeEntries: number): Promise<void> | null {
    this.#offsetEntriesReady = offsetEntries
    this.#timeEntriesReady = timeEntries
    if (this.writtenSize - this.#indexWrittenAt < INDEX_WRITE_BYTES) return null
    return this.writeIndexEntries()
  }

  /**
   * Write the entries that may go to the open index files and are not there yet, one positional
   * write per index, not synced (as Kafka's memory-mapped indexes are not on append). Returns the
   * write (the caller handles its failure), or null when there is nothing to write.
   */
  writeIndexEntries(): Promise<void> | null {
    const files = this.#indexFiles
    if (files === null) return null
    this.#indexWrittenAt = this.writtenSize
    const offsetFrom = this.#offsetEntriesInFile
    const offsetTo = this.#offsetEntriesReady
    const timeFrom = this.#timeEntriesInFile
    const timeTo = this.#timeEntriesReady
    let offsetWrite: Promise<void> | null = null
    let timeWrite: Promise<void> | null = null
    if (offsetTo > offsetFrom) {
      // A copy: the in-memory entries past a truncation are overwritten by later appends.
      const bytes = Buffer.from(
        this.#offsetIndex!.bytes().subarray(
          offsetFrom * OFFSET_INDEX_ENTRY_BYTES,
          offsetTo * OFFSET_INDEX_ENTRY_BYTES,
        ),
      )
      offsetWrite = files.offset.write([bytes], offsetFrom * OFFSET_INDEX_ENTRY_BYTES)
      this.#offsetEntriesInFile = offsetTo
    }
    if (timeTo > timeFrom) {
      const bytes = Buffer.from(
        this.#timeIndex!.bytes().subarray(timeFrom * TIME_INDEX_ENTRY_BYTES, timeTo * TIME_INDEX_ENTRY_BYTES),
      )
      timeWrite = files.time.write([bytes], timeFrom * TIME_INDEX_ENTRY_BYTES)
      this.#timeEntriesInFile = timeTo
    }
    const write =
      offsetWrite !== null && timeWrite !== null
        ? Promise.all([offsetWrite, timeWrite]).then(NOTHING)
        : (offsetWrite ?? timeWrite)
    if (write === null) return null
    const all = Promise.all([this.#indexWrites, write]).then(NOTHING)
    all.catch(NOTHING) // kept, not unhandled: seal and close throw it
    this.#indexWrites = all
    return write
  }

  /** Wait for the index writes under way, whatever their outcome. */
  async #settleIndexWrites(): Promise<void> {
    await this.#indexWrites.catch(NOTHING)
  }

  /** Make the open index files hold exactly the in-memory entries (not synced). */
  async #rewriteIndexFiles(): Promise<void> {
    const files = this.#indexFiles!
    await this.#settleIndexWrites()
    // Counted as in the files first: no write through starts while they are rewritten.
    this.#offsetEntriesInFile = this.#offsetEntriesReady = this.#offsetIndex!.entries
    this.#timeEntriesInFile = this.#timeEntriesReady = this.#timeIndex!.entries
    this.#indexWrittenAt = this.writtenSize
    const offsetBytes = Buffer.from(this.#offsetIndex!.bytes())
    const timeBytes = Buffer.from(this.#timeIndex!.bytes())
    await files.offset.truncate(0)
    await files.time.truncate(0)
    if (offsetBytes.length > 0) await files.offset.write([offsetBytes], 0)
    if (timeBytes.length > 0) await files.time.write([timeBytes], 0)
  }

  /**
   * Keep the index files open, for entries to be written through as the segment grows: the log
   * calls this for a segment that becomes its active one (loaded, recovered, truncated back to).
   * Files that do not hold the in-memory entries (rebuilt by recovery, cut by a truncation) are
   * rewritten; missing ones created. Not synced: a crash recovers the active segment anyway.
   */
  async openIndexFiles(): Promise<void> {
    if (this.#indexFiles !== null) return
    await this.ensureIndexes()
    const files = await openIndexPair(
      this.#disk,
      this.path(SegmentFile.index),
      this.path(SegmentFile.timeIndex),
      false,
    )
    this.#indexFiles = files
    const offsetBytes = this.#offsetIndex!.entries * OFFSET_INDEX_ENTRY_BYTES
    const timeBytes = this.#timeIndex!.entries * TIME_INDEX_ENTRY_BYTES
    if (this.indexFilesCurrent && files.offset.size() === offsetBytes && files.time.size() === timeBytes) {
      this.#offsetEntriesInFile = this.#offsetEntriesReady = this.#offsetIndex!.entries
      this.#timeEntriesInFile = this.#timeEntriesReady = this.#timeIndex!.entries
      this.#indexWrittenAt = this.writtenSize
      return
    }
    await this.#rewriteIndexFiles()
  }

  /** Close the open index files once their writes are done; a failed write is thrown. */
  async #closeIndexFiles(): Promise<void> {
    const files = this.#indexFiles
    if (files === null) return
    this.#indexFiles = null
    try {
      await this.#indexWrites
    } finally {
      await files.offset.close().catch(NOTHING)
      await files.time.close().catch(NOTHING)
    }
  }

  /**
   * The first batch whose last offset is >= `offset`, starting from the index, or null when every
   * batch in the segment is below it.
   */
  async translateOffset(offset: bigint): Promise<FileBatch | null> {
    await this.ensureIndexes()
    const rel = offset - this.baseOffset
    const relNum = rel < 0n ? 0 : rel > INT32_MAX_BIG ? INT32_MAX : Number(rel)
    const start = this.#offsetIndex!.lookup(relNum).position
    const bufferBytes = Math.min(
      this.#settings.readBufferBytes,
      2 * this.#settings.indexIntervalBytes + 16384,
    )
    const reader = new FileBatchReader(this.#file, start, this.writtenSize, bufferBytes)
    for (;;) {
      const b = await reader.next('header')
      if (b === null || isProblem(b)) return null
      if (b.lastOffset >= offset) return b
    }
  }

  /**
   * Whole batches from the one containing `offset`: at most `maxBytes` of them, except that the
   * first batch comes whole even when larger, if `atLeastOneBatch`. Only batches whose last offset is
   * below `offsetMax` (exclusive). Null when no batch in this segment reaches `offset`.
   *
   * One file read in the common case: from the batch where a previous read of this segment ended
   * (a consumer reading on; `#readHints`), or else from the offset index's entry, with room for the
   * bytes up to the wanted batch; the batch headers are then walked in memory. Only when the
   * wanted batch starts past those bytes, or the first batch is larger than them, is more read.
   *
   * With `buffers`, a file read goes into a buffer from it: the bytes returned are then a view of
   * that buffer, which the caller releases; every other buffer this read took is already back.
   */
  async read(
    offset: bigint,
    maxBytes: number,
    offsetMax: bigint,
    atLeastOneBatch: boolean,
    buffers?: ReadBuffers,
  ): Promise<Buffer | null> {
    await this.ensureIndexes()
    const hinted = this.#readHints?.get(offset)
    const written = this.writtenSize
    let start: number
    let lead: number
    if (hinted !== undefined && hinted <= written) {
      start = hinted
      lead = 0
    } else {
      const rel = offset - this.baseOffset
      const relNum = rel < 0n ? 0 : rel > INT32_MAX_BIG ? INT32_MAX : Number(rel)
      start = this.#offsetIndex!.lookup(relNum).position
      lead = 2 * this.#settings.indexIntervalBytes + 16384
    }
    // Read from `start` and walk to the first batch whose last offset is >= offset; if the read
    // ends before it (a far index entry), read on from the last whole header.
    // Every buffer read here but not returned goes back to `buffers` (the tail's views included: a
    // view of a pooled buffer was retained for this read; any other, a no-op).
    let buf: Buffer
    let got: number
    let at: number
    for (;;) {
      if (start >= written) return null // every batch is below offset
      const want = Math.min(written - start, lead + Math.max(maxBytes, BATCH_HEADER_BYTES))
      buf = await this.#readAt(start, want, buffers)
      got = buf.length
      at = 0
      while (at + BATCH_HEADER_BYTES <= got) {
        const last = buf.readBigInt64BE(at) + BigInt(buf.readInt32BE(at + BatchOffsets.lastOffsetDelta))
        if (last >= offset) break
        const size = LOG_OVERHEAD + buf.readInt32BE(at + BatchOffsets.batchLength)
        if (size < BATCH_HEADER_BYTES) {
          buffers?.release(buf)
          return null // not a batch: recovery would have cut it
        }
        at += size
      }
      if (at + BATCH_HEADER_BYTES <= got) break
      buffers?.release(buf)
      if (at === 0) return null // fewer bytes than a batch header: nothing whole to read
      start += at
    }
    const firstSize = LOG_OVERHEAD + buf.readInt32BE(at + BatchOffsets.batchLength)
    const firstLast = buf.readBigInt64BE(at) + BigInt(buf.readInt32BE(at + BatchOffsets.lastOffsetDelta))
    if (firstLast >= offsetMax || (firstSize > maxBytes && !atLeastOneBatch)) {
      buffers?.release(buf)
      return EMPTY
    }
    if (at + firstSize > got) {
      // The first batch runs past what was read: read it (and what follows, up to maxBytes) whole.
      buffers?.release(buf)
      const from = start + at
      const size = Math.min(written - from, Math.max(maxBytes, firstSize))
      buf = await this.#readAt(from, size, buffers)
      got = buf.length
      start = from
      at = 0
    }
    let end = at
    let nextOffset = offset
    while (end + BATCH_HEADER_BYTES <= got) {
      const size = LOG_OVERHEAD + buf.readInt32BE(end + BatchOffsets.batchLength)
      if (end + size > got || (end > at && end - at + size > maxBytes)) break
      const lastOffset = buf.readBigInt64BE(end) + BigInt(buf.readInt32BE(end + BatchOffsets.lastOffsetDelta))
      if (lastOffset >= offsetMax) break
      end += size
      nextOffset = lastOffset + 1n
    }
    if (end === at) {
      buffers?.release(buf)
      return EMPTY
    }
    this.#hintRead(nextOffset, start + end)
    return buf.subarray(at, end)
  }

  /**
   * Bytes `[position, position + length)` (fewer at the end of the file): from the tail if held,
   * else read into a buffer from `buffers` (given back if the read fails) or a new one.
   */
  async #readAt(position: number, length: number, buffers: ReadBuffers | undefined): Promise<Buffer> {
    const tail = this.#settings.tail
    const held = tail?.get(this, position, length, buffers)
    if (held != null) {
      tail!.budget.hits++
      return held
    }
    if (tail !== undefined) {
      tail.budget.misses++
      tail.budget.missBytes += length
    }
    const buf = buffers?.acquire(length) ?? Buffer.allocUnsafe(length)
    let got: number
    try {
      got = await this.#file.read(buf, position, length)
    } catch (e) {
      buffers?.release(buf)
      throw e
    }
    return got < length || buf.length > length ? buf.subarray(0, got) : buf
  }

  /** Remember where the batch after a read begins, so that reading on from it needs no lookup. */
  #hintRead(nextOffset: bigint, position: number): void {
    this.#readHints ??= new Map()
    const hints = this.#readHints
    if (hints.size >= READ_HINTS_MAX && !hints.has(nextOffset)) {
      hints.delete(hints.keys().next().value!)
    }
    hints.set(nextOffset, position)
  }

  /**
   * The first record at or after `startOffset` whose timestamp is >= `timestampMs`, or null. Uses
   * the time index to skip ahead, then decodes the first batch that can hold it.
   */
  async findOffsetByTimestamp(timestampMs: number, startOffset: bigint): Promise<FoundTimestamp | null> {
    await this.ensureIndexes()
    const entry = this.#timeIndex!.lookup(timestampMs)
    let rel = entry === null ? 0 : entry.relativeOffset
    const startRel = startOffset - this.baseOffset
    if (startRel > BigInt(rel)) rel = startRel > INT32_MAX_BIG ? INT32_MAX : Number(startRel)
    const position = this.#offsetIndex!.lookup(rel).position
    const reader = new FileBatchReader(this.#file, position, this.writtenSize, this.#settings.readBufferBytes)
    for (;;) {
      const b = await reader.next('bytes')
      if (b === null || isProblem(b)) return null
      if (b.lastOffset < startOffset || Number(b.header.maxTimestamp) < timestampMs) continue
      const decoded = decodeBatch(b.bytes!, 0, { verifyCrc: false })
      for (const record of decoded.records) {
        if (record.offset >= startOffset && Number(record.timestamp) >= timestampMs) {
          return {
            offset: record.offset,
            timestampMs: Number(record.timestamp),
            leaderEpoch: b.header.partitionLeaderEpoch,
          }
        }
      }
    }
  }

  /**
   * Remove every batch from the one holding `offset` on (Kafka truncates whole batches). Returns
   * the bytes removed. Not synced: the log syncs.
   */
  async truncateTo(offset: bigint): Promise<number> {
    await this.ensureIndexes()
    const found = await this.translateOffset(offset)
    if (found === null) return 0
    const removed = this.writtenSize - found.position
    await this.#settleIndexWrites()
    this.#offsetIndex!.truncateToPosition(found.position)
    this.#timeIndex!.truncateToOffset(this.relative(found.header.baseOffset))
    // The counts follow at once, so that no write of an entry past the cut starts meanwhile.
    const offsetEntries = this.#offsetIndex!.entries
    const timeEntries = this.#timeIndex!.entries
    const cutOffsetFile = this.#offsetEntriesInFile > offsetEntries
    const cutTimeFile = this.#timeEntriesInFile > timeEntries
    this.#offsetEntriesInFile = Math.min(this.#offsetEntriesInFile, offsetEntries)
    this.#timeEntriesInFile = Math.min(this.#timeEntriesInFile, timeEntries)
    this.#offsetEntriesReady = Math.min(this.#offsetEntriesReady, offsetEntries)
    this.#timeEntriesReady = Math.min(this.#timeEntriesReady, timeEntries)
    // Open files lose the same entries (Kafka truncates its indexes in place too); a closed
    // segment's files are rewritten when it becomes active (`openIndexFiles`).
    const files = this.#indexFiles
    if (files !== null && cutOffsetFile) await files.offset.truncate(offsetEntries * OFFSET_INDEX_ENTRY_BYTES)
    if (files !== null && cutTimeFile) await files.time.truncate(timeEntries * TIME_INDEX_ENTRY_BYTES)
    await this.#truncateFile(found.position)
    await this.#txnWrites
    await (await this.transactionIndex()).truncateTo(offset)
    this.size = this.writtenSize = this.#issuedSize = found.position
    this.indexFilesCurrent = false
    // Recompute the end and timestamps from the last index entry on.
    const timeLast = this.#timeIndex!.lastEntry
    this.maxTimestampMs = timeLast?.timestampMs ?? -1
    this.#relativeOffsetOfMaxTimestamp = timeLast === null ? 0 : timeLast.relativeOffset
    this.#nextRelative = null
    this.rollingBasedTimestampMs = this.size === 0 ? null : this.rollingBasedTimestampMs
    await this.loadEnd()
    if (this.size === 0) this.rollingBasedTimestampMs = null
    return removed
  }

  /**
   * Make this segment inactive: the final time index entry (Kafka's onBecomeInactiveSegment),
   * index files written and synced (and closed), the log file synced. The caller syncs the
   * directory. Every write to the segment must have completed.
   */
  async seal(): Promise<void> {
    await this.ensureIndexes()
    if (this.maxTimestampMs >= 0 && this.#nextRelative !== null) {
      this.#timeIndex!.maybeAppend(this.maxTimestampMs, this.#relativeOffsetOfMaxTimestamp, true)
    }
    await this.sync()
    await this.writeIndexFiles()
    await this.#closeIndexFiles()
  }

  /**
   * Write both index files whole and sync them: through the open files (the rest of their
   * entries), else to `.tmp` files renamed over the old ones. Every write to the segment must have
   * completed.
   */
  async writeIndexFiles(): Promise<void> {
    await this.ensureIndexes()
    const files = this.#indexFiles
    if (files !== null) {
      await this.#indexWrites
      const offsetEntries = this.#offsetIndex!.entries
      const timeEntries = this.#timeIndex!.entries
      this.#offsetEntriesReady = offsetEntries
      this.#timeEntriesReady = timeEntries
      await this.writeIndexEntries()
      const offsetBytes = offsetEntries * OFFSET_INDEX_ENTRY_BYTES
      const timeBytes = timeEntries * TIME_INDEX_ENTRY_BYTES
      if (files.offset.size() > offsetBytes) await files.offset.truncate(offsetBytes)
      if (files.time.size() > timeBytes) await files.time.truncate(timeBytes)
      await files.offset.sync()
      await files.time.sync()
      this.indexFilesCurrent = true
      return
    }
    const pairs: [string, Buffer][] = [
      [this.path(SegmentFile.index), Buffer.from(this.#offsetIndex!.bytes())],
      [this.path(SegmentFile.timeIndex), Buffer.from(this.#timeIndex!.bytes())],
    ]
    for (const [path, bytes] of pairs) {
      const tmp = `${path}${SegmentFile.tmp}`
      const f = await this.#disk.open(tmp, { create: true, truncate: true })
      try {
        if (bytes.length > 0) await f.append([bytes])
        await f.sync()
      } finally {
        await f.close()
      }
      await this.#disk.rename(tmp, path)
    }
    this.indexFilesCurrent = true
  }

  /** Whether completed writes or a truncation are not yet covered by a completed sync. */
  get unsynced(): boolean {
    return this.#syncedSize !== this.writtenSize
  }

  /**
   * Sync the log file. Covers the writes completed when it starts; a write in flight meanwhile stays
   * `unsynced` (its bytes may reach the file after the fsync), so the next flush syncs again.
   */
  async sync(): Promise<void> {
    const upTo = this.writtenSize
    const truncations = this.#truncations
    await this.#file.sync()
    const txnIndex = this.#txnIndexOpen
    if (txnIndex !== null && txnIndex.entries.length > 0) await txnIndex.flush()
    if (truncations === this.#truncations && upTo > this.#syncedSize) this.#syncedSize = upTo
  }

  /**
   * Cut the file to `size`. The sizes change first and the truncation count moves on both sides of
   * the cut: a sync that starts or ends while the file is being cut then vouches for nothing (it
   * could otherwise record the size before the cut, which appends later reach again unsynced).
   */
  async #truncateFile(size: number): Promise<void> {
    this.#readHints = null
    this.#settings.tail?.cut(this)
    this.#truncations++
    this.#syncedSize = -1
    this.size = this.writtenSize = this.#issuedSize = size
    await this.#file.truncate(size)
    this.#truncations++
  }

  /** Rename all files from the current suffix to `suffix` (`.deleted`, `.swap`, '' ...). */
  async changeSuffix(suffix: string): Promise<void> {
    await this.#closeTxnIndex()
    const exts = [SegmentFile.log, SegmentFile.index, SegmentFile.timeIndex, SegmentFile.txnIndex]
    for (const ext of exts) {
      const from = this.path(ext)
      const to = joinPath(this.dir, `${offsetFileName(this.baseOffset)}${ext}${suffix}`)
      try {
        await this.#disk.rename(from, to)
      } catch (e) {
        if (!(isNotFound(e) && ext !== SegmentFile.log)) throw e
      }
    }
    this.#suffix = suffix
  }

  /** Close the file handles and remove the files (as currently named). */
  async deleteFiles(): Promise<void> {
    this.#settings.tail?.cut(this)
    await this.#closeIndexFiles().catch(NOTHING) // the files go: a failed index write no longer matters
    await this.#closeTxnIndex().catch(NOTHING)
    await this.#file.close()
    for (const ext of [SegmentFile.log, SegmentFile.index, SegmentFile.timeIndex, SegmentFile.txnIndex]) {
      await removeIfExists(this.#disk, this.path(ext))
    }
  }

  /** Close the file handles (a failed index write is thrown once all are closed). */
  async close(): Promise<void> {
    this.#settings.tail?.cut(this)
    try {
      await this.#closeIndexFiles()
      await this.#closeTxnIndex()
    } finally {
      await this.#file.close()
    }
  }

  /**
   * The segment's aborted-transaction index (`.txnindex`), opened on first use. One Kafka would
   * refuse is removed and starts empty: the log's replay of its markers rebuilds what it needs.
   */
  transactionIndex(): Promise<TransactionIndex> {
    this.#txnIndex ??= this.#openTxnIndex()
    return this.#txnIndex
  }

  async #openTxnIndex(): Promise<TransactionIndex> {
    const path = this.path(SegmentFile.txnIndex)
    let index: TransactionIndex
    try {
      index = await TransactionIndex.open(this.#disk, path, this.baseOffset)
    } catch (e) {
      if (!(e instanceof CorruptTransactionIndexError)) throw e
      await removeIfExists(this.#disk, path)
      index = await TransactionIndex.open(this.#disk, path, this.baseOffset)
    }
    this.#txnIndexOpen = index
    return index
  }

  /**
   * Appends an aborted transaction to this segment's `.txnindex`, durably (aborts are rare: one
   * fsync each, so no later producer snapshot vouches for an entry a crash could lose). An entry at
   * or below the index's last one is there already (a replay at load) and is skipped. Serialized
   * with truncation, renames and closing, without the log's lock.
   */
  appendAbortedTxn(txn: AbortedTxn): Promise<void> {
    const run = this.#txnWrites.then(async () => {
      const index = await this.transactionIndex()
      const last = index.lastOffset
      if (last !== null && last >= txn.lastOffset) return
      await index.append(txn)
      await index.flush()
    })
    this.#txnWrites = run.catch(() => undefined)
    return run
  }

  async #closeTxnIndex(): Promise<void> {
    await this.#txnWrites
    const opening = this.#txnIndex
    this.#txnIndex = null
    this.#txnIndexOpen = null
    if (opening !== null) await (await opening).close()
  }

  /** Drop the in-memory indexes of a closed segment whose files are current (memory bound). */
  unloadIndexes(): void {
    if (this.indexFilesCurrent && this.#loadingIndexes === null) {
      this.#offsetIndex = null
      this.#timeIndex = null
    }
  }
}

const EMPTY = Buffer.alloc(0)
const NOTHING = (): void => undefined
/** Read positions remembered per segment: about one per consumer reading on through it. */
const READ_HINTS_MAX = 16

async function readIfExists(disk: Disk, path: string): Promise<Buffer | null> {
  try {
    return await disk.readFile(path)
  } catch (e) {
    if (isNotFound(e)) return null
    throw e
  }
}

/** Open (creating if missing; emptied with `truncate`) a segment's `.index` and `.timeindex`. */
async function openIndexPair(
  disk: Disk,
  offsetPath: string,
  timePath: string,
  truncate: boolean,
): Promise<{ readonly offset: DiskFile; readonly time: DiskFile }> {
  const offset = await disk.open(offsetPath, { create: true, truncate })
  try {
    return { offset, time: await disk.open(timePath, { create: true, truncate }) }
  } catch (e) {
    await offset.close().catch(NOTHING)
    throw e
  }
}

async function removeIfExists(disk: Disk, path: string): Promise<void> {
  try {
    await disk.remove(path)
  } catch (e) {
    if (!isNotFound(e)) throw e
  }
}
