/**
 * DescribeProducers v0: the producers a replica of a partition knows (id, epoch, last sequence and
 * timestamp, the coordinator epoch of its last marker, the first offset of its open transaction or
 * -1), as `kafka-transactions.sh describe-producers` shows them. READ on each topic, denied
 * TOPIC_AUTHORIZATION_FAILED.
 */
import { ProducerId, type TopicName } from '../../model/index.ts'
import { apis, type DescribeProducersResponseData, ErrorCode, errorInfo } from '../../protocol/index.ts'
import type { ProducerEntry } from '../../replication/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface DescribeProducersView {
  activeProducers(
    topic: TopicName,
    partition: number,
  ): Promise<{ errorCode: ErrorCode; producers: readonly ProducerEntry[] }>
}

export function makeDescribeProducersHandler(view: DescribeProducersView): Handler {
  return defineHandler(apis.DescribeProducers, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    const topics = req.topics.map(
      async (t): Promise<DescribeProducersResponseData.TopicResponseIn> => ({
        name: t.name,
        partitions: await Promise.all(
          t.partitionIndexes.map(async (partitionIndex) => {
            const r = authz.allowed(AclOperation.Read, ResourceType.Topic, t.name)
              ? await view.activeProducers(t.name, partitionIndex)
              : { errorCode: ErrorCode.TopicAuthorizationFailed, producers: [] }
            return {
              partitionIndex,
              errorCode: r.errorCode,
              errorMessage: r.errorCode === ErrorCode.None ? null : (errorInfo(r.errorCode)?.message ?? null),
              activeProducers: r.producers.map((e) => {
                const last = e.batches.at(-1)
                return {
                  producerId: ProducerId(e.producerId),
                  producerEpoch: e.epoch,
                  lastSequence: last?.lastSeq ?? -1,
                  lastTimestamp: last?.timestamp ?? -1n,
                  coordinatorEpoch: e.coordinatorEpoch,
                  currentTxnStartOffset: e.currentTxnFirstOffset,
                }
              }),
            }
          }),
        ),
      }),
    )
    return { throttleTimeMs: 0, topics: await Promise.all(topics) }
  })
}
