/** raft: the pure KRaft core (KIP-595, KIP-996, KIP-630). The module's only public entry. */
export {
  compareEpochOffset,
  type DataEntry,
  EMPTY_SNAPSHOT_ID,
  type Entry,
  type EpochEndOffset,
  entrySizeBytes,
  type LeaderChangeEntry,
  offsetMax,
  offsetMin,
  type Snapshot,
  type SnapshotId,
} from './entry.ts'
export {
  type BeginQuorumEpochRequest,
  type BeginQuorumEpochResponse,
  type EndQuorumEpochRequest,
  type EndQuorumEpochResponse,
  type FetchRequest,
  type FetchResponse,
  type FetchSnapshotRequest,
  type FetchSnapshotResponse,
  formatMessage,
  isRequest,
  type LeaderIdAndEpoch,
  RaftErrorCode,
  type RaftMessage,
  type RaftRequest,
  type RaftResponse,
  type VoteRequest,
  type VoteResponse,
} from './messages.ts'
export {
  parseQuorumVoters,
  type QuorumVoter,
  RAFT_CONFIG_DEFAULTS,
  type RaftConfig,
  type RaftConfigInput,
  raftConfig,
} from './raft-config.ts'
export { RaftLog } from './raft-log.ts'
export {
  CHECK_QUORUM_TIMEOUT_FACTOR,
  ELECTION_BACKOFF_BASE_MS,
  RaftNode,
  type RaftNodeOptions,
  type RaftRandom,
} from './raft-node.ts'
export type {
  PersistedRaftState,
  PersistentState,
  ProposeResult,
  QuorumDescription,
  RaftRole,
  RaftStatus,
  Ready,
  ReplicaDescription,
} from './ready.ts'
