/**
 * KRaft's RPCs as plain objects shaped after Kafka's JSON schemas, for the shell to map field by field
 * onto the generated codec. No encoding here: topic-partition, cluster id and endpoints are the shell's.
 */
import type { NodeId, Offset } from '../model/index.ts'
import type { Entry, EpochEndOffset, SnapshotId } from './entry.ts'

/** The Kafka error codes raft answers with (values from Kafka's errors.json). */
export const RaftErrorCode = {
  None: 0,
  NotLeaderOrFollower: 6,
  InvalidRequest: 42,
  FencedLeaderEpoch: 74,
  UnknownLeaderEpoch: 75,
  InconsistentVoterSet: 94,
  SnapshotNotFound: 98,
} as const
export type RaftErrorCode = (typeof RaftErrorCode)[keyof typeof RaftErrorCode]

/**
 * Addressing common to every message. `correlationId` is chosen by the requester's core, unique
 * among its outstanding requests; a response carries its request's. The shell may use it as the
 * wire correlation id or keep a map. A response whose id the core does not expect is ignored.
 */
interface Envelope {
  readonly from: NodeId
  readonly to: NodeId
  readonly correlationId: number
}

/** Kafka's LeaderIdAndEpoch: `leaderId` null is the wire's -1 (unknown). */
export interface LeaderIdAndEpoch {
  readonly leaderId: NodeId | null
  readonly leaderEpoch: number
}

/**
 * VoteRequest (api 52). KIP-595: `candidateEpoch` is the candidate's bumped epoch. KIP-996 (Vote v2,
 * `PreVote`): with `preVote` the sender does not bump its epoch and sends its current one; the
 * receiver changes no state. (On the wire: `src/quorum/raft-wire.ts`.)
 */
export interface VoteRequest extends Envelope {
  readonly type: 'VoteRequest'
  readonly candidateEpoch: number
  readonly candidateId: NodeId
  /** The epoch of the candidate's last record (or its snapshot's epoch when the log is empty). */
  readonly lastOffsetEpoch: number
  /** The candidate's log end offset. */
  readonly lastOffset: Offset
  readonly preVote: boolean
}

export interface VoteResponse extends Envelope {
  readonly type: 'VoteResponse'
  readonly errorCode: RaftErrorCode
  readonly leaderId: NodeId | null
  readonly leaderEpoch: number
  readonly voteGranted: boolean
}

/** BeginQuorumEpochRequest (api 53): a new leader announces itself to every voter (KIP-595). */
export interface BeginQuorumEpochRequest extends Envelope {
  readonly type: 'BeginQuorumEpochRequest'
  readonly leaderId: NodeId
  readonly leaderEpoch: number
}

export interface BeginQuorumEpochResponse extends Envelope {
  readonly type: 'BeginQuorumEpochResponse'
  readonly errorCode: RaftErrorCode
  readonly leaderId: NodeId | null
  readonly leaderEpoch: number
}

/**
 * EndQuorumEpochRequest (api 54): a resigning leader asks voters to elect a successor now rather
 * than after the fetch timeout. `preferredSuccessors` (v0 `PreferredSuccessors`, v1
 * `PreferredCandidates`) lists voters by log end offset, best first.
 */
export interface EndQuorumEpochRequest extends Envelope {
  readonly type: 'EndQuorumEpochRequest'
  readonly leaderId: NodeId
  readonly leaderEpoch: number
  readonly preferredSuccessors: readonly NodeId[]
}

export interface EndQuorumEpochResponse extends Envelope {
  readonly type: 'EndQuorumEpochResponse'
  readonly errorCode: RaftErrorCode
  readonly leaderId: NodeId | null
  readonly leaderEpoch: number
}

/**
 * FetchRequest (api 1) as KRaft uses it (v13+ fields): followers and observers pull from the leader.
 * `fetchOffset` is the fetcher's log end offset, durable on its disk; `lastFetchedEpoch` the epoch
 * of its record at `fetchOffset - 1`. The leader may hold the request up to `maxWaitMs`.
 */
export interface FetchRequest extends Envelope {
  readonly type: 'FetchRequest'
  readonly replicaId: NodeId
  readonly currentLeaderEpoch: number
  readonly fetchOffset: Offset
  readonly lastFetchedEpoch: number
  readonly logStartOffset: Offset
  readonly maxWaitMs: number
  readonly maxBytes: number
}

/**
 * FetchResponse: at most one of `divergingEpoch` (truncate, KIP-595), `snapshotId` (fetch that
 * snapshot, KIP-630) and non-empty `records`. `records` map onto the batch bytes of `Records`.
 */
export interface FetchResponse extends Envelope {
  readonly type: 'FetchResponse'
  readonly errorCode: RaftErrorCode
  readonly highWatermark: Offset
  readonly logStartOffset: Offset
  readonly divergingEpoch?: EpochEndOffset
  readonly currentLeader: LeaderIdAndEpoch
  readonly snapshotId?: SnapshotId
  readonly records: readonly Entry[]
}

/** FetchSnapshotRequest (api 59, KIP-630). Byte positions are numbers: snapshots stay below 2^53 bytes. */
export interface FetchSnapshotRequest extends Envelope {
  readonly type: 'FetchSnapshotRequest'
  readonly replicaId: NodeId
  readonly currentLeaderEpoch: number
  readonly snapshotId: SnapshotId
  readonly position: number
  readonly maxBytes: number
}

export interface FetchSnapshotResponse extends Envelope {
  readonly type: 'FetchSnapshotResponse'
  readonly errorCode: RaftErrorCode
  readonly snapshotId: SnapshotId
  readonly currentLeader: LeaderIdAndEpoch
  /** The whole snapshot's size in bytes. */
  readonly size: number
  readonly position: number
  readonly unalignedRecords: Uint8Array
}

export type RaftRequest =
  | VoteRequest
  | BeginQuorumEpochRequest
  | EndQuorumEpochRequest
  | FetchRequest
  | FetchSnapshotRequest

export type RaftResponse =
  | VoteResponse
  | BeginQuorumEpochResponse
  | EndQuorumEpochResponse
  | FetchResponse
  | FetchSnapshotResponse

export type RaftMessage = RaftRequest | RaftResponse

export function isRequest(message: RaftMessage): message is RaftRequest {
  return message.type.endsWith('Request')
}

function leader(l: LeaderIdAndEpoch): string {
  return `${l.leaderId ?? '-'}@${l.leaderEpoch}`
}

function entries(records: readonly Entry[]): string {
  if (records.length === 0) return '[]'
  const first = records[0]!
  const last = records.at(-1)!
  return `[${first.offset}..${last.offset}]`
}

/**
 * One line per message, for logs and scenario traces. Positions read `epoch@offset` and leaders
 * `id@epoch`. Example: `1->2 Vote epoch=3 last=2@10 pre`.
 */
export function formatMessage(m: RaftMessage): string {
  const head = `${m.from}->${m.to}`
  switch (m.type) {
    case 'VoteRequest':
      return `${head} Vote epoch=${m.candidateEpoch} last=${m.lastOffsetEpoch}@${m.lastOffset}${m.preVote ? ' pre' : ''}`
    case 'VoteResponse':
      return `${head} VoteResp ${m.voteGranted ? 'granted' : 'rejected'} leader=${m.leaderId ?? '-'}@${m.leaderEpoch}${err(m.errorCode)}`
    case 'BeginQuorumEpochRequest':
      return `${head} BeginQuorumEpoch leader=${m.leaderId}@${m.leaderEpoch}`
    case 'BeginQuorumEpochResponse':
      return `${head} BeginQuorumEpochResp leader=${m.leaderId ?? '-'}@${m.leaderEpoch}${err(m.errorCode)}`
    case 'EndQuorumEpochRequest':
      return `${head} EndQuorumEpoch leader=${m.leaderId}@${m.leaderEpoch} successors=[${m.preferredSuccessors.join(',')}]`
    case 'EndQuorumEpochResponse':
      return `${head} EndQuorumEpochResp leader=${m.leaderId ?? '-'}@${m.leaderEpoch}${err(m.errorCode)}`
    case 'FetchRequest':
      return `${head} Fetch epoch=${m.currentLeaderEpoch} offset=${m.fetchOffset} lastEpoch=${m.lastFetchedEpoch}`
    case 'FetchResponse': {
      const parts = [`${head} FetchResp leader=${leader(m.currentLeader)} hw=${m.highWatermark}`]
      if (m.divergingEpoch) parts.push(`diverging=${m.divergingEpoch.epoch}@${m.divergingEpoch.endOffset}`)
      if (m.snapshotId) parts.push(`snapshot=${m.snapshotId.epoch}@${m.snapshotId.endOffset}`)
      if (m.records.length > 0) parts.push(`records=${entries(m.records)}`)
      return parts.join(' ') + err(m.errorCode)
    }
    case 'FetchSnapshotRequest':
      return `${head} FetchSnapshot id=${m.snapshotId.epoch}@${m.snapshotId.endOffset} position=${m.position}`
    case 'FetchSnapshotResponse':
      return `${head} FetchSnapshotResp id=${m.snapshotId.epoch}@${m.snapshotId.endOffset} bytes=${m.position}+${m.unalignedRecords.length}/${m.size}${err(m.errorCode)}`
  }
}

const ERROR_NAMES: Record<number, string> = {
  6: 'NOT_LEADER_OR_FOLLOWER',
  42: 'INVALID_REQUEST',
  74: 'FENCED_LEADER_EPOCH',
  75: 'UNKNOWN_LEADER_EPOCH',
  94: 'INCONSISTENT_VOTER_SET',
  98: 'SNAPSHOT_NOT_FOUND',
}

function err(code: RaftErrorCode): string {
  return code === RaftErrorCode.None ? '' : ` error=${ERROR_NAMES[code] ?? code}`
}
