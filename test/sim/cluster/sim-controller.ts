/**
 * The simulated controller: the REAL QuorumController (and through it the real decision functions:
 * registration, heartbeats, fencing, elections, AlterPartition, topics) over one ordered metadata
 * log that commits each proposal after a short delay. The quorum is modelled as that one log: its
 * own safety (elections, replication, crashes of voters) is what the raft simulation in test/sim
 * checks. A controller failover is a pause during which the controller answers nothing, then a new
 * QuorumController in a higher epoch that replays the committed log (as a new quorum leader would).
 */
import { QuorumController } from '../../../src/controller/index.ts'
import type { Random } from '../../../src/io/index.ts'
import { type CommittedEntry, MetadataLoader } from '../../../src/metadata/index.ts'
import type { BrokerId, NodeId } from '../../../src/model/index.ts'
import type { ProposeResult, RaftStatus } from '../../../src/raft/index.ts'
import { NodeClock, type SimEndpoint, type SimWorld } from './sim-world.ts'

export const CONTROLLER_ID = 0
/** The controller's id as the quorum reports it (never a broker's). */
const QUORUM_NODE_ID = 3000 as NodeId
const METADATA_VERSION = 25

export interface ControllerTimings {
  readonly sessionTimeoutMs: number
  /** Each proposal commits after a delay in [1, commitDelayMsMax]. */
  readonly commitDelayMsMax: number
}

export class SimController implements SimEndpoint {
  readonly id = CONTROLLER_ID
  up = true
  incarnation = 0
  readonly clock: NodeClock
  /** The metadata log: every proposed entry; those below `committed` are committed. */
  readonly entries: CommittedEntry[] = []
  committed = 0
  epoch = 0
  qc!: QuorumController
  loader!: MetadataLoader
  /** Called after each commit (the brokers are told). */
  onCommit: (() => void) | null = null
  readonly #world: SimWorld
  readonly #random: Random
  readonly #timings: ControllerTimings
  #commitAt = 0

  constructor(world: SimWorld, random: Random, timings: ControllerTimings) {
    this.#world = world
    this.#random = random
    this.#timings = timings
    this.clock = new NodeClock(world, this, 1, 1_700_000_000_000)
    this.#becomeLeader()
  }

  #status(): RaftStatus {
    const end = BigInt(this.entries.length)
    return {
      nodeId: QUORUM_NODE_ID,
      isVoter: true,
      role: this.up ? 'leader' : 'unattached',
      epoch: this.epoch,
      leaderId: this.up ? QUORUM_NODE_ID : null,
      votedId: null,
      highWatermark: BigInt(this.committed),
      logStartOffset: 0n,
      logEndOffset: end,
      lastEpoch: this.epoch,
      appliedOffset: BigInt(this.committed),
    }
  }

  #propose(data: readonly Uint8Array[]): ProposeResult {
    if (!this.up) return { kind: 'notLeader', leaderId: null, epoch: this.epoch }
    const base = this.entries.length
    for (const d of data)
      this.entries.push({ kind: 'data', offset: BigInt(this.entries.length), epoch: this.epoch, data: d })
    this.#scheduleCommit()
    return {
      kind: 'appended',
      epoch: this.epoch,
      baseOffset: BigInt(base),
      lastOffset: BigInt(this.entries.length - 1),
    }
  }

  /** Commits come in log order: each at least as late as the one before. */
  #scheduleCommit(): void {
    const end = this.entries.length
    const incarnation = this.incarnation
    const at = Math.max(
      this.#commitAt,
      this.#world.nowMs + 1 + this.#random.nextFloat() * (this.#timings.commitDelayMsMax - 1),
    )
    this.#commitAt = at
    this.#world.at(at, 'metadata commit', () => {
      if (this.incarnation !== incarnation || end <= this.committed) return false
      this.#commitTo(end)
      return true
    })
  }

  #commitTo(end: number): void {
    const batch = this.entries.slice(this.committed, end)
    this.committed = end
    this.loader.applyCommitted(batch)
    this.onCommit?.()
  }

  /** A new quorum leader: a fresh QuorumController replays the committed log, then its own epoch starts. */
  #becomeLeader(): void {
    this.epoch++
    this.qc?.close()
    this.qc = new QuorumController({
      quorum: { propose: (data) => this.#propose(data), status: () => this.#status() },
      clock: this.clock,
      random: this.#random,
      clusterId: 'sim-cluster',
      settings: { defaultNumPartitions: 1, defaultReplicationFactor: 3, deleteTopicEnable: true },
      brokerSessionTimeoutMs: this.#timings.sessionTimeoutMs,
      validateTopicConfigs: () => null,
      bootstrapFeatures: new Map([['metadata.version', METADATA_VERSION]]),
    })
    this.loader = new MetadataLoader()
    const qc = this.qc
    this.loader.subscribe((p) => qc.onPublish(p))
    this.loader.applyCommitted(this.entries.slice(0, this.committed))
    this.entries.push({
      kind: 'leaderChange',
      offset: BigInt(this.entries.length),
      epoch: this.epoch,
      leaderId: QUORUM_NODE_ID as unknown as BrokerId,
    })
    this.#scheduleCommit()
  }

  /**
   * The controller fails over: for `pauseMs` nobody answers (requests in flight are lost; what it
   * proposed still commits, as a new leader would commit it), then a new controller takes over.
   */
  failover(pauseMs: number): void {
    if (!this.up) return
    this.up = false
    this.incarnation++
    this.qc.onStatus(this.#status())
    if (this.committed < this.entries.length) this.#commitTo(this.entries.length)
    this.#world.log(`controller FAILOVER (${pauseMs.toFixed(0)} ms)`)
    this.#world.at(this.#world.nowMs + pauseMs, 'controller back', () => {
      this.up = true
      this.#becomeLeader()
      this.#world.log(`controller active again in epoch ${this.epoch}`)
      return true
    })
  }
}
