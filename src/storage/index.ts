/** Partition logs on disk, as Kafka lays them out: the storage module's public entry. See README.md. */

export type { CleanerStats } from './log-cleaner.ts'
export {
  type CleanupPolicy,
  DEFAULT_LOG_CONFIG,
  DEFAULT_LOG_MANAGER_CONFIG,
  type LogConfig,
  type LogManagerConfig,
  logConfigFrom,
  logManagerConfig,
  logManagerConfigFrom,
  NEVER_MS,
  parseCleanupPolicy,
  topicLogConfig,
} from './log-config.ts'
export {
  LOGS_AT_ONCE,
  LogDirFile,
  LogManager,
  type LogManagerOptions,
  parsePartitionDir,
} from './log-manager.ts'
export {
  type FoundTimestamp,
  type LogSegment,
  offsetFileName,
  parseSegmentFileName,
  SegmentFile,
} from './log-segment.ts'
export {
  formatMetaProperties,
  type MetaProperties,
  MetaPropertiesError,
  parseMetaProperties,
} from './meta-properties.ts'
export {
  CheckpointFormatError,
  type OffsetCheckpoint,
  parseOffsetCheckpoint,
  partitionKey,
  readOffsetCheckpoint,
  writeFileDurably,
  writeOffsetCheckpoint,
} from './offset-checkpoint-file.ts'
export {
  type AppendOptions,
  type AppendResult,
  ListOffsetsTimestamp,
  type LogHooks,
  LogOfflineError,
  PartitionLog,
  type PartitionLogOptions,
  type ReadOptions,
  type ReadResult,
  type RecoveryReport,
  UnexpectedAppendOffsetError,
} from './partition-log.ts'
export {
  READ_BUFFER_POOL_BYTES_DEFAULT,
  ReadBufferPool,
  type ReadBuffers,
} from './read-buffer-pool.ts'
export {
  ABORTED_TXN_BYTES,
  ABORTED_TXN_VERSION,
  type AbortedTxn,
  type AbortedTxnSearch,
  CorruptTransactionIndexError,
  encodeAbortedTxn,
  TRANSACTION_INDEX_SUFFIX,
  TransactionIndex,
} from './transaction-index.ts'
export { BROKER_TAIL_BYTES_MAX, TAIL_BYTES_MAX_DEFAULT } from './write-tail.ts'
