/**
 * Log compaction (cleanup.policy=compact): choose the dirtiest log, map each key in its dirty part to
 * its latest offset in bounded memory, and rewrite its closed segments keeping the latest record per
 * key at its original offset. Tombstones stay for delete.retention.ms after their first cleaning.
 */
import type { Clock } from '../io/index.ts'
import { assert } from '../model/index.ts'
import {
  type BatchHeader,
  BatchOffsets,
  type CompressionCodec,
  compressionOf,
  decodeBatch,
  encodeBatch,
  hasDeleteHorizon,
  isControl,
  isTransactional,
  type KafkaRecord,
  NO_PRODUCER_ID,
  TimestampType,
  timestampTypeOf,
} from '../protocol/index.ts'
import { FileBatchReader, isProblem } from './file-batch-reader.ts'
import { NEVER_MS } from './log-config.ts'
import type { LogSegment } from './log-segment.ts'
import { OffsetMap } from './offset-map.ts'
import type { PartitionLog } from './partition-log.ts'
import type { AbortedTxn } from './transaction-index.ts'

const INT32_MAX = 0x7fffffff
/** Producers tracked for "is this its last batch" before the cleaner keeps every empty idempotent batch. */
const PRODUCERS_TRACKED_MAX = 100_000

export interface CleanerSettings {
  /** `log.cleaner.dedupe.buffer.size`: bytes of the key -> offset map. */
  readonly dedupeBufferBytes: number
  /** `log.cleaner.io.buffer.size`: read buffer, and write batching, in bytes. */
  readonly ioBufferBytes: number
  /** `log.cleaner.io.buffer.load.factor`. */
  readonly loadFactor: number
  readonly clock: Clock
}

export interface CleanerCandidate {
  readonly log: PartitionLog
  /** From cleaner-offset-checkpoint (or the log start). */
  readonly firstDirty: bigint
  /** Nothing at or above it is cleaned (the last stable offset); default the log end. */
  readonly upperBound?: bigint
}

export interface ChosenLog extends CleanerCandidate {
  readonly firstDirtyOffset: bigint
  readonly firstUncleanableOffset: bigint
  /** dirty / (clean + dirty) bytes. */
  readonly dirtyRatio: number
}

export interface CleanerStats {
  bytesRead: number
  bytesWritten: number
  recordsRead: number
  recordsRetained: number
  tombstonesDropped: number
  segmentsCleaned: number
  cleanings: number
}

/** What one cleaning did: the next first dirty offset, and counters. */
export interface CleanResult {
  readonly endOffset: bigint
  readonly stats: CleanerStats
}

function emptyStats(): CleanerStats {
  return {
    bytesRead: 0,
    bytesWritten: 0,
    recordsRead: 0,
    recordsRetained: 0,
    tombstonesDropped: 0,
    segmentsCleaned: 0,
    cleanings: 0,
  }
}

function add(into: CleanerStats, s: CleanerStats): void {
  for (const k of Object.keys(s) as (keyof CleanerStats)[]) into[k] += s[k]
}

/** The cleaner of one log directory: one log at a time, in the background, aborted by `stop`. */
export class LogCleaner {
  readonly #settings: CleanerSettings
  #map: OffsetMap | null = null
  #running: Promise<unknown> = Promise.resolve()
  #stopped = false
  /** Totals over every cleaning. */
  readonly stats: CleanerStats = emptyStats()

  constructor(settings: CleanerSettings) {
    assert(settings.ioBufferBytes >= 1024, 'log.cleaner.io.buffer.size must be at least 1 KiB')
    this.#settings = settings
  }

  /** Stop: a cleaning in progress aborts at its next batch and leaves the log as it was. */
  stop(): void {
    this.#stopped = true
  }

  /** Resolves when no cleaning is running. */
  async idle(): Promise<void> {
    await this.#running.catch(() => undefined)
  }

  /**
   * The log most in need of cleaning: highest dirty ratio among those at or above their
   * `min.cleanable.dirty.ratio`, or any past `max.compaction.lag.ms` first. Null when none.
   */
  choose(candidates: readonly CleanerCandidate[]): ChosenLog | null {
    const nowMs = this.#settings.clock.nowMs()
    let best: ChosenLog | null = null
    let bestUrgent = false
    for (const c of candidates) {
      const chosen = measure(c, nowMs)
      if (chosen === null) continue
      const config = c.log.config
      const dirty = dirtySegments(c.log.segments, chosen.firstDirtyOffset, chosen.firstUncleanableOffset)
      const firstDirtyTs = dirty[0]?.rollingBasedTimestampMs ?? dirty[0]?.maxTimestampMs ?? -1
      const urgent =
        config.compactionLagMsMax < NEVER_MS &&
        firstDirtyTs >= 0 &&
        nowMs - firstDirtyTs > config.compactionLagMsMax
      if (!urgent && chosen.dirtyRatio < config.cleanableDirtyRatioMin) continue
      if (
        best === null ||
        (urgent && !bestUrgent) ||
        (urgent === bestUrgent && chosen.dirtyRatio > best.dirtyRatio)
      ) {
        best = chosen
        bestUrgent = urgent
      }
    }
    return best
  }

  /** Clean one chosen log. Null when nothing could be cleaned or the log changed underneath. */
  clean(chosen: ChosenLog): Promise<CleanResult | null> {
    const run = this.#running.catch(() => undefined).then(() => this.#clean(chosen))
    this.#running = run
    return run
  }

  async #clean(chosen: ChosenLog): Promise<CleanResult | null> {
    if (this.#stopped) return null
    const { log, firstDirtyOffset, firstUncleanableOffset } = chosen
    const nowMs = this.#settings.clock.nowMs()
    const stats = emptyStats()
    this.#map ??= new OffsetMap(this.#settings.dedupeBufferBytes, this.#settings.loadFactor)
    const map = this.#map
    map.clear()
    const segments = log.segments
    const dirty = dirtySegments(segments, firstDirtyOffset, firstUncleanableOffset)
    const lastBatchOfProducer = new Map<bigint, bigint>()
    // Aborted transactions' records neither enter the map nor survive (Kafka's
    // CleanedTransactionMetadata): an aborted write of a key never shadows its committed value.
    const aborted = abortedRanges(await log.collectAbortedTxns(log.logStartOffset, firstUncleanableOffset))
    let endOffset = firstDirtyOffset
    // 1. The map: every key in the dirty part, to its latest offset, until the memory is full.
    build: for (const segment of dirty) {
      const start =
        segment.baseOffset < firstDirtyOffset ? await segment.translateOffset(firstDirtyOffset) : null
      const reader = new FileBatchReader(
        segment.file,
        start?.position ?? 0,
        segment.writtenSize,
        this.#settings.ioBufferBytes,
      )
      for (;;) {
        if (this.#stopped) return null
        const b = await reader.next('bytes')
        if (b === null) break
        if (isProblem(b))
          throw new Error(`cleaner: segment ${segment.baseOffset} of ${log.dir} is damaged: ${b.reason}`)
        if (b.lastOffset < firstDirtyOffset) continue
        if (b.lastOffset >= firstUncleanableOffset) break build
        stats.bytesRead += b.size
        if (!isControl(b.header.attributes) && !isAbortedData(aborted, b.header)) {
          const { records } = decodeBatch(b.bytes!, 0, { verifyCrc: false })
          if (records.length > map.remaining) break build
          for (const r of records)
            if (r.key !== null && r.offset >= firstDirtyOffset) map.put(r.key, Number(r.offset))
        }
        if (b.header.producerId !== NO_PRODUCER_ID && lastBatchOfProducer.size < PRODUCERS_TRACKED_MAX) {
          lastBatchOfProducer.set(b.header.producerId, b.lastOffset)
        }
        endOffset = b.lastOffset + 1n
      }
      const next = segments[segments.indexOf(segment) + 1]
      if (next !== undefined && next.baseOffset <= firstUncleanableOffset) endOffset = next.baseOffset
    }
    if (endOffset <= firstDirtyOffset) return null // the map cannot hold even one batch
    const producersComplete = lastBatchOfProducer.size < PRODUCERS_TRACKED_MAX

    // 2. Rewrite every closed segment below endOffset, in groups that fit one segment.
    const toClean = segments.slice(0, -1).filter((_, i) => segments[i + 1]!.baseOffset <= endOffset)
    const deleteHorizonMs = nowMs + log.config.deleteRetentionMs
    const markers = new MarkerTracker(aborted)
    for (const group of groupSegments(toClean, segments, log.config.segmentBytes)) {
      const retain = (header: BatchHeader, isLastBatchOfGroup: boolean) => ({
        map,
        nowMs,
        deleteHorizonMs,
        abortedData: markers.onBatch(header),
        emptyMarker: markers.emptyMarker(header),
        keepEmpty:
          isLastBatchOfGroup ||
          (header.producerId !== NO_PRODUCER_ID &&
            (!producersComplete ||
              (lastBatchOfProducer.get(header.producerId) ?? header.baseOffset) <=
                header.baseOffset + BigInt(header.lastOffsetDelta))),
      })
      const cleaned = await this.#cleanGroup(log, group, retain, stats, markers.dropped)
      if (cleaned === null) return null
      if (!(await log.replaceSegments(group, cleaned))) return null
      stats.segmentsCleaned += group.length
    }
    stats.cleanings = 1
    add(this.stats, stats)
    return { endOffset, stats }
  }

  /** Write the cleaned copy of `group` as one `.cleaned` segment (synced, indexes written). */
  async #cleanGroup(
    log: PartitionLog,
    group: readonly LogSegment[],
    retain: (header: BatchHeader, isLastBatchOfGroup: boolean) => RetainRule,
    stats: CleanerStats,
    droppedMarkers: Set<bigint>,
  ): Promise<LogSegment | null> {
    const cleaned = await log.createCleanedSegment(group[0]!.baseOffset)
    let pending: Buffer[] = []
    let pendingBytes = 0
    const flushPending = async () => {
      await cleaned.write(pending)
      stats.bytesWritten += pendingBytes
      pending = []
      pendingBytes = 0
    }
    try {
      for (let g = 0; g < group.length; g++) {
        const segment = group[g]!
        const reader = new FileBatchReader(segment.file, 0, segment.writtenSize, this.#settings.ioBufferBytes)
        let b = await reader.next('bytes')
        while (b !== null) {
          if (this.#stopped) {
            await cleaned.deleteFiles()
            return null
          }
          if (isProblem(b))
            throw new Error(`cleaner: segment ${segment.baseOffset} of ${log.dir} is damaged: ${b.reason}`)
          const bytes = Buffer.from(b.bytes!)
          const header = b.header
          b = await reader.next('bytes')
          const isLast = g === group.length - 1 && b === null
          const out = filterBatch(bytes, header, retain(header, isLast), stats)
          if (out === null) {
            if (isControl(header.attributes)) droppedMarkers.add(header.baseOffset)
            continue
          }
          cleaned.registerAppend(
            out.length,
            cleaned.relative(header.baseOffset + BigInt(header.lastOffsetDelta)),
            Number(out.readBigInt64BE(BatchOffsets.maxTimestamp)),
          )
          pending.push(out)
          pendingBytes += out.length
          if (pendingBytes >= this.#settings.ioBufferBytes) await flushPending()
        }
      }
      await flushPending()
      // The group's aborted transactions go with their markers into the cleaned segment's index
      // (not those whose marker was removed).
      for (const segment of group) {
        const entries = (await segment.transactionIndex()).entries
        if (entries.length > 0) {
          const index = await cleaned.transactionIndex()
          for (const txn of entries) if (!droppedMarkers.has(txn.lastOffset)) await index.append(txn)
        }
      }
      await cleaned.seal()
    } catch (e) {
      await cleaned.deleteFiles().catch(() => undefined)
      throw e
    }
    return cleaned
  }
}

interface RetainRule {
  readonly map: OffsetMap
  readonly nowMs: number
  /** The horizon to stamp on a batch whose tombstones are cleaned for the first time. */
  readonly deleteHorizonMs: number
  /** Keep the batch header even when no record survives (producer state, segment end). */
  readonly keepEmpty: boolean
  /** A batch of an aborted transaction: none of its records is kept. */
  readonly abortedData: boolean
  /**
   * A COMMIT or ABORT marker none of whose transaction's batches this cleaning met: it gets a
   * delete horizon, and once past it goes (unless it may be its producer's last batch).
   */
  readonly emptyMarker: boolean
}

/**
 * Kafka's CleanedTransactionMetadata over one cleaning, batch by batch in offset order (which
 * covers the log from its start): which batches are aborted data, and which markers end a
 * transaction whose batches are all gone.
 */
class MarkerTracker {
  readonly #aborted: AbortedRanges
  /** Producers whose current transaction showed a batch in this cleaning. */
  readonly #withBatches = new Set<bigint>()
  /** Offsets of the markers this cleaning removed. */
  readonly dropped = new Set<bigint>()

  constructor(aborted: AbortedRanges) {
    this.#aborted = aborted
  }

  /** Notes a data batch; whether it is aborted data. */
  onBatch(header: BatchHeader): boolean {
    if (!isTransactional(header.attributes) || isControl(header.attributes)) return false
    this.#withBatches.add(header.producerId)
    return isAbortedData(this.#aborted, header)
  }

  /** Notes a marker; whether its transaction showed no batch (an empty marker). */
  emptyMarker(header: BatchHeader): boolean {
    if (!isControl(header.attributes) || !isTransactional(header.attributes)) return false
    return !this.#withBatches.delete(header.producerId)
  }
}

/** Per producer, the offset ranges of its aborted transactions (first offset to marker). */
type AbortedRanges = ReadonlyMap<bigint, readonly AbortedTxn[]>

function abortedRanges(txns: readonly AbortedTxn[]): AbortedRanges {
  const out = new Map<bigint, AbortedTxn[]>()
  for (const t of txns) {
    const list = out.get(t.producerId)
    if (list === undefined) out.set(t.producerId, [t])
    else list.push(t)
  }
  return out
}

/** A transactional data batch inside one of its producer's aborted transactions. */
function isAbortedData(aborted: AbortedRanges, header: BatchHeader): boolean {
  if (aborted.size === 0 || !isTransactional(header.attributes) || isControl(header.attributes)) return false
  const ranges = aborted.get(header.producerId)
  return ranges?.some((t) => t.firstOffset <= header.baseOffset && header.baseOffset < t.lastOffset) === true
}

/**
 * The batch with only the records to keep: the latest per key, tombstones until their horizon, no
 * record without a key. The input bytes when nothing changes; null when nothing is kept.
 */
function filterBatch(
  bytes: Buffer,
  header: BatchHeader,
  rule: RetainRule,
  stats: CleanerStats,
): Buffer | null {
  if (isControl(header.attributes)) return filterMarker(bytes, header, rule)
  const { records } = decodeBatch(bytes, 0, { verifyCrc: false })
  stats.recordsRead += records.length
  const horizonMs = hasDeleteHorizon(header.attributes) ? Number(header.baseTimestamp) : null
  const kept: KafkaRecord[] = []
  let tombstones = 0
  for (const r of records) {
    if (r.key === null || rule.abortedData) continue
    const latest = rule.map.get(r.key)
    if (latest > Number(r.offset)) continue
    if (r.value === null) {
      if (horizonMs !== null && rule.nowMs >= horizonMs) {
        stats.tombstonesDropped++
        continue
      }
      tombstones++
    }
    kept.push(r)
  }
  stats.recordsRetained += kept.length
  const needsHorizon = tombstones > 0 && horizonMs === null
  if (kept.length === records.length && !needsHorizon) return bytes
  if (kept.length === 0 && !rule.keepEmpty) return null
  const logAppendTime = timestampTypeOf(header.attributes) === TimestampType.logAppendTime
  const horizon = needsHorizon
    ? BigInt(rule.deleteHorizonMs)
    : horizonMs !== null
      ? BigInt(horizonMs)
      : undefined
  return encodeBatch({
    records: kept.map((r) => ({
      key: r.key,
      value: r.value,
      headers: r.headers,
      timestamp: r.timestamp,
      offsetDelta: r.offsetDelta,
    })),
    baseOffset: header.baseOffset,
    partitionLeaderEpoch: header.partitionLeaderEpoch,
    compression: compressionOf(header.attributes) as CompressionCodec,
    producerId: header.producerId,
    producerEpoch: header.producerEpoch,
    baseSequence: header.baseSequence,
    transactional: isTransactional(header.attributes),
    lastOffsetDelta: header.lastOffsetDelta,
    ...(horizon !== undefined && kept.length > 0 ? { deleteHorizonMs: horizon } : {}),
    ...(logAppendTime
      ? { timestampType: TimestampType.logAppendTime, logAppendTime: header.maxTimestamp }
      : {}),
  })
}

/**
 * A control batch: kept unless it is an empty marker (Kafka's rule: `delete.retention.ms` after the
 * cleaning that first found it empty, stamped as its delete horizon), and always when it may be
 * its producer's last batch.
 */
function filterMarker(bytes: Buffer, header: BatchHeader, rule: RetainRule): Buffer | null {
  if (!rule.emptyMarker || rule.keepEmpty) return bytes
  if (hasDeleteHorizon(header.attributes)) return rule.nowMs >= Number(header.baseTimestamp) ? null : bytes
  const { records } = decodeBatch(bytes, 0, { verifyCrc: false })
  return encodeBatch({
    records: records.map((r) => ({
      key: r.key,
      value: r.value,
      headers: r.headers,
      timestamp: r.timestamp,
      offsetDelta: r.offsetDelta,
    })),
    baseOffset: header.baseOffset,
    partitionLeaderEpoch: header.partitionLeaderEpoch,
    producerId: header.producerId,
    producerEpoch: header.producerEpoch,
    baseSequence: header.baseSequence,
    transactional: true,
    control: true,
    lastOffsetDelta: header.lastOffsetDelta,
    deleteHorizonMs: BigInt(rule.deleteHorizonMs),
  })
}

/** Where cleaning may start and must stop, and the dirty ratio; null when nothing is dirty. */
function measure(c: CleanerCandidate, nowMs: number): ChosenLog | null {
  const log = c.log
  const segments = log.segments
  const active = segments[segments.length - 1]!
  let firstDirty = c.firstDirty
  if (firstDirty < log.logStartOffset) firstDirty = log.logStartOffset
  if (firstDirty > active.baseOffset) firstDirty = active.baseOffset
  let firstUncleanable = active.baseOffset
  if (c.upperBound !== undefined && c.upperBound < firstUncleanable) firstUncleanable = c.upperBound
  const lagMs = log.config.compactionLagMsMin
  if (lagMs > 0) {
    // min.compaction.lag.ms: the first segment with a record younger than the lag, and all after it.
    for (let i = 0; i < segments.length - 1; i++) {
      const s = segments[i]!
      if (s.baseOffset >= firstUncleanable) break
      if (segments[i + 1]!.baseOffset <= firstDirty) continue
      if (s.maxTimestampMs >= 0 && nowMs - s.maxTimestampMs < lagMs) {
        firstUncleanable = s.baseOffset
        if (firstUncleanable < firstDirty) firstUncleanable = firstDirty
        break
      }
    }
  }
  if (firstDirty >= firstUncleanable) return null
  let cleanBytes = 0
  let dirtyBytes = 0
  for (let i = 0; i < segments.length - 1; i++) {
    const s = segments[i]!
    const end = segments[i + 1]!.baseOffset
    if (end <= log.logStartOffset) continue
    if (end <= firstDirty) cleanBytes += s.size
    else if (end <= firstUncleanable) dirtyBytes += s.size
  }
  if (dirtyBytes === 0) return null
  return {
    ...c,
    firstDirtyOffset: firstDirty,
    firstUncleanableOffset: firstUncleanable,
    dirtyRatio: dirtyBytes / (cleanBytes + dirtyBytes),
  }
}

/** Closed segments holding offsets in [firstDirty, firstUncleanable), each wholly below the bound. */
function dirtySegments(
  segments: readonly LogSegment[],
  firstDirty: bigint,
  firstUncleanable: bigint,
): LogSegment[] {
  const out: LogSegment[] = []
  for (let i = 0; i < segments.length - 1; i++) {
    const end = segments[i + 1]!.baseOffset
    if (end > firstDirty && end <= firstUncleanable) out.push(segments[i]!)
  }
  return out
}

/** Consecutive segments whose total size fits `segmentBytes` and offsets fit one segment (int32). */
function groupSegments(
  toClean: readonly LogSegment[],
  all: readonly LogSegment[],
  segmentBytes: number,
): LogSegment[][] {
  const groups: LogSegment[][] = []
  let i = 0
  while (i < toClean.length) {
    const group = [toClean[i]!]
    let bytes = toClean[i]!.size
    i++
    while (i < toClean.length) {
      const s = toClean[i]!
      const end = all[all.indexOf(s) + 1]!.baseOffset
      if (bytes + s.size > segmentBytes || end - 1n - group[0]!.baseOffset > BigInt(INT32_MAX)) break
      group.push(s)
      bytes += s.size
      i++
    }
    groups.push(group)
  }
  return groups
}
