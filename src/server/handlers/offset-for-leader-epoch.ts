/**
 * OffsetForLeaderEpoch v2-4: for each partition, the largest leader epoch at or below the one asked
 * and the offset where it ended on this leader (the log end for the current epoch), from the
 * leader-epoch cache; FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH against `currentLeaderEpoch`.
 * Consumers validate their position with it after a leader change. CLUSTER_ACTION on the cluster
 * (followers) covers every topic; else DESCRIBE on each, denied TOPIC_AUTHORIZATION_FAILED. Not
 * implemented: quotas.
 */
import type { TopicName } from '../../model/index.ts'
import { apis, ErrorCode, type OffsetForLeaderEpochResponseData } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

/** What v2 requests mean by their missing replica id (Kafka's default: a debugging replica). */
const DEBUGGING_REPLICA_ID = -2

export interface OffsetForLeaderEpochView {
  lastOffsetForLeaderEpoch(
    topic: TopicName,
    partition: number,
    params: { currentLeaderEpoch: number; leaderEpoch: number; replicaId: number },
  ): Promise<{ errorCode: ErrorCode; leaderEpoch: number; endOffset: bigint }>
}

export function makeOffsetForLeaderEpochHandler(view: OffsetForLeaderEpochView): Handler {
  return defineHandler(apis.OffsetForLeaderEpoch, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    const replicaId = v >= 3 ? req.replicaId : DEBUGGING_REPLICA_ID
    const authz = authorize(ctx)
    const every = authz.cluster(AclOperation.ClusterAction)
    const topics = req.topics.map(
      async (t): Promise<OffsetForLeaderEpochResponseData.OffsetForLeaderTopicResultIn> => ({
        topic: t.topic,
        partitions: await Promise.all(
          t.partitions.map(async (p) => {
            if (!every && !authz.allowed(AclOperation.Describe, ResourceType.Topic, t.topic)) {
              const errorCode = ErrorCode.TopicAuthorizationFailed
              return { errorCode, partition: p.partition, leaderEpoch: -1, endOffset: -1n }
            }
            const r = await view.lastOffsetForLeaderEpoch(t.topic, p.partition, {
              currentLeaderEpoch: p.currentLeaderEpoch,
              leaderEpoch: p.leaderEpoch,
              replicaId,
            })
            return {
              errorCode: r.errorCode,
              partition: p.partition,
              leaderEpoch: r.leaderEpoch,
              endOffset: r.endOffset,
            }
          }),
        ),
      }),
    )
    return { throttleTimeMs: 0, topics: await Promise.all(topics) }
  })
}
