/**
 * The checks an append gets before it is queued (Kafka's LogValidator): each batch's structure and
 * CRC32C (`scanAppend`), the size limits, a follower's offsets in order, CreateTime bounds, keys in
 * a compacted log; and LogAppendTime stamped. Synchronous, no object made per append.
 */
import type { Clock } from '../io/index.ts'
import {
  BatchOffsets,
  type BatchScanError,
  decodeBatch,
  ERRORS,
  ErrorCode,
  type ScanOptions,
  setMaxTimestampAndLogAppendTime,
} from '../protocol/index.ts'
import { type LogConfig, NEVER_MS } from './log-config.ts'
import { type AppendScan, batchSize, readInt64AsNumber, scanAppend } from './scan-append.ts'

/** Where an append comes from (`AppendOptions.origin`). */
export type AppendOrigin = 'client' | 'coordinator' | 'replication'

/** A refused append: a Kafka error code and its message. */
export interface AppendRefusal {
  readonly errorCode: Exclude<ErrorCode, 0>
  readonly errorMessage: string
}

const ERROR_CODE_BY_NAME = new Map<string, Exclude<ErrorCode, 0>>(
  ERRORS.filter((e) => e.code !== 0).map((e) => [e.name, e.code as Exclude<ErrorCode, 0>]),
)

/** A follower's batches: as stored in a log, and an empty fetch is no error. */
const REPLICATION_SCAN: ScanOptions = { origin: 'log', requireBatch: false }

interface ScanOptionsFor {
  readonly messageBytesMax: number
  readonly client: ScanOptions
  readonly log: ScanOptions
}

export class LogValidator {
  readonly #clock: Clock
  /** What the last `validate` found (one append validates at a time: it is synchronous). */
  readonly scan: AppendScan = { batches: 0, records: 0, offsets: 0, maxTimestampMs: -1 }
  /** LogAppendTime stamped by the last `validate` (-1 under CreateTime). */
  logAppendTimeMs = -1
  /** `scanAppend` options by origin, made again when max.message.bytes changes. */
  #scanOptionsFor: ScanOptionsFor | null = null
  /** The latest time the clock gave this log (ms): a lower bound of the time now. */
  #clockSeenMs = Number.MIN_SAFE_INTEGER

  constructor(clock: Clock) {
    this.#clock = clock
  }

  /**
   * The clock's time (ms), remembered. Read at least once per write round, so a wall clock stepped
   * back (NTP) is seen by the next round's appends.
   */
  readClock(): number {
    const nowMs = this.#clock.nowMs()
    this.#clockSeenMs = nowMs
    return nowMs
  }

  /**
   * Check an append's batches (structure and CRC, then the log's own rules) and stamp LogAppendTime;
   * fills `scan` and `logAppendTimeMs`. Returns the refusal, or null.
   */
  validate(batches: Buffer, origin: AppendOrigin, config: LogConfig): AppendRefusal | null {
    const replication = origin === 'replication'
    const error = scanAppend(batches, this.#scanOptions(origin, config), this.scan)
    if (error !== null) return scanError(error)
    if (batches.length > config.segmentBytes && !replication) {
      return {
        errorCode: ErrorCode.RecordListTooLarge,
        errorMessage: `${batches.length} bytes of batches exceed segment.bytes ${config.segmentBytes}`,
      }
    }
    this.logAppendTimeMs = -1
    if (replication) return checkOffsetsIncrease(batches, this.scan.batches)
    const logAppendTime = config.messageTimestampType === 'LogAppendTime'
    if (!logAppendTime && !config.cleanupPolicy.compact && this.#allPassTimestamps(config)) return null
    return this.#checkEachBatch(batches, config, logAppendTime)
  }

  /**
   * Whether the largest maxTimestamp (from the scan) passes the CreateTime bounds, so every batch
   * does: no walk over them. Under the default bounds (NEVER_MS, Kafka's Long.MAX_VALUE) only a
   * maxTimestamp past NEVER_MS can be refused (the clock is below it). Under Kafka 4's defaults
   * (before: never, after: 1 h) only the after bound applies, and a time the clock gave earlier
   * vouches for acceptance: `max - earlier <= after` implies `max - now <= after` while the clock
   * goes forward (a step back is seen at the next round's reading).
   */
  #allPassTimestamps(config: LogConfig): boolean {
    const msMax = this.scan.maxTimestampMs
    if (boundsNever(config)) return msMax <= NEVER_MS
    return (
      config.messageTimestampBeforeMsMax >= NEVER_MS &&
      msMax - this.#clockSeenMs <= config.messageTimestampAfterMsMax
    )
  }

  /**
   * The per-batch rules: LogAppendTime stamped, CreateTime bounds, keys in a compacted log. The clock
   * is read here only for a batch that looks too new (it was read per append: ~4% of its CPU).
   */
  #checkEachBatch(batches: Buffer, config: LogConfig, logAppendTime: boolean): AppendRefusal | null {
    const never = boundsNever(config)
    const afterOnly = config.messageTimestampBeforeMsMax >= NEVER_MS
    const compact = config.cleanupPolicy.compact
    const count = this.scan.batches
    let nowMs: number | null = null
    for (let i = 0, at = 0; i < count; i++, at += batchSize(batches, at)) {
      if (logAppendTime) {
        nowMs ??= this.readClock()
        this.logAppendTimeMs = nowMs
        setMaxTimestampAndLogAppendTime(batches, at, BigInt(nowMs), { baseTimestamp: false })
      } else if (!never) {
        const msMax = readInt64AsNumber(batches, at + BatchOffsets.maxTimestamp)
        if (afterOnly && nowMs === null && msMax - this.#clockSeenMs <= config.messageTimestampAfterMsMax) {
          // Accepted against an earlier reading of the clock: accepted now.
        } else {
          nowMs ??= this.readClock()
          const refused = checkTimestamps(batches, at, nowMs, config)
          if (refused !== null) return { errorCode: ErrorCode.InvalidTimestamp, errorMessage: refused }
        }
      } else if (readInt64AsNumber(batches, at + BatchOffsets.maxTimestamp) > NEVER_MS) {
        nowMs ??= this.readClock()
        const refused = checkTimestamps(batches, at, nowMs, config)
        if (refused !== null) return { errorCode: ErrorCode.InvalidTimestamp, errorMessage: refused }
      }
      if (compact) {
        const refused = checkKeys(batches, at)
        if (refused !== null) return refused
      }
    }
    return null
  }

  /** The checks an append's batches get (no object made per append). */
  #scanOptions(origin: AppendOrigin, config: LogConfig): ScanOptions {
    if (origin === 'replication') return REPLICATION_SCAN
    let cached = this.#scanOptionsFor
    if (cached === null || cached.messageBytesMax !== config.messageBytesMax) {
      const batchBytesMax = config.messageBytesMax
      cached = {
        messageBytesMax: batchBytesMax,
        client: { origin: 'client', batchBytesMax },
        log: { origin: 'log', batchBytesMax },
      }
      this.#scanOptionsFor = cached
    }
    return origin === 'client' ? cached.client : cached.log
  }
}

/** Neither CreateTime bound applies (both NEVER_MS, Kafka's Long.MAX_VALUE). */
function boundsNever(config: LogConfig): boolean {
  return config.messageTimestampAfterMsMax >= NEVER_MS && config.messageTimestampBeforeMsMax >= NEVER_MS
}

/** A follower's batches keep their offsets: each must start past the one before. */
function checkOffsetsIncrease(batches: Buffer, count: number): AppendRefusal | null {
  let previousLast = -1n
  for (let i = 0, at = 0; i < count; i++, at += batchSize(batches, at)) {
    const baseOffset = batches.readBigInt64BE(at)
    if (baseOffset <= previousLast) {
      return { errorCode: ErrorCode.CorruptMessage, errorMessage: 'batch offsets are not increasing' }
    }
    previousLast = baseOffset + BigInt(batches.readInt32BE(at + BatchOffsets.lastOffsetDelta))
  }
  return null
}

function scanError(e: BatchScanError): AppendRefusal {
  return {
    errorCode: ERROR_CODE_BY_NAME.get(e.errorName) ?? ErrorCode.CorruptMessage,
    errorMessage: e.message,
  }
}

/** CreateTime bounds (message.timestamp.before/after.max.ms), judged on the batch header at `at`. */
function checkTimestamps(buf: Buffer, at: number, nowMs: number, config: LogConfig): string | null {
  const max = readInt64AsNumber(buf, at + BatchOffsets.maxTimestamp)
  const base = readInt64AsNumber(buf, at + BatchOffsets.baseTimestamp)
  if (max >= 0 && max - nowMs > config.messageTimestampAfterMsMax) {
    return `timestamp ${max} is more than message.timestamp.after.max.ms ${config.messageTimestampAfterMsMax} ahead of the broker's time ${nowMs}`
  }
  if (base >= 0 && nowMs - base > config.messageTimestampBeforeMsMax) {
    return `timestamp ${base} is more than message.timestamp.before.max.ms ${config.messageTimestampBeforeMsMax} behind the broker's time ${nowMs}`
  }
  return null
}

/** A compacted log refuses records without a key (Kafka's LogValidator: CORRUPT_MESSAGE). */
function checkKeys(buf: Buffer, at: number): AppendRefusal | null {
  let records: ReturnType<typeof decodeBatch>['records']
  try {
    records = decodeBatch(buf, at, { verifyCrc: false }).records
  } catch (e) {
    return { errorCode: ErrorCode.CorruptMessage, errorMessage: `undecodable batch: ${String(e)}` }
  }
  for (const r of records) {
    if (r.key === null) {
      return {
        errorCode: ErrorCode.CorruptMessage,
        errorMessage: 'compacted topic cannot accept message without key',
      }
    }
  }
  return null
}
