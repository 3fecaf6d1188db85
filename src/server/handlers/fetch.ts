/**
 * Fetch v4-17: log bytes as they are, up to the high watermark (the last stable offset under
 * read_committed, with the aborted transactions overlapping the records read, from the segments'
 * `.txnindex`), within `fetch.max.bytes` and each partition's max bytes (the first batch whole
 * even when larger), long-polled until `minBytes` or `maxWaitMs`; KIP-227 incremental sessions;
 * topic ids from v13; leader-epoch fencing and divergence; KIP-951 leader hints; KIP-392 from v11:
 * a consumer's rackId lets the leader answer a preferredReadReplica (`replica.selector.class`) and
 * lets a follower serve it up to its high watermark. Not implemented: quotas (throttle 0).
 */
import type { MetadataImage } from '../../metadata/index.ts'
import { type BrokerId, NO_NODE, ProducerId, TopicName, type Uuid } from '../../model/index.ts'
import { apis, ErrorCode, errorCodeOf, type FetchResponseData } from '../../protocol/index.ts'
import type { FetchParams, FetchSpec, ReadOutcome } from '../../replication/index.ts'
import type { ReadBuffers } from '../../storage/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import type { FetchPartitionRequest, FetchSessionCache } from '../fetch-session.ts'
import { selectResponsePartitions } from '../fetch-session.ts'
import { defineHandler, type Handler } from '../handler.ts'
import { currentLeaderOf, nodeEndpointsOf, wantsLeaderHint } from './current-leader.ts'

/** Kafka 4 serves Fetch from v4 (KIP-896 removed the older ones). */
export const FETCH_VERSION_MIN = 4
const READ_COMMITTED = 1

export interface FetchView {
  image(): MetadataImage
  readonly sessions: FetchSessionCache
  nowMs(): number
  /** The broker's `fetch.max.bytes`: a response carries at most this much (plus one batch). */
  readonly fetchBytesMax: number
  /** Where reads of old data get their buffers: released once the response is written. */
  readonly readBuffers?: ReadBuffers
  fetchMessages(specs: readonly FetchSpec[], params: FetchParams): Promise<ReadOutcome[]>
}

export function makeFetchHandler(view: FetchView): Handler {
  return defineHandler(apis.Fetch, { minVersion: FETCH_VERSION_MIN }, async (req, ctx) => {
    const v = ctx.apiVersion
    const image = view.image()
    const replicaId: number = v >= 15 ? req.replicaState.replicaId : req.replicaId
    const context = view.sessions.context(req, v, {
      nowMs: view.nowMs(),
      privileged: replicaId >= 0,
      nameOf: (id: Uuid) => image.topicsById.get(id)?.name,
    })
    if (context.kind === 'error') {
      return { throttleTimeMs: 0, errorCode: context.errorCode, sessionId: 0, responses: [] }
    }
    const specs: FetchSpec[] = []
    /** For each covered partition, its spec's index, or UNKNOWN_ID / DENIED when answered without reading. */
    const specOf: number[] = []
    // Kafka's: a follower needs CLUSTER_ACTION for every partition, a consumer READ on each topic,
    // asked once per topic (partitions of a topic come together).
    const authz = authorize(ctx)
    const followerDenied = replicaId >= 0 && !authz.cluster(AclOperation.ClusterAction)
    let lastTopic: string | null = null
    let lastReadable = true
    for (const p of context.partitions) {
      if (followerDenied) {
        specOf.push(DENIED)
        continue
      }
      if (v >= 13 && (p.topic === '' || image.topicsById.get(p.topicId)?.name !== p.topic)) {
        specOf.push(UNKNOWN_ID)
        continue
      }
      if (authz.authorizer !== null && replicaId < 0 && p.topic !== lastTopic) {
        lastTopic = p.topic
        lastReadable = authz.allowed(AclOperation.Read, ResourceType.Topic, p.topic)
      }
      if (replicaId < 0 && !lastReadable) {
        specOf.push(DENIED)
        continue
      }
      specOf.push(specs.length)
      specs.push({
        topic: p.topic,
        partition: p.partition,
        fetchOffset: p.fetchOffset,
        maxBytes: p.maxBytes,
        currentLeaderEpoch: p.currentLeaderEpoch,
        lastFetchedEpoch: v >= 12 ? p.lastFetchedEpoch : -1,
      })
    }
    const maxBytes = Math.max(0, Math.min(req.maxBytes, view.fetchBytesMax))
    // Pooled reads only where the connection reports when the response was written.
    const readBuffers = ctx.afterResponse === undefined ? undefined : view.readBuffers
    const outcomes = await view.fetchMessages(specs, {
      replicaId,
      replicaEpoch: v >= 15 ? req.replicaState.replicaEpoch : -1n,
      maxWaitMs: req.maxWaitMs,
      minBytes: Math.min(req.minBytes, maxBytes),
      maxBytes,
      isolationLevel: req.isolationLevel,
      // Client metadata from v11 (KIP-392): the consumer's rack.
      ...(v >= 11 && replicaId < 0 ? { clientRack: req.rackId } : {}),
      ...(readBuffers === undefined ? {} : { readBuffers }),
    })
    if (readBuffers !== undefined) {
      // Every outcome, answered or not (an incremental session leaves some out of the response).
      ctx.afterResponse!(() => {
        for (const o of outcomes) readBuffers.release(o.records)
      })
    }
    const leaders: BrokerId[] = []
    const answers = context.partitions.map((p, i) => {
      const at = specOf[i]!
      const data =
        at < 0
          ? unreadPartition(p, at === DENIED ? ErrorCode.TopicAuthorizationFailed : ErrorCode.UnknownTopicId)
          : partitionData(v, p, outcomes[at]!, req.isolationLevel)
      if (v >= 12 && wantsLeaderHint(errorCodeOf(data.errorCode ?? ErrorCode.None))) {
        const leader = currentLeaderOf(image, p.topic, p.partition)
        if (leader !== null) {
          data.currentLeader = leader
          leaders.push(leader.leaderId)
        }
      }
      return { partition: p, data }
    })
    const selected = selectResponsePartitions(context, answers)
    const responses: FetchResponseData.FetchableTopicResponseIn[] = []
    const byTopic = new Map<string, FetchResponseData.PartitionDataIn[]>()
    for (const { partition: p, data } of selected) {
      const key = v >= 13 ? p.topicId : p.topic
      let list = byTopic.get(key)
      if (list === undefined) {
        list = []
        byTopic.set(key, list)
        responses.push(
          v >= 13
            ? { topicId: p.topicId, partitions: list }
            : { topic: TopicName(p.topic), partitions: list },
        )
      }
      list.push(data)
    }
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.None,
      sessionId: context.kind === 'sessionless' ? 0 : (context.session?.id ?? 0),
      responses,
      ...(v >= 16 && leaders.length > 0
        ? { nodeEndpoints: nodeEndpointsOf(image, leaders, ctx.listenerName) }
        : {}),
    }
  })
}

type MutablePartitionData = {
  -readonly [K in keyof FetchResponseData.PartitionDataIn]: FetchResponseData.PartitionDataIn[K]
}

/** Marks in `specOf` of a partition answered without reading. */
const UNKNOWN_ID = -1
const DENIED = -2

/** A partition refused before reading (unknown topic id, denied READ). */
function unreadPartition(p: FetchPartitionRequest, errorCode: ErrorCode): MutablePartitionData {
  return {
    partitionIndex: p.partition,
    errorCode,
    highWatermark: -1n,
    lastStableOffset: -1n,
    logStartOffset: -1n,
    abortedTransactions: [],
    preferredReadReplica: NO_NODE,
    records: Buffer.alloc(0),
  }
}

function partitionData(
  v: number,
  p: FetchPartitionRequest,
  r: ReadOutcome,
  isolationLevel: number,
): MutablePartitionData {
  // Kafka refuses a partition its metadata does not know before reading (KafkaApis'
  // `FetchResponse.partitionResponse`), which leaves the aborted transactions an empty list, not null.
  const unknown =
    r.errorCode === ErrorCode.UnknownTopicOrPartition || r.errorCode === ErrorCode.UnknownTopicId
  const out: MutablePartitionData = {
    partitionIndex: p.partition,
    errorCode: r.errorCode,
    highWatermark: r.highWatermark,
    lastStableOffset: r.lastStableOffset,
    logStartOffset: r.logStartOffset,
    abortedTransactions: unknown
      ? []
      : isolationLevel === READ_COMMITTED && r.errorCode === ErrorCode.None
        ? (r.abortedTransactions ?? []).map((t) => ({
            producerId: ProducerId(t.producerId),
            firstOffset: t.firstOffset,
          }))
        : null,
    preferredReadReplica: v >= 11 ? (r.preferredReadReplica ?? NO_NODE) : NO_NODE,
    records: r.records,
  }
  if (v >= 12 && r.divergingEpoch !== null) out.divergingEpoch = r.divergingEpoch
  return out
}
