/**
 * The simulation's named invariants, checked after every event. Each violation names its
 * invariant, so a failing seed says what broke, not just that something did.
 */
import type { NodeId } from '../../src/model/index.ts'
import { type Entry, offsetMax, type RaftNode, type RaftStatus, type Snapshot } from '../../src/raft/index.ts'
import { entryKey, parseSnapshot } from './sim-state-machine.ts'

export const Invariant = {
  /** KIP-595 election safety: no two nodes lead the same epoch. */
  SingleLeaderPerEpoch: 'SingleLeaderPerEpoch',
  /** KIP-595: a voter grants at most one vote per epoch, even across restarts. */
  OneVotePerEpoch: 'OneVotePerEpoch',
  /** No node's high watermark moves backwards (within one incarnation: it is not persisted). */
  HighWatermarkMonotonic: 'HighWatermarkMonotonic',
  /** Below its high watermark, every node's log holds exactly the committed entries. */
  LogMatchesBelowHighWatermark: 'LogMatchesBelowHighWatermark',
  /** Every node applies the same entry at each offset (state-machine safety). */
  StateMachineSafety: 'StateMachineSafety',
  /**
   * Raft's leader completeness: a leader of epoch E holds every entry committed in an epoch below
   * E, in its log or its snapshot, so none is ever lost. (A leader of a lower epoch may still win
   * late, from delayed votes, after a higher epoch committed; it can commit nothing.)
   */
  LeaderCompleteness: 'LeaderCompleteness',
  /** A snapshot, taken or installed, equals the committed state at its offset. */
  SnapshotMatchesCommitted: 'SnapshotMatchesCommitted',
  /** The Ready contract: what a message depends on is on the sender's disk when it leaves. */
  DurableBeforeSend: 'DurableBeforeSend',
  /** When a leader's high watermark passes an entry, a majority of voters hold it durably. */
  CommittedOnMajority: 'CommittedOnMajority',
  /** Once faults stop, a leader commits a new entry within a bounded simulated time. */
  Liveness: 'Liveness',
  /** ...and then every live node catches up to it (through snapshots if needed). */
  Convergence: 'Convergence',
  /** The core's own assertions (a thrown AssertionError) and the Ready contract. */
  CoreAssertion: 'CoreAssertion',
} as const
export type Invariant = (typeof Invariant)[keyof typeof Invariant]

export class InvariantViolation extends Error {
  override name = 'InvariantViolation'
  readonly invariant: Invariant
  constructor(invariant: Invariant, message: string) {
    super(`${invariant}: ${message}`)
    this.invariant = invariant
  }
}

export function fail(invariant: Invariant, message: string): never {
  throw new InvariantViolation(invariant, message)
}

interface NodeView {
  highWatermark: bigint
  role: RaftStatus['role']
  epoch: number
}

export class InvariantChecker {
  /** Committed entries by offset: the first node to commit an offset defines it. */
  readonly committed = new Map<bigint, string>()
  /** The epoch of the node that first reported each offset committed: the epoch it was committed in. */
  readonly #commitEpoch = new Map<bigint, number>()
  /** The state machine's hash after applying everything below an offset. */
  readonly #stateHashAt = new Map<bigint, number>([[0n, 0]])
  readonly #leaders = new Map<number, NodeId>()
  readonly #votes = new Map<string, NodeId>()
  readonly #views = new Map<NodeId, NodeView>()
  /** The highest high watermark any node has reported. */
  committedEnd = 0n
  /** Invoked with each offset the first time it is known committed. */
  onCommitted: ((offset: bigint, entry: Entry) => void) | null = null

  /** A node (re)started: its high watermark starts over. */
  nodeStarted(id: NodeId, raft: RaftNode): void {
    const s = raft.status()
    // From the snapshot up, whatever the new incarnation claims committed gets checked.
    this.#views.set(id, { highWatermark: s.logStartOffset, role: 'unattached', epoch: s.epoch })
    const snapshot = raft.latestSnapshot
    if (snapshot !== null) this.snapshotSeen(id, snapshot)
  }

  nodeStopped(id: NodeId): void {
    this.#views.delete(id)
  }

  /** After every event, for every live node. */
  check(id: NodeId, raft: RaftNode): void {
    const s = raft.status()
    const view = this.#views.get(id)!
    if (s.role === 'leader') {
      const leader = this.#leaders.get(s.epoch)
      if (leader === undefined) this.#leaders.set(s.epoch, id)
      else if (leader !== id)
        fail(Invariant.SingleLeaderPerEpoch, `nodes ${leader} and ${id} both lead epoch ${s.epoch}`)
      if (view.role !== 'leader' || view.epoch !== s.epoch) this.#checkLeaderCompleteness(id, raft)
    }
    if (s.highWatermark < view.highWatermark) {
      fail(Invariant.HighWatermarkMonotonic, `node ${id}: ${view.highWatermark} -> ${s.highWatermark}`)
    }
    if (s.highWatermark > view.highWatermark) {
      const from = offsetMax(view.highWatermark, s.logStartOffset)
      for (let offset = from; offset < s.highWatermark; offset++) {
        const entry = raft.log.entryAt(offset)
        if (entry === undefined) {
          fail(
            Invariant.LogMatchesBelowHighWatermark,
            `node ${id}: no entry at ${offset} < hw ${s.highWatermark}`,
          )
        }
        this.#commit(id, offset, entry, s.epoch, Invariant.LogMatchesBelowHighWatermark)
      }
      if (s.highWatermark > this.committedEnd) this.committedEnd = s.highWatermark
    }
    view.highWatermark = s.highWatermark
    view.role = s.role
    view.epoch = s.epoch
  }

  #commit(id: NodeId, offset: bigint, entry: Entry, epoch: number, invariant: Invariant): void {
    const key = entryKey(entry)
    const known = this.committed.get(offset)
    if (known === undefined) {
      this.committed.set(offset, key)
      this.#commitEpoch.set(offset, epoch)
      this.onCommitted?.(offset, entry)
    } else if (known !== key) {
      fail(invariant, `node ${id}: offset ${offset} holds ${key}, committed is ${known}`)
    }
  }

  /** KIP-595: the winner of an election holds every entry committed in an earlier epoch. */
  #checkLeaderCompleteness(id: NodeId, raft: RaftNode): void {
    const start = raft.log.startOffset
    const epoch = raft.status().epoch
    for (let offset = start; offset < this.committedEnd; offset++) {
      const entry = raft.log.entryAt(offset)
      const known = this.committed.get(offset)
      if (known === undefined || this.#commitEpoch.get(offset)! >= epoch) continue
      if (entry === undefined || entryKey(entry) !== known) {
        fail(
          Invariant.LeaderCompleteness,
          `leader ${id} (epoch ${raft.status().epoch}) lacks committed ${offset}: has ${entry ? entryKey(entry) : 'nothing'}, committed ${known}`,
        )
      }
    }
    const snapshot = raft.latestSnapshot
    if (start > 0n && snapshot !== null) this.snapshotSeen(id, snapshot)
  }

  /** A vote response granted by `voter` to `candidate` in `epoch` left the node. */
  voteGranted(voter: NodeId, epoch: number, candidate: NodeId): void {
    const key = `${voter}@${epoch}`
    const previous = this.#votes.get(key)
    if (previous === undefined) this.#votes.set(key, candidate)
    else if (previous !== candidate) {
      fail(
        Invariant.OneVotePerEpoch,
        `voter ${voter} voted for ${previous} and ${candidate} in epoch ${epoch}`,
      )
    }
  }

  /** A node applied `entry`, its state machine now at `hashAfter`. */
  applied(id: NodeId, entry: Entry, hashAfter: number, epoch: number): void {
    this.#commit(id, entry.offset, entry, epoch, Invariant.StateMachineSafety)
    this.#stateHash(id, entry.offset + 1n, hashAfter, Invariant.StateMachineSafety)
  }

  /** A snapshot exists on a node (taken, installed or recovered). */
  snapshotSeen(id: NodeId, snapshot: Snapshot): void {
    const { endOffset, hash } = parseSnapshot(snapshot.bytes)
    if (endOffset !== snapshot.id.endOffset) {
      fail(
        Invariant.SnapshotMatchesCommitted,
        `node ${id}: snapshot id ${snapshot.id.endOffset}, bytes ${endOffset}`,
      )
    }
    if (endOffset > this.committedEnd) {
      fail(
        Invariant.SnapshotMatchesCommitted,
        `node ${id}: snapshot at ${endOffset} beyond committed ${this.committedEnd}`,
      )
    }
    this.#stateHash(id, endOffset, hash, Invariant.SnapshotMatchesCommitted)
  }

  #stateHash(id: NodeId, endOffset: bigint, hash: number, invariant: Invariant): void {
    const known = this.#stateHashAt.get(endOffset)
    if (known === undefined) this.#stateHashAt.set(endOffset, hash)
    else if (known !== hash)
      fail(invariant, `node ${id}: state at ${endOffset} is ${hash}, committed state is ${known}`)
  }
}
