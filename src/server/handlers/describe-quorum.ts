/**
 * DescribeQuorum v0-2 (KIP-595, KIP-836): the leader's view of the metadata quorum, for
 * `kafka-metadata-quorum describe --status/--replication`. A non-leader answers
 * NOT_LEADER_OR_FOLLOWER for the partition, as Kafka does. Not implemented: directory ids (zero).
 */
import { type BrokerId, ZERO_UUID } from '../../model/index.ts'
import {
  apis,
  type DescribeQuorumRequestData,
  type DescribeQuorumResponseData,
  ErrorCode,
  errorInfo,
} from '../../protocol/index.ts'
import { METADATA_TOPIC, type Quorum } from '../../quorum/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler, type RequestContext } from '../handler.ts'

export interface QuorumEndpoints {
  /** Controller listeners by node id, for v2's `nodes`. */
  readonly nodes: () => ReadonlyArray<{
    id: BrokerId
    listeners: ReadonlyArray<{ name: string; host: string; port: number }>
  }>
  /** Converts the raft core's monotonic time to wall-clock milliseconds. */
  readonly wallClockMs: (monotonicMs: number) => number
}

/** The DescribeQuorum handler, and its answer typed, for a node that forwards it to the controller. */
export interface DescribeQuorumHandler extends Handler {
  readonly answer: (
    req: DescribeQuorumRequestData.DescribeQuorumRequest,
    ctx: RequestContext,
  ) => DescribeQuorumResponseData.DescribeQuorumResponseIn
}

export function makeDescribeQuorumHandler(quorum: Quorum, endpoints: QuorumEndpoints): DescribeQuorumHandler {
  const answer: DescribeQuorumHandler['answer'] = (req, ctx) => {
    const denied = clusterDenied(ctx)
    if (denied !== null) return { errorCode: denied.errorCode, errorMessage: denied.message, topics: [] }
    // Kafka's hasValidTopicPartition: exactly __cluster_metadata-0, or every partition asked gets
    // UNKNOWN_TOPIC_OR_PARTITION (getPartitionLevelErrorResponse), the request itself none.
    const asked =
      req.topics.length === 1 &&
      req.topics[0]!.topicName === METADATA_TOPIC &&
      req.topics[0]!.partitions.length === 1 &&
      req.topics[0]!.partitions[0]!.partitionIndex === 0
    if (!asked) {
      const errorMessage = errorInfo(ErrorCode.UnknownTopicOrPartition)!.message
      return {
        errorCode: ErrorCode.None,
        topics: req.topics.map((t) => ({
          topicName: t.topicName,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.UnknownTopicOrPartition,
            errorMessage,
          })),
        })),
      }
    }
    const d = quorum.describeQuorum()
    if (d === null) {
      return {
        errorCode: ErrorCode.None,
        topics: [
          {
            topicName: METADATA_TOPIC,
            partitions: [
              {
                partitionIndex: 0,
                errorCode: ErrorCode.NotLeaderOrFollower,
                errorMessage: 'This node is not the quorum leader.',
              },
            ],
          },
        ],
      }
    }
    const ts = (ms: number): bigint => (ms < 0 ? -1n : BigInt(Math.trunc(endpoints.wallClockMs(ms))))
    const replica = (r: (typeof d.currentVoters)[number]) => ({
      replicaId: r.replicaId,
      replicaDirectoryId: ZERO_UUID,
      logEndOffset: r.logEndOffset,
      lastFetchTimestamp: ts(r.lastFetchTimestamp),
      lastCaughtUpTimestamp: ts(r.lastCaughtUpTimestamp),
    })
    return {
      errorCode: ErrorCode.None,
      topics: [
        {
          topicName: METADATA_TOPIC,
          partitions: [
            {
              partitionIndex: 0,
              errorCode: ErrorCode.None,
              leaderId: d.leaderId,
              leaderEpoch: d.leaderEpoch,
              highWatermark: d.highWatermark,
              currentVoters: d.currentVoters.map(replica),
              observers: d.observers.map(replica),
            },
          ],
        },
      ],
      // v2 (KIP-853) adds the voters' endpoints.
      ...(ctx.apiVersion >= 2
        ? {
            nodes: endpoints
              .nodes()
              .map((n) => ({ nodeId: n.id, listeners: n.listeners.map((l) => ({ ...l })) })),
          }
        : {}),
    }
  }
  return { ...defineHandler(apis.DescribeQuorum, {}, answer), answer }
}
