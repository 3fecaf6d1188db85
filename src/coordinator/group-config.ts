/** The coordinator's settings, read by Kafka's names from the resolved broker config. */
import type { EffectiveConfig } from '../config/index.ts'
import { type GroupConfig, NEW_MEMBER_JOIN_TIMEOUT_MS } from './group-state-machine.ts'

/** Settings of the GroupCoordinator shell and of `__consumer_offsets`. */
export interface OffsetsTopicConfig {
  /** offsets.topic.num.partitions */
  readonly partitionCount: number
  /** offsets.topic.replication.factor */
  readonly replicationFactor: number
  /** offsets.topic.segment.bytes */
  readonly segmentBytes: number
  /** offsets.retention.check.interval.ms */
  readonly retentionCheckIntervalMs: number
}

export function groupConfigFrom(effective: EffectiveConfig): GroupConfig {
  return {
    initialRebalanceDelayMs: effective.int('group.initial.rebalance.delay.ms'),
    sessionTimeoutMsMin: effective.int('group.min.session.timeout.ms'),
    sessionTimeoutMsMax: effective.int('group.max.session.timeout.ms'),
    groupSizeMax: effective.int('group.max.size'),
    newMemberJoinTimeoutMs: NEW_MEMBER_JOIN_TIMEOUT_MS,
    offsetMetadataBytesMax: effective.int('offset.metadata.max.bytes'),
    offsetsRetentionMs: effective.int('offsets.retention.minutes') * 60_000,
  }
}

export function offsetsTopicConfigFrom(effective: EffectiveConfig): OffsetsTopicConfig {
  return {
    partitionCount: effective.int('offsets.topic.num.partitions'),
    replicationFactor: effective.int('offsets.topic.replication.factor'),
    segmentBytes: effective.int('offsets.topic.segment.bytes'),
    retentionCheckIntervalMs: effective.long('offsets.retention.check.interval.ms'),
  }
}
