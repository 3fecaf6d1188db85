/**
 * The I/O shell around the pure raft core: it persists each Ready (the `__cluster_metadata-0`
 * partition log, snapshots, the quorum-state file) before sending its messages, sends KRaft RPCs
 * to the other voters, answers theirs through server handlers, and drives time from the Clock.
 * The only place raft work awaits.
 */
import {
  AuthenticationBackoff,
  type ClientSecurity,
  ConnectionError,
  connectionSecurity,
  KafkaConnection,
} from '../client/index.ts'
import type { Clock, Disk, Random, TimerHandle, Transport } from '../io/index.ts'
import type { NodeId } from '../model/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
import {
  type Entry,
  formatMessage,
  isRequest,
  type PersistedRaftState,
  type ProposeResult,
  type QuorumDescription,
  type RaftConfigInput,
  type RaftMessage,
  RaftNode,
  type RaftRequest,
  type RaftResponse,
  type RaftStatus,
  type Ready,
  type Snapshot,
} from '../raft/index.ts'
import { DEFAULT_LOG_CONFIG, PartitionLog } from '../storage/index.ts'
import { batchesToEntries, entriesToBatches } from './entry-codec.ts'
import { readQuorumState, writeQuorumState } from './quorum-state-file.ts'
import * as wire from './raft-wire.ts'
import { readLatestSnapshot, writeSnapshot } from './snapshot-file.ts'

export interface VoterAddress {
  readonly id: NodeId
  readonly host: string
  readonly port: number
}

/** What the quorum reports to the state machine above it (the metadata loader). */
export interface QuorumListener {
  /** Load a snapshot (replaces all state), before any entry after it. */
  onSnapshot(snapshot: Snapshot): void
  /** Committed entries, in order, each once. */
  onCommitted(entries: readonly Entry[], highWatermark: bigint): void
  /** Leadership or epoch changed. */
  onStatus?(status: RaftStatus): void
  /** As leader: ms from proposing entries to the high watermark passing them (commit latency). */
  onCommitLatency?(ms: number): void
}

/** Proposals whose commit is timed; past this many, the oldest are no longer timed. */
const TIMED_PROPOSALS_MAX = 1024

export interface QuorumOptions {
  /** The `__cluster_metadata-0` directory. */
  readonly dir: string
  readonly nodeId: NodeId
  /** `controller.quorum.voters` with addresses. */
  readonly voters: readonly VoterAddress[]
  readonly clusterId: string
  readonly disk: Disk
  readonly clock: Clock
  readonly random: Random
  readonly transport: Transport
  /** How the voters' controller listener is secured; default PLAINTEXT. */
  readonly security?: ClientSecurity
  readonly listener: QuorumListener
  /** Overrides of the raft settings (`controller.quorum.*`). */
  readonly raft?: Partial<Omit<RaftConfigInput, 'nodeId' | 'voters'>>
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void
}

/** Bytes read per step when loading the log at start. */
const LOAD_READ_BYTES = 4 * 1024 * 1024
/** Requests in flight per peer connection. */
const PEER_IN_FLIGHT_MAX = 8

/** Resolves a waiting inbound request with its answer, or with null when the quorum closes. */
type Waiter = (m: RaftResponse | null) => void

export class Quorum {
  readonly nodeId: NodeId
  readonly #options: QuorumOptions
  readonly #node: RaftNode
  readonly #log: PartitionLog
  readonly #voterIds: NodeId[]
  readonly #peers = new Map<NodeId, Promise<KafkaConnection> | KafkaConnection>()
  /** Voters that refused this node's credentials or TLS: not reconnected to at raft's retry pace. */
  readonly #refused: AuthenticationBackoff
  /** Inbound requests waiting for the core's response, by `${from}:${correlationId}`. */
  readonly #waiters = new Map<string, Waiter>()
  #nextInboundId = 1
  #timer: TimerHandle | null = null
  #timerDeadline = Number.POSITIVE_INFINITY
  #running = false
  #again = false
  #closed = false
  #lastStatus: RaftStatus | null = null
  #failure: Error | null = null
  /** This leader's proposals not yet committed: last offset and when proposed (monotonic ms). */
  readonly #timed: Array<{ readonly lastOffset: bigint; readonly atMs: number }> = []

  private constructor(options: QuorumOptions, node: RaftNode, log: PartitionLog) {
    this.nodeId = options.nodeId
    this.#options = options
    this.#refused = new AuthenticationBackoff(options.clock, (level, m) => options.log?.(level, `raft: ${m}`))
    this.#node = node
    this.#log = log
    this.#voterIds = options.voters.map((v) => v.id)
  }

  /** Recovers the log, snapshot and quorum state from `dir`, then starts the core. */
  static async open(options: QuorumOptions): Promise<Quorum> {
    const { disk, clock, dir } = options
    await disk.mkdir(dir)
    const state = await readQuorumState(disk, dir)
    const snapshot = await readLatestSnapshot(disk, dir)
    const log = await PartitionLog.open(
      dir,
      { ...DEFAULT_LOG_CONFIG, retentionMs: -1, retentionBytes: -1 },
      { disk, clock },
    )
    if (snapshot !== undefined && log.logEndOffset < snapshot.id.endOffset) {
      await log.truncateFullyAndStartAt(snapshot.id.endOffset)
    }
    const start = snapshot?.id.endOffset ?? log.logStartOffset
    const entries: Entry[] = []
    for (let offset = start; offset < log.logEndOffset; ) {
      const read = await log.read(offset, LOAD_READ_BYTES)
      if (read.errorCode !== ErrorCode.None || read.records.length === 0) break
      const batch = batchesToEntries(read.records).filter((e) => e.offset >= offset)
      if (batch.length === 0) break
      entries.push(...batch)
      offset = batch.at(-1)!.offset + 1n
    }
    const persisted: PersistedRaftState = {
      ...(state !== undefined ? { state } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
      entries,
    }
    const node = new RaftNode({
      config: { ...options.raft, nodeId: options.nodeId, voters: options.voters.map((v) => v.id) },
      random: options.random,
      nowMs: clock.monotonicMs(),
      persisted,
    })
    const quorum = new Quorum(options, node, log)
    if (snapshot !== undefined) options.listener.onSnapshot(snapshot)
    quorum.#kick()
    return quorum
  }

  status(): RaftStatus {
    return this.#node.status()
  }

  describeQuorum(): QuorumDescription | null {
    return this.#node.describeQuorum()
  }

  /** The error that stopped the shell (a failed disk), or null. */
  get failure(): Error | null {
    return this.#failure
  }

  /** Leader only: appends records; see RaftNode.propose. */
  /** The core's only clock: tick it before every step, propose, resign and advance. */
  #tick(): void {
    this.#node.tick(this.#options.clock.monotonicMs())
  }

  propose(data: readonly Uint8Array[]): ProposeResult {
    this.#tick()
    const result = this.#node.propose(data)
    if (result.kind === 'appended' && this.#options.listener.onCommitLatency !== undefined) {
      if (this.#timed.length >= TIMED_PROPOSALS_MAX) this.#timed.shift()
      this.#timed.push({ lastOffset: BigInt(result.lastOffset), atMs: this.#options.clock.monotonicMs() })
    }
    this.#kick()
    return result
  }

  /** Leader only: resign gracefully (EndQuorumEpoch). */
  resign(): boolean {
    this.#tick()
    const done = this.#node.resign()
    this.#kick()
    return done
  }

  /** The state machine's durable snapshot of everything below `atOffset`. */
  async snapshot(atOffset: bigint, bytes: Uint8Array): Promise<void> {
    this.#tick()
    const id = this.#node.snapshot(atOffset, bytes)
    if (id.endOffset !== atOffset) return
    await writeSnapshot(this.#options.disk, this.#options.dir, { id, bytes })
    await this.#log.deleteRecordsBefore(atOffset)
  }

  /**
   * Handles a KRaft request from a peer and resolves with the core's response to it, or null when
   * the core gives none in time (the peer will retry) or the quorum is closed.
   */
  async handleInbound(request: RaftRequest): Promise<RaftResponse | null> {
    if (this.#closed) return null
    const key = `${request.from}:${request.correlationId}`
    const clock = this.#options.clock
    const waitMs =
      (this.#options.raft?.requestTimeoutMs ?? 2000) + (this.#options.raft?.fetchWaitMsMax ?? 500)
    const response = new Promise<RaftResponse | null>((resolve) => {
      const timer = clock.setTimer(waitMs, () => {
        this.#waiters.delete(key)
        resolve(null)
      })
      this.#waiters.set(key, (m) => {
        clock.clearTimer(timer)
        resolve(m)
      })
    })
    this.#tick()
    this.#node.step(request)
    this.#kick()
    return response
  }

  /** A correlation id for an inbound request: unique among those waiting. */
  nextInboundId(): number {
    this.#nextInboundId = (this.#nextInboundId % 0x7fffffff) + 1
    return this.#nextInboundId
  }

  #kick(): void {
    if (this.#closed) return
    if (this.#running) {
      this.#again = true
      return
    }
    this.#running = true
    void this.#run()
  }

  async #run(): Promise<void> {
    try {
      do {
        this.#again = false
        this.#tick()
        while (!this.#closed && this.#node.hasReady()) {
          const ready = this.#node.ready()
          await this.#persist(ready)
          this.#send(ready.messages)
          this.#apply(ready)
          this.#tick()
          this.#node.advance(ready)
        }
      } while (this.#again && !this.#closed)
    } catch (e) {
      // A failed disk: the node must not vote or acknowledge anything it cannot persist.
      this.#failure = e as Error
      this.#options.log?.('error', `quorum stopped: ${(e as Error).stack ?? String(e)}`)
      this.#closed = true
    } finally {
      this.#running = false
    }
    if (!this.#closed) {
      this.#armTimer()
      if (this.#again) this.#kick()
    }
  }

  async #persist(ready: Ready): Promise<void> {
    const { disk, dir, clock } = this.#options
    if (ready.snapshot !== undefined) {
      await writeSnapshot(disk, dir, ready.snapshot)
      await this.#log.truncateFullyAndStartAt(ready.snapshot.id.endOffset)
    }
    if (ready.truncateTo !== undefined) await this.#log.truncateTo(ready.truncateTo)
    if (ready.entries.length > 0) {
      const batches = Buffer.concat(entriesToBatches(ready.entries, clock.nowMs()))
      const result = await this.#log.append(batches, { origin: 'replication', flush: true })
      if (result.errorCode !== ErrorCode.None)
        throw new Error(`metadata log append failed: ${result.errorMessage}`)
    }
    if (ready.state !== undefined) await writeQuorumState(disk, dir, ready.state, this.#voterIds)
  }

  #apply(ready: Ready): void {
    const listener = this.#options.listener
    if (ready.snapshot !== undefined) listener.onSnapshot(ready.snapshot)
    if (ready.committed.length > 0) listener.onCommitted(ready.committed, ready.highWatermark)
    const timed = this.#timed
    while (timed.length > 0 && timed[0]!.lastOffset < BigInt(ready.highWatermark)) {
      listener.onCommitLatency?.(this.#options.clock.monotonicMs() - timed.shift()!.atMs)
    }
    const status = this.#node.status()
    const last = this.#lastStatus
    if (
      last === null ||
      last.epoch !== status.epoch ||
      last.leaderId !== status.leaderId ||
      last.role !== status.role
    ) {
      this.#lastStatus = status
      // Proposals of an earlier leadership may never commit (a new leader truncates them).
      if (status.role !== 'leader' || last?.epoch !== status.epoch) timed.length = 0
      listener.onStatus?.(status)
    }
  }

  #send(messages: readonly RaftMessage[]): void {
    for (const m of messages) {
      if (isRequest(m)) {
        void this.#sendRequest(m)
        continue
      }
      const waiter = this.#waiters.get(`${m.to}:${m.correlationId}`)
      if (waiter !== undefined) {
        this.#waiters.delete(`${m.to}:${m.correlationId}`)
        waiter(m)
      }
    }
  }

  #armTimer(): void {
    const clock = this.#options.clock
    const deadline = this.#node.nextDeadlineMs()
    if (this.#timer !== null && deadline === this.#timerDeadline) return
    if (this.#timer !== null) clock.clearTimer(this.#timer)
    this.#timer = null
    this.#timerDeadline = deadline
    if (!Number.isFinite(deadline)) return
    this.#timer = clock.setTimer(Math.max(0, deadline - clock.monotonicMs()), () => {
      this.#timer = null
      this.#timerDeadline = Number.POSITIVE_INFINITY
      this.#kick()
    })
  }

  async #peer(id: NodeId): Promise<KafkaConnection> {
    const existing = this.#peers.get(id)
    if (existing instanceof KafkaConnection && !existing.closed) return existing
    if (existing instanceof Promise) return existing
    const address = this.#options.voters.find((v) => v.id === id)
    if (address === undefined) throw new ConnectionError(`node ${id} is not a voter with a known address`)
    const peer = `voter ${id} (${address.host}:${address.port})`
    this.#refused.check(peer)
    const { clock, transport } = this.#options
    const requestTimeoutMs =
      (this.#options.raft?.requestTimeoutMs ?? 2000) + (this.#options.raft?.fetchWaitMsMax ?? 500)
    const opening = KafkaConnection.open(
      { host: address.host, port: address.port },
      {
        clientId: `raft-${this.nodeId}`,
        clock,
        ...connectionSecurity(this.#options.security, transport),
        random: this.#options.random,
        requestTimeoutMs,
        inFlightRequestsMax: PEER_IN_FLIGHT_MAX,
        responseBytesMax: 64 * 1024 * 1024,
        connectTimeoutMs: requestTimeoutMs,
      },
    )
    this.#peers.set(id, opening)
    try {
      const c = await opening
      this.#peers.set(id, c)
      this.#refused.succeeded(peer)
      return c
    } catch (e) {
      this.#peers.delete(id)
      this.#refused.failed(peer, e)
      throw e
    }
  }

  /** Sends one request; its response is stepped into the core. Failures are dropped: raft retries. */
  async #sendRequest(m: RaftRequest): Promise<void> {
    const { clusterId } = this.#options
    const a = { self: this.nodeId, peer: m.to, correlationId: m.correlationId }
    try {
      const c = await this.#peer(m.to)
      let response: RaftResponse
      switch (m.type) {
        case 'VoteRequest':
          response = wire.voteResponseFromWire(
            await c.request(apis.Vote, 1, wire.voteRequestToWire(m, clusterId)),
            a,
          )
          break
        case 'BeginQuorumEpochRequest':
          response = wire.beginResponseFromWire(
            await c.request(apis.BeginQuorumEpoch, 1, wire.beginRequestToWire(m, clusterId)),
            a,
          )
          break
        case 'EndQuorumEpochRequest':
          response = wire.endResponseFromWire(
            await c.request(apis.EndQuorumEpoch, 1, wire.endRequestToWire(m, clusterId)),
            a,
          )
          break
        case 'FetchRequest':
          response = wire.fetchResponseFromWire(
            await c.request(apis.Fetch, FETCH_VERSION, wire.fetchRequestToWire(m, clusterId), {
              timeoutMs: m.maxWaitMs + (this.#options.raft?.requestTimeoutMs ?? 2000),
            }),
            a,
          )
          break
        case 'FetchSnapshotRequest':
          response = wire.fetchSnapshotResponseFromWire(
            await c.request(apis.FetchSnapshot, 1, wire.fetchSnapshotRequestToWire(m, clusterId)),
            a,
          )
          break
      }
      if (this.#closed) return
      this.#tick()
      this.#node.step(response)
      this.#kick()
    } catch (e) {
      if (!(e instanceof ConnectionError)) {
        this.#options.log?.('warn', `raft ${formatMessage(m)} failed: ${(e as Error).message}`)
      }
    }
  }

  /** Stops timers and connections and closes the log (after any Ready in progress). */
  async close(): Promise<void> {
    this.#closed = true
    if (this.#timer !== null) this.#options.clock.clearTimer(this.#timer)
    while (this.#running) await new Promise<void>((resolve) => this.#options.clock.setTimer(5, resolve))
    for (const p of this.#peers.values()) {
      if (p instanceof KafkaConnection) p.close()
      else void p.then((c) => c.close()).catch(() => {})
    }
    this.#peers.clear()
    for (const w of this.#waiters.values()) w(null)
    this.#waiters.clear()
    await this.#log.close()
  }
}

/** The Fetch version KRaft peers use: v17 (topic ids, replica state, flexible). */
export const FETCH_VERSION = 17
