/**
 * ListOffsets v1-10: earliest (-2), latest (-1: the high watermark, or the LSO under read_committed),
 * max timestamp (-3, v7+), earliest local (-4, the log start, v8+), by timestamp, with the leader
 * epoch of the offset from v4. Not implemented: tiered storage (-5, latest tiered, answers -1),
 * quotas (throttle 0).
 */
import type { TopicName } from '../../model/index.ts'
import { apis, ErrorCode, type ListOffsetsResponseData } from '../../protocol/index.ts'
import type { ListOffsetParams, OffsetForTimestamp } from '../../replication/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

/** Kafka's ListOffsetsRequest.LATEST_TIERED_TIMESTAMP. */
const LATEST_TIERED_TIMESTAMP = -5n

/**
 * The version that brought each special timestamp (max timestamp -3 in v7, earliest local -4 in
 * v8, latest tiered -5 in v9); asked in an older version, Kafka answers UNSUPPORTED_VERSION.
 */
const SPECIAL_TIMESTAMP_VERSION_MIN: ReadonlyMap<bigint, number> = new Map([
  [-3n, 7],
  [-4n, 8],
  [LATEST_TIERED_TIMESTAMP, 9],
])

export interface ListOffsetsView {
  listOffset(topic: TopicName, partition: number, params: ListOffsetParams): Promise<OffsetForTimestamp>
}

type PartitionOut = ListOffsetsResponseData.ListOffsetsPartitionResponseIn

export function makeListOffsetsHandler(view: ListOffsetsView): Handler {
  return defineHandler(apis.ListOffsets, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const seen = new Set<string>()
    const duplicates = new Set<string>()
    for (const t of req.topics) {
      for (const p of t.partitions) {
        const key = `${t.name}\u0000${p.partitionIndex}`
        if (seen.has(key)) duplicates.add(key)
        seen.add(key)
      }
    }
    const answered = new Set<string>()
    const topics: ListOffsetsResponseData.ListOffsetsTopicResponseIn[] = []
    const authz = authorize(ctx)
    for (const t of req.topics) {
      const partitions: PartitionOut[] = []
      const describable = authz.allowed(AclOperation.Describe, ResourceType.Topic, t.name)
      for (const p of t.partitions) {
        const failed = (errorCode: ErrorCode): PartitionOut => ({
          partitionIndex: p.partitionIndex,
          errorCode,
          timestamp: -1n,
          offset: -1n,
          ...(v >= 4 ? { leaderEpoch: -1 } : {}),
        })
        if (!describable) {
          partitions.push(failed(ErrorCode.TopicAuthorizationFailed))
          continue
        }
        const key = `${t.name}\u0000${p.partitionIndex}`
        if (duplicates.has(key)) {
          // One INVALID_REQUEST per partition asked twice, as Kafka answers.
          if (!answered.has(key)) partitions.push(failed(ErrorCode.InvalidRequest))
          answered.add(key)
          continue
        }
        if (v < (SPECIAL_TIMESTAMP_VERSION_MIN.get(p.timestamp) ?? 0)) {
          partitions.push(failed(ErrorCode.UnsupportedVersion))
          continue
        }
        if (p.timestamp === LATEST_TIERED_TIMESTAMP) {
          partitions.push({ ...failed(ErrorCode.None) })
          continue
        }
        const r = await view.listOffset(t.name, p.partitionIndex, {
          timestamp: p.timestamp,
          currentLeaderEpoch: v >= 4 ? p.currentLeaderEpoch : -1,
          isolationLevel: v >= 2 ? req.isolationLevel : 0,
          replicaId: req.replicaId,
        })
        if (r.errorCode !== ErrorCode.None) {
          partitions.push(failed(r.errorCode))
          continue
        }
        partitions.push({
          partitionIndex: p.partitionIndex,
          errorCode: ErrorCode.None,
          timestamp: r.timestamp,
          offset: r.offset,
          ...(v >= 4 ? { leaderEpoch: r.leaderEpoch } : {}),
        })
      }
      topics.push({ name: t.name, partitions })
    }
    return { throttleTimeMs: 0, topics }
  })
}
