/**
 * OffsetFetch v1-9: committed offsets with leader epoch (v5+) and metadata; all of a group's offsets
 * when topics are null (v2+); several groups at once (v8+, KIP-709). `requireStable` has nothing to
 * wait for (no transactional offsets yet) and v9's member epochs (KIP-848) are not checked.
 */
import type { OffsetFetchGroupResult } from '../../coordinator/index.ts'
import type { GroupId, TopicName } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface OffsetFetchView {
  fetchOffsets(
    groupId: GroupId,
    topics: readonly { name: TopicName; partitionIndexes: readonly number[] }[] | null,
  ): OffsetFetchGroupResult | Promise<OffsetFetchGroupResult>
}

export function makeOffsetFetchHandler(view: OffsetFetchView): Handler {
  return defineHandler(apis.OffsetFetch, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    if (v >= 8) {
      return {
        throttleTimeMs: 0,
        groups: await Promise.all(req.groups.map((g) => view.fetchOffsets(g.groupId, g.topics))),
      }
    }
    const topics = v >= 2 ? req.topics : (req.topics ?? [])
    const r = await view.fetchOffsets(req.groupId, topics)
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
