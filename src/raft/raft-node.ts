/**
 * One KRaft replica (voter or observer) as a pure state machine: input through `step`, time through
 * `tick`, output as a `Ready` the shell persists, sends and applies. No I/O, clocks or randomness.
 */
import { assert, type NodeId, type Offset } from '../model/index.ts'
import {
  compareEpochOffset,
  type DataEntry,
  type Entry,
  type EpochEndOffset,
  type LeaderChangeEntry,
  offsetMin,
  type Snapshot,
  type SnapshotId,
} from './entry.ts'
import {
  type BeginQuorumEpochRequest,
  type BeginQuorumEpochResponse,
  type EndQuorumEpochRequest,
  type EndQuorumEpochResponse,
  type FetchRequest,
  type FetchResponse,
  type FetchSnapshotRequest,
  type FetchSnapshotResponse,
  type LeaderIdAndEpoch,
  RaftErrorCode,
  type RaftMessage,
  type VoteRequest,
  type VoteResponse,
} from './messages.ts'
import { type RaftConfig, type RaftConfigInput, raftConfig } from './raft-config.ts'
import { RaftLog } from './raft-log.ts'
import type {
  PersistedRaftState,
  PersistentState,
  ProposeResult,
  QuorumDescription,
  RaftRole,
  RaftStatus,
  Ready,
  ReplicaDescription,
} from './ready.ts'

/**
 * The randomness the core needs (election jitter and backoff): structurally a subset of io's
 * `Random`, so the shell passes a `SeededRandom` or `systemRandom` without raft importing io.
 */
export interface RaftRandom {
  /** A uniform integer in [0, exclusiveMax). */
  int(exclusiveMax: number): number
}

export interface RaftNodeOptions {
  readonly config: RaftConfigInput
  readonly random: RaftRandom
  /** The `tick` clock's time at construction (monotonic milliseconds). */
  readonly nowMs: number
  /** What the shell recovered from disk; absent for a brand-new node. */
  readonly persisted?: PersistedRaftState
}

/** Kafka's check-quorum window: a leader resigns after 1.5 fetch timeouts without a majority. */
export const CHECK_QUORUM_TIMEOUT_FACTOR = 1.5
/** The first step of the binary exponential election backoff (Kafka's RETRY_BACKOFF_BASE_MS). */
export const ELECTION_BACKOFF_BASE_MS = 100
/** Election retries beyond this stop growing the backoff (it is capped by electionBackoffMsMax anyway). */
const ELECTION_RETRIES_MAX = 16
const CORRELATION_ID_LIMIT = 2 ** 31
/**
 * Older snapshots a leader keeps serving to replicas part-way through fetching them, so that a
 * leader snapshotting faster than a slow replica downloads cannot restart its transfer forever.
 */
const RETIRED_SNAPSHOTS_MAX = 4
const EMPTY_BYTES = new Uint8Array(0)

interface Inflight {
  readonly to: NodeId
  readonly correlationId: number
  readonly sentAtMs: number
}

/** One follower's or observer's fetch loop: at most one request out at a time. */
interface FetchLoop {
  inflight: (Inflight & { readonly kind: 'fetch' | 'snapshot'; readonly fetchOffset: Offset }) | null
  nextFetchAtMs: number
}

/** A snapshot being assembled from FetchSnapshot chunks. */
interface SnapshotFetch {
  readonly id: SnapshotId
  readonly chunks: Uint8Array[]
  position: number
  size: number
}

/** Pre-vote or vote round. */
interface Election {
  readonly requests: Map<NodeId, Inflight>
  readonly granted: Set<NodeId>
  readonly rejected: Set<NodeId>
}

interface Unattached {
  readonly kind: 'unattached'
  /** Voters: when to start a pre-vote. Observers: unused (they look for the leader by fetching). */
  electionDeadlineMs: number
  readonly fetch: FetchLoop
}

interface Follower {
  readonly kind: 'follower'
  /** Voters start a pre-vote at this time; observers forget the leader. Reset by each successful fetch. */
  fetchDeadlineMs: number
  /** A successful fetch from the leader in this epoch (KIP-996: such a follower refuses pre-votes). */
  hasFetched: boolean
  /** The leader sent EndQuorumEpoch: stop fetching, grant pre-votes, elect on `fetchDeadlineMs`. */
  leaderResigned: boolean
  readonly fetch: FetchLoop
  snapshotFetch: SnapshotFetch | null
}

interface Prospective {
  readonly kind: 'prospective'
  /** The leader it followed in this epoch, to go back to if the pre-vote fails (KIP-996). */
  retainedLeaderId: NodeId | null
  phase: 'voting' | 'backoff'
  phaseDeadlineMs: number
  election: Election
}

interface Candidate {
  readonly kind: 'candidate'
  phase: 'voting' | 'backoff'
  phaseDeadlineMs: number
  readonly election: Election
}

interface ReplicaProgress {
  /** The last validated fetch offset: this replica's durable log end, as far as the leader knows. */
  endOffset: Offset | null
  lastFetchMs: number | null
  lastCaughtUpMs: number | null
  /** The leader's log end at this replica's previous fetch (for lastCaughtUpMs, as Kafka). */
  leaderEndAtLastFetch: Offset | null
  /** The high watermark in the last fetch response to this replica: a newer one is worth an answer. */
  highWatermarkSent: Offset
}

interface Leader {
  readonly kind: 'leader'
  /** The offset of this epoch's LeaderChange entry: the high watermark must pass it (commit rule). */
  readonly epochStartOffset: Offset
  readonly electedAtMs: number
  readonly grantingVoters: readonly NodeId[]
  readonly voters: Map<NodeId, ReplicaProgress>
  /** Observers by last fetch, least recent first; at most `observersMax`. */
  readonly observers: Map<NodeId, ReplicaProgress>
  /** Voters sent BeginQuorumEpoch that have not fetched since (repeated every request timeout). */
  readonly unannounced: Map<NodeId, Inflight>
  /** Fetches held until the log grows, the high watermark moves or `deadlineMs` (one per replica). */
  readonly parked: Map<NodeId, { readonly request: FetchRequest; readonly deadlineMs: number }>
}

interface Resigned {
  readonly kind: 'resigned'
  electionDeadlineMs: number
  readonly preferredSuccessors: readonly NodeId[]
  /** Voters that have not yet acknowledged EndQuorumEpoch. */
  readonly unnotified: Map<NodeId, Inflight>
}

type Role = Unattached | Follower | Prospective | Candidate | Leader | Resigned

/**
 * A KRaft replica. Voters elect a leader with pre-vote then vote (KIP-595, KIP-996); the leader
 * appends; followers and observers replicate by Fetch, truncating on divergence and catching up
 * from snapshots (KIP-630). See `Ready` for the shell's side of the contract.
 *
 * ```ts
 * const node = new RaftNode({ config: { nodeId, voters }, random, nowMs: clock.monotonicMs() })
 * // on a message: node.step(message); on a timer at node.nextDeadlineMs(): node.tick(now)
 * while (node.hasReady()) {
 *   const ready = node.ready()
 *   await persist(ready) // snapshot, truncateTo, entries, state; fsync
 *   send(ready.messages)
 *   apply(ready.snapshot, ready.committed)
 *   node.advance(ready)
 * }
 * ```
 */
export class RaftNode {
  readonly nodeId: NodeId
  readonly config: RaftConfig
  readonly #random: RaftRandom
  readonly #isVoter: boolean
  readonly #majority: number
  readonly #log: RaftLog
  #nowMs: number

  // Persistent state (Ready.state).
  #epoch = 0
  #votedId: NodeId | null = null
  #leaderId: NodeId | null = null
  #stateDirty = false

  #role: Role
  #highWatermark: Offset
  #latestSnapshot: Snapshot | null
  /** When a replica last fetched a chunk of the latest snapshot. */
  #latestSnapshotServedMs: number | null = null
  /** Replaced snapshots still being fetched (at most RETIRED_SNAPSHOTS_MAX), by `epoch@endOffset`. */
  readonly #retiredSnapshots = new Map<string, { readonly snapshot: Snapshot; lastServedMs: number }>()
  #electionRetries = 0
  #nextCorrelationId: number

  // Ready bookkeeping.
  /** Entries below this have been handed to the shell in a Ready. */
  #stableOffset: Offset
  /** Entries below this are durable on this node's disk (advanced). */
  #durableEndOffset: Offset
  #pendingTruncateTo: Offset | null = null
  #pendingSnapshot: Snapshot | null = null
  #outbox: RaftMessage[] = []
  #outstanding: { readonly ready: Ready; readonly handedEndOffset: Offset } | null = null
  /** The lowest truncation point since the outstanding Ready was handed out. */
  #truncatedSinceHandout: Offset | null = null
  /** Committed entries below this were handed out in a Ready. */
  #applyHandedOffset: Offset
  /** ...and below this, acknowledged by `advance`. */
  #appliedOffset: Offset
  #readyHighWatermark: Offset
  /** Messages dropped because the outbox was full (a lossy-network event, counted for metrics). */
  droppedMessages = 0

  constructor(options: RaftNodeOptions) {
    const config = raftConfig(options.config)
    this.config = config
    this.nodeId = config.nodeId
    this.#random = options.random
    this.#nowMs = options.nowMs
    this.#isVoter = config.voters.includes(config.nodeId)
    this.#majority = Math.floor(config.voters.length / 2) + 1
    const persisted = options.persisted ?? {}
    const snapshot = persisted.snapshot ?? null
    this.#log = new RaftLog(snapshot?.id, persisted.entries ?? [])
    this.#latestSnapshot = snapshot
    this.#highWatermark = this.#log.startOffset
    this.#stableOffset = this.#log.endOffset
    this.#durableEndOffset = this.#log.endOffset
    this.#applyHandedOffset = this.#log.startOffset
    this.#appliedOffset = this.#log.startOffset
    this.#readyHighWatermark = this.#highWatermark
    this.#nextCorrelationId = this.#random.int(CORRELATION_ID_LIMIT)

    const state = persisted.state ?? { epoch: 0, votedId: null, leaderId: null }
    assert(Number.isSafeInteger(state.epoch) && state.epoch >= 0, 'RaftNode: bad persisted epoch')
    this.#epoch = state.epoch
    this.#votedId = state.votedId
    this.#leaderId = state.leaderId
    this.#role = this.#unattachedRole()
    if (this.#log.lastEpoch > state.epoch) {
      // The log's fsync outran the quorum-state file's (Kafka handles the same case): nothing that
      // depended on the lost state left this node, so continue, unattached, in the log's epoch.
      this.#setState(this.#log.lastEpoch, null, null)
    } else if (this.#leaderId === this.nodeId) {
      // Leader before the restart: its replica progress is gone, so it cannot lead this epoch again.
      this.#becomeResigned()
    } else if (this.#leaderId !== null) {
      this.#becomeFollower(this.#epoch, this.#leaderId)
    }
    if (this.#isVoter && config.voters.length === 1) {
      // KIP-595: the only voter elects itself at once.
      this.#becomeCandidate()
    }
    this.#poll() // the first Ready carries the first requests (a follower's Fetch, ...)
  }

  // ---------------------------------------------------------------------------------------------
  // Public API
  // ---------------------------------------------------------------------------------------------

  /**
   * Move time to `nowMs` (the shell's monotonic milliseconds, never decreasing) and act on what fell
   * due. Time moves only here: call it at `nextDeadlineMs()` and also just before `step`, `propose`,
   * `resign` and `advance`, so that what they do is stamped with the current time (a stale clock
   * makes deadlines fall early). Calling it often is cheap and harmless.
   */
  tick(nowMs: number): void {
    assert(Number.isFinite(nowMs) && nowMs >= this.#nowMs, `RaftNode.tick: time went backwards to ${nowMs}`)
    this.#nowMs = nowMs
    this.#poll()
  }

  /** The earliest time at which `tick` has something to do (may be in the past: tick now). */
  nextDeadlineMs(): number {
    const role = this.#role
    const inflightDeadline = (inflight: Inflight | null) =>
      inflight === null ? Number.POSITIVE_INFINITY : inflight.sentAtMs + this.config.requestTimeoutMs
    const loopDeadline = (loop: FetchLoop) =>
      loop.inflight === null ? loop.nextFetchAtMs : inflightDeadline(loop.inflight)
    const electionDeadline = (election: Election) => {
      let min = Number.POSITIVE_INFINITY
      for (const inflight of election.requests.values()) min = Math.min(min, inflightDeadline(inflight))
      return min
    }
    switch (role.kind) {
      case 'unattached':
        return this.#isVoter ? role.electionDeadlineMs : loopDeadline(role.fetch)
      case 'follower':
        return Math.min(
          role.fetchDeadlineMs,
          role.leaderResigned ? Number.POSITIVE_INFINITY : loopDeadline(role.fetch),
        )
      case 'prospective':
      case 'candidate':
        return Math.min(
          role.phaseDeadlineMs,
          role.phase === 'voting' ? electionDeadline(role.election) : Infinity,
        )
      case 'leader': {
        let min = this.#checkQuorumDeadlineMs(role)
        for (const parked of role.parked.values()) min = Math.min(min, parked.deadlineMs)
        for (const inflight of role.unannounced.values()) min = Math.min(min, inflightDeadline(inflight))
        for (const [voterId, progress] of role.voters) {
          if (!role.unannounced.has(voterId)) min = Math.min(min, this.#silentUntilMs(role, progress))
        }
        return min
      }
      case 'resigned': {
        let min = role.electionDeadlineMs
        for (const inflight of role.unnotified.values()) min = Math.min(min, inflightDeadline(inflight))
        return min
      }
    }
  }

  /** Handle one message addressed to this node. Requests are answered in a later Ready. */
  step(message: RaftMessage): void {
    assert(message.to === this.nodeId, `RaftNode.step: message for ${message.to} given to ${this.nodeId}`)
    switch (message.type) {
      case 'VoteRequest':
        this.#onVoteRequest(message)
        break
      case 'VoteResponse':
        this.#onVoteResponse(message)
        break
      case 'BeginQuorumEpochRequest':
        this.#onBeginQuorumEpochRequest(message)
        break
      case 'BeginQuorumEpochResponse':
        this.#onBeginQuorumEpochResponse(message)
        break
      case 'EndQuorumEpochRequest':
        this.#onEndQuorumEpochRequest(message)
        break
      case 'EndQuorumEpochResponse':
        this.#onEndQuorumEpochResponse(message)
        break
      case 'FetchRequest':
        this.#onFetchRequest(message)
        break
      case 'FetchResponse':
        this.#onFetchResponse(message)
        break
      case 'FetchSnapshotRequest':
        this.#onFetchSnapshotRequest(message)
        break
      case 'FetchSnapshotResponse':
        this.#onFetchSnapshotResponse(message)
        break
    }
    this.#poll()
  }

  /**
   * Leader only: append records in the current epoch. They are committed once the high watermark
   * passes `lastOffset` (watch `committed` for offset and epoch). 1..`proposeEntriesMax` records.
   */
  propose(data: readonly Uint8Array[]): ProposeResult {
    assert(
      data.length > 0 && data.length <= this.config.proposeEntriesMax,
      'RaftNode.propose: bad record count',
    )
    const role = this.#role
    if (role.kind !== 'leader') {
      const { leaderId, leaderEpoch } = this.#currentLeader()
      return { kind: 'notLeader', leaderId, epoch: leaderEpoch }
    }
    const uncommitted = Number(this.#log.endOffset - this.#highWatermark)
    if (uncommitted + data.length > this.config.uncommittedEntriesMax) {
      return { kind: 'backpressure', uncommittedEntries: uncommitted }
    }
    const baseOffset = this.#log.endOffset
    const entries: DataEntry[] = data.map((bytes, i) => ({
      kind: 'data',
      offset: baseOffset + BigInt(i),
      epoch: this.#epoch,
      data: bytes,
    }))
    this.#log.append(entries)
    this.#completeParkedFetches(role)
    return { kind: 'appended', epoch: this.#epoch, baseOffset, lastOffset: this.#log.endOffset - 1n }
  }

  /**
   * Leader only: step down gracefully (KIP-595 EndQuorumEpoch). Voters are asked to elect at once,
   * the most caught-up first. Returns false when this node is not the leader.
   */
  resign(): boolean {
    if (this.#role.kind !== 'leader') return false
    this.#becomeResigned()
    this.#poll()
    return true
  }

  /**
   * The state machine took a durable snapshot of everything below `atOffset` (at most the applied
   * offset). The core keeps `bytes` to serve FetchSnapshot and forgets the log below `atOffset`;
   * the shell may then delete its log below it. A no-op (returning the current id) if not newer.
   */
  snapshot(atOffset: Offset, bytes: Uint8Array): SnapshotId {
    assert(atOffset <= this.#appliedOffset, `RaftNode.snapshot: ${atOffset} is beyond the applied offset`)
    if (atOffset <= this.#log.startOffset) return this.#log.snapshotId
    assert(bytes.length <= this.config.snapshotBytesMax, 'RaftNode.snapshot: larger than snapshotBytesMax')
    const epoch = this.#log.epochAt(atOffset - 1n)
    assert(epoch !== undefined, 'RaftNode.snapshot: offset outside the log')
    const id: SnapshotId = { endOffset: atOffset, epoch }
    assert(this.#stableOffset >= atOffset, 'RaftNode.snapshot: entries below it not yet persisted')
    this.#log.compactTo(id)
    this.#retireLatestSnapshot()
    this.#latestSnapshot = { id, bytes }
    return id
  }

  /** The leader's DescribeQuorum view; null on any other node (NOT_LEADER_OR_FOLLOWER). */
  describeQuorum(): QuorumDescription | null {
    const role = this.#role
    if (role.kind !== 'leader') return null
    const describe = (replicaId: NodeId, p: ReplicaProgress): ReplicaDescription => ({
      replicaId,
      logEndOffset: p.endOffset ?? -1n,
      lastFetchTimestamp: p.lastFetchMs ?? -1,
      lastCaughtUpTimestamp: p.lastCaughtUpMs ?? -1,
    })
    const self: ReplicaDescription = {
      replicaId: this.nodeId,
      logEndOffset: this.#durableEndOffset,
      lastFetchTimestamp: this.#nowMs,
      lastCaughtUpTimestamp: this.#nowMs,
    }
    return {
      leaderId: this.nodeId,
      leaderEpoch: this.#epoch,
      highWatermark: this.#highWatermark,
      currentVoters: [self, ...[...role.voters].map(([id, p]) => describe(id, p))],
      observers: [...role.observers].map(([id, p]) => describe(id, p)),
    }
  }

  status(): RaftStatus {
    return {
      nodeId: this.nodeId,
      isVoter: this.#isVoter,
      role: this.#role.kind satisfies RaftRole,
      epoch: this.#epoch,
      leaderId: this.#leaderId,
      votedId: this.#votedId,
      highWatermark: this.#highWatermark,
      logStartOffset: this.#log.startOffset,
      logEndOffset: this.#log.endOffset,
      lastEpoch: this.#log.lastEpoch,
      appliedOffset: this.#appliedOffset,
    }
  }

  /** Read access to the in-memory log (entries after the latest snapshot). */
  get log(): Pick<
    RaftLog,
    'entryAt' | 'epochAt' | 'startOffset' | 'endOffset' | 'snapshotId' | 'lastEpoch' | 'endOffsetForEpoch'
  > {
    return this.#log
  }

  /** The latest snapshot (taken here or installed from the leader), or null. */
  get latestSnapshot(): Snapshot | null {
    return this.#latestSnapshot
  }

  /** True when a Ready has work and none is outstanding. */
  hasReady(): boolean {
    if (this.#outstanding !== null) return false
    return (
      this.#stateDirty ||
      this.#pendingSnapshot !== null ||
      this.#pendingTruncateTo !== null ||
      this.#stableOffset < this.#log.endOffset ||
      this.#outbox.length > 0 ||
      this.#applyHandedOffset < this.#committedEndOffset() ||
      this.#readyHighWatermark !== this.#highWatermark
    )
  }

  /** Take the next batch of work. At most one Ready is outstanding: `advance` it before the next. */
  ready(): Ready {
    assert(this.#outstanding === null, 'RaftNode.ready: the previous Ready was not advanced')
    const committedEnd = this.#committedEndOffset()
    const committed =
      this.#applyHandedOffset < committedEnd
        ? this.#log.slice(this.#applyHandedOffset, committedEnd, this.config.applyEntriesMax)
        : []
    const ready: Ready = {
      ...(this.#stateDirty ? { state: this.#persistentState() } : {}),
      ...(this.#pendingSnapshot !== null ? { snapshot: this.#pendingSnapshot } : {}),
      ...(this.#pendingTruncateTo !== null ? { truncateTo: this.#pendingTruncateTo } : {}),
      entries: this.#log.slice(this.#stableOffset, this.#log.endOffset, Number.POSITIVE_INFINITY),
      messages: this.#outbox,
      committed,
      highWatermark: this.#highWatermark,
    }
    this.#stateDirty = false
    this.#pendingSnapshot = null
    this.#pendingTruncateTo = null
    this.#outbox = []
    this.#stableOffset = this.#log.endOffset
    this.#applyHandedOffset = committed.length > 0 ? committed.at(-1)!.offset + 1n : this.#applyHandedOffset
    this.#readyHighWatermark = this.#highWatermark
    this.#outstanding = { ready, handedEndOffset: this.#log.endOffset }
    this.#truncatedSinceHandout = null
    return ready
  }

  /** The shell finished `ready` (persisted, sent, applied). */
  advance(ready: Ready): void {
    const outstanding = this.#outstanding
    assert(outstanding !== null && outstanding.ready === ready, 'RaftNode.advance: not the outstanding Ready')
    this.#outstanding = null
    let durable = outstanding.handedEndOffset
    if (this.#truncatedSinceHandout !== null && this.#truncatedSinceHandout < durable) {
      durable = this.#truncatedSinceHandout
    }
    if (durable > this.#durableEndOffset) this.#durableEndOffset = durable
    if (ready.committed.length > 0) {
      const end = ready.committed.at(-1)!.offset + 1n
      if (end > this.#appliedOffset) this.#appliedOffset = end
    }
    if (ready.snapshot !== undefined && ready.snapshot.id.endOffset > this.#appliedOffset) {
      this.#appliedOffset = ready.snapshot.id.endOffset
    }
    const role = this.#role
    if (role.kind === 'leader') this.#maybeAdvanceHighWatermark(role)
    this.#poll()
  }

  // ---------------------------------------------------------------------------------------------
  // Time
  // ---------------------------------------------------------------------------------------------

  /** Act on every deadline that has passed; transitions may expose new ones, hence the loop. */
  #poll(): void {
    for (let i = 0; i < 8; i++) {
      if (!this.#pollOnce()) return
    }
  }

  /** Returns true when the role changed (poll again). */
  #pollOnce(): boolean {
    const now = this.#nowMs
    const role = this.#role
    switch (role.kind) {
      case 'unattached':
        if (this.#isVoter) {
          if (now < role.electionDeadlineMs) return false
          this.#becomeProspective(null)
          return true
        }
        this.#pumpFetch(role.fetch, null)
        return false
      case 'follower':
        if (now >= role.fetchDeadlineMs) {
          if (this.#isVoter) {
            this.#becomeProspective(role.leaderResigned ? null : this.#leaderId)
          } else {
            // An observer lost its leader: look for it again.
            this.#setState(this.#epoch, this.#votedId, null)
            this.#role = this.#unattachedRole()
          }
          return true
        }
        if (!role.leaderResigned) this.#pumpFetch(role.fetch, role)
        return false
      case 'prospective':
        if (role.phase === 'voting') {
          if (now >= role.phaseDeadlineMs) return this.#preVoteLost(role)
          this.#resendElectionRequests(role.election, true)
          return false
        }
        if (now < role.phaseDeadlineMs) return false
        this.#startPreVote(role)
        return true
      case 'candidate':
        if (role.phase === 'voting') {
          if (now < role.phaseDeadlineMs) {
            this.#resendElectionRequests(role.election, false)
            return false
          }
          role.phase = 'backoff'
          role.phaseDeadlineMs = now + this.#electionBackoffMs()
          return now >= role.phaseDeadlineMs
        }
        if (now < role.phaseDeadlineMs) return false
        this.#becomeProspective(null)
        return true
      case 'leader': {
        if (now >= this.#checkQuorumDeadlineMs(role)) {
          // Check quorum (KIP-595): no fetch from a majority within the window, so another leader
          // may exist already; stop accepting writes no one would commit.
          this.#becomeResigned()
          return true
        }
        for (const [replicaId, parked] of role.parked) {
          if (now >= parked.deadlineMs) {
            role.parked.delete(replicaId)
            this.#answerFetch(parked.request)
          }
        }
        for (const [voterId, inflight] of role.unannounced) {
          if (now >= inflight.sentAtMs + this.config.requestTimeoutMs) {
            role.unannounced.set(voterId, this.#sendBeginQuorumEpoch(voterId))
          }
        }
        // A voter silent for half a fetch timeout may have lost track of this leader, or be stuck
        // in a higher epoch it cannot win (its pre-votes refused): announce again, as Kafka's
        // leader does. Its answer names its epoch; a higher one makes this leader step down.
        for (const [voterId, progress] of role.voters) {
          if (!role.unannounced.has(voterId) && now >= this.#silentUntilMs(role, progress)) {
            role.unannounced.set(voterId, this.#sendBeginQuorumEpoch(voterId))
          }
        }
        return false
      }
      case 'resigned':
        if (now >= role.electionDeadlineMs) {
          this.#becomeProspective(null)
          return true
        }
        for (const [voterId, inflight] of role.unnotified) {
          if (now >= inflight.sentAtMs + this.config.requestTimeoutMs) {
            role.unnotified.set(voterId, this.#sendEndQuorumEpoch(voterId, role.preferredSuccessors))
          }
        }
        return false
    }
  }

  #randomElectionTimeoutMs(): number {
    // Kafka: election.timeout.ms plus a uniform random part of the same size.
    return this.config.electionTimeoutMs + this.#random.int(this.config.electionTimeoutMs)
  }

  /** When a follower gives up on its leader: the fetch timeout, less a random part (see config). */
  #fetchDeadlineMs(): number {
    const jitterMax = this.config.fetchTimeoutJitterMsMax
    return this.#nowMs + this.config.fetchTimeoutMs - (jitterMax > 0 ? this.#random.int(jitterMax + 1) : 0)
  }

  #electionBackoffMs(): number {
    // Binary exponential backoff, capped (Kafka's binaryExponentialElectionBackoffMs).
    this.#electionRetries = Math.min(this.#electionRetries + 1, ELECTION_RETRIES_MAX)
    const capMs = Math.min(
      this.config.electionBackoffMsMax,
      ELECTION_BACKOFF_BASE_MS * 2 ** (this.#electionRetries - 1),
    )
    return this.#random.int(capMs + 1)
  }

  /** KIP-595 EndQuorumEpoch: the first preferred successor elects at once, the others later. */
  #endQuorumBackoffMs(successors: readonly NodeId[]): number {
    const position = successors.indexOf(this.nodeId)
    if (position === 0) return 0
    if (position < 0) return this.config.electionBackoffMsMax
    return Math.min(this.config.electionBackoffMsMax, ELECTION_BACKOFF_BASE_MS * 2 ** (position - 1))
  }

  /** When the leader re-announces itself to a voter that has not fetched (Kafka: fetch timeout / 2). */
  #silentUntilMs(role: Leader, progress: ReplicaProgress): number {
    return (progress.lastFetchMs ?? role.electedAtMs) + Math.floor(this.config.fetchTimeoutMs / 2)
  }

  #checkQuorumDeadlineMs(role: Leader): number {
    const othersNeeded = this.#majority - 1
    if (othersNeeded === 0) return Number.POSITIVE_INFINITY
    const heard = [...role.voters.values()]
      .map((p) => p.lastFetchMs ?? role.electedAtMs)
      .sort((a, b) => b - a)
    const windowMs = Math.floor(this.config.fetchTimeoutMs * CHECK_QUORUM_TIMEOUT_FACTOR)
    return heard[othersNeeded - 1]! + windowMs
  }

  // ---------------------------------------------------------------------------------------------
  // State transitions
  // ---------------------------------------------------------------------------------------------

  #persistentState(): PersistentState {
    return { epoch: this.#epoch, votedId: this.#votedId, leaderId: this.#leaderId }
  }

  /**
   * Change the persistent state. KIP-595 rules, asserted: epochs never decrease; one vote per
   * epoch; a voter learns at most one leader per epoch.
   */
  #setState(epoch: number, votedId: NodeId | null, leaderId: NodeId | null): void {
    assert(epoch >= this.#epoch, `epoch ${epoch} below ${this.#epoch}`)
    if (epoch === this.#epoch) {
      assert(this.#votedId === null || votedId === this.#votedId, `second vote in epoch ${epoch}`)
      assert(
        this.#leaderId === null || leaderId === this.#leaderId || (!this.#isVoter && leaderId === null),
        `second leader in epoch ${epoch}`,
      )
      if (votedId === this.#votedId && leaderId === this.#leaderId) return
    }
    this.#epoch = epoch
    this.#votedId = votedId
    this.#leaderId = leaderId
    this.#stateDirty = true
  }

  #newFetchLoop(): FetchLoop {
    return { inflight: null, nextFetchAtMs: this.#nowMs }
  }

  #unattachedRole(): Unattached {
    return {
      kind: 'unattached',
      electionDeadlineMs: this.#nowMs + this.#randomElectionTimeoutMs(),
      fetch: this.#newFetchLoop(),
    }
  }

  /** Leave the current role: a leader answers the fetches it holds, so fetchers need not time out. */
  #leaveRole(): void {
    const role = this.#role
    if (role.kind !== 'leader') return
    const parked = [...role.parked.values()]
    role.parked.clear()
    for (const { request } of parked) {
      this.#sendFetchError(request, RaftErrorCode.NotLeaderOrFollower, {
        leaderId: null,
        leaderEpoch: this.#epoch,
      })
    }
  }

  #becomeUnattached(epoch: number): void {
    assert(epoch > this.#epoch, 'becomeUnattached: epoch must grow')
    this.#leaveRole()
    this.#setState(epoch, null, null)
    this.#role = this.#unattachedRole()
  }

  #becomeFollower(epoch: number, leaderId: NodeId): void {
    assert(leaderId !== this.nodeId, 'becomeFollower: of itself')
    this.#leaveRole()
    this.#setState(epoch, epoch === this.#epoch ? this.#votedId : null, leaderId)
    this.#role = {
      kind: 'follower',
      fetchDeadlineMs: this.#fetchDeadlineMs(),
      hasFetched: false,
      leaderResigned: false,
      fetch: this.#newFetchLoop(),
      snapshotFetch: null,
    }
  }

  /**
   * KIP-996: before bumping its epoch a voter asks for pre-votes; a node cut off from the quorum
   * never wins them, so it cannot disturb the leader by raising the epoch.
   */
  #becomeProspective(retainedLeaderId: NodeId | null): void {
    assert(this.#isVoter, 'only voters campaign')
    this.#leaveRole()
    const role: Prospective = {
      kind: 'prospective',
      retainedLeaderId,
      phase: 'voting',
      phaseDeadlineMs: this.#nowMs,
      election: newElection(this.nodeId),
    }
    this.#role = role
    this.#startPreVote(role)
  }

  #startPreVote(role: Prospective): void {
    role.phase = 'voting'
    role.phaseDeadlineMs = this.#nowMs + this.#randomElectionTimeoutMs()
    role.election = newElection(this.nodeId)
    for (const voterId of this.config.voters) {
      if (voterId !== this.nodeId) role.election.requests.set(voterId, this.#sendVoteRequest(voterId, true))
    }
    this.#checkElection()
  }

  /** The pre-vote round failed: follow the retained leader again, or back off and retry. */
  #preVoteLost(role: Prospective): boolean {
    if (role.retainedLeaderId !== null) {
      this.#becomeFollower(this.#epoch, role.retainedLeaderId)
      return true
    }
    role.phase = 'backoff'
    role.phaseDeadlineMs = this.#nowMs + this.#electionBackoffMs()
    return this.#nowMs >= role.phaseDeadlineMs
  }

  #becomeCandidate(): void {
    assert(this.#isVoter, 'only voters campaign')
    this.#leaveRole()
    // Persisted before the vote requests leave (Ready order): a restart must not vote twice.
    this.#setState(this.#epoch + 1, this.nodeId, null)
    const role: Candidate = {
      kind: 'candidate',
      phase: 'voting',
      phaseDeadlineMs: this.#nowMs + this.#randomElectionTimeoutMs(),
      election: newElection(this.nodeId),
    }
    this.#role = role
    for (const voterId of this.config.voters) {
      if (voterId !== this.nodeId) role.election.requests.set(voterId, this.#sendVoteRequest(voterId, false))
    }
    this.#checkElection()
  }

  #becomeLeader(grantingVoters: readonly NodeId[]): void {
    assert(this.#role.kind === 'candidate' && this.#votedId === this.nodeId, 'becomeLeader: not a candidate')
    this.#setState(this.#epoch, this.nodeId, this.nodeId)
    this.#electionRetries = 0
    const epochStartOffset = this.#log.endOffset
    // KIP-595: the new leader first appends a LeaderChange control record in its epoch; the high
    // watermark moves only once it is committed, which commits every older entry with it.
    const leaderChange: LeaderChangeEntry = {
      kind: 'leaderChange',
      offset: epochStartOffset,
      epoch: this.#epoch,
      leaderId: this.nodeId,
      voters: [...this.config.voters],
      grantingVoters: [...grantingVoters],
    }
    this.#log.append([leaderChange])
    const role: Leader = {
      kind: 'leader',
      epochStartOffset,
      electedAtMs: this.#nowMs,
      grantingVoters,
      voters: new Map(),
      observers: new Map(),
      unannounced: new Map(),
      parked: new Map(),
    }
    for (const voterId of this.config.voters) {
      if (voterId === this.nodeId) continue
      role.voters.set(voterId, {
        endOffset: null,
        lastFetchMs: null,
        lastCaughtUpMs: null,
        leaderEndAtLastFetch: null,
        highWatermarkSent: -1n,
      })
      role.unannounced.set(voterId, this.#sendBeginQuorumEpoch(voterId))
    }
    this.#role = role
    this.#maybeAdvanceHighWatermark(role)
  }

  /** Graceful or check-quorum resignation: EndQuorumEpoch to every voter, best successor first. */
  #becomeResigned(): void {
    const role = this.#role
    let successors: NodeId[] = []
    if (role.kind === 'leader') {
      successors = [...role.voters]
        .sort(([aId, a], [bId, b]) => {
          const ae = a.endOffset ?? -1n
          const be = b.endOffset ?? -1n
          return ae !== be ? (ae > be ? -1 : 1) : aId - bId
        })
        .map(([id]) => id)
    }
    this.#leaveRole()
    const resigned: Resigned = {
      kind: 'resigned',
      electionDeadlineMs: this.#nowMs + this.#randomElectionTimeoutMs(),
      preferredSuccessors: successors,
      unnotified: new Map(),
    }
    for (const voterId of this.config.voters) {
      if (voterId !== this.nodeId)
        resigned.unnotified.set(voterId, this.#sendEndQuorumEpoch(voterId, successors))
    }
    this.#role = resigned
  }

  /**
   * Learn the epoch and leader from any message that carries them. A higher epoch always wins; in
   * the same epoch a node without a leader follows the one named. Returns true on a transition.
   */
  #observeLeader(leader: LeaderIdAndEpoch): boolean {
    if (leader.leaderEpoch > this.#epoch) {
      if (leader.leaderId !== null && leader.leaderId !== this.nodeId) {
        this.#becomeFollower(leader.leaderEpoch, leader.leaderId)
      } else {
        this.#becomeUnattached(leader.leaderEpoch)
      }
      return true
    }
    if (
      leader.leaderEpoch === this.#epoch &&
      leader.leaderId !== null &&
      leader.leaderId !== this.nodeId &&
      this.#leaderId === null
    ) {
      // Unattached, prospective or candidate without a leader in this epoch: follow the one named.
      // (A prospective that gave up on its leader lets its pre-vote round decide instead.)
      this.#becomeFollower(this.#epoch, leader.leaderId)
      return true
    }
    return false
  }

  // ---------------------------------------------------------------------------------------------
  // Sending
  // ---------------------------------------------------------------------------------------------

  #send(message: RaftMessage): void {
    if (this.#outbox.length >= this.config.outboxMessagesMax) {
      this.droppedMessages++
      return
    }
    this.#outbox.push(message)
  }

  #correlationId(): number {
    const id = this.#nextCorrelationId
    this.#nextCorrelationId = (id + 1) % CORRELATION_ID_LIMIT
    return id
  }

  #request(to: NodeId): Inflight {
    return { to, correlationId: this.#correlationId(), sentAtMs: this.#nowMs }
  }

  #sendVoteRequest(to: NodeId, preVote: boolean): Inflight {
    const inflight = this.#request(to)
    this.#send({
      type: 'VoteRequest',
      from: this.nodeId,
      to,
      correlationId: inflight.correlationId,
      candidateEpoch: this.#epoch,
      candidateId: this.nodeId,
      lastOffsetEpoch: this.#log.lastEpoch,
      lastOffset: this.#log.endOffset,
      preVote,
    })
    return inflight
  }

  #sendBeginQuorumEpoch(to: NodeId): Inflight {
    const inflight = this.#request(to)
    this.#send({
      type: 'BeginQuorumEpochRequest',
      from: this.nodeId,
      to,
      correlationId: inflight.correlationId,
      leaderId: this.nodeId,
      leaderEpoch: this.#epoch,
    })
    return inflight
  }

  #sendEndQuorumEpoch(to: NodeId, preferredSuccessors: readonly NodeId[]): Inflight {
    const inflight = this.#request(to)
    this.#send({
      type: 'EndQuorumEpochRequest',
      from: this.nodeId,
      to,
      correlationId: inflight.correlationId,
      leaderId: this.nodeId,
      leaderEpoch: this.#epoch,
      preferredSuccessors,
    })
    return inflight
  }

  #resendElectionRequests(election: Election, preVote: boolean): void {
    for (const [voterId, inflight] of election.requests) {
      if (this.#nowMs >= inflight.sentAtMs + this.config.requestTimeoutMs) {
        election.requests.set(voterId, this.#sendVoteRequest(voterId, preVote))
      }
    }
  }

  /** The leader this node reports in responses: none once it has resigned. */
  #currentLeader(): LeaderIdAndEpoch {
    return { leaderId: this.#role.kind === 'resigned' ? null : this.#leaderId, leaderEpoch: this.#epoch }
  }

  // ---------------------------------------------------------------------------------------------
  // Vote
  // ---------------------------------------------------------------------------------------------

  #voteResponse(request: VoteRequest, errorCode: RaftErrorCode, voteGranted: boolean): void {
    this.#send({
      type: 'VoteResponse',
      from: this.nodeId,
      to: request.from,
      correlationId: request.correlationId,
      errorCode,
      ...this.#currentLeader(),
      voteGranted,
    })
  }

  /** A leader this node has heard from within the fetch timeout (KIP-996: refuse pre-votes then). */
  #hasLiveLeader(): boolean {
    const role = this.#role
    if (role.kind === 'leader') return true
    return (
      role.kind === 'follower' &&
      role.hasFetched &&
      !role.leaderResigned &&
      this.#nowMs < role.fetchDeadlineMs
    )
  }

  #onVoteRequest(request: VoteRequest): void {
    if (!this.#isVoter || !this.config.voters.includes(request.candidateId)) {
      this.#voteResponse(request, RaftErrorCode.InconsistentVoterSet, false)
      return
    }
    const epochTooHigh = request.preVote
      ? request.lastOffsetEpoch > request.candidateEpoch
      : request.lastOffsetEpoch >= request.candidateEpoch
    if (request.lastOffset < 0n || request.lastOffsetEpoch < 0 || epochTooHigh) {
      this.#voteResponse(request, RaftErrorCode.InvalidRequest, false)
      return
    }
    if (request.candidateEpoch < this.#epoch) {
      this.#voteResponse(request, RaftErrorCode.FencedLeaderEpoch, false)
      return
    }
    const candidateLog: EpochEndOffset = { epoch: request.lastOffsetEpoch, endOffset: request.lastOffset }
    // KIP-595: a vote only for a candidate whose log is at least as up to date as ours.
    const logUpToDate = compareEpochOffset(candidateLog, this.#log.lastEpochEndOffset) >= 0
    if (request.preVote) {
      // KIP-996: a pre-vote changes nothing here; refuse it while a leader is alive.
      this.#voteResponse(request, RaftErrorCode.None, logUpToDate && !this.#hasLiveLeader())
      if (!logUpToDate) this.#askAgainIfRefusalWasStale(request)
      return
    }
    if (request.candidateEpoch > this.#epoch) this.#becomeUnattached(request.candidateEpoch)
    const role = this.#role
    let granted: boolean
    if (this.#votedId !== null) {
      // KIP-595: one vote per epoch; repeating it to the same candidate is fine.
      granted = this.#votedId === request.candidateId
    } else if (this.#leaderId !== null || role.kind === 'leader' || role.kind === 'resigned') {
      granted = false
    } else {
      granted = logUpToDate
    }
    if (granted && this.#votedId === null) {
      this.#setState(this.#epoch, request.candidateId, null)
      this.#role = this.#unattachedRole()
    } else if (granted && role.kind === 'unattached') {
      role.electionDeadlineMs = this.#nowMs + this.#randomElectionTimeoutMs()
    }
    this.#voteResponse(request, RaftErrorCode.None, granted)
  }

  /**
   * A voter that refused our pre-vote because it still heard from the leader now asks for one
   * itself: it has lost the leader too, so its refusal is stale. If our log is strictly ahead of
   * its log (we refuse it, so only we can win), ask it again at once instead of waiting for the round
   * to time out: followers of a dead leader time out a few ms apart. With equal logs we granted
   * its pre-vote instead, and asking back could split the vote.
   */
  #askAgainIfRefusalWasStale(request: VoteRequest): void {
    const role = this.#role
    if (role.kind !== 'prospective' || role.phase !== 'voting') return
    if (!role.election.rejected.delete(request.candidateId)) return
    role.election.requests.set(request.candidateId, this.#sendVoteRequest(request.candidateId, true))
  }

  #onVoteResponse(response: VoteResponse): void {
    const role = this.#role
    if (role.kind !== 'prospective' && role.kind !== 'candidate') return
    const inflight = role.election.requests.get(response.from)
    if (inflight === undefined || inflight.correlationId !== response.correlationId) return
    if (role.kind === 'prospective' && role.phase !== 'voting') return
    if (role.kind === 'candidate' && role.phase !== 'voting') return
    if (this.#observeLeader({ leaderId: response.leaderId, leaderEpoch: response.leaderEpoch })) return
    if (response.leaderEpoch < this.#epoch && role.kind === 'candidate') return
    if (response.errorCode !== RaftErrorCode.None && response.errorCode !== RaftErrorCode.FencedLeaderEpoch) {
      // Misconfiguration or a malformed request: count it as a refusal.
      role.election.rejected.add(response.from)
    } else if (response.voteGranted) {
      role.election.granted.add(response.from)
    } else {
      role.election.rejected.add(response.from)
    }
    this.#checkElection()
  }

  #checkElection(): void {
    const role = this.#role
    if (role.kind !== 'prospective' && role.kind !== 'candidate') return
    if (role.phase !== 'voting') return
    const { granted, rejected } = role.election
    if (granted.size >= this.#majority) {
      if (role.kind === 'prospective') this.#becomeCandidate()
      else this.#becomeLeader([...granted].sort((a, b) => a - b))
      return
    }
    if (rejected.size > this.config.voters.length - this.#majority) {
      if (role.kind === 'prospective') {
        this.#preVoteLost(role)
      } else {
        role.phase = 'backoff'
        role.phaseDeadlineMs = this.#nowMs + this.#electionBackoffMs()
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // BeginQuorumEpoch / EndQuorumEpoch
  // ---------------------------------------------------------------------------------------------

  #onBeginQuorumEpochRequest(request: BeginQuorumEpochRequest): void {
    const respond = (errorCode: RaftErrorCode) =>
      this.#send({
        type: 'BeginQuorumEpochResponse',
        from: this.nodeId,
        to: request.from,
        correlationId: request.correlationId,
        errorCode,
        ...this.#currentLeader(),
      })
    if (request.leaderEpoch < this.#epoch) {
      respond(RaftErrorCode.FencedLeaderEpoch)
      return
    }
    if (request.leaderId === this.nodeId) {
      respond(RaftErrorCode.InvalidRequest)
      return
    }
    this.#observeLeader({ leaderId: request.leaderId, leaderEpoch: request.leaderEpoch })
    const role = this.#role
    if (role.kind === 'prospective' && role.retainedLeaderId === request.leaderId) {
      // The leader we gave up on is alive: follow it again.
      this.#becomeFollower(this.#epoch, request.leaderId)
    }
    respond(RaftErrorCode.None)
  }

  #onBeginQuorumEpochResponse(response: BeginQuorumEpochResponse): void {
    const role = this.#role
    if (role.kind !== 'leader') return
    const inflight = role.unannounced.get(response.from)
    if (inflight?.correlationId !== response.correlationId) return
    if (this.#observeLeader({ leaderId: response.leaderId, leaderEpoch: response.leaderEpoch })) return
    // Acknowledged or not, the voter stays on the list until it fetches: the request is repeated
    // every request timeout while it stays silent.
  }

  #onEndQuorumEpochRequest(request: EndQuorumEpochRequest): void {
    const respond = (errorCode: RaftErrorCode) =>
      this.#send({
        type: 'EndQuorumEpochResponse',
        from: this.nodeId,
        to: request.from,
        correlationId: request.correlationId,
        errorCode,
        ...this.#currentLeader(),
      })
    if (request.leaderEpoch < this.#epoch) {
      respond(RaftErrorCode.FencedLeaderEpoch)
      return
    }
    if (request.leaderId !== this.nodeId) {
      this.#observeLeader({ leaderId: request.leaderId, leaderEpoch: request.leaderEpoch })
    }
    const role = this.#role
    if (role.kind === 'prospective' && role.retainedLeaderId === request.leaderId)
      role.retainedLeaderId = null
    if (role.kind === 'follower' && this.#leaderId === request.leaderId && !role.leaderResigned) {
      role.leaderResigned = true
      if (this.#isVoter) {
        role.fetchDeadlineMs = Math.min(
          role.fetchDeadlineMs,
          this.#nowMs + this.#endQuorumBackoffMs(request.preferredSuccessors),
        )
      }
    }
    respond(RaftErrorCode.None)
  }

  #onEndQuorumEpochResponse(response: EndQuorumEpochResponse): void {
    const role = this.#role
    if (role.kind !== 'resigned') return
    const inflight = role.unnotified.get(response.from)
    if (inflight?.correlationId !== response.correlationId) return
    if (this.#observeLeader({ leaderId: response.leaderId, leaderEpoch: response.leaderEpoch })) return
    role.unnotified.delete(response.from)
  }

  // ---------------------------------------------------------------------------------------------
  // Fetch: the leader's side
  // ---------------------------------------------------------------------------------------------

  #sendFetchError(
    request: FetchRequest,
    errorCode: RaftErrorCode,
    currentLeader: LeaderIdAndEpoch = this.#currentLeader(),
  ): void {
    this.#send({
      type: 'FetchResponse',
      from: this.nodeId,
      to: request.from,
      correlationId: request.correlationId,
      errorCode,
      highWatermark: this.#highWatermark,
      logStartOffset: this.#log.startOffset,
      currentLeader,
      records: [],
    })
  }

  #progressOf(role: Leader, replicaId: NodeId): ReplicaProgress {
    const voter = role.voters.get(replicaId)
    if (voter !== undefined) return voter
    let observer = role.observers.get(replicaId)
    if (observer === undefined) {
      observer = {
        endOffset: null,
        lastFetchMs: null,
        lastCaughtUpMs: null,
        leaderEndAtLastFetch: null,
        highWatermarkSent: -1n,
      }
      if (role.observers.size >= this.config.observersMax) {
        const oldest = role.observers.keys().next().value
        if (oldest !== undefined) role.observers.delete(oldest)
      }
    } else {
      role.observers.delete(replicaId)
    }
    role.observers.set(replicaId, observer) // most recently heard last
    return observer
  }

  /**
   * KIP-595 fetch validation: is the fetcher's log a prefix of ours at (`fetchOffset`,
   * `lastFetchedEpoch`)? If not, tell it where its log diverges, or which snapshot to load.
   */
  #validateFetch(
    fetchOffset: Offset,
    lastFetchedEpoch: number,
  ): { kind: 'valid' } | { kind: 'diverging'; at: EpochEndOffset } | { kind: 'snapshot'; id: SnapshotId } {
    const log = this.#log
    if (fetchOffset < log.startOffset) return { kind: 'snapshot', id: log.snapshotId }
    const end = log.endOffsetForEpoch(lastFetchedEpoch)
    if (end === undefined) return { kind: 'snapshot', id: log.snapshotId }
    if (end.epoch === lastFetchedEpoch && end.endOffset >= fetchOffset) return { kind: 'valid' }
    return { kind: 'diverging', at: end }
  }

  #onFetchRequest(request: FetchRequest): void {
    const role = this.#role
    if (role.kind !== 'leader') {
      this.#sendFetchError(request, RaftErrorCode.NotLeaderOrFollower)
      return
    }
    if (request.currentLeaderEpoch !== this.#epoch) {
      this.#sendFetchError(
        request,
        request.currentLeaderEpoch < this.#epoch
          ? RaftErrorCode.FencedLeaderEpoch
          : RaftErrorCode.UnknownLeaderEpoch,
      )
      return
    }
    if (request.fetchOffset < 0n || request.lastFetchedEpoch < 0 || request.replicaId === this.nodeId) {
      this.#sendFetchError(request, RaftErrorCode.InvalidRequest)
      return
    }
    const progress = this.#progressOf(role, request.replicaId)
    const isVoter = role.voters.has(request.replicaId)
    // Any fetch in this epoch shows the voter follows us: it counts for check-quorum and announces.
    progress.lastFetchMs = this.#nowMs
    if (isVoter) role.unannounced.delete(request.replicaId)
    const validation = this.#validateFetch(request.fetchOffset, request.lastFetchedEpoch)
    if (validation.kind !== 'valid') {
      this.#send({
        type: 'FetchResponse',
        from: this.nodeId,
        to: request.from,
        correlationId: request.correlationId,
        errorCode: RaftErrorCode.None,
        highWatermark: this.#highWatermark,
        logStartOffset: this.#log.startOffset,
        currentLeader: this.#currentLeader(),
        records: [],
        ...(validation.kind === 'diverging'
          ? { divergingEpoch: validation.at }
          : { snapshotId: validation.id }),
      })
      return
    }
    const leaderEnd = this.#log.endOffset
    if (request.fetchOffset >= leaderEnd) {
      progress.lastCaughtUpMs = this.#nowMs
    } else if (
      progress.leaderEndAtLastFetch !== null &&
      request.fetchOffset >= progress.leaderEndAtLastFetch
    ) {
      progress.lastCaughtUpMs = Math.max(progress.lastCaughtUpMs ?? -1, progress.lastFetchMs)
    }
    progress.leaderEndAtLastFetch = leaderEnd
    progress.endOffset = request.fetchOffset
    // A replica has one fetch out at a time: one held from before is stale.
    role.parked.delete(request.replicaId)
    if (isVoter) this.#maybeAdvanceHighWatermark(role)
    if (
      request.fetchOffset >= leaderEnd &&
      request.maxWaitMs > 0 &&
      progress.highWatermarkSent >= this.#highWatermark
    ) {
      // Long poll: hold the fetch until there is something to send (Kafka's fetch purgatory).
      const waitMs = Math.min(request.maxWaitMs, this.config.fetchWaitMsMax)
      role.parked.set(request.replicaId, { request, deadlineMs: this.#nowMs + waitMs })
      return
    }
    this.#answerFetch(request)
  }

  /** Answer a validated fetch with what the log holds from its offset. */
  #answerFetch(request: FetchRequest): void {
    const role = this.#role
    if (role.kind === 'leader') {
      const progress = role.voters.get(request.replicaId) ?? role.observers.get(request.replicaId)
      if (progress !== undefined) progress.highWatermarkSent = this.#highWatermark
    }
    const from = request.fetchOffset
    const records =
      from < this.#log.endOffset
        ? this.#log.slice(
            from,
            this.#log.endOffset,
            this.config.fetchEntriesMax,
            Math.min(request.maxBytes, this.config.fetchBytesMax),
          )
        : []
    this.#send({
      type: 'FetchResponse',
      from: this.nodeId,
      to: request.from,
      correlationId: request.correlationId,
      errorCode: RaftErrorCode.None,
      highWatermark: this.#highWatermark,
      logStartOffset: this.#log.startOffset,
      currentLeader: { leaderId: this.nodeId, leaderEpoch: this.#epoch },
      records,
    })
  }

  #completeParkedFetches(role: Leader): void {
    if (role.parked.size === 0) return
    const parked = [...role.parked.values()]
    role.parked.clear()
    for (const { request } of parked) this.#answerFetch(request)
  }

  /**
   * The leader's high watermark: the largest offset a majority of voters (the leader counting only
   * what it has made durable) hold. KIP-595's commit rule: it moves only past this epoch's first
   * entry, and it never moves backwards.
   */
  #maybeAdvanceHighWatermark(role: Leader): void {
    const ends: Offset[] = [this.#durableEndOffset]
    for (const progress of role.voters.values()) ends.push(progress.endOffset ?? -1n)
    ends.sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))
    const majorityEnd = ends[this.#majority - 1]!
    if (majorityEnd > role.epochStartOffset && majorityEnd > this.#highWatermark) {
      assert(majorityEnd <= this.#log.endOffset, 'high watermark beyond the log end')
      this.#highWatermark = majorityEnd
      this.#completeParkedFetches(role)
    }
  }

  #onFetchSnapshotRequest(request: FetchSnapshotRequest): void {
    const role = this.#role
    const respond = (
      errorCode: RaftErrorCode,
      snapshot?: Snapshot,
      position = 0,
      bytes: Uint8Array = EMPTY_BYTES,
    ) =>
      this.#send({
        type: 'FetchSnapshotResponse',
        from: this.nodeId,
        to: request.from,
        correlationId: request.correlationId,
        errorCode,
        snapshotId: snapshot?.id ?? request.snapshotId,
        currentLeader: this.#currentLeader(),
        size: snapshot?.bytes.length ?? 0,
        position,
        unalignedRecords: bytes,
      })
    if (role.kind !== 'leader') {
      respond(RaftErrorCode.NotLeaderOrFollower)
      return
    }
    if (request.currentLeaderEpoch !== this.#epoch) {
      respond(
        request.currentLeaderEpoch < this.#epoch
          ? RaftErrorCode.FencedLeaderEpoch
          : RaftErrorCode.UnknownLeaderEpoch,
      )
      return
    }
    const progress = this.#progressOf(role, request.replicaId)
    progress.lastFetchMs = this.#nowMs
    if (role.voters.has(request.replicaId)) role.unannounced.delete(request.replicaId)
    const snapshot = this.#findSnapshot(request.snapshotId)
    if (snapshot === null) {
      respond(RaftErrorCode.SnapshotNotFound)
      return
    }
    if (
      !Number.isSafeInteger(request.position) ||
      request.position < 0 ||
      request.position > snapshot.bytes.length
    ) {
      respond(RaftErrorCode.InvalidRequest, snapshot)
      return
    }
    const length = Math.max(1, Math.min(request.maxBytes, this.config.snapshotChunkBytesMax))
    respond(
      RaftErrorCode.None,
      snapshot,
      request.position,
      snapshot.bytes.subarray(request.position, request.position + length),
    )
  }

  /** The latest snapshot or a retired one still in use, by id; marks it served now. */
  #findSnapshot(id: SnapshotId): Snapshot | null {
    const latest = this.#latestSnapshot
    if (latest !== null && latest.id.endOffset === id.endOffset && latest.id.epoch === id.epoch) {
      this.#latestSnapshotServedMs = this.#nowMs
      return latest
    }
    this.#expireRetiredSnapshots()
    const retired = this.#retiredSnapshots.get(`${id.epoch}@${id.endOffset}`)
    if (retired === undefined) return null
    retired.lastServedMs = this.#nowMs
    return retired.snapshot
  }

  /** A new snapshot replaces the latest: keep the old one while a replica is fetching it. */
  #retireLatestSnapshot(): void {
    const latest = this.#latestSnapshot
    const servedMs = this.#latestSnapshotServedMs
    this.#latestSnapshotServedMs = null
    this.#expireRetiredSnapshots()
    if (latest === null || servedMs === null || this.#nowMs - servedMs > this.config.requestTimeoutMs) return
    if (this.#retiredSnapshots.size >= RETIRED_SNAPSHOTS_MAX) {
      const oldest = this.#retiredSnapshots.keys().next().value
      if (oldest !== undefined) this.#retiredSnapshots.delete(oldest)
    }
    this.#retiredSnapshots.set(`${latest.id.epoch}@${latest.id.endOffset}`, {
      snapshot: latest,
      lastServedMs: servedMs,
    })
  }

  #expireRetiredSnapshots(): void {
    for (const [key, retired] of this.#retiredSnapshots) {
      if (this.#nowMs - retired.lastServedMs > this.config.requestTimeoutMs)
        this.#retiredSnapshots.delete(key)
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Fetch: the follower's and observer's side
  // ---------------------------------------------------------------------------------------------

  /** Send the next Fetch or FetchSnapshot when none is out and it is time. */
  #pumpFetch(loop: FetchLoop, follower: Follower | null): void {
    const now = this.#nowMs
    if (loop.inflight !== null) {
      if (now < loop.inflight.sentAtMs + this.config.requestTimeoutMs) return
      loop.inflight = null // timed out: try again
    }
    if (now < loop.nextFetchAtMs) return
    // An observer without a leader asks a random voter, which names the leader (KIP-595 bootstrap).
    const to =
      follower !== null ? this.#leaderId! : this.config.voters[this.#random.int(this.config.voters.length)]!
    if (to === this.nodeId) return
    const request = this.#request(to)
    const snapshotFetch = follower?.snapshotFetch ?? null
    if (snapshotFetch !== null) {
      loop.inflight = { ...request, kind: 'snapshot', fetchOffset: this.#log.endOffset }
      this.#send({
        type: 'FetchSnapshotRequest',
        from: this.nodeId,
        to,
        correlationId: request.correlationId,
        replicaId: this.nodeId,
        currentLeaderEpoch: this.#epoch,
        snapshotId: snapshotFetch.id,
        position: snapshotFetch.position,
        maxBytes: this.config.snapshotChunkBytesMax,
      })
      return
    }
    loop.inflight = { ...request, kind: 'fetch', fetchOffset: this.#log.endOffset }
    this.#send({
      type: 'FetchRequest',
      from: this.nodeId,
      to,
      correlationId: request.correlationId,
      replicaId: this.nodeId,
      currentLeaderEpoch: this.#epoch,
      fetchOffset: this.#log.endOffset,
      lastFetchedEpoch: this.#log.lastEpoch,
      logStartOffset: this.#log.startOffset,
      maxWaitMs: this.config.fetchWaitMsMax,
      maxBytes: this.config.fetchBytesMax,
    })
  }

  /** The fetch loop of the current role, if the response answers its request in flight. */
  #matchFetch(
    response: FetchResponse | FetchSnapshotResponse,
    kind: 'fetch' | 'snapshot',
  ): { loop: FetchLoop; fetchOffset: Offset } | null {
    const role = this.#role
    if (role.kind !== 'follower' && role.kind !== 'unattached') return null
    const inflight = role.fetch.inflight
    if (inflight === null || inflight.kind !== kind) return null
    if (inflight.correlationId !== response.correlationId || inflight.to !== response.from) return null
    role.fetch.inflight = null
    return { loop: role.fetch, fetchOffset: inflight.fetchOffset }
  }

  /** A fetch answered by our leader in our epoch: it is alive. */
  #fetchSucceeded(follower: Follower): void {
    follower.hasFetched = true
    follower.fetchDeadlineMs = this.#fetchDeadlineMs()
    this.#electionRetries = 0
  }

  #onFetchResponse(response: FetchResponse): void {
    const match = this.#matchFetch(response, 'fetch')
    if (match === null) return
    if (this.#observeLeader(response.currentLeader)) return
    const role = this.#role
    const fromLeader =
      role.kind === 'follower' &&
      response.from === this.#leaderId &&
      response.currentLeader.leaderEpoch === this.#epoch
    if (response.errorCode !== RaftErrorCode.None || !fromLeader || role.kind !== 'follower') {
      match.loop.nextFetchAtMs = this.#nowMs + this.config.retryBackoffMs
      return
    }
    this.#fetchSucceeded(role)
    match.loop.nextFetchAtMs = this.#nowMs
    if (match.fetchOffset !== this.#log.endOffset) return // the log moved since: fetch again
    if (response.divergingEpoch !== undefined) {
      // No progress means an answer that does not fit our log (never from a consistent leader):
      // back off rather than ask the same question in a tight loop.
      if (!this.#truncateToDiverging(response.divergingEpoch)) {
        match.loop.nextFetchAtMs = this.#nowMs + this.config.retryBackoffMs
      }
      return
    }
    if (response.snapshotId !== undefined) {
      if (response.snapshotId.endOffset > this.#log.startOffset) {
        role.snapshotFetch = { id: response.snapshotId, chunks: [], position: 0, size: -1 }
      } else {
        match.loop.nextFetchAtMs = this.#nowMs + this.config.retryBackoffMs // not newer: an odd answer
      }
      return
    }
    if (response.records.length > 0 && !this.#appendFromLeader(response.records)) {
      match.loop.nextFetchAtMs = this.#nowMs + this.config.retryBackoffMs // records that do not continue our log
      return
    }
    // The fetch matched our log at fetchOffset and the records continue it, so our whole log is a
    // prefix of the leader's: its high watermark holds for us up to our log end.
    this.#raiseHighWatermark(offsetMin(response.highWatermark, this.#log.endOffset))
  }

  /** Append records from the leader after checking they continue our log; false if they do not. */
  #appendFromLeader(records: readonly Entry[]): boolean {
    let expected = this.#log.endOffset
    let lastEpoch = this.#log.lastEpoch
    for (const entry of records) {
      if (entry.offset !== expected || entry.epoch < lastEpoch || entry.epoch > this.#epoch) return false
      expected++
      lastEpoch = entry.epoch
    }
    this.#log.append(records)
    return true
  }

  #raiseHighWatermark(offset: Offset): void {
    if (offset > this.#highWatermark) this.#highWatermark = offset
  }

  /**
   * KIP-595 truncation: the leader says its log has `diverging.epoch` ending at
   * `diverging.endOffset` (its largest epoch not above our last fetched one). Keep our entries up to
   * where both logs agree on that epoch's end; the next fetch narrows further if needed. Returns
   * false when there was nothing to truncate.
   */
  #truncateToDiverging(diverging: EpochEndOffset): boolean {
    const local = this.#log.endOffsetForEpoch(diverging.epoch)
    let truncateTo: Offset
    if (local === undefined) truncateTo = this.#log.startOffset
    else if (local.epoch === diverging.epoch) {
      truncateTo = offsetMin(local.endOffset, diverging.endOffset)
    } else truncateTo = local.endOffset
    if (truncateTo < this.#log.startOffset) truncateTo = this.#log.startOffset
    if (truncateTo >= this.#log.endOffset) return false
    // State-machine safety: committed entries are on every future leader, so never truncated.
    assert(
      truncateTo >= this.#highWatermark,
      `truncation to ${truncateTo} below high watermark ${this.#highWatermark}`,
    )
    this.#truncate(truncateTo)
    return true
  }

  #truncate(offset: Offset): void {
    this.#log.truncateTo(offset)
    if (offset < this.#stableOffset) {
      this.#pendingTruncateTo =
        this.#pendingTruncateTo === null || offset < this.#pendingTruncateTo
          ? offset
          : this.#pendingTruncateTo
      this.#stableOffset = offset
    }
    if (offset < this.#durableEndOffset) this.#durableEndOffset = offset
    if (
      this.#outstanding !== null &&
      (this.#truncatedSinceHandout === null || offset < this.#truncatedSinceHandout)
    ) {
      this.#truncatedSinceHandout = offset
    }
  }

  #onFetchSnapshotResponse(response: FetchSnapshotResponse): void {
    const match = this.#matchFetch(response, 'snapshot')
    if (match === null) return
    if (this.#observeLeader(response.currentLeader)) return
    const role = this.#role
    if (role.kind !== 'follower' || role.snapshotFetch === null) return
    const fetch = role.snapshotFetch
    if (response.errorCode === RaftErrorCode.SnapshotNotFound) {
      // The leader has a newer snapshot: Fetch again to learn its id.
      role.snapshotFetch = null
      match.loop.nextFetchAtMs = this.#nowMs + this.config.retryBackoffMs
      return
    }
    const fromLeader = response.from === this.#leaderId && response.currentLeader.leaderEpoch === this.#epoch
    if (response.errorCode !== RaftErrorCode.None || !fromLeader) {
      match.loop.nextFetchAtMs = this.#nowMs + this.config.retryBackoffMs
      return
    }
    this.#fetchSucceeded(role)
    match.loop.nextFetchAtMs = this.#nowMs
    const sameId =
      response.snapshotId.endOffset === fetch.id.endOffset && response.snapshotId.epoch === fetch.id.epoch
    const bytes = response.unalignedRecords
    const consistent =
      sameId &&
      response.position === fetch.position &&
      (fetch.size < 0 || response.size === fetch.size) &&
      response.size <= this.config.snapshotBytesMax &&
      response.position + bytes.length <= response.size &&
      (bytes.length > 0 || response.position === response.size)
    if (!consistent) {
      role.snapshotFetch = null // start over from a fresh Fetch
      return
    }
    fetch.size = response.size
    fetch.chunks.push(bytes)
    fetch.position += bytes.length
    if (fetch.position < fetch.size) return
    const whole = new Uint8Array(fetch.size)
    let at = 0
    for (const chunk of fetch.chunks) {
      whole.set(chunk, at)
      at += chunk.length
    }
    role.snapshotFetch = null
    this.#installSnapshot({ id: fetch.id, bytes: whole })
  }

  /** KIP-630: replace the whole log by the leader's snapshot; it holds only committed records. */
  #installSnapshot(snapshot: Snapshot): void {
    const end = snapshot.id.endOffset
    if (end <= this.#log.startOffset) return
    this.#log.installSnapshot(snapshot.id)
    this.#latestSnapshot = snapshot
    this.#latestSnapshotServedMs = null
    this.#retiredSnapshots.clear()
    this.#pendingSnapshot = snapshot
    this.#pendingTruncateTo = null
    this.#stableOffset = end
    if (this.#durableEndOffset > end) this.#durableEndOffset = end
    if (
      this.#outstanding !== null &&
      (this.#truncatedSinceHandout === null || end < this.#truncatedSinceHandout)
    ) {
      this.#truncatedSinceHandout = end
    }
    this.#raiseHighWatermark(end)
    if (this.#applyHandedOffset < end) this.#applyHandedOffset = end
  }

  #committedEndOffset(): Offset {
    const end = offsetMin(this.#highWatermark, this.#log.endOffset)
    return end > this.#applyHandedOffset + BigInt(this.config.applyEntriesMax)
      ? this.#applyHandedOffset + BigInt(this.config.applyEntriesMax)
      : end
  }
}

function newElection(self: NodeId): Election {
  return { requests: new Map(), granted: new Set([self]), rejected: new Set() }
}
