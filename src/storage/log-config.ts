/**
 * Per-log settings under Kafka's names (topic keys `segment.bytes`, broker keys `log.segment.bytes`)
 * and the per-directory manager settings. Parsing only: no I/O, no defaults hidden elsewhere.
 */
import { assert } from '../model/index.ts'

/** Kafka's Long.MAX_VALUE for "never" settings, as a JS number (comparisons only). */
export const NEVER_MS = Number.MAX_SAFE_INTEGER
const KIB = 1024
const MIB = 1024 * KIB
const GIB = 1024 * MIB
const DAY_MS = 24 * 60 * 60 * 1000

export interface CleanupPolicy {
  /** Retention by time and size deletes old segments (`delete`). */
  readonly delete: boolean
  /** The cleaner keeps the latest record per key (`compact`). */
  readonly compact: boolean
}

/** The settings of one partition log. Every field is a Kafka topic config; units are in the name. */
export interface LogConfig {
  /** `segment.bytes`: roll the active segment before it passes this size. */
  readonly segmentBytes: number
  /** `segment.ms`: roll the active segment once its first batch is this old. */
  readonly segmentMs: number
  /** `segment.index.bytes`: the largest offset index (and so time index) a segment may have. */
  readonly segmentIndexBytes: number
  /** `index.interval.bytes`: add an offset index entry after this many bytes of batches. */
  readonly indexIntervalBytes: number
  /** `flush.messages`: fsync once this many records are unflushed (NEVER_MS-sized: never). */
  readonly flushMessages: number
  /** `flush.ms`: fsync when the last flush is this old (checked by the manager's flush scheduler). */
  readonly flushMs: number
  /**
   * `flush.on.ack` (Weir's own key, default true): callers that acknowledge `acks=all` wait for
   * `flush()` first, so an acknowledged write survives a machine crash. Safe by default.
   */
  readonly flushOnAck: boolean
  /** `retention.ms`: delete closed segments whose largest timestamp is older; -1: keep forever. */
  readonly retentionMs: number
  /** `retention.bytes`: delete oldest closed segments while the log is larger; -1: no limit. */
  readonly retentionBytes: number
  /** `cleanup.policy`: `delete`, `compact`, or both. */
  readonly cleanupPolicy: CleanupPolicy
  /** `min.cleanable.dirty.ratio`: clean a log once dirty / (clean + dirty) bytes reach this. */
  readonly minCleanableDirtyRatio: number
  /** `delete.retention.ms`: how long the cleaner keeps a tombstone after it first cleans it. */
  readonly deleteRetentionMs: number
  /** `min.compaction.lag.ms`: records younger than this are never compacted. */
  readonly minCompactionLagMs: number
  /** `max.compaction.lag.ms`: a dirty record older than this makes its log due for cleaning. */
  readonly maxCompactionLagMs: number
  /** `file.delete.delay.ms`: a deleted segment stays as `.deleted` files this long. */
  readonly fileDeleteDelayMs: number
  /** `max.message.bytes`: the largest record batch accepted. */
  readonly maxMessageBytes: number
  /** `message.timestamp.type`. */
  readonly messageTimestampType: 'CreateTime' | 'LogAppendTime'
  /** `message.timestamp.before.max.ms`: CreateTime may be at most this far in the past. */
  readonly messageTimestampBeforeMaxMs: number
  /** `message.timestamp.after.max.ms`: CreateTime may be at most this far in the future. */
  readonly messageTimestampAfterMaxMs: number
}

/** Kafka 4's defaults, with Weir's `flush.on.ack=true`. */
export const DEFAULT_LOG_CONFIG: LogConfig = Object.freeze({
  segmentBytes: GIB,
  segmentMs: 7 * DAY_MS,
  segmentIndexBytes: 10 * MIB,
  indexIntervalBytes: 4096,
  flushMessages: NEVER_MS,
  flushMs: NEVER_MS,
  flushOnAck: true,
  retentionMs: 7 * DAY_MS,
  retentionBytes: -1,
  cleanupPolicy: Object.freeze({ delete: true, compact: false }),
  minCleanableDirtyRatio: 0.5,
  deleteRetentionMs: DAY_MS,
  minCompactionLagMs: 0,
  maxCompactionLagMs: NEVER_MS,
  fileDeleteDelayMs: 60_000,
  maxMessageBytes: 1_048_588,
  messageTimestampType: 'CreateTime',
  messageTimestampBeforeMaxMs: NEVER_MS,
  messageTimestampAfterMaxMs: 3_600_000,
})

/** Settings of one log directory's manager (broker keys). */
export interface LogManagerConfig {
  /** `log.flush.offset.checkpoint.interval.ms`: write recovery-point-offset-checkpoint this often. */
  readonly recoveryPointCheckpointIntervalMs: number
  /** `log.flush.start.offset.checkpoint.interval.ms`: write log-start-offset-checkpoint this often. */
  readonly logStartOffsetCheckpointIntervalMs: number
  /** `log.flush.scheduler.interval.ms`: how often `flush.ms` is checked (NEVER_MS: never). */
  readonly flushSchedulerIntervalMs: number
  /** `log.retention.check.interval.ms`: how often retention runs. */
  readonly retentionCheckIntervalMs: number
  /** `log.cleaner.enable`. */
  readonly cleanerEnable: boolean
  /** `log.cleaner.dedupe.buffer.size`: memory for the cleaner's key -> offset map. */
  readonly cleanerDedupeBufferBytes: number
  /** `log.cleaner.io.buffer.size`: read and write buffer of the cleaner. */
  readonly cleanerIoBufferBytes: number
  /** `log.cleaner.io.buffer.load.factor`: fill the offset map to this fraction. */
  readonly cleanerIoBufferLoadFactor: number
  /** `log.cleaner.backoff.ms`: sleep when no log needs cleaning. */
  readonly cleanerBackoffMs: number
}

export const DEFAULT_LOG_MANAGER_CONFIG: LogManagerConfig = Object.freeze({
  recoveryPointCheckpointIntervalMs: 60_000,
  logStartOffsetCheckpointIntervalMs: 60_000,
  flushSchedulerIntervalMs: NEVER_MS,
  retentionCheckIntervalMs: 300_000,
  cleanerEnable: true,
  cleanerDedupeBufferBytes: 128 * MIB,
  cleanerIoBufferBytes: 512 * KIB,
  cleanerIoBufferLoadFactor: 0.9,
  cleanerBackoffMs: 15_000,
})

/** A config value that does not parse or is out of range. */
export class LogConfigError extends Error {
  override name = 'LogConfigError'
  readonly key: string

  constructor(key: string, message: string) {
    super(`${key}: ${message}`)
    this.key = key
  }
}

function parseLong(key: string, value: string, min: number): number {
  const trimmed = value.trim()
  if (!/^-?\d+$/.test(trimmed)) throw new LogConfigError(key, `not an integer: ${value}`)
  const n = Number(trimmed)
  if (n < min) throw new LogConfigError(key, `${n} is below the minimum ${min}`)
  return Math.min(n, NEVER_MS)
}

function parseInt32(key: string, value: string, min: number): number {
  const n = parseLong(key, value, min)
  if (n > 2 ** 31 - 1) throw new LogConfigError(key, `${n} does not fit an int`)
  return n
}

function parseRatio(key: string, value: string): number {
  const n = Number(value.trim())
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new LogConfigError(key, `not a ratio in [0, 1]: ${value}`)
  return n
}

function parseBool(key: string, value: string): boolean {
  const v = value.trim().toLowerCase()
  if (v === 'true') return true
  if (v === 'false') return false
  throw new LogConfigError(key, `not a boolean: ${value}`)
}

/** Parse `cleanup.policy`: `delete`, `compact`, `compact,delete` (either order), or empty (neither). */
export function parseCleanupPolicy(value: string, key = 'cleanup.policy'): CleanupPolicy {
  const parts = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')
  for (const p of parts) {
    if (p !== 'delete' && p !== 'compact') throw new LogConfigError(key, `unknown policy ${p}`)
  }
  return { delete: parts.includes('delete'), compact: parts.includes('compact') }
}

/** Topic key -> how to set it. Broker keys are `log.` + these, with the exceptions below. */
const TOPIC_KEYS: Record<string, (c: Mutable<LogConfig>, v: string, key: string) => void> = {
  'segment.bytes': (c, v, k) => {
    c.segmentBytes = parseInt32(k, v, 14)
  },
  'segment.ms': (c, v, k) => {
    c.segmentMs = parseLong(k, v, 1)
  },
  'segment.index.bytes': (c, v, k) => {
    c.segmentIndexBytes = parseInt32(k, v, 8)
  },
  'index.interval.bytes': (c, v, k) => {
    c.indexIntervalBytes = parseInt32(k, v, 0)
  },
  'flush.messages': (c, v, k) => {
    c.flushMessages = parseLong(k, v, 1)
  },
  'flush.ms': (c, v, k) => {
    c.flushMs = parseLong(k, v, 0)
  },
  'flush.on.ack': (c, v, k) => {
    c.flushOnAck = parseBool(k, v)
  },
  'retention.ms': (c, v, k) => {
    c.retentionMs = parseLong(k, v, -1)
  },
  'retention.bytes': (c, v, k) => {
    c.retentionBytes = parseLong(k, v, -1)
  },
  'cleanup.policy': (c, v, k) => {
    c.cleanupPolicy = parseCleanupPolicy(v, k)
  },
  'min.cleanable.dirty.ratio': (c, v, k) => {
    c.minCleanableDirtyRatio = parseRatio(k, v)
  },
  'delete.retention.ms': (c, v, k) => {
    c.deleteRetentionMs = parseLong(k, v, 0)
  },
  'min.compaction.lag.ms': (c, v, k) => {
    c.minCompactionLagMs = parseLong(k, v, 0)
  },
  'max.compaction.lag.ms': (c, v, k) => {
    c.maxCompactionLagMs = parseLong(k, v, 1)
  },
  'file.delete.delay.ms': (c, v, k) => {
    c.fileDeleteDelayMs = parseLong(k, v, 0)
  },
  'max.message.bytes': (c, v, k) => {
    c.maxMessageBytes = parseInt32(k, v, 0)
  },
  'message.timestamp.type': (c, v, k) => {
    const t = v.trim()
    if (t !== 'CreateTime' && t !== 'LogAppendTime') throw new LogConfigError(k, `unknown type ${v}`)
    c.messageTimestampType = t
  },
  'message.timestamp.before.max.ms': (c, v, k) => {
    c.messageTimestampBeforeMaxMs = parseLong(k, v, 0)
  },
  'message.timestamp.after.max.ms': (c, v, k) => {
    c.messageTimestampAfterMaxMs = parseLong(k, v, 0)
  },
}

/** Broker keys that are not simply `log.` + the topic key. */
const BROKER_ALIASES: Record<string, string> = {
  'log.roll.ms': 'segment.ms',
  'log.index.size.max.bytes': 'segment.index.bytes',
  'log.flush.interval.messages': 'flush.messages',
  'log.flush.interval.ms': 'flush.ms',
  'log.cleaner.delete.retention.ms': 'delete.retention.ms',
  'log.cleaner.min.compaction.lag.ms': 'min.compaction.lag.ms',
  'log.cleaner.max.compaction.lag.ms': 'max.compaction.lag.ms',
  'log.cleaner.min.cleanable.ratio': 'min.cleanable.dirty.ratio',
  'log.segment.delete.delay.ms': 'file.delete.delay.ms',
  'message.max.bytes': 'max.message.bytes',
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

function check(c: LogConfig): LogConfig {
  // Relationships between limits, asserted in one place.
  if (c.segmentIndexBytes < 8) throw new LogConfigError('segment.index.bytes', 'must hold one entry')
  if (c.maxCompactionLagMs < c.minCompactionLagMs) {
    throw new LogConfigError('max.compaction.lag.ms', 'must be >= min.compaction.lag.ms')
  }
  return Object.freeze({ ...c })
}

/**
 * A log's config from topic-level keys over `base` (the broker defaults). Unknown keys are ignored
 * (they belong to other modules: `min.insync.replicas`, ...).
 * Example: `topicLogConfig({ 'cleanup.policy': 'compact' }, brokerDefaults)`.
 */
export function topicLogConfig(
  props: Readonly<Record<string, string>>,
  base: LogConfig = DEFAULT_LOG_CONFIG,
): LogConfig {
  const c: Mutable<LogConfig> = { ...base }
  for (const [key, value] of Object.entries(props)) TOPIC_KEYS[key]?.(c, value, key)
  return check(c)
}

/**
 * The broker-wide log defaults from `server.properties` keys (`log.segment.bytes`, `log.roll.hours`,
 * `log.retention.hours|minutes|ms`, `log.flush.interval.messages`, ...). The finer unit wins when
 * several are given, as in Kafka (`log.retention.ms` over `.minutes` over `.hours`).
 */
export function brokerLogDefaults(props: Readonly<Record<string, string>>): LogConfig {
  const c: Mutable<LogConfig> = { ...DEFAULT_LOG_CONFIG }
  const hours = (key: string, factor: number, apply: (ms: number) => void) => {
    const v = props[key]
    if (v !== undefined) {
      const n = parseLong(key, v, -1)
      apply(n < 0 ? -1 : n * factor)
    }
  }
  hours('log.retention.hours', 3_600_000, (ms) => {
    c.retentionMs = ms
  })
  hours('log.retention.minutes', 60_000, (ms) => {
    c.retentionMs = ms
  })
  hours('log.roll.hours', 3_600_000, (ms) => {
    c.segmentMs = Math.max(1, ms)
  })
  for (const [key, value] of Object.entries(props)) {
    const topicKey = BROKER_ALIASES[key] ?? (key.startsWith('log.') ? key.slice(4) : undefined)
    if (topicKey !== undefined) TOPIC_KEYS[topicKey]?.(c, value, key)
  }
  return check(c)
}

/** The manager's settings from broker keys over the defaults. */
export function logManagerConfig(props: Readonly<Record<string, string>>): LogManagerConfig {
  const c: Mutable<LogManagerConfig> = { ...DEFAULT_LOG_MANAGER_CONFIG }
  const num = (key: string, min: number, apply: (n: number) => void) => {
    const v = props[key]
    if (v !== undefined) apply(parseLong(key, v, min))
  }
  num('log.flush.offset.checkpoint.interval.ms', 0, (n) => {
    c.recoveryPointCheckpointIntervalMs = n
  })
  num('log.flush.start.offset.checkpoint.interval.ms', 0, (n) => {
    c.logStartOffsetCheckpointIntervalMs = n
  })
  num('log.flush.scheduler.interval.ms', 0, (n) => {
    c.flushSchedulerIntervalMs = n
  })
  num('log.retention.check.interval.ms', 1, (n) => {
    c.retentionCheckIntervalMs = n
  })
  num('log.cleaner.dedupe.buffer.size', 0, (n) => {
    c.cleanerDedupeBufferBytes = n
  })
  num('log.cleaner.io.buffer.size', 0, (n) => {
    c.cleanerIoBufferBytes = n
  })
  num('log.cleaner.backoff.ms', 0, (n) => {
    c.cleanerBackoffMs = n
  })
  const enable = props['log.cleaner.enable']
  if (enable !== undefined) c.cleanerEnable = parseBool('log.cleaner.enable', enable)
  const lf = props['log.cleaner.io.buffer.load.factor']
  if (lf !== undefined) c.cleanerIoBufferLoadFactor = parseRatio('log.cleaner.io.buffer.load.factor', lf)
  assert(c.cleanerIoBufferLoadFactor > 0, 'log.cleaner.io.buffer.load.factor must be > 0')
  return Object.freeze(c)
}
