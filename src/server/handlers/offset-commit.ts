/**
 * OffsetCommit v2-9 for classic groups and simple consumers (v2-4's retention time kept as Kafka
 * keeps it; Kafka 4.0 removed v0-1 and their client-set commit timestamps). Partitions of unknown
 * topics are UNKNOWN_TOPIC_OR_PARTITION. The consumer protocol's member epochs (KIP-848) are not
 * implemented: v9 behaves as v8 with GROUP_ID_NOT_FOUND for unknown groups. READ on the group
 * (else every partition answers GROUP_AUTHORIZATION_FAILED) and on each topic.
 */
import type { CommitInput, CommitResult } from '../../coordinator/index.ts'
import type { TopicName } from '../../model/index.ts'
import { apis, ErrorCode, type OffsetCommitResponseData } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface OffsetCommitView {
  commitOffsets(input: CommitInput): Promise<CommitResult>
  /** Whether the metadata knows this partition. */
  partitionExists(topic: TopicName, partition: number): boolean
}

export function makeOffsetCommitHandler(view: OffsetCommitView): Handler {
  return defineHandler(apis.OffsetCommit, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const authz = authorize(ctx)
    const refuseAll = (errorCode: ErrorCode) => ({
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })),
      })),
    })
    if (!authz.allowed(AclOperation.Read, ResourceType.Group, req.groupId))
      return refuseAll(ErrorCode.GroupAuthorizationFailed)
    const unknown = new Map<TopicName, OffsetCommitResponseData.OffsetCommitResponsePartitionIn[]>()
    const topics: CommitInput['topics'][number][] = []
    for (const t of req.topics) {
      if (!authz.allowed(AclOperation.Read, ResourceType.Topic, t.name)) {
        unknown.set(
          t.name,
          t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.TopicAuthorizationFailed,
          })),
        )
        continue
      }
      const known = t.partitions.filter((p) => view.partitionExists(t.name, p.partitionIndex))
      const missing = t.partitions.filter((p) => !view.partitionExists(t.name, p.partitionIndex))
      if (missing.length > 0) {
        unknown.set(
          t.name,
          missing.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.UnknownTopicOrPartition,
          })),
        )
      }
      if (known.length === 0) continue
      topics.push({
        name: t.name,
        partitions: known.map((p) => ({
          partitionIndex: p.partitionIndex,
          committedOffset: p.committedOffset,
          committedLeaderEpoch: v >= 6 ? p.committedLeaderEpoch : -1,
          commitTimestamp: -1n,
          committedMetadata: p.committedMetadata,
        })),
      })
    }
    const committed =
      topics.length === 0
        ? []
        : await view.commitOffsets({
            groupId: req.groupId,
            generationId: req.generationIdOrMemberEpoch,
            memberId: req.memberId,
            groupInstanceId: v >= 7 ? req.groupInstanceId : null,
            retentionTimeMs: v >= 2 && v <= 4 ? Number(req.retentionTimeMs) : -1,
            apiVersion: v,
            topics,
          })
    // Answer in the order asked: each topic once, its partitions as committed or refused.
    const byTopic = new Map<TopicName, OffsetCommitResponseData.OffsetCommitResponsePartitionIn[]>()
    for (const t of committed) byTopic.set(t.name!, [...(t.partitions ?? [])])
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => {
        const answered = [...(byTopic.get(t.name) ?? []), ...(unknown.get(t.name) ?? [])]
        return {
          name: t.name,
          partitions: t.partitions.map(
            (p) =>
              answered.find((a) => a.partitionIndex === p.partitionIndex) ?? {
                partitionIndex: p.partitionIndex,
                errorCode: ErrorCode.UnknownServerError,
              },
          ),
        }
      }),
    }
  })
}
