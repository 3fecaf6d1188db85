/** The Ready contract between the pure core and its I/O shell, and the results of the client API. */
import type { NodeId, Offset } from '../model/index.ts'
import type { Entry, Snapshot } from './entry.ts'
import type { RaftMessage } from './messages.ts'

/**
 * What survives a crash, as Kafka's quorum-state file (QuorumStateData: LeaderEpoch, VotedId,
 * LeaderId). `null` is the file's -1. KIP-595: one vote per epoch, so `votedId` is durable before
 * any vote response leaves.
 */
export interface PersistentState {
  readonly epoch: number
  readonly votedId: NodeId | null
  readonly leaderId: NodeId | null
}

/**
 * A batch of work for the shell. Handle each Ready completely, in this order, then call
 * `advance(ready)`; ask for the next one only after that:
 *
 * 1. Persist, then fsync, before anything else:
 *    a. `snapshot`: install it as the latest snapshot and drop the whole log (the log restarts,
 *       empty, at `snapshot.id.endOffset`);
 *    b. `truncateTo`: remove every log entry at or above this offset;
 *    c. `entries`: append (they continue the log exactly where a and b left it);
 *    d. `state`: write the quorum-state file.
 *    Everything in `messages` may depend on all four being durable: a vote response on `state`,
 *    a Fetch's `fetchOffset` on `entries` (the leader counts it toward the high watermark).
 * 2. Send `messages` (best effort: the core retries what matters; dropping is always safe).
 * 3. Apply: if `snapshot`, load it into the state machine first; then apply `committed` in order.
 *    `committed` continues exactly where the previous Ready's ended (or at the snapshot's end).
 * 4. `advance(ready)`: the leader then counts its own appended entries as durable.
 *
 * `highWatermark` is informational (metrics, read-your-writes): every entry below it is committed.
 * Between `ready()` and `advance()` the shell may keep calling `step`, `tick` and `propose`.
 */
export interface Ready {
  readonly state?: PersistentState
  readonly snapshot?: Snapshot
  readonly truncateTo?: Offset
  readonly entries: readonly Entry[]
  readonly messages: readonly RaftMessage[]
  readonly committed: readonly Entry[]
  readonly highWatermark: Offset
}

/** What the shell recovered from disk when it restarts a node. */
export interface PersistedRaftState {
  readonly state?: PersistentState
  /** The latest snapshot; required when `entries` do not start at offset 0. */
  readonly snapshot?: Snapshot
  /** The durable log after the snapshot, in offset order. */
  readonly entries?: readonly Entry[]
}

/** `propose` results: appended (not yet committed), or why not. */
export type ProposeResult =
  | {
      readonly kind: 'appended'
      /** The leader's epoch: the entries are committed when the high watermark passes `lastOffset` in it. */
      readonly epoch: number
      readonly baseOffset: Offset
      readonly lastOffset: Offset
    }
  | { readonly kind: 'notLeader'; readonly leaderId: NodeId | null; readonly epoch: number }
  /** More than `uncommittedEntriesMax` entries would wait above the high watermark: retry later. */
  | { readonly kind: 'backpressure'; readonly uncommittedEntries: number }

/** A replica as DescribeQuorum reports it; -1 means unknown, as on the wire. */
export interface ReplicaDescription {
  readonly replicaId: NodeId
  readonly logEndOffset: Offset
  /** The `tick` clock's time of its last fetch, or -1. */
  readonly lastFetchTimestamp: number
  /** The `tick` clock's time at which it last was caught up with the leader's log end, or -1. */
  readonly lastCaughtUpTimestamp: number
}

/** The leader's view for DescribeQuorum (KIP-595, KIP-836). Timestamps use the `tick` clock. */
export interface QuorumDescription {
  readonly leaderId: NodeId
  readonly leaderEpoch: number
  readonly highWatermark: Offset
  readonly currentVoters: readonly ReplicaDescription[]
  readonly observers: readonly ReplicaDescription[]
}

export type RaftRole = 'unattached' | 'follower' | 'prospective' | 'candidate' | 'leader' | 'resigned'

/** A node's state at a glance, for logs, metrics, tests. */
export interface RaftStatus {
  readonly nodeId: NodeId
  readonly isVoter: boolean
  readonly role: RaftRole
  readonly epoch: number
  readonly leaderId: NodeId | null
  readonly votedId: NodeId | null
  readonly highWatermark: Offset
  readonly logStartOffset: Offset
  readonly logEndOffset: Offset
  readonly lastEpoch: number
  /** Entries below this have been handed to the state machine and acknowledged by `advance`. */
  readonly appliedOffset: Offset
}
