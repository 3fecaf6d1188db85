/**
 * One hosted partition: its log, its role (leader or follower) in a leader epoch, and as leader the
 * ISR view, the high watermark and idempotent appends. Written for any ISR: followers' end offsets
 * feed the high watermark the same way once followers fetch. It must not change ISR or leader by
 * itself: those come from metadata records.
 */
import type { Clock } from '../io/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  BATCH_HEADER_BYTES,
  type BatchHeader,
  ErrorCode,
  isTransactional,
  readBatchHeader,
} from '../protocol/index.ts'
import { ListOffsetsTimestamp, type LogConfig, LogOfflineError, type PartitionLog } from '../storage/index.ts'
import { Watchers } from './delayed-operations.ts'
import { UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET } from './leader-epoch-cache.ts'
import { producerInfo, type ReplicaLogState } from './replica-log-state.ts'

/** What a partition takes from its metadata registration. */
export interface PartitionAssignment {
  readonly leader: BrokerId
  readonly leaderEpoch: number
  readonly partitionEpoch: number
  readonly replicas: readonly BrokerId[]
  readonly isr: readonly BrokerId[]
}

/** Settings a partition reads from its topic's config. */
export interface PartitionSettings {
  readonly logConfig: LogConfig
  /** `min.insync.replicas` */
  readonly minInsyncReplicas: number
}

export type Role = 'leader' | 'follower' | 'stopped'

export type LeaderAppendResult =
  | {
      readonly errorCode: 0
      readonly firstOffset: bigint
      readonly lastOffset: bigint
      /** The broker's time under LogAppendTime (for a duplicate, its batch timestamp, as Kafka); else -1. */
      readonly logAppendTimeMs: number
      readonly logStartOffset: bigint
      /** A retry of a batch already in the log: nothing was appended. */
      readonly duplicate: boolean
    }
  | { readonly errorCode: number; readonly errorMessage: string | null }

export interface ReadParams {
  readonly fetchOffset: bigint
  readonly maxBytes: number
  readonly currentLeaderEpoch: number
  readonly lastFetchedEpoch: number
  /** Consumers read up to the high watermark (or the LSO), followers up to the log end. */
  readonly upTo: 'highWatermark' | 'lastStableOffset' | 'logEndOffset'
  /** Only the leader answers (consumers without a preferred read replica). */
  readonly fetchOnlyFromLeader: boolean
  /** Return the first batch whole even when larger than maxBytes. */
  readonly minOneBatch: boolean
}

export interface ReadOutcome {
  readonly errorCode: number
  /** -1 with an error, as Kafka. */
  readonly highWatermark: bigint
  readonly lastStableOffset: bigint
  readonly logStartOffset: bigint
  readonly logEndOffset: bigint
  /** Whole batches as stored; empty with an error or when nothing is readable. */
  readonly records: Buffer
  /** The fetcher's last epoch diverges from this log: where it should truncate to. */
  readonly divergingEpoch: { readonly epoch: number; readonly endOffset: bigint } | null
  /** KIP-392: the consumer should fetch from this follower instead (no records then). */
  readonly preferredReadReplica?: BrokerId
}

export interface OffsetForTimestamp {
  readonly errorCode: number
  readonly timestamp: bigint
  readonly offset: bigint
  readonly leaderEpoch: number
}

const EMPTY = Buffer.alloc(0)

function readError(errorCode: number): ReadOutcome {
  return {
    errorCode,
    highWatermark: -1n,
    lastStableOffset: -1n,
    logStartOffset: -1n,
    logEndOffset: -1n,
    records: EMPTY,
    divergingEpoch: null,
  }
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b
}

export class Partition {
  readonly topic: TopicName
  readonly index: number
  readonly topicId: Uuid
  readonly log: PartitionLog
  readonly state: ReplicaLogState
  /** Woken by appends, high-watermark and log-start moves, role changes and deletion. */
  readonly watchers = new Watchers()
  readonly #nodeId: BrokerId
  readonly #clock: Clock
  #settings: PartitionSettings
  #role: Role = 'follower'
  #leaderId: BrokerId = -1 as BrokerId
  #leaderEpoch = -1
  #partitionEpoch = -1
  #replicas: readonly BrokerId[] = []
  #isr: readonly BrokerId[] = []
  #highWatermark: bigint
  /** As leader: each follower's log end offset, from its fetches (-1 until it fetched). */
  readonly #followers = new Map<BrokerId, { logEndOffset: bigint; lastFetchMs: number }>()
  /** Appends of one idempotent producer run one after another (check, append, record). */
  readonly #producerTails = new Map<bigint, Promise<unknown>>()

  constructor(options: {
    topic: TopicName
    index: number
    topicId: Uuid
    log: PartitionLog
    state: ReplicaLogState
    nodeId: BrokerId
    clock: Clock
    settings: PartitionSettings
  }) {
    this.topic = options.topic
    this.index = options.index
    this.topicId = options.topicId
    this.log = options.log
    this.state = options.state
    this.#nodeId = options.nodeId
    this.#clock = options.clock
    this.#settings = options.settings
    // Everything recovered at open is durable (recovery syncs what it keeps).
    this.#highWatermark = options.log.logStartOffset
  }

  get role(): Role {
    return this.#role
  }

  get isLeader(): boolean {
    return this.#role === 'leader'
  }

  get leaderId(): BrokerId {
    return this.#leaderId
  }

  get leaderEpoch(): number {
    return this.#leaderEpoch
  }

  get partitionEpoch(): number {
    return this.#partitionEpoch
  }

  get isr(): readonly BrokerId[] {
    return this.#isr
  }

  get replicas(): readonly BrokerId[] {
    return this.#replicas
  }

  get highWatermark(): bigint {
    return this.#highWatermark
  }

  /** No transactions yet: nothing is open, so the last stable offset is the high watermark. */
  get lastStableOffset(): bigint {
    return this.#highWatermark
  }

  get logEndOffset(): bigint {
    return this.log.logEndOffset
  }

  get logStartOffset(): bigint {
    return this.log.logStartOffset
  }

  get settings(): PartitionSettings {
    return this.#settings
  }

  updateSettings(settings: PartitionSettings): void {
    this.#settings = settings
    this.log.updateConfig(settings.logConfig)
  }

  /** This replica's end offset as the high watermark counts it: durable when `flush.on.ack`. */
  get #localEndOffset(): bigint {
    return this.#settings.logConfig.flushOnAck ? this.log.recoveryPoint : this.log.logEndOffset
  }

  // ---------------------------------------------------------------- role changes

  /**
   * Become (or stay) leader in `a.leaderEpoch`: the epoch is written to the leader-epoch checkpoint
   * at the log end before the first write is taken, as Kafka's `makeLeader` does.
   */
  async makeLeader(a: PartitionAssignment): Promise<void> {
    const newEpoch = this.#role !== 'leader' || a.leaderEpoch !== this.#leaderEpoch
    if (newEpoch) {
      this.#role = 'follower' // takes no writes while the epoch is being recorded
      await this.state.assignEpochDurably(a.leaderEpoch, this.log.logEndOffset)
      this.#followers.clear()
    }
    this.#role = 'leader'
    this.#leaderId = this.#nodeId
    this.#leaderEpoch = a.leaderEpoch
    this.#partitionEpoch = a.partitionEpoch
    this.#replicas = a.replicas
    this.#isr = a.isr
    for (const r of a.replicas) {
      if (r !== this.#nodeId && !this.#followers.has(r))
        this.#followers.set(r, { logEndOffset: -1n, lastFetchMs: -1 })
    }
    for (const id of [...this.#followers.keys()]) if (!a.replicas.includes(id)) this.#followers.delete(id)
    const end = this.log.logEndOffset
    if (this.#highWatermark > end) this.#highWatermark = end
    if (this.#highWatermark < this.log.logStartOffset) this.#highWatermark = this.log.logStartOffset
    this.#maybeIncrementHighWatermark()
    this.watchers.wake()
  }

  /** Follow `a.leader` (fetching from it comes with multi-broker replication). */
  makeFollower(a: PartitionAssignment): void {
    this.#role = 'follower'
    this.#leaderId = a.leader
    this.#leaderEpoch = a.leaderEpoch
    this.#partitionEpoch = a.partitionEpoch
    this.#replicas = a.replicas
    this.#isr = a.isr
    this.#followers.clear()
    if (this.#highWatermark > this.log.logEndOffset) this.#highWatermark = this.log.logEndOffset
    this.watchers.wake()
  }

  /** No longer hosted (topic deleted, replica moved): waiters wake to their errors. */
  stop(): void {
    this.#role = 'stopped'
    this.watchers.wake()
  }

  // ---------------------------------------------------------------- high watermark

  /**
   * The high watermark is the smallest end offset in the ISR (this replica's counted as durable when
   * `flush.on.ack`); it never moves back. Returns whether it moved.
   */
  #maybeIncrementHighWatermark(): boolean {
    if (this.#role !== 'leader') return false
    let hw = this.#localEndOffset
    for (const id of this.#isr) {
      if (id === this.#nodeId) continue
      const f = this.#followers.get(id)
      if (f === undefined) return false
      hw = min(hw, f.logEndOffset)
    }
    if (hw <= this.#highWatermark) return false
    this.#highWatermark = hw
    this.watchers.wake()
    return true
  }

  /**
   * A follower fetched from `fetchOffset`: everything below it is on that follower. Moves the high
   * watermark when the follower is in the ISR. (ISR expansion is a proposal to the controller.)
   */
  updateFollowerFetchState(replicaId: BrokerId, fetchOffset: bigint): boolean {
    const f = this.#followers.get(replicaId)
    if (f === undefined || this.#role !== 'leader') return false
    f.logEndOffset = fetchOffset
    f.lastFetchMs = this.#clock.monotonicMs()
    return this.#maybeIncrementHighWatermark()
  }

  /** Followers' end offsets as the leader last saw them (DescribeQuorum-like views, tests). */
  followerEndOffsets(): ReadonlyMap<BrokerId, bigint> {
    return new Map([...this.#followers].map(([id, f]) => [id, f.logEndOffset]))
  }

  /** As leader: each follower's end offset and last fetch time (KIP-392 read-replica selection). */
  followerStates(): ReadonlyMap<BrokerId, { readonly logEndOffset: bigint; readonly lastFetchMs: number }> {
    return new Map([...this.#followers].map(([id, f]) => [id, { ...f }]))
  }

  #afterAppend(): void {
    this.watchers.wake() // followers waiting for new bytes
    if (!this.#settings.logConfig.flushOnAck) {
      this.#maybeIncrementHighWatermark()
      return
    }
    // Durable before visible: one group-commit fsync covers every append made meanwhile.
    this.log.flush().then(
      () => this.#maybeIncrementHighWatermark(),
      () => this.watchers.wake(), // the log is offline: waiters see KAFKA_STORAGE_ERROR
    )
  }

  /**
   * Whether the ISR has the records below `requiredOffset` (Kafka's `checkEnoughReplicasReachOffset`):
   * done with an error when this is no longer the leader or the ISR shrank below
   * `min.insync.replicas`.
   */
  checkEnoughReplicasReachOffset(requiredOffset: bigint): { done: boolean; errorCode: number } {
    if (this.#role !== 'leader') return { done: true, errorCode: ErrorCode.NotLeaderOrFollower }
    if (this.log.offlineCause !== null) return { done: true, errorCode: ErrorCode.KafkaStorageError }
    if (this.#highWatermark < requiredOffset) return { done: false, errorCode: ErrorCode.None }
    return {
      done: true,
      errorCode:
        this.#isr.length >= this.#settings.minInsyncReplicas
          ? ErrorCode.None
          : ErrorCode.NotEnoughReplicasAfterAppend,
    }
  }

  // ---------------------------------------------------------------- produce

  /**
   * Append one producer batch (its bytes are kept; the log rewrites the base offset and epoch in
   * place). Idempotent batches are checked against producer state first: a retry of a recent batch
   * answers its original offsets, a gap or stale epoch is refused.
   */
  appendAsLeader(batch: Buffer, requiredAcks: number): Promise<LeaderAppendResult> {
    if (this.#role !== 'leader') return Promise.resolve(this.#notLeader())
    if (requiredAcks === -1 && this.#isr.length < this.#settings.minInsyncReplicas) {
      return Promise.resolve({
        errorCode: ErrorCode.NotEnoughReplicas,
        errorMessage: `The size of the current ISR ${this.#isr.length} is insufficient to satisfy the min.isr requirement of ${this.#settings.minInsyncReplicas} for partition ${this.topic}-${this.index}`,
      })
    }
    if (batch.length < BATCH_HEADER_BYTES) {
      return Promise.resolve({ errorCode: ErrorCode.CorruptMessage, errorMessage: 'the batch is truncated' })
    }
    const header = readBatchHeader(batch, 0)
    if (isTransactional(header.attributes)) {
      return Promise.resolve({
        errorCode: ErrorCode.InvalidTxnState,
        errorMessage: 'Weir does not support transactions yet',
      })
    }
    if (header.producerId < 0n) return this.#append(batch, null)
    // One producer's batches are checked and appended in turn, so two never pass the same check.
    const pid = header.producerId
    const previous = this.#producerTails.get(pid) ?? Promise.resolve()
    const run = previous.then(() => this.#append(batch, header))
    const tail = run.then(
      () => undefined,
      () => undefined,
    )
    this.#producerTails.set(pid, tail)
    void tail.then(() => {
      if (this.#producerTails.get(pid) === tail) this.#producerTails.delete(pid)
    })
    return run
  }

  #notLeader(): LeaderAppendResult {
    return {
      errorCode: ErrorCode.NotLeaderOrFollower,
      errorMessage: `This server is not the leader for partition ${this.topic}-${this.index}`,
    }
  }

  async #append(batch: Buffer, producer: BatchHeader | null): Promise<LeaderAppendResult> {
    if (this.#role !== 'leader') return this.#notLeader()
    if (producer !== null) {
      const check = this.state.producers.check(producerInfo(producer))
      if (check.kind === 'error') return { errorCode: check.errorCode, errorMessage: check.message }
      if (check.kind === 'duplicate') {
        return {
          errorCode: 0,
          firstOffset: check.batch.firstOffset,
          lastOffset: check.batch.lastOffset,
          logAppendTimeMs: Number(check.batch.timestamp),
          logStartOffset: this.log.logStartOffset,
          duplicate: true,
        }
      }
    }
    let r: Awaited<ReturnType<PartitionLog['append']>>
    try {
      r = await this.log.append(batch, { origin: 'client', leaderEpoch: this.#leaderEpoch })
    } catch (e) {
      if (!(e instanceof LogOfflineError)) throw e
      if (this.role === 'stopped') return this.#notLeader()
      return { errorCode: ErrorCode.KafkaStorageError, errorMessage: e.message }
    }
    if (r.errorCode !== 0) return { errorCode: r.errorCode, errorMessage: r.errorMessage }
    this.#afterAppend()
    return {
      errorCode: 0,
      firstOffset: r.baseOffset,
      lastOffset: r.lastOffset,
      logAppendTimeMs: r.logAppendTimeMs,
      logStartOffset: r.logStartOffset,
      duplicate: false,
    }
  }

  // ---------------------------------------------------------------- reads

  /** Kafka's `checkCurrentLeaderEpoch` and the leader requirement. */
  #checkEpochAndRole(currentLeaderEpoch: number, requireLeader: boolean): number {
    if (this.#role === 'stopped') return ErrorCode.NotLeaderOrFollower
    if (currentLeaderEpoch >= 0) {
      if (currentLeaderEpoch < this.#leaderEpoch) return ErrorCode.FencedLeaderEpoch
      if (currentLeaderEpoch > this.#leaderEpoch) return ErrorCode.UnknownLeaderEpoch
    }
    if (requireLeader && this.#role !== 'leader') return ErrorCode.NotLeaderOrFollower
    if (this.log.offlineCause !== null) return ErrorCode.KafkaStorageError
    return ErrorCode.None
  }

  /** The exclusive bound a reader may see. */
  visibleEnd(upTo: ReadParams['upTo']): bigint {
    if (upTo === 'logEndOffset') return this.log.logEndOffset
    return upTo === 'lastStableOffset' ? this.lastStableOffset : this.#highWatermark
  }

  /**
   * Read for a fetch: the epoch and role checks, the divergence check when the fetcher names its
   * last fetched epoch (Kafka: an epoch that ends before the fetch offset here answers where to
   * truncate, no records), then whole batches below the visible end.
   */
  async read(p: ReadParams): Promise<ReadOutcome> {
    const error = this.#checkEpochAndRole(p.currentLeaderEpoch, p.fetchOnlyFromLeader)
    if (error !== ErrorCode.None) return readError(error)
    const highWatermark = this.#highWatermark
    const lastStableOffset = this.lastStableOffset
    const base = {
      highWatermark,
      lastStableOffset,
      logStartOffset: this.log.logStartOffset,
      logEndOffset: this.log.logEndOffset,
    }
    if (p.lastFetchedEpoch >= 0) {
      const e = this.state.epochs.endOffsetFor(p.lastFetchedEpoch, this.log.logEndOffset)
      if (e.epoch === UNDEFINED_EPOCH || e.endOffset === UNDEFINED_EPOCH_OFFSET) {
        return readError(ErrorCode.OffsetOutOfRange)
      }
      if (e.epoch < p.lastFetchedEpoch || e.endOffset < p.fetchOffset) {
        return {
          ...base,
          errorCode: ErrorCode.None,
          records: EMPTY,
          divergingEpoch: { epoch: e.epoch, endOffset: e.endOffset },
        }
      }
    }
    const maxOffset =
      p.upTo === 'logEndOffset'
        ? this.log.logEndOffset
        : p.upTo === 'lastStableOffset'
          ? lastStableOffset
          : highWatermark
    let r: Awaited<ReturnType<PartitionLog['read']>>
    try {
      r = await this.log.read(p.fetchOffset, p.maxBytes, { maxOffset, minOneBatch: p.minOneBatch })
    } catch (e) {
      if (!(e instanceof LogOfflineError)) throw e
      return readError(this.role === 'stopped' ? ErrorCode.NotLeaderOrFollower : ErrorCode.KafkaStorageError)
    }
    if (r.errorCode !== 0) return readError(r.errorCode)
    return { ...base, errorCode: ErrorCode.None, records: r.records, divergingEpoch: null }
  }

  /**
   * ListOffsets (Kafka's `fetchOffsetForTimestamp`): latest is the high watermark for consumers
   * (the LSO under read_committed, the log end for replicas and v0), with the current leader epoch;
   * earliest is the log start with its epoch; a timestamp or -3 (max timestamp) is looked up in
   * the log and must lie below the visible end; nothing found answers -1, -1.
   */
  async fetchOffsetForTimestamp(
    timestamp: bigint,
    options: { currentLeaderEpoch: number; isolationLevel: number | null; fetchOnlyFromLeader: boolean },
  ): Promise<OffsetForTimestamp> {
    const none = { timestamp: -1n, offset: -1n, leaderEpoch: -1 }
    const error = this.#checkEpochAndRole(options.currentLeaderEpoch, options.fetchOnlyFromLeader)
    if (error !== ErrorCode.None) return { errorCode: error, ...none }
    const lastFetchable =
      options.isolationLevel === null
        ? this.log.logEndOffset
        : options.isolationLevel === 1
          ? this.lastStableOffset
          : this.#highWatermark
    const ts = Number(timestamp)
    if (ts === ListOffsetsTimestamp.latest) {
      return {
        errorCode: ErrorCode.None,
        timestamp: -1n,
        offset: lastFetchable,
        leaderEpoch: this.#leaderEpoch,
      }
    }
    try {
      if (ts === ListOffsetsTimestamp.earliest || ts === ListOffsetsTimestamp.earliestLocal) {
        const start = this.log.logStartOffset
        return {
          errorCode: ErrorCode.None,
          timestamp: -1n,
          offset: start,
          leaderEpoch: this.state.epochs.epochForOffset(start),
        }
      }
      const found = await this.log.offsetForTimestamp(ts)
      if (found === null || found.offset >= lastFetchable) return { errorCode: ErrorCode.None, ...none }
      return {
        errorCode: ErrorCode.None,
        timestamp: BigInt(found.timestampMs),
        offset: found.offset,
        leaderEpoch: found.leaderEpoch,
      }
    } catch (e) {
      if (!(e instanceof LogOfflineError)) throw e
      return { errorCode: ErrorCode.KafkaStorageError, ...none }
    }
  }

  /**
   * ListOffsets v0 (Kafka's legacy `fetchOffsetsBefore`): up to `maxNumOffsets` segment base
   * offsets (and the log end) whose segments' largest timestamp is at or before `timestamp`,
   * newest first; a consumer never sees past the high watermark.
   */
  legacyOffsetsBefore(timestamp: bigint, maxNumOffsets: number, fromConsumer: boolean): bigint[] {
    const segments = this.log.segments
    const points: Array<{ offset: bigint; ts: number }> = segments.map((s) => ({
      offset: max(s.baseOffset, this.log.logStartOffset),
      ts: s.maxTimestampMs,
    }))
    if ((segments.at(-1)?.size ?? 0) > 0)
      points.push({ offset: this.log.logEndOffset, ts: this.#clock.nowMs() })
    let start: number
    if (timestamp === -1n) start = points.length - 1
    else if (timestamp === -2n) start = 0
    else {
      start = points.length - 1
      while (start >= 0 && points[start]!.ts > Number(timestamp)) start--
    }
    const out: bigint[] = []
    for (let i = start; i >= 0 && out.length < maxNumOffsets; i--) out.push(points[i]!.offset)
    out.sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))
    if (!fromConsumer) return out
    const hw = this.#highWatermark
    return out.some((o) => o > hw) ? [hw, ...out.filter((o) => o <= hw)] : out
  }

  /**
   * OffsetForLeaderEpoch (Kafka's `lastOffsetForLeaderEpoch`): the largest epoch at or below
   * `leaderEpoch` and the offset where it ended here; unknown answers (-1, -1) without an error.
   */
  lastOffsetForLeaderEpoch(
    currentLeaderEpoch: number,
    leaderEpoch: number,
    fetchOnlyFromLeader: boolean,
  ): { errorCode: number; leaderEpoch: number; endOffset: bigint } {
    const error = this.#checkEpochAndRole(currentLeaderEpoch, fetchOnlyFromLeader)
    if (error !== ErrorCode.None) return { errorCode: error, leaderEpoch: -1, endOffset: -1n }
    const e = this.state.epochs.endOffsetFor(leaderEpoch, this.log.logEndOffset)
    if (e.endOffset === UNDEFINED_EPOCH_OFFSET)
      return { errorCode: ErrorCode.None, leaderEpoch: -1, endOffset: -1n }
    return { errorCode: ErrorCode.None, leaderEpoch: e.epoch, endOffset: e.endOffset }
  }

  /**
   * DeleteRecords on the leader: move the log start to `offset` (-1: the high watermark), which
   * may not pass the high watermark; refused under a policy without `delete`.
   */
  async deleteRecordsOnLeader(offset: bigint): Promise<{ errorCode: number; lowWatermark: bigint }> {
    if (this.#role !== 'leader') return { errorCode: ErrorCode.NotLeaderOrFollower, lowWatermark: -1n }
    if (!this.#settings.logConfig.cleanupPolicy.delete)
      return { errorCode: ErrorCode.PolicyViolation, lowWatermark: -1n }
    const target = offset === -1n ? this.#highWatermark : offset
    if (target < 0n || target > this.#highWatermark) {
      return { errorCode: ErrorCode.OffsetOutOfRange, lowWatermark: -1n }
    }
    try {
      const r = await this.log.deleteRecordsBefore(target)
      this.watchers.wake()
      return { errorCode: r.errorCode, lowWatermark: r.lowWatermark }
    } catch (e) {
      if (!(e instanceof LogOfflineError)) throw e
      return { errorCode: ErrorCode.KafkaStorageError, lowWatermark: -1n }
    }
  }

  /** Bytes a fetch from `fetchOffset` could read now (an estimate; null: unknown, assume plenty). */
  bytesAvailable(fetchOffset: bigint, upTo: ReadParams['upTo']): number | null {
    const end = this.visibleEnd(upTo)
    if (end <= fetchOffset) return 0
    return this.state.bytesBetween(fetchOffset, end)
  }
}
