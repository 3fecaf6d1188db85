/**
 * One hosted partition: its log, its role (leader or follower) in a leader epoch; as leader the
 * ISR view (followers' fetch state, which of them are caught up), the high watermark and idempotent
 * appends; as follower the leader's batches appended as they are, truncation and the leader's high
 * watermark. It must not change ISR or leader by itself: it proposes ISR changes (AlterPartition)
 * and applies what the controller answers or metadata records say.
 */
import type { Clock } from '../io/index.ts'
import { assert, type BrokerId, NO_NODE, type TopicName, type Uuid } from '../model/index.ts'
import {
  BATCH_HEADER_BYTES,
  type BatchHeader,
  BatchOffsets,
  batchSizeAt,
  ControlRecordType,
  ErrorCode,
  encodeEndTxnMarkerBatch,
  readBatchHeader,
} from '../protocol/index.ts'
import {
  type AbortedTxn,
  BROKER_TAIL_BYTES_MAX,
  ListOffsetsTimestamp,
  type LogConfig,
  LogOfflineError,
  type PartitionLog,
  type ReadBuffers,
  TAIL_BYTES_MAX_DEFAULT,
} from '../storage/index.ts'
import { Watchers } from './delayed-operations.ts'
import { UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET } from './leader-epoch-cache.ts'
import type { MarkerInfo } from './producer-state.ts'
import { readError } from './read-outcome.ts'
import { producerInfo, type ReplicaLogState } from './replica-log-state.ts'
import type { ReplicationStats } from './replication-stats.ts'

/** What a partition takes from its metadata registration. */
export interface PartitionAssignment {
  readonly leader: BrokerId
  readonly leaderEpoch: number
  readonly partitionEpoch: number
  readonly replicas: readonly BrokerId[]
  readonly isr: readonly BrokerId[]
  /** 1 after an unclean election until the leader reports its recovery done (KIP-704); default 0. */
  readonly leaderRecoveryState?: number
}

/** Settings a partition reads from its topic's config. */
export interface PartitionSettings {
  readonly logConfig: LogConfig
  /** `min.insync.replicas` */
  readonly insyncReplicasMin: number
}

export type Role = 'leader' | 'follower' | 'stopped'

/** A member of a proposed ISR with the broker epoch the leader saw it fetch with (-1: unknown). */
export interface IsrMember {
  readonly brokerId: BrokerId
  readonly brokerEpoch: bigint
}

/** An ISR change this leader sent to the controller and has not seen answered (one at a time). */
export interface PendingIsrChange {
  readonly isr: readonly BrokerId[]
  readonly members: readonly IsrMember[]
  /** Expansions count the larger ISR for the high watermark at once (Kafka's maximal ISR). */
  readonly expand: boolean
  readonly leaderEpoch: number
  readonly partitionEpoch: number
  /** 0: recovered (every change after an unclean election's recovery, and the recovery itself). */
  readonly leaderRecoveryState: number
}

/** The controller's answer to an ISR change, as it concerns this partition. */
export interface IsrChangeAnswer {
  readonly errorCode: ErrorCode
  readonly leaderEpoch: number
  readonly partitionEpoch: number
  readonly isr: readonly BrokerId[]
}

/** A follower as its leader sees it (Kafka's Replica state). */
interface FollowerState {
  /** Its log end offset, from its last fetch (-1 until it fetched in this leader epoch). */
  logEndOffset: bigint
  lastFetchMs: number
  /** The leader's log end offset at that last fetch. */
  lastFetchLeaderLogEndOffset: bigint
  /** When it last had everything the leader had (at a fetch, or since its previous fetch). */
  lastCaughtUpMs: number
  /** The broker epoch its fetches carry (KIP-841), -1 when unknown. */
  brokerEpoch: bigint
}

export type LeaderAppendResult =
  | {
      readonly errorCode: typeof ErrorCode.None
      readonly firstOffset: bigint
      readonly lastOffset: bigint
      /** The broker's time under LogAppendTime (for a duplicate, its batch timestamp, as Kafka); else -1. */
      readonly logAppendTimeMs: number
      readonly logStartOffset: bigint
      /** A retry of a batch already in the log: nothing was appended. */
      readonly duplicate: boolean
    }
  | { readonly errorCode: ErrorCode; readonly errorMessage: string | null }

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
  readonly atLeastOneBatch: boolean
  /** Where file reads get their buffers; the caller releases `records` to it (storage's `ReadBuffers`). */
  readonly buffers?: ReadBuffers
}

export interface ReadOutcome {
  readonly errorCode: ErrorCode
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
  /** A read up to the LSO: the aborted transactions overlapping the records (from `.txnindex`). */
  readonly abortedTransactions?: readonly AbortedTxn[]
}

export interface OffsetForTimestamp {
  readonly errorCode: ErrorCode
  readonly timestamp: bigint
  readonly offset: bigint
  readonly leaderEpoch: number
}

const EMPTY = Buffer.alloc(0)

/** The offset after the last of whole batches (a read's upper bound for its aborted transactions). */
function endOfBatches(records: Buffer): bigint {
  let last = -1n
  for (let at = 0; at + BATCH_HEADER_BYTES <= records.length; at += batchSizeAt(records, at)) {
    last = records.readBigInt64BE(at) + BigInt(records.readInt32BE(at + BatchOffsets.lastOffsetDelta))
  }
  return last + 1n
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b
}

export class Partition {
  readonly topic: TopicName
  readonly partition: number
  readonly topicId: Uuid
  readonly log: PartitionLog
  readonly state: ReplicaLogState
  /** Woken by appends, high-watermark and log-start moves, role changes and deletion. */
  readonly watchers = new Watchers()
  /** Monotonic ms of the last append (either role) and of the last high-watermark move (stats). */
  lastAppendMs = 0
  lastHighWatermarkMoveMs = 0
  readonly #nodeId: BrokerId
  readonly #clock: Clock
  #settings: PartitionSettings
  readonly #stats: ReplicationStats | null
  #role: Role = 'follower'
  #leaderId: BrokerId = NO_NODE
  #leaderEpoch = -1
  #partitionEpoch = -1
  #replicas: readonly BrokerId[] = []
  #isr: readonly BrokerId[] = []
  #highWatermark: bigint
  /** As leader: the log end offset when this leader epoch began (a follower must reach it to rejoin). */
  #leaderEpochStartOffset = -1n
  /** As leader: each follower's fetch state (made with the first follower: none with one replica). */
  #followers: Map<BrokerId, FollowerState> | null = null
  /** As leader: the ISR change waiting for the controller's answer. */
  #pendingIsr: PendingIsrChange | null = null
  /** As leader: elected uncleanly and not yet reported recovered (KIP-704). */
  #recovering = false
  /** Appends of one idempotent producer run one after another (check, append, record); made at the first. */
  #producerTails: Map<bigint, Promise<unknown>> | null = null

  constructor(options: {
    topic: TopicName
    partition: number
    topicId: Uuid
    log: PartitionLog
    state: ReplicaLogState
    nodeId: BrokerId
    clock: Clock
    settings: PartitionSettings
    /** From `replication-offset-checkpoint`: where the high watermark starts (clamped to the log). */
    highWatermark?: bigint
    stats?: ReplicationStats
  }) {
    this.topic = options.topic
    this.partition = options.partition
    this.topicId = options.topicId
    this.log = options.log
    this.state = options.state
    this.#nodeId = options.nodeId
    this.#clock = options.clock
    this.#settings = options.settings
    this.#stats = options.stats ?? null
    // The checkpointed high watermark, within what the log holds; without one, the log start.
    const hw = options.highWatermark ?? options.log.logStartOffset
    this.#highWatermark = max(options.log.logStartOffset, min(hw, options.log.logEndOffset))
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

  /**
   * The ISR the high watermark counts: the committed one, or while an expansion is pending the
   * larger proposed one (Kafka's maximal ISR: a shrink counts only once committed).
   */
  get maximalIsr(): readonly BrokerId[] {
    return this.#pendingIsr?.expand === true ? this.#pendingIsr.isr : this.#isr
  }

  get pendingIsrChange(): PendingIsrChange | null {
    return this.#pendingIsr
  }

  /** As leader: where this leader epoch began in the log. */
  get leaderEpochStartOffset(): bigint {
    return this.#leaderEpochStartOffset
  }

  get replicas(): readonly BrokerId[] {
    return this.#replicas
  }

  get highWatermark(): bigint {
    return this.#highWatermark
  }

  /**
   * The last stable offset (Kafka's `UnifiedLog.lastStableOffset`): the first offset of the oldest
   * open transaction, or of a completed one whose marker the high watermark has not passed, when
   * that is below the high watermark; else the high watermark. Leaders and followers alike.
   */
  /**
   * The first offset of the oldest transaction still open (or whose marker the high watermark has
   * not passed), no lower than the log start (retention or DeleteRecords may pass an open
   * transaction's first offset: Kafka's updateFirstUnstableOffset), else the high watermark.
   */
  get lastStableOffset(): bigint {
    const unstable = this.state.producers.firstUnstableOffset(this.#highWatermark)
    if (unstable === null || unstable >= this.#highWatermark) return this.#highWatermark
    return max(unstable, this.log.logStartOffset)
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
    if (!newEpoch && a.partitionEpoch < this.#partitionEpoch) return // an AlterPartition answer was newer
    const nowMs = this.#clock.monotonicMs()
    if (newEpoch) {
      this.#role = 'follower' // takes no writes while the epoch is being recorded
      await this.state.assignEpochDurably(a.leaderEpoch, this.log.logEndOffset)
      this.#leaderEpochStartOffset = this.log.logEndOffset
      this.#followers?.clear()
    }
    this.#role = 'leader'
    this.#leaderId = this.#nodeId
    this.#leaderEpoch = a.leaderEpoch
    this.#partitionEpoch = a.partitionEpoch
    this.#replicas = a.replicas
    // Not asserted: this leader is in `a.isr`. Every decision of today's controller keeps leader ∈
    // ISR (src/controller/reassignment.test.ts checks it as a property), but the assignment comes
    // from committed metadata, which is replayed at every start and may have been written by a
    // controller without that guarantee: before reassign-isr, replacing a reassignment whose adding
    // replica led published leader 3 with ISR [1,2]. An assertion would turn such a log into a
    // broker that fails at every start; Kafka's Partition.makeLeader accepts the state too.
    this.#isr = a.isr
    this.#pendingIsr = null
    this.#recovering = a.leaderRecoveryState === 1
    this.#boundTail(a)
    for (const r of a.replicas) {
      if (r !== this.#nodeId && !this.#followers?.has(r)) {
        // Kafka's resetReplicaState: an ISR member counts as caught up now, so it has a full
        // replica.lag.time.max.ms to fetch from the new leader before it is proposed out.
        this.#followers ??= new Map()
        this.#followers.set(r, {
          logEndOffset: -1n,
          lastFetchMs: -1,
          lastFetchLeaderLogEndOffset: -1n,
          lastCaughtUpMs: a.isr.includes(r) ? nowMs : -1,
          brokerEpoch: -1n,
        })
      }
    }
    for (const id of [...(this.#followers?.keys() ?? [])])
      if (!a.replicas.includes(id)) this.#followers?.delete(id)
    const end = this.log.logEndOffset
    // A leader's high watermark never moves back, and a follower's only where truncation cut below
    // it (which lowered it then): either way it is within the log, and leading takes it as it is.
    assert(this.#highWatermark <= end, 'a high watermark past the log end at makeLeader')
    if (this.#highWatermark < this.log.logStartOffset) this.#highWatermark = this.log.logStartOffset
    // With flush.on.ack the high watermark counts this replica's durable end: the tail it fetched
    // as a follower was never flushed, and without a new append nothing would flush it.
    if (newEpoch && this.#settings.logConfig.flushOnAck && this.log.recoveryPoint < end) this.#afterAppend()
    this.#maybeIncrementHighWatermark()
    this.watchers.wake()
  }

  /**
   * The log's write tail: the broker's 12 MiB where other replicas fetch from it (they run several
   * MB behind a pipelining producer at acks=all), 1 MiB, a few fetches of a tailing consumer, where
   * none do: it is memory that would otherwise be freed (docs/performance.md, "Memory").
   */
  #boundTail(a: PartitionAssignment): void {
    this.log.setTailBytesMax(a.replicas.length > 1 ? BROKER_TAIL_BYTES_MAX : TAIL_BYTES_MAX_DEFAULT)
  }

  /**
   * Follow `a.leader`. No truncation here (KIP-101/279): the fetcher starts at the log end with its
   * last epoch, and the leader's divergence answers say where to truncate.
   */
  makeFollower(a: PartitionAssignment): void {
    this.#role = 'follower'
    this.#pendingIsr = null
    this.#leaderEpochStartOffset = -1n
    this.#leaderId = a.leader
    this.#leaderEpoch = a.leaderEpoch
    this.#partitionEpoch = a.partitionEpoch
    this.#replicas = a.replicas
    this.#isr = a.isr
    this.#followers?.clear()
    this.#boundTail(a)
    // As leader it was at most the (durable) log end; as follower it moves back only on truncation.
    assert(this.#highWatermark <= this.log.logEndOffset, 'a high watermark past the log end at makeFollower')
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
    for (const id of this.maximalIsr) {
      if (id === this.#nodeId) continue
      const f = this.#followers?.get(id)
      if (f === undefined) return false
      hw = min(hw, f.logEndOffset)
    }
    if (hw <= this.#highWatermark) return false
    // The least end offset over the ISR counts this leader's own, so it never passes the log end.
    assert(hw <= this.log.logEndOffset, "a leader's high watermark past its log end")
    this.#highWatermark = hw
    this.lastHighWatermarkMoveMs = this.#clock.monotonicMs()
    this.watchers.wake()
    return true
  }

  /**
   * A follower fetched from `fetchOffset`: everything below it is on that follower. It is caught
   * up when it asked for the leader's log end, or for at least the log end the leader had at its
   * previous fetch (then it was caught up as of that fetch) — Kafka's `updateFetchStateOrThrow`.
   * Moves the high watermark when the follower counts for it. Returns whether it moved.
   */
  updateFollowerFetchState(replicaId: BrokerId, fetchOffset: bigint, brokerEpoch = -1n): boolean {
    const f = this.#followers?.get(replicaId)
    if (f === undefined || this.#role !== 'leader') return false
    const nowMs = this.#clock.monotonicMs()
    const leaderEnd = this.log.logEndOffset
    if (fetchOffset >= leaderEnd) f.lastCaughtUpMs = Math.max(nowMs, f.lastCaughtUpMs)
    else if (fetchOffset >= f.lastFetchLeaderLogEndOffset && f.lastFetchMs >= 0)
      f.lastCaughtUpMs = Math.max(f.lastFetchMs, f.lastCaughtUpMs)
    f.logEndOffset = fetchOffset
    f.lastFetchMs = nowMs
    f.lastFetchLeaderLogEndOffset = leaderEnd
    f.brokerEpoch = brokerEpoch
    return this.#maybeIncrementHighWatermark()
  }

  /**
   * The ISR expansion a follower's fetch calls for (Kafka's `maybeExpandIsr`): none while a change
   * is pending; else when `replicaId` is outside the ISR, eligible (`eligible(id, brokerEpoch)`:
   * unfenced, not shutting down, its fetch's broker epoch current — KIP-841) and has reached both
   * the high watermark and this leader epoch's start. Returns the proposal, now pending, or null.
   */
  maybeExpandIsr(
    replicaId: BrokerId,
    eligible: (id: BrokerId, brokerEpoch: bigint) => boolean,
  ): PendingIsrChange | null {
    if (this.#role !== 'leader' || this.#pendingIsr !== null || this.#isr.includes(replicaId)) return null
    const f = this.#followers?.get(replicaId)
    if (f === undefined || f.logEndOffset < 0n) return null
    if (f.logEndOffset < this.#highWatermark || f.logEndOffset < this.#leaderEpochStartOffset) return null
    if (!eligible(replicaId, f.brokerEpoch)) return null
    return this.#propose([...this.#isr, replicaId], true)
  }

  /**
   * The ISR shrink that lagging followers call for (Kafka's `maybeShrinkIsr`): ISR members other
   * than this leader that are behind its log end and were last caught up more than `lagMs` ago.
   * Returns the proposal, now pending, or null.
   */
  maybeShrinkIsr(lagMs: number): PendingIsrChange | null {
    if (this.#role !== 'leader' || this.#pendingIsr !== null) return null
    const nowMs = this.#clock.monotonicMs()
    const leaderEnd = this.log.logEndOffset
    const out = this.#isr.filter((id) => {
      if (id === this.#nodeId) return false
      const f = this.#followers?.get(id)
      if (f === undefined) return true
      return f.logEndOffset !== leaderEnd && nowMs - f.lastCaughtUpMs > lagMs
    })
    if (out.length === 0) return null
    return this.#propose(
      this.#isr.filter((id) => !out.includes(id)),
      false,
    )
  }

  /**
   * After an unclean election (leaderRecoveryState RECOVERING) the leader reports its recovery done
   * with an AlterPartition of its own ISR and RECOVERED (KIP-704). Returns the proposal, now pending,
   * or null.
   */
  maybeCompleteRecovery(): PendingIsrChange | null {
    if (this.#role !== 'leader' || !this.#recovering || this.#pendingIsr !== null) return null
    return this.#propose(this.#isr, false)
  }

  /** Elected uncleanly and not yet reported recovered (KIP-704). */
  get isRecovering(): boolean {
    return this.#recovering
  }

  #propose(isr: readonly BrokerId[], expand: boolean): PendingIsrChange {
    const members = isr.map((id) => ({
      brokerId: id,
      brokerEpoch: id === this.#nodeId ? -1n : (this.#followers?.get(id)?.brokerEpoch ?? -1n),
    }))
    this.#pendingIsr = {
      isr,
      members,
      expand,
      leaderEpoch: this.#leaderEpoch,
      partitionEpoch: this.#partitionEpoch,
      leaderRecoveryState: 0,
    }
    if (expand) this.#maybeIncrementHighWatermark()
    return this.#pendingIsr
  }

  /**
   * The controller answered `change`. Success: the new ISR and partition epoch apply at once (the
   * metadata record follows). FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION and unknown partitions
   * keep the change pending until metadata moves this partition on (makeLeader clears it); other
   * refusals (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED, INVALID_REQUEST ...) drop it so the
   * next fetch or lag check proposes again. An answer to a change no longer pending is ignored.
   */
  onIsrChangeAnswer(change: PendingIsrChange, answer: IsrChangeAnswer): void {
    if (this.#pendingIsr !== change || this.#role !== 'leader') return
    switch (answer.errorCode) {
      case ErrorCode.None:
        this.#pendingIsr = null
        if (answer.leaderEpoch !== this.#leaderEpoch || answer.partitionEpoch <= this.#partitionEpoch) break
        // The controller accepts only an ISR of assigned replicas holding the leader that sent it, and
        // a change still pending was sent with the replicas this leader still has.
        assert(
          answer.isr.includes(this.#nodeId) && answer.isr.every((id) => this.#replicas.includes(id)),
          'an accepted ISR without its leader or with a replica not assigned',
        )
        this.#isr = answer.isr
        this.#partitionEpoch = answer.partitionEpoch
        this.#recovering = false
        break
      case ErrorCode.FencedLeaderEpoch:
      case ErrorCode.InvalidUpdateVersion:
      case ErrorCode.UnknownTopicOrPartition:
      case ErrorCode.UnknownTopicId:
        return
      default:
        this.#pendingIsr = null
    }
    this.#maybeIncrementHighWatermark()
    this.watchers.wake()
  }

  /** Followers' end offsets as the leader last saw them (views, tests). */
  followerEndOffsets(): ReadonlyMap<BrokerId, bigint> {
    return new Map([...(this.#followers ?? [])].map(([id, f]) => [id, f.logEndOffset]))
  }

  /** As leader: each follower's end offset and last fetch time (KIP-392 read-replica selection). */
  followerStates(): ReadonlyMap<BrokerId, { readonly logEndOffset: bigint; readonly lastFetchMs: number }> {
    return new Map([...(this.#followers ?? [])].map(([id, f]) => [id, { ...f }]))
  }

  // ---------------------------------------------------------------- follower

  /**
   * Appends the leader's batches as they are (offsets and epochs kept; the epoch cache and producer
   * state follow through the log's hooks). They must start at this log's end.
   */
  async appendAsFollower(records: Buffer): Promise<{ errorCode: ErrorCode; errorMessage: string | null }> {
    if (this.#role !== 'follower') return { errorCode: ErrorCode.NotLeaderOrFollower, errorMessage: null }
    const r = await this.log.append(records, { origin: 'replication' })
    if (r.errorCode !== ErrorCode.None) return { errorCode: r.errorCode, errorMessage: r.errorMessage }
    this.watchers.wake()
    return { errorCode: ErrorCode.None, errorMessage: null }
  }

  /**
   * The leader's high watermark as a follower keeps it: at most this log's end. It moves back only
   * when truncation cuts below it.
   */
  updateFollowerHighWatermark(leaderHighWatermark: bigint): void {
    if (this.#role !== 'follower') return
    const hw = min(leaderHighWatermark, this.log.logEndOffset)
    if (hw > this.#highWatermark) {
      this.#highWatermark = hw
      this.watchers.wake()
    }
  }

  /** The leader's log start offset moved on: follow it, up to the high watermark (Kafka's rule). */
  async maybeIncrementLogStartOffset(leaderLogStartOffset: bigint): Promise<void> {
    if (this.#role !== 'follower') return
    const target = min(leaderLogStartOffset, this.#highWatermark)
    if (target > this.log.logStartOffset) await this.log.deleteRecordsBefore(target)
  }

  /**
   * Removes every offset from `offset` on (divergence from the leader); the cut is durable. At or
   * past the log end nothing is cut, but epoch entries starting at the log end go (as Kafka's
   * `truncateTo`): a replica that led an epoch and wrote nothing in it keeps no claim to it.
   */
  async truncateTo(offset: bigint): Promise<void> {
    if (offset >= this.log.logEndOffset) {
      this.state.hooks.onTruncateTo?.(this.log.logEndOffset)
      return
    }
    await this.log.truncateTo(offset)
    assert(this.log.logEndOffset <= offset, 'a truncation left offsets at or past its cut')
    if (this.#highWatermark > this.log.logEndOffset) this.#highWatermark = this.log.logEndOffset
    // A cut marker reopens its transaction: producer state is rebuilt from the log.
    await this.state.reloadProducers()
    this.watchers.wake()
  }

  /** Empties the log and restarts it at `offset` (the leader's log start is past this log). */
  async truncateFullyAndStartAt(offset: bigint): Promise<void> {
    await this.log.truncateFullyAndStartAt(offset)
    this.#highWatermark = offset
    this.watchers.wake()
  }

  #afterAppend(): void {
    this.lastAppendMs = this.#clock.monotonicMs()
    this.watchers.wake() // followers waiting for new bytes
    if (!this.#settings.logConfig.flushOnAck) {
      this.#maybeIncrementHighWatermark()
      return
    }
    // Durable before visible: one group-commit fsync covers every append made meanwhile.
    const flushStartMs = this.lastAppendMs
    this.log.flush().then(
      () => {
        this.#stats?.leaderFlushMs.add(this.#clock.monotonicMs() - flushStartMs)
        this.#maybeIncrementHighWatermark()
      },
      () => this.watchers.wake(), // the log is offline: waiters see KAFKA_STORAGE_ERROR
    )
  }

  /**
   * Whether the ISR has the records below `requiredOffset` (Kafka's `checkEnoughReplicasReachOffset`):
   * done with an error when this is no longer the leader or the ISR shrank below
   * `min.insync.replicas`.
   */
  checkEnoughReplicasReachOffset(requiredOffset: bigint): { done: boolean; errorCode: ErrorCode } {
    if (this.#role !== 'leader') return { done: true, errorCode: ErrorCode.NotLeaderOrFollower }
    if (this.log.offlineCause !== null) return { done: true, errorCode: ErrorCode.KafkaStorageError }
    if (this.#highWatermark < requiredOffset) return { done: false, errorCode: ErrorCode.None }
    return {
      done: true,
      errorCode:
        this.#isr.length >= this.#settings.insyncReplicasMin
          ? ErrorCode.None
          : ErrorCode.NotEnoughReplicasAfterAppend,
    }
  }

  // ---------------------------------------------------------------- produce

  /**
   * Append one producer batch (its bytes are kept; the log rewrites the base offset and epoch in
   * place). Idempotent batches are checked against producer state first: a retry of a recent batch
   * answers its original offsets, a gap or stale epoch is refused. `verificationGuard` (KIP-890,
   * given when `transaction.partition.verification.enable`): a transactional batch whose
   * transaction is not open here appends only with the guard its verification took.
   */
  appendAsLeader(
    batch: Buffer,
    requiredAcks: number,
    origin: 'client' | 'coordinator' = 'client',
    verificationGuard?: object | null,
  ): Promise<LeaderAppendResult> {
    if (this.#role !== 'leader') return Promise.resolve(this.#notLeader())
    const refused = this.#checkInsyncReplicas(requiredAcks)
    if (refused !== null) return Promise.resolve(refused)
    if (batch.length < BATCH_HEADER_BYTES) {
      return Promise.resolve({ errorCode: ErrorCode.CorruptMessage, errorMessage: 'the batch is truncated' })
    }
    const header = readBatchHeader(batch, 0)
    if (header.producerId < 0n) return this.#append(batch, null, origin)
    return this.#inProducerOrder(header.producerId, () =>
      this.#append(batch, header, origin, verificationGuard),
    )
  }

  /**
   * Append a COMMIT or ABORT marker for a transaction of this partition (the WriteTxnMarkers of
   * the transaction coordinator, Kafka's `AppendOrigin.COORDINATOR`): a control batch with the
   * producer's id and epoch, checked against producer state first (INVALID_PRODUCER_EPOCH,
   * TRANSACTION_COORDINATOR_FENCED). Producer state and `.txnindex` follow through the log's hooks.
   */
  appendTxnMarkerAsLeader(marker: MarkerInfo, requiredAcks: number): Promise<LeaderAppendResult> {
    if (this.#role !== 'leader') return Promise.resolve(this.#notLeader())
    const refused = this.#checkInsyncReplicas(requiredAcks)
    if (refused !== null) return Promise.resolve(refused)
    return this.#inProducerOrder(marker.producerId, async () => {
      if (this.#role !== 'leader') return this.#notLeader()
      const check = this.state.producers.checkMarker(marker)
      if (check.kind === 'error') return { errorCode: check.errorCode, errorMessage: check.message }
      const batch = encodeEndTxnMarkerBatch({
        marker: {
          type: marker.committed ? ControlRecordType.commit : ControlRecordType.abort,
          coordinatorEpoch: marker.coordinatorEpoch,
        },
        producerId: marker.producerId,
        producerEpoch: marker.producerEpoch,
        timestamp: BigInt(this.#clock.nowMs()),
      })
      return this.#appendToLog(batch, 'coordinator')
    })
  }

  #checkInsyncReplicas(requiredAcks: number): LeaderAppendResult | null {
    if (requiredAcks !== -1 || this.#isr.length >= this.#settings.insyncReplicasMin) return null
    return {
      errorCode: ErrorCode.NotEnoughReplicas,
      errorMessage: `The size of the current ISR ${this.#isr.length} is insufficient to satisfy the min.isr requirement of ${this.#settings.insyncReplicasMin} for partition ${this.topic}-${this.partition}`,
    }
  }

  /** One producer's appends are checked and appended in turn, so two never pass the same check. */
  #inProducerOrder(pid: bigint, append: () => Promise<LeaderAppendResult>): Promise<LeaderAppendResult> {
    this.#producerTails ??= new Map()
    const tails = this.#producerTails
    const previous = tails.get(pid) ?? Promise.resolve()
    const run = previous.then(append)
    const tail = run.then(
      () => undefined,
      () => undefined,
    )
    tails.set(pid, tail)
    void tail.then(() => {
      if (tails.get(pid) === tail) tails.delete(pid)
    })
    return run
  }

  #notLeader(): LeaderAppendResult {
    return {
      errorCode: ErrorCode.NotLeaderOrFollower,
      errorMessage: `This server is not the leader for partition ${this.topic}-${this.partition}`,
    }
  }

  async #append(
    batch: Buffer,
    producer: BatchHeader | null,
    origin: 'client' | 'coordinator',
    verificationGuard?: object | null,
  ): Promise<LeaderAppendResult> {
    if (this.#role !== 'leader') return this.#notLeader()
    if (producer !== null) {
      const check = this.state.producers.check(producerInfo(producer), origin, verificationGuard)
      if (check.kind === 'error') return { errorCode: check.errorCode, errorMessage: check.message }
      if (check.kind === 'duplicate') {
        return {
          errorCode: ErrorCode.None,
          firstOffset: check.batch.firstOffset,
          lastOffset: check.batch.lastOffset,
          logAppendTimeMs: Number(check.batch.timestamp),
          logStartOffset: this.log.logStartOffset,
          duplicate: true,
        }
      }
    }
    return this.#appendToLog(batch, origin)
  }

  async #appendToLog(batch: Buffer, origin: 'client' | 'coordinator'): Promise<LeaderAppendResult> {
    let r: Awaited<ReturnType<PartitionLog['append']>>
    try {
      r = await this.log.append(batch, { origin, leaderEpoch: this.#leaderEpoch })
    } catch (e) {
      if (!(e instanceof LogOfflineError)) throw e
      if (this.role === 'stopped') return this.#notLeader()
      return { errorCode: ErrorCode.KafkaStorageError, errorMessage: e.message }
    }
    if (r.errorCode !== ErrorCode.None) return { errorCode: r.errorCode, errorMessage: r.errorMessage }
    this.#afterAppend()
    return {
      errorCode: ErrorCode.None,
      firstOffset: r.baseOffset,
      lastOffset: r.lastOffset,
      logAppendTimeMs: r.logAppendTimeMs,
      logStartOffset: r.logStartOffset,
      duplicate: false,
    }
  }

  // ---------------------------------------------------------------- reads

  /** Kafka's `checkCurrentLeaderEpoch` and the leader requirement. */
  #checkEpochAndRole(currentLeaderEpoch: number, requireLeader: boolean): ErrorCode {
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
    const offsetMax =
      p.upTo === 'logEndOffset'
        ? this.log.logEndOffset
        : p.upTo === 'lastStableOffset'
          ? lastStableOffset
          : highWatermark
    let r: Awaited<ReturnType<PartitionLog['read']>>
    try {
      r = await this.log.read(p.fetchOffset, p.maxBytes, {
        offsetMax,
        atLeastOneBatch: p.atLeastOneBatch,
        ...(p.buffers === undefined ? {} : { buffers: p.buffers }),
      })
    } catch (e) {
      if (!(e instanceof LogOfflineError)) throw e
      return readError(this.role === 'stopped' ? ErrorCode.NotLeaderOrFollower : ErrorCode.KafkaStorageError)
    }
    if (r.errorCode !== ErrorCode.None) return readError(r.errorCode)
    const out = { ...base, errorCode: ErrorCode.None, records: r.records, divergingEpoch: null }
    if (p.upTo !== 'lastStableOffset' || r.records.length === 0) return out
    try {
      const abortedTransactions = await this.log.collectAbortedTxns(p.fetchOffset, endOfBatches(r.records))
      return { ...out, abortedTransactions }
    } catch (e) {
      p.buffers?.release(r.records)
      if (!(e instanceof LogOfflineError)) throw e
      return readError(this.role === 'stopped' ? ErrorCode.NotLeaderOrFollower : ErrorCode.KafkaStorageError)
    }
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
   * OffsetForLeaderEpoch (Kafka's `lastOffsetForLeaderEpoch`): the largest epoch at or below
   * `leaderEpoch` and the offset where it ended here; unknown answers (-1, -1) without an error.
   */
  lastOffsetForLeaderEpoch(
    currentLeaderEpoch: number,
    leaderEpoch: number,
    fetchOnlyFromLeader: boolean,
  ): { errorCode: ErrorCode; leaderEpoch: number; endOffset: bigint } {
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
  async deleteRecordsOnLeader(offset: bigint): Promise<{ errorCode: ErrorCode; lowWatermark: bigint }> {
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
