/**
 * A whole KRaft quorum on one event loop: each node is a RaftNode with a simulated shell (disk,
 * state machine, drifting clock), joined by a network that drops, delays, duplicates, reorders and
 * partitions. Everything random comes from one seed, so a run replays exactly.
 */
import { SeededRandom } from '../../src/io/random.ts'
import type { NodeId } from '../../src/model/index.ts'
import {
  formatMessage,
  type RaftConfigInput,
  type RaftMessage,
  RaftNode,
  type Ready,
  type Snapshot,
} from '../../src/raft/index.ts'
import { EventQueue } from './event-queue.ts'
import { fail, Invariant, InvariantChecker, InvariantViolation } from './invariant-checker.ts'
import { SimRaftDisk } from './sim-raft-disk.ts'
import { SimStateMachine } from './sim-state-machine.ts'

export interface NetworkProfile {
  /** Probability that a message is lost. */
  dropRate: number
  /** Probability that a message is delivered twice. */
  duplicateRate: number
  delayMsMin: number
  delayMsMax: number
  /** Probability of a much longer delay (up to `longDelayMsMax`), which reorders messages. */
  longDelayRate: number
  longDelayMsMax: number
}

export const CALM_NETWORK: NetworkProfile = {
  dropRate: 0,
  duplicateRate: 0,
  delayMsMin: 1,
  delayMsMax: 3,
  longDelayRate: 0,
  longDelayMsMax: 0,
}

export interface ClusterOptions {
  readonly seed: number
  readonly voters: number
  readonly observers: number
  /** Raft settings for every node (ids are filled in). */
  readonly config: Omit<RaftConfigInput, 'nodeId' | 'voters'>
  readonly network: NetworkProfile
  /** Each Ready's fsync takes a uniform time in [0, fsyncMsMax]. */
  readonly fsyncMsMax: number
  /** Clocks run at 1 +- this rate (0.01 = 1% drift). */
  readonly clockDrift: number
  /** A node snapshots once this many applied entries sit above its snapshot (null: never). */
  readonly snapshotEveryEntries: number | null
  /** Filler bytes in each snapshot, to exercise chunked FetchSnapshot. */
  readonly snapshotPaddingBytes: number
  /** Record a line per event for failure reports. */
  readonly trace: boolean
}

type SimEvent =
  | { readonly kind: 'deliver'; readonly message: RaftMessage; readonly incarnation: number }
  | {
      readonly kind: 'timer'
      readonly node: NodeId
      readonly incarnation: number
      readonly generation: number
    }
  | { readonly kind: 'disk'; readonly node: NodeId; readonly incarnation: number }
  | { readonly kind: 'call'; readonly label: string; readonly fn: () => void }

export class SimNode {
  readonly id: NodeId
  readonly isVoter: boolean
  readonly disk = new SimRaftDisk()
  readonly random: SeededRandom
  readonly clockOffsetMs: number
  readonly clockRate: number
  raft: RaftNode | null = null
  sm = new SimStateMachine()
  incarnation = 0
  inProgress: Ready | null = null
  timerAtMs: number | null = null
  timerGeneration = 0
  /** The high watermark at the last check while leading (-1 when not leading). */
  leaderHighWatermark = -1n
  /** Events at one instant, to catch a core that never moves its deadline forward. */
  burstAtMs = -1
  burst = 0

  constructor(id: NodeId, isVoter: boolean, random: SeededRandom, clockOffsetMs: number, clockRate: number) {
    this.id = id
    this.isVoter = isVoter
    this.random = random
    this.clockOffsetMs = clockOffsetMs
    this.clockRate = clockRate
  }

  get up(): boolean {
    return this.raft !== null
  }
}

export interface ClusterStats {
  events: number
  messagesSent: number
  messagesDropped: number
  crashes: number
  snapshotsTaken: number
  snapshotsInstalled: number
  proposals: number
  epochMax: number
}

/** The same-instant event count past which a node is deemed stuck (its deadline never moves). */
const BURST_EVENTS_MAX = 20_000

export class SimCluster {
  readonly options: ClusterOptions
  readonly nodes: SimNode[] = []
  readonly voterIds: NodeId[] = []
  readonly checker = new InvariantChecker()
  readonly stats: ClusterStats = {
    events: 0,
    messagesSent: 0,
    messagesDropped: 0,
    crashes: 0,
    snapshotsTaken: 0,
    snapshotsInstalled: 0,
    proposals: 0,
    epochMax: 0,
  }
  /** Directed links that drop everything, as "from>to". */
  readonly blocked = new Set<string>()
  network: NetworkProfile
  readonly trace: string[] = []
  nowMs = 0
  /** Called when a node has just become leader (after the event that made it one). */
  onLeaderElected: ((node: SimNode) => void) | null = null
  readonly #queue = new EventQueue<SimEvent>()
  readonly #netRandom: SeededRandom
  /** Vote requests seen, to tell a pre-vote grant from a vote grant when the response leaves. */
  readonly #voteRequests = new Map<string, { preVote: boolean }>()

  constructor(options: ClusterOptions) {
    this.options = options
    this.network = options.network
    const seeds = new SeededRandom(options.seed)
    this.#netRandom = new SeededRandom(seeds.nextU32())
    const total = options.voters + options.observers
    for (let i = 1; i <= total; i++) {
      const id = i as NodeId
      const isVoter = i <= options.voters
      if (isVoter) this.voterIds.push(id)
      const drift = (seeds.nextFloat() * 2 - 1) * options.clockDrift
      this.nodes.push(
        new SimNode(id, isVoter, new SeededRandom(seeds.nextU32()), seeds.int(1_000_000), 1 + drift),
      )
    }
  }

  /** Start every node (a separate step, so a violation at start-up is reported like any other). */
  start(): void {
    for (const node of this.nodes) this.#start(node)
  }

  node(id: NodeId): SimNode {
    return this.nodes[id - 1]!
  }

  /** The node's own clock reading at simulated time `atMs`. */
  localMs(node: SimNode, atMs = this.nowMs): number {
    return Math.floor(node.clockOffsetMs + atMs * node.clockRate)
  }

  /** Run `fn` at simulated time `atMs`. */
  at(atMs: number, label: string, fn: () => void): void {
    this.#queue.push(Math.max(atMs, this.nowMs), { kind: 'call', label, fn })
  }

  /** Process events up to `untilMs` (inclusive); returns early when `stop()` says so. */
  runUntil(untilMs: number, stop: () => boolean = () => false): void {
    for (;;) {
      const next = this.#queue.peekMs()
      if (next === undefined || next > untilMs) break
      const { atMs, event } = this.#queue.pop()!
      this.nowMs = atMs
      this.stats.events++
      this.#handle(event)
      if (stop()) return
    }
    if (this.nowMs < untilMs) this.nowMs = untilMs
  }

  /** The live leader with the highest epoch, if any node thinks it leads. */
  leader(): SimNode | undefined {
    let best: SimNode | undefined
    for (const node of this.nodes) {
      const s = node.raft?.status()
      if (s?.role !== 'leader') continue
      if (best === undefined || s.epoch > best.raft!.status().epoch) best = node
    }
    return best
  }

  log(line: string): void {
    if (this.options.trace) this.trace.push(`${String(this.nowMs).padStart(7)} ${line}`)
  }

  // -------------------------------------------------------------------------------------------
  // Faults and clients
  // -------------------------------------------------------------------------------------------

  /**
   * Power loss. If a Ready is being handled, the crash lands at a random point of it: before the
   * fsync (unsynced writes partly lost), after it but before sending, or midway through sending.
   */
  crash(node: SimNode, random: SeededRandom): void {
    if (!node.up) return
    this.stats.crashes++
    const ready = node.inProgress
    if (ready !== null) {
      const point = random.int(3)
      if (point >= 1) {
        node.disk.sync()
        const sent = point === 1 ? 0 : random.int(ready.messages.length + 1)
        for (const message of ready.messages.slice(0, sent)) this.#send(message)
      }
    }
    node.disk.crash((pending) => random.int(pending + 1))
    node.raft = null
    node.inProgress = null
    node.incarnation++
    this.checker.nodeStopped(node.id)
    this.log(`node ${node.id} CRASH`)
  }

  restart(node: SimNode): void {
    if (node.up) return
    this.#start(node)
    this.log(`node ${node.id} RESTART as ${node.raft!.status().role} epoch ${node.raft!.status().epoch}`)
  }

  /** Block messages from `from` to `to` (one direction). */
  block(from: NodeId, to: NodeId): void {
    this.blocked.add(`${from}>${to}`)
  }

  heal(): void {
    this.blocked.clear()
  }

  /**
   * Propose records to every node that thinks it leads (a deposed leader too: its entries become
   * the divergent tails followers must truncate). Returns the records that were appended.
   */
  propose(makeRecords: () => string[]): string[] {
    const appended: string[] = []
    for (const node of this.nodes) {
      if (node.raft?.status().role !== 'leader') continue
      const records = makeRecords()
      node.raft.tick(this.localMs(node))
      const result = node.raft.propose(records.map((r) => new TextEncoder().encode(r)))
      if (result.kind !== 'appended') continue
      this.stats.proposals += records.length
      appended.push(...records)
      this.log(`node ${node.id} PROPOSE ${records.join(',')} at ${result.baseOffset}..${result.lastOffset}`)
      this.#afterInput(node)
    }
    return appended
  }

  /** Graceful resignation of the current leader. */
  resign(): void {
    const leader = this.leader()
    if (leader === undefined) return
    leader.raft!.tick(this.localMs(leader))
    leader.raft!.resign()
    this.log(`node ${leader.id} RESIGN`)
    this.#afterInput(leader)
  }

  // -------------------------------------------------------------------------------------------
  // The shell
  // -------------------------------------------------------------------------------------------

  #start(node: SimNode): void {
    const recovered = node.disk.recover()
    node.sm = new SimStateMachine()
    if (recovered.snapshot !== undefined) node.sm.restore(recovered.snapshot)
    node.raft = new RaftNode({
      config: { ...this.options.config, nodeId: node.id, voters: this.voterIds },
      random: node.random,
      nowMs: this.localMs(node),
      persisted: recovered,
    })
    node.timerAtMs = null
    this.checker.nodeStarted(node.id, node.raft)
    this.#afterInput(node)
  }

  #handle(event: SimEvent): void {
    switch (event.kind) {
      case 'deliver': {
        const message = event.message
        const node = this.node(message.to)
        if (
          !node.up ||
          node.incarnation !== event.incarnation ||
          this.blocked.has(`${message.from}>${message.to}`)
        ) {
          this.stats.messagesDropped++
          return
        }
        if (message.type === 'VoteRequest') {
          this.#voteRequests.set(`${message.to}:${message.from}:${message.correlationId}`, {
            preVote: message.preVote,
          })
        }
        if (this.options.trace) this.log(`deliver ${formatMessage(message)}`)
        this.#guard(node, () => {
          node.raft!.tick(this.localMs(node)) // the core's clock moves only by tick: bring it to now
          node.raft!.step(message)
        })
        this.#afterInput(node)
        return
      }
      case 'timer': {
        const node = this.node(event.node)
        if (!node.up || node.incarnation !== event.incarnation || node.timerGeneration !== event.generation)
          return
        node.timerAtMs = null
        this.#guard(node, () => node.raft!.tick(this.localMs(node)))
        this.#afterInput(node)
        return
      }
      case 'disk': {
        const node = this.node(event.node)
        if (!node.up || node.incarnation !== event.incarnation) return
        node.raft!.tick(this.localMs(node))
        this.#finishReady(node)
        return
      }
      case 'call':
        event.fn()
        for (const node of this.nodes) if (node.up) this.#check(node)
        return
    }
  }

  /** Run core code; its assertion failures become the CoreAssertion invariant. */
  #guard(node: SimNode, fn: () => void): void {
    try {
      fn()
    } catch (error) {
      if (error instanceof InvariantViolation) throw error
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
      throw new InvariantViolation(Invariant.CoreAssertion, `node ${node.id}: ${message}`)
    }
  }

  /** After any input: start a Ready if none is in progress, re-arm the timer, check invariants. */
  #afterInput(node: SimNode): void {
    if (!node.up) return
    const raft = node.raft!
    if (node.inProgress === null && raft.hasReady()) {
      const ready = raft.ready()
      node.disk.write(ready)
      node.inProgress = ready
      const durable =
        ready.state !== undefined ||
        ready.snapshot !== undefined ||
        ready.truncateTo !== undefined ||
        ready.entries.length > 0
      // A Ready with nothing to persist needs no fsync.
      const fsyncMs =
        durable && this.options.fsyncMsMax > 0 ? node.random.int(this.options.fsyncMsMax + 1) : 0
      this.#queue.push(this.nowMs + fsyncMs, { kind: 'disk', node: node.id, incarnation: node.incarnation })
    }
    this.#armTimer(node)
    this.#check(node)
  }

  #check(node: SimNode): void {
    const raft = node.raft!
    this.#guard(node, () => this.checker.check(node.id, raft))
    const status = raft.status()
    if (status.epoch > this.stats.epochMax) this.stats.epochMax = status.epoch
    if (
      status.role === 'leader' &&
      status.highWatermark > node.leaderHighWatermark &&
      status.highWatermark > 0n
    ) {
      this.#checkCommittedOnMajority(node, status.highWatermark)
    }
    if (status.role === 'leader' && node.leaderHighWatermark < 0n) this.onLeaderElected?.(node)
    node.leaderHighWatermark = status.role === 'leader' ? status.highWatermark : -1n
  }

  /** The definition of committed, checked against the disks: a majority holds the entry durably. */
  #checkCommittedOnMajority(leader: SimNode, highWatermark: bigint): void {
    const offset = highWatermark - 1n
    const epoch = leader.raft!.log.epochAt(offset)
    let holders = 0
    for (const id of this.voterIds) {
      const durable = this.node(id).disk.syncedEpochAt(offset)
      if (durable === 'snapshot' || (durable !== undefined && durable === epoch)) holders++
    }
    if (holders < Math.floor(this.voterIds.length / 2) + 1) {
      fail(
        Invariant.CommittedOnMajority,
        `leader ${leader.id} moved its high watermark to ${highWatermark} but only ${holders} voters hold ${offset} durably`,
      )
    }
  }

  /** The Ready contract's first rule, checked on the sender's disk as each message leaves. */
  #checkDurableBeforeSend(message: RaftMessage): void {
    const disk = this.node(message.from).disk
    const state = disk.syncedState ?? { epoch: 0, votedId: null, leaderId: null }
    const durableEpochHas = (epoch: number, ok: boolean) =>
      state.epoch > epoch || (state.epoch === epoch && ok)
    let violation: string | null = null
    switch (message.type) {
      case 'VoteResponse': {
        const request = this.#voteRequests.get(`${message.from}:${message.to}:${message.correlationId}`)
        if (message.voteGranted && request !== undefined && !request.preVote) {
          if (!durableEpochHas(message.leaderEpoch, state.votedId === message.to)) violation = 'vote granted'
        }
        break
      }
      case 'VoteRequest':
        if (!message.preVote && !durableEpochHas(message.candidateEpoch, state.votedId === message.from)) {
          violation = 'candidacy'
        }
        break
      case 'BeginQuorumEpochRequest':
        if (!durableEpochHas(message.leaderEpoch, state.leaderId === message.from)) violation = 'leadership'
        break
      case 'FetchRequest': {
        const end = message.fetchOffset
        const epoch = end === 0n ? 0 : disk.syncedEpochAt(end - 1n)
        if (disk.syncedEndOffset < end || (epoch !== 'snapshot' && epoch !== message.lastFetchedEpoch)) {
          violation = `log up to ${end} (durable end ${disk.syncedEndOffset}, epoch ${epoch})`
        }
        break
      }
      default:
        break
    }
    if (violation !== null) {
      fail(
        Invariant.DurableBeforeSend,
        `node ${message.from} sent ${formatMessage(message)} before its ${violation} was durable`,
      )
    }
  }

  #armTimer(node: SimNode): void {
    const deadline = node.raft!.nextDeadlineMs()
    if (!Number.isFinite(deadline)) return
    let atMs = Math.max(this.nowMs, Math.ceil((deadline - node.clockOffsetMs) / node.clockRate))
    while (this.localMs(node, atMs) < deadline) atMs++
    if (node.timerAtMs !== null && node.timerAtMs <= atMs) return
    if (atMs === this.nowMs) {
      if (node.burstAtMs !== atMs) {
        node.burstAtMs = atMs
        node.burst = 0
      }
      if (++node.burst > BURST_EVENTS_MAX) {
        throw new InvariantViolation(
          Invariant.CoreAssertion,
          `node ${node.id}: deadline stuck at ${deadline}`,
        )
      }
    }
    node.timerAtMs = atMs
    node.timerGeneration++
    this.#queue.push(atMs, {
      kind: 'timer',
      node: node.id,
      incarnation: node.incarnation,
      generation: node.timerGeneration,
    })
  }

  /** The fsync finished: send, apply, advance (the Ready contract's steps 2 to 4). */
  #finishReady(node: SimNode): void {
    const raft = node.raft!
    const ready = node.inProgress!
    node.disk.sync()
    for (const message of ready.messages) this.#send(message)
    this.#guard(node, () => {
      if (ready.snapshot !== undefined) {
        node.sm.restore(ready.snapshot)
        this.stats.snapshotsInstalled++
        this.checker.snapshotSeen(node.id, ready.snapshot)
        this.log(`node ${node.id} INSTALL snapshot ${ready.snapshot.id.endOffset}`)
      }
      for (const entry of ready.committed) {
        node.sm.apply(entry)
        this.checker.applied(node.id, entry, node.sm.hash, raft.status().epoch)
      }
      raft.advance(ready)
    })
    node.inProgress = null
    this.#maybeSnapshot(node)
    this.#afterInput(node)
  }

  #maybeSnapshot(node: SimNode): void {
    const every = this.options.snapshotEveryEntries
    const raft = node.raft!
    if (every === null || node.sm.applied - raft.log.startOffset < BigInt(every)) return
    const at = node.sm.applied
    const epoch = raft.log.epochAt(at - 1n)
    if (epoch === undefined) return
    const snapshot: Snapshot = {
      id: { endOffset: at, epoch },
      bytes: node.sm.snapshotBytes(this.options.snapshotPaddingBytes),
    }
    node.disk.saveSnapshot(snapshot)
    this.#guard(node, () => raft.snapshot(at, snapshot.bytes))
    this.checker.snapshotSeen(node.id, snapshot)
    this.stats.snapshotsTaken++
  }

  #send(message: RaftMessage): void {
    this.stats.messagesSent++
    this.#checkDurableBeforeSend(message)
    if (message.type === 'VoteResponse') {
      const key = `${message.from}:${message.to}:${message.correlationId}`
      const request = this.#voteRequests.get(key)
      this.#voteRequests.delete(key)
      if (message.voteGranted && request !== undefined && !request.preVote) {
        this.checker.voteGranted(message.from, message.leaderEpoch, message.to)
      }
    }
    const net = this.network
    const random = this.#netRandom
    if (this.blocked.has(`${message.from}>${message.to}`) || random.nextFloat() < net.dropRate) {
      this.stats.messagesDropped++
      return
    }
    const copies = random.nextFloat() < net.duplicateRate ? 2 : 1
    for (let i = 0; i < copies; i++) {
      let delayMs = net.delayMsMin + random.int(net.delayMsMax - net.delayMsMin + 1)
      if (random.nextFloat() < net.longDelayRate) delayMs += random.int(net.longDelayMsMax + 1)
      const incarnation = this.node(message.to).incarnation
      this.#queue.push(this.nowMs + delayMs, { kind: 'deliver', message, incarnation })
    }
  }
}
