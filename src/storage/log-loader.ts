/**
 * Opening a partition directory (Kafka's LogLoader): leftover files of interrupted deletions and
 * cleanings removed or finished, the segments loaded, and after an unclean stop every segment from
 * the one holding the recovery point scanned (lengths, CRC32C, offsets in order), the tail cut at
 * the first bad byte, later segments deleted and indexes rebuilt.
 */
import { type Clock, type Disk, isNotFound, joinPath, parentDir } from '../io/index.ts'
import type { BatchHeader, EndTxnMarker } from '../protocol/index.ts'
import { scanBatchHeaders } from './local-log.ts'
import { LogSegment, parseSegmentFileName, SegmentFile, type SegmentSettings } from './log-segment.ts'

/** A segment tail cut during recovery. */
export interface RecoveryReport {
  readonly segmentBaseOffset: bigint
  readonly truncatedBytes: number
  readonly problem: string
  /** Later segments deleted because they followed the cut. */
  readonly segmentsDeleted: number
}

export interface LogLoaderOptions {
  readonly disk: Disk
  readonly clock: Clock
  readonly settings: SegmentSettings
  /** Segments from the one holding it are scanned. Default 0. */
  readonly recoveryPoint?: bigint | undefined
  /** Where an empty directory's first segment starts. Default 0. */
  readonly logStartOffset?: bigint | undefined
  /** The directory's clean-shutdown marker was present: skip the scan. */
  readonly hadCleanShutdown?: boolean | undefined
  /** Called for every batch found from the recovery point on (`LogHooks.onBatch`). */
  readonly onBatch?: ((header: BatchHeader, marker: EndTxnMarker | null) => void) | undefined
  readonly warn: (message: string) => void
}

/** What a load found: at least one segment, oldest first, the last one active (its index files open). */
export interface LoadedLog {
  readonly segments: readonly LogSegment[]
  readonly recoveryReports: readonly RecoveryReport[]
}

/** The names in a partition directory that loading acts on. */
interface DirFiles {
  readonly logBases: bigint[]
  readonly swapBases: bigint[]
}

export class LogLoader {
  readonly #dir: string
  readonly #disk: Disk
  readonly #options: LogLoaderOptions
  readonly #reports: RecoveryReport[] = []

  constructor(dir: string, options: LogLoaderOptions) {
    this.#dir = dir
    this.#disk = options.disk
    this.#options = options
  }

  async load(): Promise<LoadedLog> {
    const nowMs = this.#options.clock.nowMs()
    await this.#ensureDir()
    const { logBases, swapBases } = await this.#sortFiles()
    let segments: LogSegment[] = []
    for (const base of logBases.sort(compareBigint))
      segments.push(await LogSegment.open(this.#disk, this.#dir, base, this.#options.settings, nowMs))
    for (const base of swapBases.sort(compareBigint)) segments = await this.#finishSwap(segments, base, nowMs)
    if (segments.length === 0) {
      const lso = this.#options.logStartOffset ?? 0n
      segments.push(await LogSegment.create(this.#disk, this.#dir, lso, this.#options.settings, nowMs))
      await this.#disk.syncDir(this.#dir)
    }
    if (this.#options.hadCleanShutdown === true) {
      for (const s of segments.slice(0, -1)) await s.loadLargestTimestamp()
      await segments[segments.length - 1]!.loadEnd()
    } else {
      segments = await this.#recover(segments)
    }
    await segments[segments.length - 1]!.openIndexFiles()
    return { segments, recoveryReports: this.#reports }
  }

  async #ensureDir(): Promise<void> {
    const disk = this.#disk
    if (await disk.exists(this.#dir)) return
    await disk.mkdir(this.#dir)
    await disk.syncDir(parentDir(this.#dir))
  }

  /**
   * The base offsets of the `.log` and `.log.swap` files; removes what an interrupted deletion or
   * cleaning left (`.deleted`, `.cleaned`, `.tmp`) and index files without their log.
   */
  async #sortFiles(): Promise<DirFiles> {
    const disk = this.#disk
    const names = await disk.list(this.#dir)
    const logBases: bigint[] = []
    const swapBases: bigint[] = []
    const present = new Set(names)
    for (const name of names) {
      const parsed = parseSegmentFileName(name)
      if (parsed === null) continue
      const { suffix, ext, baseOffset } = parsed
      if (suffix === SegmentFile.deleted || suffix === SegmentFile.cleaned || suffix === SegmentFile.tmp) {
        await removeIfExists(disk, joinPath(this.#dir, name))
      } else if (suffix === SegmentFile.swap) {
        if (ext === SegmentFile.log) swapBases.push(baseOffset)
      } else if (ext === SegmentFile.log) {
        logBases.push(baseOffset)
      } else if (
        (ext === SegmentFile.index || ext === SegmentFile.timeIndex || ext === SegmentFile.txnIndex) &&
        !present.has(name.replace(ext, SegmentFile.log))
      ) {
        await removeIfExists(disk, joinPath(this.#dir, name)) // an index without its log
      }
    }
    return { logBases, swapBases }
  }

  /** A cleaning interrupted after its swap files were complete: finish it (Kafka's LogLoader). */
  async #finishSwap(segments: LogSegment[], base: bigint, nowMs: number): Promise<LogSegment[]> {
    const dir = this.#dir
    const swap = await LogSegment.open(this.#disk, dir, base, this.#options.settings, nowMs, SegmentFile.swap)
    const { problem } = await swap.rebuild('validate')
    if (problem !== null) {
      await swap.deleteFiles() // a swap file is synced before it is named .swap: this is damage
      this.#options.warn(`log ${dir}: discarded damaged swap segment ${base}: ${problem}`)
      return segments
    }
    const end = swap.nextOffset!
    const replaced = segments.filter((s) => s.baseOffset >= base && s.baseOffset < end)
    for (const s of replaced) {
      await s.changeSuffix(SegmentFile.deleted)
      await s.deleteFiles()
    }
    await swap.writeIndexFiles()
    await swap.changeSuffix('')
    const kept = segments.filter((s) => !replaced.includes(s))
    kept.push(swap)
    kept.sort((a, b) => compareBigint(a.baseOffset, b.baseOffset))
    await this.#disk.syncDir(dir)
    return kept
  }

  /** Scan segments from the one holding the recovery point; cut at the first bad byte. */
  async #recover(segments: LogSegment[]): Promise<LogSegment[]> {
    const rp = this.#options.recoveryPoint ?? 0n
    let first = 0
    for (let i = 0; i < segments.length; i++) if (segments[i]!.baseOffset <= rp) first = i
    for (const s of segments.slice(0, first)) await s.loadLargestTimestamp()
    const kept = segments.slice(0, first)
    const recovered: LogSegment[] = []
    for (let i = first; i < segments.length; i++) {
      const segment = segments[i]!
      const { truncatedBytes, problem } = await segment.recover()
      await segment.sync()
      kept.push(segment)
      recovered.push(segment)
      await this.#replayBatches(segment)
      if (truncatedBytes > 0 || problem !== null) {
        await this.#deleteAfterCut(segment, segments.slice(i + 1), truncatedBytes, problem)
        break
      }
    }
    // Closed segments recovered here get their index files; the last stays active.
    const last = kept[kept.length - 1]
    for (const s of recovered) if (s !== last) await s.seal()
    await this.#disk.syncDir(this.#dir)
    return kept
  }

  /** Delete the segments after one recovery cut, and report the cut. */
  async #deleteAfterCut(
    segment: LogSegment,
    later: readonly LogSegment[],
    truncatedBytes: number,
    problem: string | null,
  ): Promise<void> {
    for (const s of later) {
      await s.changeSuffix(SegmentFile.deleted)
      await s.deleteFiles()
    }
    const report: RecoveryReport = {
      segmentBaseOffset: segment.baseOffset,
      truncatedBytes,
      problem: problem ?? 'unknown',
      segmentsDeleted: later.length,
    }
    this.#reports.push(report)
    this.#options.warn(
      `log ${this.#dir}: recovery cut ${truncatedBytes} bytes from segment ${segment.baseOffset} (${report.problem}) and deleted ${later.length} later segments`,
    )
  }

  async #replayBatches(segment: LogSegment): Promise<void> {
    const onBatch = this.#options.onBatch
    if (onBatch === undefined) return
    await scanBatchHeaders([segment], segment.baseOffset, onBatch, this.#options.settings.readBufferBytes)
  }
}

function compareBigint(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0
}

async function removeIfExists(disk: Disk, path: string): Promise<void> {
  try {
    await disk.remove(path)
  } catch (e) {
    if (!isNotFound(e)) throw e
  }
}
