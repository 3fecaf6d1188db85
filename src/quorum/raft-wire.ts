/**
 * Raft messages <-> KRaft's RPCs as the generated codec shapes them (Vote, BeginQuorumEpoch,
 * EndQuorumEpoch, Fetch and FetchSnapshot on `__cluster_metadata-0`). Field by field, no logic.
 */
import { NodeId, TopicName, Uuid, ZERO_UUID } from '../model/index.ts'
import type {
  BeginQuorumEpochRequestData,
  BeginQuorumEpochResponseData,
  EndQuorumEpochRequestData,
  EndQuorumEpochResponseData,
  FetchRequestData,
  FetchResponseData,
  FetchSnapshotRequestData,
  FetchSnapshotResponseData,
  VoteRequestData,
  VoteResponseData,
} from '../protocol/index.ts'
import type {
  BeginQuorumEpochRequest,
  BeginQuorumEpochResponse,
  EndQuorumEpochRequest,
  EndQuorumEpochResponse,
  FetchRequest,
  FetchResponse,
  FetchSnapshotRequest,
  FetchSnapshotResponse,
  LeaderIdAndEpoch,
  VoteRequest,
  VoteResponse,
} from '../raft/index.ts'
import { RaftErrorCode } from '../raft/index.ts'
import { batchesToEntries, entriesToBatches } from './entry-codec.ts'

export const METADATA_TOPIC = TopicName('__cluster_metadata')
/** Kafka's reserved id of `__cluster_metadata` (Uuid.METADATA_TOPIC_ID). */
export const METADATA_TOPIC_ID = Uuid('AAAAAAAAAAAAAAAAAAAAAQ')

/**
 * KIP-996's PreVote is a field of Vote v2. Weir's voters send Vote v1 and carry it as a tagged
 * field of the partition, a tag far above any Kafka assigns, so that a node serving only Vote v0-1
 * reads it too (a Kafka node would ignore the tag and see a plain vote request). Inbound, either
 * form counts: v2's field or this tag.
 */
export const PRE_VOTE_TAG = 10_000

interface Addressing {
  readonly self: NodeId
  readonly peer: NodeId
  readonly correlationId: number
}

const leaderOrNull = (id: number): NodeId | null => (id < 0 ? null : NodeId(id))

/**
 * A KRaft response's error, as raft reads it: the response's top-level code when it has one, else
 * its partition's; a response without the `__cluster_metadata-0` partition is InvalidRequest. The
 * codes come from the wire as numbers: raft answers only with RaftErrorCode's, and reads any other
 * as an error.
 */
function responseError(top: number, partition: { readonly errorCode: number } | undefined): RaftErrorCode {
  const code = top !== RaftErrorCode.None ? top : (partition?.errorCode ?? RaftErrorCode.InvalidRequest)
  return code as RaftErrorCode
}

// Vote

export function voteRequestToWire(m: VoteRequest, clusterId: string): VoteRequestData.VoteRequestIn {
  return {
    clusterId,
    voterId: m.to,
    topics: [
      {
        topicName: METADATA_TOPIC,
        partitions: [
          {
            partitionIndex: 0,
            replicaEpoch: m.candidateEpoch,
            replicaId: m.candidateId,
            lastOffsetEpoch: m.lastOffsetEpoch,
            lastOffset: m.lastOffset,
            ...(m.preVote ? { _unknownTaggedFields: [{ tag: PRE_VOTE_TAG, data: Buffer.from([1]) }] } : {}),
          },
        ],
      },
    ],
  }
}

export function voteRequestFromWire(w: VoteRequestData.VoteRequest, a: Addressing): VoteRequest | null {
  const p = w.topics[0]?.partitions[0]
  if (p === undefined) return null
  const preVoteField = p._unknownTaggedFields?.find((t) => t.tag === PRE_VOTE_TAG)
  return {
    type: 'VoteRequest',
    from: p.replicaId,
    to: a.self,
    correlationId: a.correlationId,
    candidateEpoch: p.replicaEpoch,
    candidateId: p.replicaId,
    lastOffsetEpoch: p.lastOffsetEpoch,
    lastOffset: p.lastOffset,
    preVote: p.preVote || (preVoteField !== undefined && preVoteField.data[0] === 1),
  }
}

export function voteResponseToWire(m: VoteResponse): VoteResponseData.VoteResponseIn {
  return {
    errorCode: RaftErrorCode.None,
    topics: [
      {
        topicName: METADATA_TOPIC,
        partitions: [
          {
            partitionIndex: 0,
            errorCode: m.errorCode,
            leaderId: NodeId(m.leaderId ?? -1),
            leaderEpoch: m.leaderEpoch,
            voteGranted: m.voteGranted,
          },
        ],
      },
    ],
  }
}

export function voteResponseFromWire(w: VoteResponseData.VoteResponse, a: Addressing): VoteResponse {
  const p = w.topics[0]?.partitions[0]
  return {
    type: 'VoteResponse',
    from: a.peer,
    to: a.self,
    correlationId: a.correlationId,
    errorCode: responseError(w.errorCode, p),
    leaderId: leaderOrNull(p?.leaderId ?? -1),
    leaderEpoch: p?.leaderEpoch ?? -1,
    voteGranted: p?.voteGranted ?? false,
  }
}

// BeginQuorumEpoch

export function beginRequestToWire(
  m: BeginQuorumEpochRequest,
  clusterId: string,
): BeginQuorumEpochRequestData.BeginQuorumEpochRequestIn {
  return {
    clusterId,
    voterId: m.to,
    topics: [
      {
        topicName: METADATA_TOPIC,
        partitions: [{ partitionIndex: 0, leaderId: m.leaderId, leaderEpoch: m.leaderEpoch }],
      },
    ],
  }
}

export function beginRequestFromWire(
  w: BeginQuorumEpochRequestData.BeginQuorumEpochRequest,
  a: Addressing,
): BeginQuorumEpochRequest | null {
  const p = w.topics[0]?.partitions[0]
  if (p === undefined) return null
  return {
    type: 'BeginQuorumEpochRequest',
    from: p.leaderId,
    to: a.self,
    correlationId: a.correlationId,
    leaderId: p.leaderId,
    leaderEpoch: p.leaderEpoch,
  }
}

export function beginResponseToWire(
  m: BeginQuorumEpochResponse,
): BeginQuorumEpochResponseData.BeginQuorumEpochResponseIn {
  return {
    errorCode: RaftErrorCode.None,
    topics: [
      {
        topicName: METADATA_TOPIC,
        partitions: [
          {
            partitionIndex: 0,
            errorCode: m.errorCode,
            leaderId: NodeId(m.leaderId ?? -1),
            leaderEpoch: m.leaderEpoch,
          },
        ],
      },
    ],
  }
}

export function beginResponseFromWire(
  w: BeginQuorumEpochResponseData.BeginQuorumEpochResponse,
  a: Addressing,
): BeginQuorumEpochResponse {
  const p = w.topics[0]?.partitions[0]
  return {
    type: 'BeginQuorumEpochResponse',
    from: a.peer,
    to: a.self,
    correlationId: a.correlationId,
    errorCode: responseError(w.errorCode, p),
    leaderId: leaderOrNull(p?.leaderId ?? -1),
    leaderEpoch: p?.leaderEpoch ?? -1,
  }
}

// EndQuorumEpoch

export function endRequestToWire(
  m: EndQuorumEpochRequest,
  clusterId: string,
): EndQuorumEpochRequestData.EndQuorumEpochRequestIn {
  return {
    clusterId,
    topics: [
      {
        topicName: METADATA_TOPIC,
        partitions: [
          {
            partitionIndex: 0,
            leaderId: m.leaderId,
            leaderEpoch: m.leaderEpoch,
            preferredSuccessors: [...m.preferredSuccessors],
            preferredCandidates: m.preferredSuccessors.map((candidateId) => ({
              candidateId,
              candidateDirectoryId: ZERO_UUID,
            })),
          },
        ],
      },
    ],
  }
}

export function endRequestFromWire(
  w: EndQuorumEpochRequestData.EndQuorumEpochRequest,
  version: number,
  a: Addressing,
): EndQuorumEpochRequest | null {
  const p = w.topics[0]?.partitions[0]
  if (p === undefined) return null
  const successors =
    version >= 1 ? p.preferredCandidates.map((c) => c.candidateId) : p.preferredSuccessors.map(NodeId)
  return {
    type: 'EndQuorumEpochRequest',
    from: p.leaderId,
    to: a.self,
    correlationId: a.correlationId,
    leaderId: p.leaderId,
    leaderEpoch: p.leaderEpoch,
    preferredSuccessors: successors,
  }
}

export function endResponseToWire(
  m: EndQuorumEpochResponse,
): EndQuorumEpochResponseData.EndQuorumEpochResponseIn {
  return {
    errorCode: RaftErrorCode.None,
    topics: [
      {
        topicName: METADATA_TOPIC,
        partitions: [
          {
            partitionIndex: 0,
            errorCode: m.errorCode,
            leaderId: NodeId(m.leaderId ?? -1),
            leaderEpoch: m.leaderEpoch,
          },
        ],
      },
    ],
  }
}

export function endResponseFromWire(
  w: EndQuorumEpochResponseData.EndQuorumEpochResponse,
  a: Addressing,
): EndQuorumEpochResponse {
  const p = w.topics[0]?.partitions[0]
  return {
    type: 'EndQuorumEpochResponse',
    from: a.peer,
    to: a.self,
    correlationId: a.correlationId,
    errorCode: responseError(w.errorCode, p),
    leaderId: leaderOrNull(p?.leaderId ?? -1),
    leaderEpoch: p?.leaderEpoch ?? -1,
  }
}

// Fetch

export function fetchRequestToWire(m: FetchRequest, clusterId: string): FetchRequestData.FetchRequestIn {
  return {
    clusterId,
    // Fetch v15+ names the replica in ReplicaState; the old ReplicaId field must stay at its default.
    replicaState: { replicaId: m.replicaId, replicaEpoch: -1n },
    maxWaitMs: m.maxWaitMs,
    minBytes: 0,
    maxBytes: m.maxBytes,
    topics: [
      {
        topic: METADATA_TOPIC,
        topicId: METADATA_TOPIC_ID,
        partitions: [
          {
            partition: 0,
            currentLeaderEpoch: m.currentLeaderEpoch,
            fetchOffset: m.fetchOffset,
            lastFetchedEpoch: m.lastFetchedEpoch,
            logStartOffset: m.logStartOffset,
            partitionMaxBytes: m.maxBytes,
          },
        ],
      },
    ],
  }
}

/** True when a Fetch request is for the metadata log (KRaft) rather than a data partition. */
export function isMetadataFetch(w: FetchRequestData.FetchRequest, version: number): boolean {
  const t = w.topics[0]
  if (t === undefined || w.topics.length !== 1) return false
  return version >= 13 ? t.topicId === METADATA_TOPIC_ID : t.topic === METADATA_TOPIC
}

export function fetchRequestFromWire(
  w: FetchRequestData.FetchRequest,
  version: number,
  a: Addressing,
): FetchRequest | null {
  const p = w.topics[0]?.partitions[0]
  if (p === undefined) return null
  const replicaId = NodeId(version >= 15 ? w.replicaState.replicaId : w.replicaId)
  return {
    type: 'FetchRequest',
    from: replicaId,
    to: a.self,
    correlationId: a.correlationId,
    replicaId,
    currentLeaderEpoch: p.currentLeaderEpoch,
    fetchOffset: p.fetchOffset,
    lastFetchedEpoch: p.lastFetchedEpoch,
    logStartOffset: p.logStartOffset,
    maxWaitMs: w.maxWaitMs,
    maxBytes: Math.min(w.maxBytes, p.partitionMaxBytes),
  }
}

const leaderToWire = (l: LeaderIdAndEpoch) => ({
  leaderId: NodeId(l.leaderId ?? -1),
  leaderEpoch: l.leaderEpoch,
})

export function fetchResponseToWire(m: FetchResponse, nowMs: number): FetchResponseData.FetchResponseIn {
  const records = m.records.length > 0 ? Buffer.concat(entriesToBatches(m.records, nowMs)) : Buffer.alloc(0)
  return {
    errorCode: RaftErrorCode.None,
    responses: [
      {
        topic: METADATA_TOPIC,
        topicId: METADATA_TOPIC_ID,
        partitions: [
          {
            partitionIndex: 0,
            errorCode: m.errorCode,
            highWatermark: m.highWatermark,
            logStartOffset: m.logStartOffset,
            currentLeader: leaderToWire(m.currentLeader),
            ...(m.divergingEpoch !== undefined
              ? { divergingEpoch: { epoch: m.divergingEpoch.epoch, endOffset: m.divergingEpoch.endOffset } }
              : {}),
            ...(m.snapshotId !== undefined
              ? { snapshotId: { endOffset: m.snapshotId.endOffset, epoch: m.snapshotId.epoch } }
              : {}),
            records,
          },
        ],
      },
    ],
  }
}

export function fetchResponseFromWire(w: FetchResponseData.FetchResponse, a: Addressing): FetchResponse {
  const p = w.responses[0]?.partitions[0]
  if (p === undefined) {
    return {
      type: 'FetchResponse',
      from: a.peer,
      to: a.self,
      correlationId: a.correlationId,
      errorCode: responseError(w.errorCode, undefined),
      highWatermark: -1n,
      logStartOffset: -1n,
      currentLeader: { leaderId: null, leaderEpoch: -1 },
      records: [],
    }
  }
  const diverging =
    p.divergingEpoch.epoch >= 0
      ? { epoch: p.divergingEpoch.epoch, endOffset: p.divergingEpoch.endOffset }
      : undefined
  const snapshot =
    p.snapshotId.endOffset >= 0n
      ? { endOffset: p.snapshotId.endOffset, epoch: p.snapshotId.epoch }
      : undefined
  return {
    type: 'FetchResponse',
    from: a.peer,
    to: a.self,
    correlationId: a.correlationId,
    errorCode: responseError(w.errorCode, p),
    highWatermark: p.highWatermark,
    logStartOffset: p.logStartOffset,
    currentLeader: {
      leaderId: leaderOrNull(p.currentLeader.leaderId),
      leaderEpoch: p.currentLeader.leaderEpoch,
    },
    ...(diverging !== undefined ? { divergingEpoch: diverging } : {}),
    ...(snapshot !== undefined ? { snapshotId: snapshot } : {}),
    records: p.records === null || p.records.length === 0 ? [] : batchesToEntries(p.records),
  }
}

// FetchSnapshot

export function fetchSnapshotRequestToWire(
  m: FetchSnapshotRequest,
  clusterId: string,
): FetchSnapshotRequestData.FetchSnapshotRequestIn {
  return {
    clusterId,
    replicaId: m.replicaId,
    maxBytes: m.maxBytes,
    topics: [
      {
        name: METADATA_TOPIC,
        partitions: [
          {
            partition: 0,
            currentLeaderEpoch: m.currentLeaderEpoch,
            snapshotId: { endOffset: m.snapshotId.endOffset, epoch: m.snapshotId.epoch },
            position: BigInt(m.position),
          },
        ],
      },
    ],
  }
}

export function fetchSnapshotRequestFromWire(
  w: FetchSnapshotRequestData.FetchSnapshotRequest,
  a: Addressing,
): FetchSnapshotRequest | null {
  const p = w.topics[0]?.partitions[0]
  if (p === undefined) return null
  return {
    type: 'FetchSnapshotRequest',
    from: w.replicaId,
    to: a.self,
    correlationId: a.correlationId,
    replicaId: w.replicaId,
    currentLeaderEpoch: p.currentLeaderEpoch,
    snapshotId: { endOffset: p.snapshotId.endOffset, epoch: p.snapshotId.epoch },
    position: Number(p.position),
    maxBytes: w.maxBytes,
  }
}

export function fetchSnapshotResponseToWire(
  m: FetchSnapshotResponse,
): FetchSnapshotResponseData.FetchSnapshotResponseIn {
  return {
    errorCode: RaftErrorCode.None,
    topics: [
      {
        name: METADATA_TOPIC,
        partitions: [
          {
            index: 0,
            errorCode: m.errorCode,
            snapshotId: { endOffset: m.snapshotId.endOffset, epoch: m.snapshotId.epoch },
            currentLeader: leaderToWire(m.currentLeader),
            size: BigInt(m.size),
            position: BigInt(m.position),
            unalignedRecords: Buffer.from(
              m.unalignedRecords.buffer,
              m.unalignedRecords.byteOffset,
              m.unalignedRecords.length,
            ),
          },
        ],
      },
    ],
  }
}

export function fetchSnapshotResponseFromWire(
  w: FetchSnapshotResponseData.FetchSnapshotResponse,
  a: Addressing,
): FetchSnapshotResponse {
  const p = w.topics[0]?.partitions[0]
  return {
    type: 'FetchSnapshotResponse',
    from: a.peer,
    to: a.self,
    correlationId: a.correlationId,
    errorCode: responseError(w.errorCode, p),
    snapshotId: { endOffset: p?.snapshotId.endOffset ?? -1n, epoch: p?.snapshotId.epoch ?? -1 },
    currentLeader: {
      leaderId: leaderOrNull(p?.currentLeader.leaderId ?? -1),
      leaderEpoch: p?.currentLeader.leaderEpoch ?? -1,
    },
    size: Number(p?.size ?? 0n),
    position: Number(p?.position ?? 0n),
    unalignedRecords: p?.unalignedRecords ?? Buffer.alloc(0),
  }
}
