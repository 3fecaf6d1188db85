/**
 * OffsetDelete v0: a group's offsets of some partitions, unless the group is alive and not a consumer
 * group (NON_EMPTY_GROUP) or its members subscribe to the topic (GROUP_SUBSCRIBED_TO_TOPIC).
 * Partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION. DELETE on the group (else
 * GROUP_AUTHORIZATION_FAILED) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED).
 */
import type { DeleteOffsetsInput, DeleteOffsetsResult } from '../../coordinator/index.ts'
import type { TopicName } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface OffsetDeleteView {
  deleteOffsets(input: DeleteOffsetsInput): Promise<DeleteOffsetsResult>
  partitionExists(topic: TopicName, partition: number): boolean
}

export function makeOffsetDeleteHandler(view: OffsetDeleteView): Handler {
  return defineHandler(apis.OffsetDelete, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    if (!authz.allowed(AclOperation.Delete, ResourceType.Group, req.groupId))
      return { errorCode: ErrorCode.GroupAuthorizationFailed, throttleTimeMs: 0, topics: [] }
    const readable = (name: TopicName) => authz.allowed(AclOperation.Read, ResourceType.Topic, name)
    const known = req.topics
      .filter((t) => readable(t.name))
      .map((t) => ({
        name: t.name,
        partitions: t.partitions.filter((p) => view.partitionExists(t.name, p.partitionIndex)),
      }))
      .filter((t) => t.partitions.length > 0)
    const r = await view.deleteOffsets({ groupId: req.groupId, topics: known })
    if (r.errorCode !== undefined && r.errorCode !== ErrorCode.None) {
      return { errorCode: r.errorCode, throttleTimeMs: 0, topics: [] }
    }
    const answered = new Map<string, number>()
    for (const t of r.topics ?? []) {
      for (const p of t.partitions ?? [])
        answered.set(`${t.name}\u0000${p.partitionIndex}`, p.errorCode ?? ErrorCode.None)
    }
    return {
      errorCode: ErrorCode.None,
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode: !readable(t.name)
            ? ErrorCode.TopicAuthorizationFailed
            : ((answered.get(`${t.name}\u0000${p.partitionIndex}`) ??
                ErrorCode.UnknownTopicOrPartition) as ErrorCode),
        })),
      })),
    }
  })
}
