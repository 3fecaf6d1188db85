/**
 * OffsetFetch v1-9: committed offsets with leader epoch (v5+) and metadata; all of a group's offsets
 * when topics are null (v2+); several groups at once (v8+, KIP-709). With `requireStable` (v7+) a
 * partition a transaction holds a pending offset for answers UNSTABLE_OFFSET_COMMIT (per partition,
 * in every version, as Kafka), which the client retries. v9's member epochs (KIP-848) are not checked. DESCRIBE
 * on each group (else GROUP_AUTHORIZATION_FAILED) and on each topic: a named one denied answers
 * TOPIC_AUTHORIZATION_FAILED, all of a group's offsets leave the denied topics out.
 */
import type { OffsetFetchGroupResult } from '../../coordinator/index.ts'
import type { GroupId, TopicName } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, type RequestAuthorization, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface OffsetFetchView {
  fetchOffsets(
    groupId: GroupId,
    topics: readonly { name: TopicName; partitionIndexes: readonly number[] }[] | null,
    requireStable: boolean,
  ): OffsetFetchGroupResult | Promise<OffsetFetchGroupResult>
}

export function makeOffsetFetchHandler(view: OffsetFetchView): Handler {
  return defineHandler(apis.OffsetFetch, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const authz = authorize(ctx)
    const requireStable = v >= 7 && req.requireStable
    const fetch = (groupId: GroupId, topics: Parameters<OffsetFetchView['fetchOffsets']>[1]) =>
      authz.authorizer === null
        ? view.fetchOffsets(groupId, topics, requireStable)
        : authorizedFetch(view, authz, groupId, topics, requireStable)
    if (v >= 8) {
      return {
        throttleTimeMs: 0,
        groups: await Promise.all(req.groups.map((g) => fetch(g.groupId, g.topics))),
      }
    }
    const topics = v >= 2 ? req.topics : (req.topics ?? [])
    const r = await fetch(req.groupId, topics)
    if (r.errorCode !== ErrorCode.None && v < 2) {
      // v1 has no group-level error: every partition asked carries it.
      return {
        throttleTimeMs: 0,
        topics: (topics ?? []).map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) => ({
            partitionIndex,
            committedOffset: -1n,
            committedLeaderEpoch: -1,
            metadata: '',
            errorCode: r.errorCode,
          })),
        })),
      }
    }
    return { throttleTimeMs: 0, errorCode: r.errorCode, topics: r.topics }
  })
}

/** One group's offsets as the principal may see them (Kafka's KafkaApis order of checks). */
async function authorizedFetch(
  view: OffsetFetchView,
  authz: RequestAuthorization,
  groupId: GroupId,
  topics: Parameters<OffsetFetchView['fetchOffsets']>[1],
  requireStable: boolean,
): Promise<OffsetFetchGroupResult> {
  if (!authz.allowed(AclOperation.Describe, ResourceType.Group, groupId))
    return { groupId, errorCode: ErrorCode.GroupAuthorizationFailed, topics: [] }
  const describable = (name: string) => authz.allowed(AclOperation.Describe, ResourceType.Topic, name)
  if (topics === null) {
    const r = await view.fetchOffsets(groupId, null, requireStable)
    return { ...r, topics: r.topics.filter((t) => describable(t.name ?? '')) }
  }
  const allowed = topics.filter((t) => describable(t.name))
  const r = await view.fetchOffsets(groupId, allowed, requireStable)
  if (r.errorCode !== ErrorCode.None) return r
  const denied = topics
    .filter((t) => !describable(t.name))
    .map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) => ({
        partitionIndex,
        committedOffset: -1n,
        committedLeaderEpoch: -1,
        metadata: '',
        errorCode: ErrorCode.TopicAuthorizationFailed,
      })),
    }))
  return { ...r, topics: [...r.topics, ...denied] }
}
