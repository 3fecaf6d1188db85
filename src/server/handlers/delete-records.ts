/**
 * DeleteRecords v0-2: the leader moves each partition's log start offset forward (offset -1: to the
 * high watermark), never past the high watermark (OFFSET_OUT_OF_RANGE), refused for a topic whose
 * cleanup.policy lacks `delete` (POLICY_VIOLATION); answers the new low watermark once it is
 * checkpointed. DELETE on each topic, denied TOPIC_AUTHORIZATION_FAILED. Not implemented: waiting
 * for followers' log starts (single replica), quotas.
 */
import type { TopicName } from '../../model/index.ts'
import { apis, type DeleteRecordsResponseData, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface DeleteRecordsView {
  deleteRecords(
    topic: TopicName,
    partition: number,
    offset: bigint,
  ): Promise<{ errorCode: ErrorCode; lowWatermark: bigint }>
}

export function makeDeleteRecordsHandler(view: DeleteRecordsView): Handler {
  return defineHandler(apis.DeleteRecords, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    const topics: DeleteRecordsResponseData.DeleteRecordsTopicResultIn[] = await Promise.all(
      req.topics.map(async (t) => ({
        name: t.name,
        partitions: await Promise.all(
          t.partitions.map(async (p) => {
            if (!authz.allowed(AclOperation.Delete, ResourceType.Topic, t.name)) {
              const errorCode = ErrorCode.TopicAuthorizationFailed
              return { partitionIndex: p.partitionIndex, lowWatermark: -1n, errorCode }
            }
            const r = await view.deleteRecords(t.name, p.partitionIndex, p.offset)
            return { partitionIndex: p.partitionIndex, lowWatermark: r.lowWatermark, errorCode: r.errorCode }
          }),
        ),
      })),
    )
    return { throttleTimeMs: 0, topics }
  })
}
