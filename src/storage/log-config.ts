/**
 * Per-log settings (topic keys `segment.bytes`, ...) and per-directory manager settings (broker keys
 * `log.cleaner.*`, ...), read from the config module's resolved values by Kafka's names.
 */
import {
  type ConfigLayer,
  type EffectiveConfig,
  resolveBrokerConfig,
  resolveTopicConfig,
  type TopicConfigLayers,
} from '../config/index.ts'
import { assert } from '../model/index.ts'

/** Kafka's Long.MAX_VALUE for "never" settings, as a JS number (comparisons only). */
export const NEVER_MS = Number.MAX_SAFE_INTEGER

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
  readonly cleanableDirtyRatioMin: number
  /** `delete.retention.ms`: how long the cleaner keeps a tombstone after it first cleans it. */
  readonly deleteRetentionMs: number
  /** `min.compaction.lag.ms`: records younger than this are never compacted. */
  readonly compactionLagMsMin: number
  /** `max.compaction.lag.ms`: a dirty record older than this makes its log due for cleaning. */
  readonly compactionLagMsMax: number
  /** `file.delete.delay.ms`: a deleted segment stays as `.deleted` files this long. */
  readonly fileDeleteDelayMs: number
  /** `max.message.bytes`: the largest record batch accepted. */
  readonly messageBytesMax: number
  /** `message.timestamp.type`. */
  readonly messageTimestampType: 'CreateTime' | 'LogAppendTime'
  /** `message.timestamp.before.max.ms`: CreateTime may be at most this far in the past. */
  readonly messageTimestampBeforeMsMax: number
  /** `message.timestamp.after.max.ms`: CreateTime may be at most this far in the future. */
  readonly messageTimestampAfterMsMax: number
}

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

/** A number from an int or long key (longs saturate at NEVER_MS, Kafka's Long.MAX_VALUE). */
function num(c: EffectiveConfig, name: string): number {
  return c.get(name).def.type === 'long' ? c.long(name) : c.int(name)
}

/** Parse `cleanup.policy` values: `delete`, `compact`, both, or none. */
export function parseCleanupPolicy(values: readonly string[]): CleanupPolicy {
  return { delete: values.includes('delete'), compact: values.includes('compact') }
}

/**
 * A log's settings from its resolved topic config (`resolveTopicConfig`: topic overrides over the
 * broker's `log.*` synonyms over Kafka's defaults).
 */
export function logConfigFrom(c: EffectiveConfig): LogConfig {
  const type = c.string('message.timestamp.type')
  const config: LogConfig = {
    segmentBytes: num(c, 'segment.bytes'),
    segmentMs: num(c, 'segment.ms'),
    segmentIndexBytes: num(c, 'segment.index.bytes'),
    indexIntervalBytes: num(c, 'index.interval.bytes'),
    flushMessages: num(c, 'flush.messages'),
    flushMs: num(c, 'flush.ms'),
    flushOnAck: c.boolean('flush.on.ack'),
    retentionMs: num(c, 'retention.ms'),
    retentionBytes: num(c, 'retention.bytes'),
    cleanupPolicy: Object.freeze(parseCleanupPolicy(c.list('cleanup.policy'))),
    cleanableDirtyRatioMin: c.double('min.cleanable.dirty.ratio'),
    deleteRetentionMs: num(c, 'delete.retention.ms'),
    compactionLagMsMin: num(c, 'min.compaction.lag.ms'),
    compactionLagMsMax: num(c, 'max.compaction.lag.ms'),
    fileDeleteDelayMs: num(c, 'file.delete.delay.ms'),
    messageBytesMax: num(c, 'max.message.bytes'),
    messageTimestampType: type === 'LogAppendTime' ? 'LogAppendTime' : 'CreateTime',
    messageTimestampBeforeMsMax: num(c, 'message.timestamp.before.max.ms'),
    messageTimestampAfterMsMax: num(c, 'message.timestamp.after.max.ms'),
  }
  // Relationships between limits, asserted in one place (the config module validated each value).
  assert(config.segmentIndexBytes >= 8, 'segment.index.bytes must hold one index entry')
  assert(
    config.compactionLagMsMax >= config.compactionLagMsMin,
    'max.compaction.lag.ms >= min.compaction.lag.ms',
  )
  return Object.freeze(config)
}

/** A log's settings from plain layers: `topicLogConfig({ topic: new Map([['cleanup.policy', 'compact']]) })`. */
export function topicLogConfig(layers: TopicConfigLayers = {}): LogConfig {
  return logConfigFrom(resolveTopicConfig(layers))
}

/** A log directory manager's settings from the resolved broker config. */
export function logManagerConfigFrom(c: EffectiveConfig): LogManagerConfig {
  const config: LogManagerConfig = {
    recoveryPointCheckpointIntervalMs: num(c, 'log.flush.offset.checkpoint.interval.ms'),
    logStartOffsetCheckpointIntervalMs: num(c, 'log.flush.start.offset.checkpoint.interval.ms'),
    flushSchedulerIntervalMs: num(c, 'log.flush.scheduler.interval.ms'),
    retentionCheckIntervalMs: num(c, 'log.retention.check.interval.ms'),
    cleanerEnable: c.boolean('log.cleaner.enable'),
    cleanerDedupeBufferBytes: num(c, 'log.cleaner.dedupe.buffer.size'),
    cleanerIoBufferBytes: num(c, 'log.cleaner.io.buffer.size'),
    cleanerIoBufferLoadFactor: c.double('log.cleaner.io.buffer.load.factor'),
    cleanerBackoffMs: num(c, 'log.cleaner.backoff.ms'),
  }
  assert(config.cleanerIoBufferLoadFactor > 0, 'log.cleaner.io.buffer.load.factor must be > 0')
  return Object.freeze(config)
}

/** The manager's settings from a broker layer (server.properties): `logManagerConfig({ staticBroker })`. */
export function logManagerConfig(layers: { staticBroker?: ConfigLayer } = {}): LogManagerConfig {
  return logManagerConfigFrom(resolveBrokerConfig(layers))
}

/** Kafka 4's defaults (from the config catalog), with Weir's `flush.on.ack=true`. */
export const DEFAULT_LOG_CONFIG: LogConfig = topicLogConfig()

/** The manager's defaults (from the config catalog). */
export const DEFAULT_LOG_MANAGER_CONFIG: LogManagerConfig = logManagerConfig()
