/**
 * The classic group protocol of one `__consumer_offsets` partition, pure: Kafka's
 * GroupMetadataManager (classic groups) and OffsetMetadataManager as a state machine. Requests,
 * timer firings and write completions go in; replies, timers to set or cancel and records to write
 * come out through `takeEffects()`. It never reads a clock for deadlines, sets a timer, awaits or
 * touches a disk: the GroupCoordinator shell does, and persists what it is told to.
 */
import type { Random } from '../io/index.ts'
import { assert, type GroupId, type TopicName } from '../model/index.ts'
import {
  type DescribeGroupsResponseData,
  ErrorCode,
  type ListGroupsResponseData,
  type OffsetCommitResponseData,
  type OffsetDeleteResponseData,
  type OffsetFetchResponseData,
} from '../protocol/index.ts'
import type {
  CoordinatorRecord,
  OffsetAndMetadata,
  PersistedGroup,
  TransactionalProducer,
} from './coordinator-records.ts'
import {
  ClassicGroup,
  EMPTY_ASSIGNMENT,
  GroupMember,
  GroupState,
  type MemberProtocol,
  type Waiter,
} from './group.ts'

/** The group settings, by Kafka's keys (see `groupConfigFrom`). */
export interface GroupConfig {
  /** group.initial.rebalance.delay.ms */
  readonly initialRebalanceDelayMs: number
  /** group.min.session.timeout.ms */
  readonly sessionTimeoutMsMin: number
  /** group.max.session.timeout.ms */
  readonly sessionTimeoutMsMax: number
  /** group.max.size */
  readonly groupSizeMax: number
  /** How long a new member's JoinGroup may wait in a rebalance (Kafka: 5 minutes, fixed). */
  readonly newMemberJoinTimeoutMs: number
  /** offset.metadata.max.bytes (Kafka compares string length) */
  readonly offsetMetadataBytesMax: number
  /** offsets.retention.minutes, in ms */
  readonly offsetsRetentionMs: number
}

/** Kafka's GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS. */
export const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

export const DEFAULT_GROUP_CONFIG: GroupConfig = {
  initialRebalanceDelayMs: 3000,
  sessionTimeoutMsMin: 6000,
  sessionTimeoutMsMax: 1_800_000,
  groupSizeMax: 2_147_483_647,
  newMemberJoinTimeoutMs: NEW_MEMBER_JOIN_TIMEOUT_MS,
  offsetMetadataBytesMax: 4096,
  offsetsRetentionMs: 7 * 24 * 60 * 60 * 1000,
}

/** Wall-clock time, for commit timestamps, state timestamps and offset expiry (never deadlines). */
export interface WallClock {
  nowMs(): number
}

export interface JoinInput {
  readonly groupId: GroupId
  /** Empty for a member joining for the first time. */
  readonly memberId: string
  readonly groupInstanceId: string | null
  readonly protocolType: string
  readonly protocols: readonly MemberProtocol[]
  readonly sessionTimeoutMs: number
  /** JoinGroup v0 has none: pass the session timeout. */
  readonly rebalanceTimeoutMs: number
  readonly clientId: string
  /** As Kafka shows it: `/127.0.0.1`. */
  readonly clientHost: string
  readonly apiVersion: number
  readonly reason: string | null
}

export interface JoinResult {
  readonly errorCode: ErrorCode
  readonly generationId: number
  readonly protocolType: string | null
  readonly protocolName: string | null
  readonly leader: string
  readonly skipAssignment: boolean
  readonly memberId: string
  readonly members: readonly { memberId: string; groupInstanceId: string | null; metadata: Buffer }[]
}

export interface SyncInput {
  readonly groupId: GroupId
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
  readonly protocolType: string | null
  readonly protocolName: string | null
  readonly assignments: readonly { memberId: string; assignment: Buffer }[]
  readonly apiVersion: number
}

export interface SyncResult {
  readonly errorCode: ErrorCode
  readonly protocolType: string | null
  readonly protocolName: string | null
  readonly assignment: Buffer
}

export interface HeartbeatInput {
  readonly groupId: GroupId
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
}

export interface LeaveInput {
  readonly groupId: GroupId
  readonly members: readonly { memberId: string; groupInstanceId: string | null; reason: string | null }[]
}

export interface LeaveResult {
  readonly errorCode: ErrorCode
  readonly members: readonly { memberId: string; groupInstanceId: string | null; errorCode: ErrorCode }[]
}

export interface CommitInput {
  readonly groupId: GroupId
  /** -1 from admin clients and consumers without group management. */
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
  /** OffsetCommit v2-4; -1 for the broker's retention. */
  readonly retentionTimeMs: number
  readonly apiVersion: number
  readonly topics: readonly {
    name: TopicName
    partitions: readonly {
      partitionIndex: number
      committedOffset: bigint
      committedLeaderEpoch: number
      /** OffsetCommit v1 only; -1 for now. */
      commitTimestamp: bigint
      committedMetadata: string | null
    }[]
  }[]
}

export type CommitResult = readonly OffsetCommitResponseData.OffsetCommitResponseTopicIn[]

/**
 * TxnOffsetCommit: the offsets of a transaction, pending until its marker. The generation, member
 * and instance id come from v3+ (KIP-447); older versions send -1, '' and null.
 */
export interface TxnCommitInput {
  readonly groupId: GroupId
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
  /** As OffsetCommit's; `commitTimestamp` is -1 (the coordinator stamps it). */
  readonly topics: CommitInput['topics']
  /** KIP-890's guard for the write (TransactionalProducer.verificationGuard); undefined: none. */
  readonly verificationGuard?: object | null
}

export interface DeleteOffsetsInput {
  readonly groupId: GroupId
  readonly topics: readonly { name: TopicName; partitions: readonly { partitionIndex: number }[] }[]
}

/** OffsetFetch of one group, in the v8+ shape (handlers reshape it for older versions). */
export interface OffsetFetchGroupResult {
  readonly groupId: GroupId
  readonly errorCode: ErrorCode
  readonly topics: OffsetFetchResponseData.OffsetFetchResponseTopicsIn[]
}

export type DeleteOffsetsResult = OffsetDeleteResponseData.OffsetDeleteResponseIn

export type Reply =
  | { readonly kind: 'join'; readonly token: number; readonly result: JoinResult }
  | { readonly kind: 'sync'; readonly token: number; readonly result: SyncResult }
  | { readonly kind: 'commit'; readonly token: number; readonly result: CommitResult }
  | { readonly kind: 'txnCommit'; readonly token: number; readonly result: CommitResult }
  /** A transaction marker is applied. */
  | { readonly kind: 'txnCompleted'; readonly token: number }
  /** OffsetFetch with requireStable, answered once the writes before it are done. */
  | { readonly kind: 'fetch'; readonly token: number; readonly result: OffsetFetchGroupResult }
  | {
      readonly kind: 'deleteGroups'
      readonly token: number
      readonly result: readonly { groupId: GroupId; errorCode: ErrorCode }[]
    }
  | { readonly kind: 'deleteOffsets'; readonly token: number; readonly result: DeleteOffsetsResult }

/** What the shell must do, in order. */
export type Effect =
  | { readonly kind: 'reply'; readonly reply: Reply }
  /** Arm (or re-arm: replaces a pending timer of the same key) a timer; call `fire(key)` when due. */
  | { readonly kind: 'schedule'; readonly key: string; readonly delayMs: number }
  | { readonly kind: 'cancel'; readonly key: string }
  /**
   * Append these records as one batch (transactional, with the producer's id and epoch, when
   * `transaction` is set); call `onWriteComplete(writeId, errorCode, baseOffset)` once known.
   */
  | {
      readonly kind: 'write'
      readonly writeId: number
      readonly records: readonly CoordinatorRecord[]
      readonly transaction: TransactionalProducer | null
    }

export type LogLevel = 'info' | 'warn' | 'error'

export interface GroupStateMachineOptions {
  readonly config: GroupConfig
  readonly clock: WallClock
  /** Draws member ids. */
  readonly random: Random
  readonly log?: (level: LogLevel, message: string) => void
}

type TimerTask =
  | { readonly kind: 'heartbeat'; readonly groupId: GroupId; readonly memberId: string }
  | { readonly kind: 'join'; readonly groupId: GroupId }
  | {
      readonly kind: 'initialDelay'
      readonly groupId: GroupId
      readonly delayMs: number
      readonly remainingMs: number
    }
  | { readonly kind: 'sync'; readonly groupId: GroupId; readonly generationId: number }

interface OffsetKey {
  readonly groupId: GroupId
  readonly topic: TopicName
  readonly partition: number
}

/**
 * An offset as held: with the log offset of its record, so that a transaction's offset committed
 * after a newer plain commit does not replace it (Kafka keeps the most recent record).
 */
type StoredOffset = OffsetAndMetadata & { readonly recordOffset: bigint }

/** Offsets by group, topic and partition. */
class OffsetStore {
  readonly byGroup = new Map<GroupId, Map<TopicName, Map<number, StoredOffset>>>()

  get(k: OffsetKey): StoredOffset | undefined {
    return this.byGroup.get(k.groupId)?.get(k.topic)?.get(k.partition)
  }

  put(k: OffsetKey, value: StoredOffset): void {
    let byTopic = this.byGroup.get(k.groupId)
    if (byTopic === undefined) {
      byTopic = new Map()
      this.byGroup.set(k.groupId, byTopic)
    }
    let parts = byTopic.get(k.topic)
    if (parts === undefined) {
      parts = new Map()
      byTopic.set(k.topic, parts)
    }
    parts.set(k.partition, value)
  }

  remove(k: OffsetKey): void {
    const byTopic = this.byGroup.get(k.groupId)
    const parts = byTopic?.get(k.topic)
    parts?.delete(k.partition)
    if (parts?.size === 0) byTopic!.delete(k.topic)
    if (byTopic?.size === 0) this.byGroup.delete(k.groupId)
  }

  *entries(): Generator<[OffsetKey, StoredOffset]> {
    for (const [groupId, byTopic] of this.byGroup) {
      for (const [topic, parts] of byTopic) {
        for (const [partition, value] of parts) yield [{ groupId, topic, partition }, value]
      }
    }
  }
}

/** What to do once a write completes; offsets and tombstones apply then, in write order. */
type PendingWrite =
  | { readonly kind: 'groupMetadata'; readonly groupId: GroupId }
  | {
      readonly kind: 'syncAssignment'
      readonly groupId: GroupId
      readonly generationId: number
      readonly memberId: string
      readonly assignment: ReadonlyMap<string, Buffer>
    }
  | {
      readonly kind: 'staticRejoin'
      readonly groupId: GroupId
      readonly groupInstanceId: string
      readonly oldMemberId: string
      readonly newMemberId: string
      readonly old: {
        protocols: readonly MemberProtocol[]
        rebalanceTimeoutMs: number
        sessionTimeoutMs: number
      }
      readonly previousLeader: string | null
      readonly waiter: Waiter
    }
  | {
      readonly kind: 'commit'
      readonly token: number
      readonly offsets: readonly (OffsetKey & { value: OffsetAndMetadata })[]
      readonly result: CommitResult
    }
  | {
      readonly kind: 'txnCommit'
      readonly token: number
      readonly producerId: bigint
      readonly offsets: readonly (OffsetKey & { value: OffsetAndMetadata })[]
      readonly result: CommitResult
    }
  /** Not a write: applied in order after the writes issued before it. */
  | {
      readonly kind: 'marker'
      readonly token: number
      readonly producerId: bigint
      readonly committed: boolean
    }
  | {
      readonly kind: 'stableFetch'
      readonly token: number
      readonly groupId: GroupId
      readonly topics: readonly { name: TopicName; partitionIndexes: readonly number[] }[] | null
    }
  | {
      readonly kind: 'tombstones'
      readonly offsets: readonly OffsetKey[]
      readonly reply:
        | { kind: 'deleteGroups'; token: number; result: { groupId: GroupId; errorCode: ErrorCode }[] }
        | { kind: 'deleteOffsets'; token: number; result: DeleteOffsetsResult }
        | null
    }

const UNKNOWN_MEMBER_ID = ''

/**
 * AclOperation bits a group supports, as Kafka 4.0 reports them: READ 3, DELETE 6, DESCRIBE 8, and
 * DESCRIBE_CONFIGS 10 and ALTER_CONFIGS 11 (group configs, KIP-848).
 */
export const GROUP_AUTHORIZED_OPERATIONS = [3, 6, 8, 10, 11].reduce((bits, op) => bits | (1 << op), 0)
/** DescribeGroups' "not requested" value. */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648

/** Kafka's appendGroupMetadataErrorToResponseError: what a failed write means to a client. */
export function writeErrorToResponseError(errorCode: ErrorCode): ErrorCode {
  switch (errorCode) {
    case ErrorCode.UnknownTopicOrPartition:
    case ErrorCode.NotEnoughReplicas:
    case ErrorCode.NotEnoughReplicasAfterAppend:
    case ErrorCode.RequestTimedOut:
      return ErrorCode.CoordinatorNotAvailable
    case ErrorCode.NotLeaderOrFollower:
    case ErrorCode.KafkaStorageError:
      return ErrorCode.NotCoordinator
    case ErrorCode.MessageTooLarge:
    case ErrorCode.RecordListTooLarge:
    case ErrorCode.InvalidFetchSize:
      return ErrorCode.UnknownServerError
    default:
      return errorCode
  }
}

function joinError(errorCode: ErrorCode, memberId: string): JoinResult {
  return {
    errorCode,
    generationId: -1,
    protocolType: null,
    protocolName: null,
    leader: '',
    skipAssignment: false,
    memberId,
    members: [],
  }
}

function syncError(errorCode: ErrorCode): SyncResult {
  return { errorCode, protocolType: null, protocolName: null, assignment: EMPTY_ASSIGNMENT }
}

function timerKey(task: TimerTask): string {
  switch (task.kind) {
    case 'heartbeat':
      return heartbeatKey(task.groupId, task.memberId)
    case 'join':
    case 'initialDelay':
      return joinKey(task.groupId)
    case 'sync':
      return syncKey(task.groupId)
  }
}

export function heartbeatKey(groupId: GroupId, memberId: string): string {
  return `heartbeat ${JSON.stringify([groupId, memberId])}`
}

export function joinKey(groupId: GroupId): string {
  return `join ${JSON.stringify(groupId)}`
}

export function syncKey(groupId: GroupId): string {
  return `sync ${JSON.stringify(groupId)}`
}

/** java.util.UUID.randomUUID().toString(), from the Random port. */
function javaRandomUuid(random: Random): string {
  const b = Buffer.alloc(16)
  for (let i = 0; i < 16; i += 4) b.writeUInt32BE(random.nextU32() >>> 0, i)
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

export class GroupStateMachine {
  readonly config: GroupConfig
  readonly #clock: WallClock
  readonly #random: Random
  readonly #log: (level: LogLevel, message: string) => void
  readonly #groups = new Map<string, ClassicGroup>()
  /** Committed offsets: what the log holds, applied in log order. */
  readonly #offsets = new OffsetStore()
  /**
   * Offsets of open transactions by producer id (Kafka's pendingTransactionalOffsets): written,
   * not visible to OffsetFetch until the transaction's COMMIT marker, dropped by its ABORT.
   */
  readonly #pendingTxn = new Map<bigint, OffsetStore>()
  /** The producer ids with pending offsets of each group (Kafka's openTransactionsByGroup). */
  readonly #openTxnByGroup = new Map<GroupId, Set<bigint>>()
  readonly #timers = new Map<string, TimerTask>()
  /**
   * Writes in flight, in the order they were issued (and so appended), and the markers and stable
   * fetches queued behind them (their result already set).
   */
  readonly #writes = new Map<
    number,
    { pending: PendingWrite; result: ErrorCode | null; baseOffset: bigint }
  >()
  #nextWriteId = 1
  #effects: Effect[] = []

  constructor(options: GroupStateMachineOptions) {
    this.config = options.config
    this.#clock = options.clock
    this.#random = options.random
    this.#log = options.log ?? (() => {})
  }

  /** The effects produced since the last call, in order; the shell carries them out. */
  takeEffects(): Effect[] {
    const out = this.#effects
    this.#effects = []
    return out
  }

  // ------------------------------------------------------------------------------- queries

  group(groupId: string): ClassicGroup | undefined {
    return this.#groups.get(groupId)
  }

  get groupCount(): number {
    return this.#groups.size
  }

  get writesInFlight(): number {
    return this.#writes.size
  }

  /** The committed offset of a partition, if any. */
  committedOffset(groupId: GroupId, topic: TopicName, partition: number): OffsetAndMetadata | undefined {
    return this.#offsets.get({ groupId, topic, partition })
  }

  /** Every committed offset (the lag metrics), without the pending ones of open transactions. */
  *committedOffsets(): Generator<OffsetKey & { readonly offset: bigint }> {
    for (const [k, v] of this.#offsets.entries()) yield { ...k, offset: v.offset }
  }

  /** The offset a producer's open transaction holds for a partition, if any. */
  pendingOffset(
    producerId: bigint,
    groupId: GroupId,
    topic: TopicName,
    partition: number,
  ): OffsetAndMetadata | undefined {
    return this.#pendingTxn.get(producerId)?.get({ groupId, topic, partition })
  }

  /** Pending timer keys (tests and metrics). */
  timerKeys(): string[] {
    return [...this.#timers.keys()]
  }

  // ------------------------------------------------------------------------------- JoinGroup

  /** JoinGroup; the answer comes as a `join` reply for `token`, now or when the join phase ends. */
  joinGroup(token: number, input: JoinInput): void {
    const waiter: Waiter = { token, apiVersion: input.apiVersion }
    const reply = (result: JoinResult) => this.#reply({ kind: 'join', token, result })
    const { groupId, memberId } = input
    if (groupId === '') {
      reply(joinError(ErrorCode.InvalidGroupId, memberId))
      return
    }
    if (
      input.sessionTimeoutMs < this.config.sessionTimeoutMsMin ||
      input.sessionTimeoutMs > this.config.sessionTimeoutMsMax
    ) {
      reply(joinError(ErrorCode.InvalidSessionTimeout, memberId))
      return
    }
    const isUnknownMember = memberId === UNKNOWN_MEMBER_ID
    let group = this.#groups.get(groupId)
    const isNewGroup = group === undefined
    if (group === undefined) {
      // A known member id for a group that does not exist: it was deleted or moved.
      if (!isUnknownMember) {
        reply(joinError(ErrorCode.UnknownMemberId, memberId))
        return
      }
      group = new ClassicGroup(groupId, this.#clock.nowMs())
      this.#groups.set(groupId, group)
    }
    if (!this.#acceptJoiningMember(group, memberId)) {
      this.#removeMemberAnsweringWaiters(group, memberId)
      reply(joinError(ErrorCode.GroupMaxSizeReached, UNKNOWN_MEMBER_ID))
    } else if (isUnknownMember) {
      this.#joinNewMember(group, input, waiter)
    } else {
      this.#joinExistingMember(group, input, waiter)
    }
    if (isNewGroup && group.is(GroupState.Empty) && group.size === 0 && group.pendingJoinMembers.size === 0) {
      // A failed first JoinGroup leaves no trace of a group it would have created.
      this.#groups.delete(groupId)
    }
  }

  /** Kafka's acceptJoiningMember: group.max.size, counted so that the last to rejoin are refused. */
  #acceptJoiningMember(group: ClassicGroup, memberId: string): boolean {
    switch (group.state) {
      case GroupState.Empty:
      case GroupState.Dead:
        return true
      case GroupState.PreparingRebalance:
        return (
          (group.hasMember(memberId) && group.member(memberId).awaitingJoin !== null) ||
          group.numAwaitingJoin < this.config.groupSizeMax
        )
      case GroupState.CompletingRebalance:
      case GroupState.Stable:
        return group.hasMember(memberId) || group.size < this.config.groupSizeMax
    }
  }

  #joinNewMember(group: ClassicGroup, input: JoinInput, waiter: Waiter): void {
    const reply = (result: JoinResult) => this.#reply({ kind: 'join', token: waiter.token, result })
    if (group.is(GroupState.Dead)) {
      reply(joinError(ErrorCode.CoordinatorNotAvailable, UNKNOWN_MEMBER_ID))
      return
    }
    if (!group.supportsProtocols(input.protocolType, input.protocols)) {
      reply(joinError(ErrorCode.InconsistentGroupProtocol, UNKNOWN_MEMBER_ID))
      return
    }
    const newMemberId = `${input.groupInstanceId ?? input.clientId}-${javaRandomUuid(this.#random)}`
    if (input.groupInstanceId !== null) {
      const existing = group.staticMemberId(input.groupInstanceId)
      if (existing !== null) {
        this.#log(
          'info',
          `static member ${input.groupInstanceId} of group ${group.groupId} rejoins with a new member id ${newMemberId} (was ${existing})`,
        )
        this.#updateStaticMemberThenRebalanceOrCompleteJoin(group, input, existing, newMemberId, waiter)
        return
      }
      this.#addMemberThenRebalanceOrCompleteJoin(group, input, newMemberId, waiter)
      return
    }
    if (input.apiVersion >= 4) {
      // KIP-394: hand out a member id and expect the member back with it.
      group.pendingJoinMembers.add(newMemberId)
      this.#schedule(
        { kind: 'heartbeat', groupId: group.groupId, memberId: newMemberId },
        input.sessionTimeoutMs,
      )
      reply(joinError(ErrorCode.MemberIdRequired, newMemberId))
      return
    }
    this.#addMemberThenRebalanceOrCompleteJoin(group, input, newMemberId, waiter)
  }

  #joinExistingMember(group: ClassicGroup, input: JoinInput, waiter: Waiter): void {
    const { memberId } = input
    const reply = (result: JoinResult) => this.#reply({ kind: 'join', token: waiter.token, result })
    if (group.is(GroupState.Dead)) {
      reply(joinError(ErrorCode.CoordinatorNotAvailable, memberId))
      return
    }
    if (!group.supportsProtocols(input.protocolType, input.protocols)) {
      reply(joinError(ErrorCode.InconsistentGroupProtocol, memberId))
      return
    }
    if (group.isPendingMember(memberId)) {
      if (input.groupInstanceId !== null) {
        // Only dynamic members are made pending; a static id here is a confused client.
        reply(joinError(ErrorCode.FencedInstanceId, memberId))
        return
      }
      this.#addMemberThenRebalanceOrCompleteJoin(group, input, memberId, waiter)
      return
    }
    const invalid = this.#validateMember(group, memberId, input.groupInstanceId)
    if (invalid !== ErrorCode.None) {
      reply(joinError(invalid, memberId))
      return
    }
    const member = group.member(memberId)
    const update = () => this.#updateMemberThenRebalanceOrCompleteJoin(group, member, input, waiter)
    switch (group.state) {
      case GroupState.PreparingRebalance:
        update()
        return
      case GroupState.CompletingRebalance:
        if (member.matches(input.protocols)) {
          // The member missed its JoinGroup answer: give it the current generation again.
          reply(this.#joinResult(group, member.memberId, group.isLeader(memberId), false))
          return
        }
        update()
        return
      case GroupState.Stable:
        // The leader rejoining forces a rebalance (it saw a metadata change); so does new metadata.
        if (group.isLeader(memberId) || !member.matches(input.protocols)) {
          update()
          return
        }
        reply(this.#joinResult(group, member.memberId, false, false))
        return
      default:
        // Empty with a known member: the member must reset and join again.
        reply(joinError(ErrorCode.UnknownMemberId, memberId))
        return
    }
  }

  #joinResult(
    group: ClassicGroup,
    memberId: string,
    withMembers: boolean,
    skipAssignment: boolean,
  ): JoinResult {
    return {
      errorCode: ErrorCode.None,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? '',
      skipAssignment,
      memberId,
      members: withMembers ? this.#currentMembers(group) : [],
    }
  }

  #currentMembers(group: ClassicGroup): JoinResult['members'] {
    const protocol = group.protocolName
    assert(protocol !== null, `group ${group.groupId} has no protocol`)
    return [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: m.metadataFor(protocol),
    }))
  }

  /** Kafka's ClassicGroup.validateMember: the member (and its static identity) is current. */
  #validateMember(group: ClassicGroup, memberId: string, groupInstanceId: string | null): ErrorCode {
    if (groupInstanceId !== null) {
      const existing = group.staticMemberId(groupInstanceId)
      if (existing === null) return ErrorCode.UnknownMemberId
      if (existing !== memberId) {
        this.#log(
          'info',
          `member ${memberId} of static member ${groupInstanceId} in group ${group.groupId} is fenced by ${existing}`,
        )
        return ErrorCode.FencedInstanceId
      }
    }
    return group.hasMember(memberId) ? ErrorCode.None : ErrorCode.UnknownMemberId
  }

  #addMemberThenRebalanceOrCompleteJoin(
    group: ClassicGroup,
    input: JoinInput,
    memberId: string,
    waiter: Waiter,
  ): void {
    const member = new GroupMember({
      memberId,
      groupInstanceId: input.groupInstanceId,
      clientId: input.clientId,
      clientHost: input.clientHost,
      rebalanceTimeoutMs: input.rebalanceTimeoutMs,
      sessionTimeoutMs: input.sessionTimeoutMs,
      protocolType: input.protocolType,
      protocols: input.protocols,
    })
    member.isNew = true
    // A member joining during the initial delay extends it.
    if (group.is(GroupState.PreparingRebalance) && group.previousState === GroupState.Empty) {
      group.newMemberAdded = true
    }
    group.add(member, waiter)
    // New members cannot heartbeat while their JoinGroup waits; expire a JoinGroup that waits too long.
    this.#schedule(
      { kind: 'heartbeat', groupId: group.groupId, memberId },
      this.config.newMemberJoinTimeoutMs,
    )
    this.#maybePrepareRebalanceOrCompleteJoin(
      group,
      `adding new member ${memberId} with group instance id ${input.groupInstanceId}; client reason: ${input.reason ?? 'not provided'}`,
    )
  }

  #updateMemberThenRebalanceOrCompleteJoin(
    group: ClassicGroup,
    member: GroupMember,
    input: JoinInput,
    waiter: Waiter,
  ): void {
    if (member.awaitingJoin !== null && member.awaitingJoin.token !== waiter.token) {
      // A second JoinGroup while one waits: the newer one takes its place.
      this.#reply({
        kind: 'join',
        token: member.awaitingJoin.token,
        result: joinError(ErrorCode.RebalanceInProgress, member.memberId),
      })
      group.setJoinWaiter(member, null)
    }
    group.updateMember(
      member,
      {
        protocols: input.protocols,
        rebalanceTimeoutMs: input.rebalanceTimeoutMs,
        sessionTimeoutMs: input.sessionTimeoutMs,
      },
      waiter,
    )
    this.#maybePrepareRebalanceOrCompleteJoin(
      group,
      `member ${member.memberId} joins in ${group.state}; client reason: ${input.reason ?? 'not provided'}`,
    )
  }

  /** A static member came back with no member id: it takes over its old identity. */
  #updateStaticMemberThenRebalanceOrCompleteJoin(
    group: ClassicGroup,
    input: JoinInput,
    oldMemberId: string,
    newMemberId: string,
    waiter: Waiter,
  ): void {
    const groupInstanceId = input.groupInstanceId!
    const previousLeader = group.leaderId
    const oldMember = group.member(oldMemberId)
    // Fence whoever still waits under the old member id.
    this.#answerWaiters(group, oldMember, ErrorCode.FencedInstanceId, ErrorCode.FencedInstanceId)
    const member = group.replaceStaticMember(groupInstanceId, oldMemberId, newMemberId)
    this.#cancel(heartbeatKey(group.groupId, oldMemberId))
    this.#rescheduleHeartbeat(group, member)
    const old = {
      protocols: member.protocols,
      rebalanceTimeoutMs: member.rebalanceTimeoutMs,
      sessionTimeoutMs: member.sessionTimeoutMs,
    }
    group.updateMember(
      member,
      {
        protocols: input.protocols,
        rebalanceTimeoutMs: input.rebalanceTimeoutMs,
        sessionTimeoutMs: input.sessionTimeoutMs,
      },
      waiter,
    )
    switch (group.state) {
      case GroupState.Stable: {
        // No rebalance when the selected protocol stays: persist the new member id, then answer.
        if (group.protocolName === group.selectProtocol()) {
          this.#log(
            'info',
            `static member ${groupInstanceId} of group ${group.groupId} rejoins without a rebalance`,
          )
          const assignment = new Map([...group.members.values()].map((m) => [m.memberId, m.assignment]))
          this.#write([{ kind: 'group', groupId: group.groupId, value: group.toPersisted(assignment) }], {
            kind: 'staticRejoin',
            groupId: group.groupId,
            groupInstanceId,
            oldMemberId,
            newMemberId,
            old,
            previousLeader,
            waiter,
          })
          return
        }
        this.#maybePrepareRebalanceOrCompleteJoin(
          group,
          `static member ${groupInstanceId} rejoins with a change of protocol`,
        )
        return
      }
      case GroupState.CompletingRebalance:
        // The leader may have been given the old member id: assign again.
        this.#prepareRebalance(group, `static member ${groupInstanceId} rejoins during CompletingRebalance`)
        return
      case GroupState.PreparingRebalance:
        this.#maybeCompleteJoinPhase(group)
        return
      default:
        assert(false, `group ${group.groupId} in ${group.state} cannot have static member ${groupInstanceId}`)
    }
  }

  #maybePrepareRebalanceOrCompleteJoin(group: ClassicGroup, reason: string): void {
    if (group.canRebalance()) this.#prepareRebalance(group, reason)
    else this.#maybeCompleteJoinPhase(group)
  }

  #maybeCompleteJoinPhase(group: ClassicGroup): void {
    // During the initial delay the delay timer completes the phase, not the last member to join.
    if (
      group.is(GroupState.PreparingRebalance) &&
      group.hasAllMembersJoined() &&
      group.previousState !== GroupState.Empty
    ) {
      this.#completeJoin(group)
    }
  }

  #prepareRebalance(group: ClassicGroup, reason: string): void {
    if (group.is(GroupState.CompletingRebalance)) {
      this.#resetAndPropagateAssignmentWithError(group, ErrorCode.RebalanceInProgress)
    }
    group.pendingSyncMembers.clear()
    this.#cancel(syncKey(group.groupId))
    const isInitialRebalance = group.is(GroupState.Empty)
    if (isInitialRebalance) {
      // group.initial.rebalance.delay.ms: give more members a chance to join a new group.
      const delayMs = this.config.initialRebalanceDelayMs
      const remainingMs = Math.max(group.rebalanceTimeoutMs() - delayMs, 0)
      this.#schedule({ kind: 'initialDelay', groupId: group.groupId, delayMs, remainingMs }, delayMs)
    }
    this.#log(
      'info',
      `preparing to rebalance group ${group.groupId} in state ${group.state} with old generation ${group.generationId} (reason: ${reason})`,
    )
    group.transitionTo(GroupState.PreparingRebalance, this.#clock.nowMs())
    if (isInitialRebalance) return
    if (group.hasAllMembersJoined()) this.#completeJoin(group)
    else this.#schedule({ kind: 'join', groupId: group.groupId }, group.rebalanceTimeoutMs())
  }

  #tryCompleteInitialRebalanceElseSchedule(group: ClassicGroup, delayMs: number, remainingMs: number): void {
    if (group.newMemberAdded && remainingMs !== 0) {
      group.newMemberAdded = false
      const newDelayMs = Math.min(this.config.initialRebalanceDelayMs, remainingMs)
      const newRemainingMs = Math.max(remainingMs - delayMs, 0)
      this.#schedule(
        { kind: 'initialDelay', groupId: group.groupId, delayMs: newDelayMs, remainingMs: newRemainingMs },
        newDelayMs,
      )
      return
    }
    this.#completeJoin(group)
  }

  /** Kafka's completeClassicGroupJoin: the join phase ends (all joined, or the rebalance timeout). */
  #completeJoin(group: ClassicGroup): void {
    this.#cancel(joinKey(group.groupId))
    const now = this.#clock.nowMs()
    for (const m of group.notYetRejoinedMembers()) {
      if (m.isStatic) continue
      this.#answerWaiters(group, m, ErrorCode.UnknownMemberId, ErrorCode.RebalanceInProgress)
      group.remove(m.memberId)
      this.#cancel(heartbeatKey(group.groupId, m.memberId))
      this.#log('info', `group ${group.groupId} removed dynamic member ${m.memberId}: it did not rejoin`)
    }
    if (group.is(GroupState.Dead)) return
    if (!this.#maybeElectNewJoinedLeader(group) && group.size > 0) {
      // Nobody rejoined (only static members that have not come back): wait another round.
      this.#log('error', `group ${group.groupId} could not complete rebalance because no members rejoined`)
      this.#schedule({ kind: 'join', groupId: group.groupId }, group.rebalanceTimeoutMs())
      return
    }
    group.initNextGeneration(now)
    if (group.is(GroupState.Empty)) {
      this.#log('info', `group ${group.groupId} with generation ${group.generationId} is now empty`)
      this.#write([{ kind: 'group', groupId: group.groupId, value: group.toPersisted(new Map()) }], {
        kind: 'groupMetadata',
        groupId: group.groupId,
      })
      return
    }
    this.#log(
      'info',
      `stabilized group ${group.groupId} generation ${group.generationId} with ${group.size} members`,
    )
    for (const m of group.members.values()) {
      const waiter = m.awaitingJoin
      if (waiter !== null) {
        group.setJoinWaiter(m, null)
        this.#reply({
          kind: 'join',
          token: waiter.token,
          result: this.#joinResult(group, m.memberId, group.isLeader(m.memberId), false),
        })
      }
      this.#rescheduleHeartbeat(group, m)
      m.isNew = false
      group.pendingSyncMembers.add(m.memberId)
    }
    this.#schedule(
      { kind: 'sync', groupId: group.groupId, generationId: group.generationId },
      group.rebalanceTimeoutMs(),
    )
  }

  /** Kafka's maybeElectNewJoinedLeader: keep a leader that rejoined, else pick one that did. */
  #maybeElectNewJoinedLeader(group: ClassicGroup): boolean {
    if (group.leaderId === null) return false
    const leader = group.members.get(group.leaderId)
    if (leader !== undefined && leader.awaitingJoin !== null) return true
    for (const m of group.members.values()) {
      if (m.awaitingJoin !== null) {
        group.leaderId = m.memberId
        return true
      }
    }
    return false
  }

  // ------------------------------------------------------------------------------- SyncGroup

  /** SyncGroup; the answer comes as a `sync` reply for `token`. */
  syncGroup(token: number, input: SyncInput): void {
    const reply = (result: SyncResult) => this.#reply({ kind: 'sync', token, result })
    const group = this.#groups.get(input.groupId)
    if (group === undefined) {
      reply(syncError(ErrorCode.UnknownMemberId))
      return
    }
    const invalid = this.#validateSync(group, input)
    if (invalid !== ErrorCode.None) {
      reply(syncError(invalid))
      return
    }
    const member = group.member(input.memberId)
    switch (group.state) {
      case GroupState.PreparingRebalance:
        reply(syncError(ErrorCode.RebalanceInProgress))
        return
      case GroupState.CompletingRebalance: {
        if (member.awaitingSync !== null) {
          this.#reply({
            kind: 'sync',
            token: member.awaitingSync.token,
            result: syncError(ErrorCode.RebalanceInProgress),
          })
        }
        member.awaitingSync = { token, apiVersion: input.apiVersion }
        this.#removePendingSyncMember(group, member.memberId)
        if (!group.isLeader(member.memberId)) return
        // The leader's assignment: persist it, then hand every member its part.
        const assignment = new Map<string, Buffer>()
        for (const a of input.assignments) assignment.set(a.memberId, a.assignment)
        for (const m of group.members.values())
          if (!assignment.has(m.memberId)) assignment.set(m.memberId, EMPTY_ASSIGNMENT)
        this.#write([{ kind: 'group', groupId: group.groupId, value: group.toPersisted(assignment) }], {
          kind: 'syncAssignment',
          groupId: group.groupId,
          generationId: input.generationId,
          memberId: member.memberId,
          assignment,
        })
        return
      }
      case GroupState.Stable:
        this.#removePendingSyncMember(group, member.memberId)
        reply({
          errorCode: ErrorCode.None,
          protocolType: group.protocolType,
          protocolName: group.protocolName,
          assignment: member.assignment,
        })
        return
      default:
        // validateMember refused every member of an Empty group.
        reply(syncError(ErrorCode.UnknownMemberId))
        return
    }
  }

  #validateSync(group: ClassicGroup, input: SyncInput): ErrorCode {
    if (group.is(GroupState.Dead)) return ErrorCode.CoordinatorNotAvailable
    const invalid = this.#validateMember(group, input.memberId, input.groupInstanceId)
    if (invalid !== ErrorCode.None) return invalid
    if (input.generationId !== group.generationId) return ErrorCode.IllegalGeneration
    const inconsistent = (asked: string | null, actual: string | null) =>
      asked !== null && actual !== null && asked !== actual
    if (
      inconsistent(input.protocolType, group.protocolType) ||
      inconsistent(input.protocolName, group.protocolName)
    ) {
      return ErrorCode.InconsistentGroupProtocol
    }
    return ErrorCode.None
  }

  #removePendingSyncMember(group: ClassicGroup, memberId: string): void {
    group.pendingSyncMembers.delete(memberId)
    const rebalancing = group.is(GroupState.CompletingRebalance) || group.is(GroupState.Stable)
    if (!rebalancing || group.pendingSyncMembers.size === 0) this.#cancel(syncKey(group.groupId))
  }

  #setAndPropagateAssignment(group: ClassicGroup, assignment: ReadonlyMap<string, Buffer>): void {
    assert(group.is(GroupState.CompletingRebalance), `group ${group.groupId} is ${group.state}`)
    for (const m of group.members.values()) m.assignment = assignment.get(m.memberId) ?? EMPTY_ASSIGNMENT
    this.#propagateAssignment(group, ErrorCode.None)
  }

  #resetAndPropagateAssignmentWithError(group: ClassicGroup, errorCode: ErrorCode): void {
    assert(group.is(GroupState.CompletingRebalance), `group ${group.groupId} is ${group.state}`)
    for (const m of group.members.values()) m.assignment = EMPTY_ASSIGNMENT
    this.#propagateAssignment(group, errorCode)
  }

  #propagateAssignment(group: ClassicGroup, errorCode: ErrorCode): void {
    const ok = errorCode === ErrorCode.None
    for (const m of group.members.values()) {
      const waiter = m.awaitingSync
      if (waiter === null) continue
      m.awaitingSync = null
      this.#reply({
        kind: 'sync',
        token: waiter.token,
        result: {
          errorCode,
          protocolType: ok ? group.protocolType : null,
          protocolName: ok ? group.protocolName : null,
          assignment: m.assignment,
        },
      })
      // Sessions restart once the assignment is out (expiries during the wait were ignored).
      this.#rescheduleHeartbeat(group, m)
    }
  }

  // ------------------------------------------------------------------------------- Heartbeat

  heartbeat(input: HeartbeatInput): ErrorCode {
    const group = this.#groups.get(input.groupId)
    if (group === undefined) return ErrorCode.UnknownMemberId
    if (group.is(GroupState.Dead)) return ErrorCode.CoordinatorNotAvailable
    const invalid = this.#validateMember(group, input.memberId, input.groupInstanceId)
    if (invalid !== ErrorCode.None) return invalid
    if (input.generationId !== group.generationId) return ErrorCode.IllegalGeneration
    switch (group.state) {
      case GroupState.PreparingRebalance:
        this.#rescheduleHeartbeat(group, group.member(input.memberId))
        return ErrorCode.RebalanceInProgress
      case GroupState.CompletingRebalance:
      case GroupState.Stable:
        this.#rescheduleHeartbeat(group, group.member(input.memberId))
        return ErrorCode.None
      default:
        return ErrorCode.UnknownMemberId
    }
  }

  #rescheduleHeartbeat(group: ClassicGroup, member: GroupMember, delayMs = member.sessionTimeoutMs): void {
    this.#schedule({ kind: 'heartbeat', groupId: group.groupId, memberId: member.memberId }, delayMs)
  }

  #expireHeartbeat(groupId: GroupId, memberId: string): void {
    const group = this.#groups.get(groupId)
    if (group === undefined || group.is(GroupState.Dead)) return
    if (group.isPendingMember(memberId)) {
      this.#log('info', `pending member ${memberId} of group ${groupId} expired`)
      group.remove(memberId)
      this.#maybeCompleteJoinPhase(group)
      return
    }
    const member = group.members.get(memberId)
    if (member === undefined || member.hasSatisfiedHeartbeat()) return
    this.#log('info', `member ${memberId} of group ${groupId} has failed (session timeout): removing it`)
    this.#removeMemberAndUpdateGroup(group, member, `removing member ${memberId} on heartbeat expiration`)
  }

  #removeMemberAndUpdateGroup(group: ClassicGroup, member: GroupMember, reason: string): void {
    // A new member may time out while its JoinGroup waits: answer it so that it joins again.
    this.#answerWaiters(group, member, ErrorCode.UnknownMemberId, ErrorCode.UnknownMemberId)
    group.remove(member.memberId)
    if (group.is(GroupState.Stable) || group.is(GroupState.CompletingRebalance)) {
      this.#maybePrepareRebalanceOrCompleteJoin(group, reason)
    } else if (group.is(GroupState.PreparingRebalance) && group.hasAllMembersJoined()) {
      this.#maybeCompleteJoinPhase(group)
    }
  }

  /** Answers a member's waiting JoinGroup and SyncGroup with errors (before it leaves or is replaced). */
  #answerWaiters(
    group: ClassicGroup,
    member: GroupMember,
    joinErrorCode: ErrorCode,
    syncErrorCode: ErrorCode,
  ): void {
    const join = member.awaitingJoin
    if (join !== null) {
      group.setJoinWaiter(member, null)
      const memberId = joinErrorCode === ErrorCode.UnknownMemberId ? UNKNOWN_MEMBER_ID : member.memberId
      this.#reply({ kind: 'join', token: join.token, result: joinError(joinErrorCode, memberId) })
    }
    const sync = member.awaitingSync
    if (sync !== null) {
      member.awaitingSync = null
      this.#reply({ kind: 'sync', token: sync.token, result: syncError(syncErrorCode) })
    }
  }

  #removeMemberAnsweringWaiters(group: ClassicGroup, memberId: string): void {
    const m = group.members.get(memberId)
    if (m !== undefined) {
      this.#answerWaiters(group, m, ErrorCode.GroupMaxSizeReached, ErrorCode.RebalanceInProgress)
      this.#cancel(heartbeatKey(group.groupId, memberId))
    }
    group.remove(memberId)
  }

  #expirePendingSync(groupId: GroupId, generationId: number): void {
    const group = this.#groups.get(groupId)
    if (group === undefined || generationId !== group.generationId) return
    if (!group.is(GroupState.CompletingRebalance) && !group.is(GroupState.Stable)) return
    if (group.pendingSyncMembers.size === 0) return
    const missing = [...group.pendingSyncMembers]
    for (const memberId of missing) {
      const m = group.members.get(memberId)
      if (m !== undefined) this.#answerWaiters(group, m, ErrorCode.UnknownMemberId, ErrorCode.UnknownMemberId)
      group.remove(memberId)
      this.#cancel(heartbeatKey(groupId, memberId))
    }
    this.#prepareRebalance(group, `removing ${missing.join(', ')} on pending sync request expiration`)
  }

  // ------------------------------------------------------------------------------- LeaveGroup

  leaveGroup(input: LeaveInput): LeaveResult {
    const group = this.#groups.get(input.groupId)
    if (group === undefined) return { errorCode: ErrorCode.UnknownMemberId, members: [] }
    if (group.is(GroupState.Dead)) return { errorCode: ErrorCode.CoordinatorNotAvailable, members: [] }
    const members: { memberId: string; groupInstanceId: string | null; errorCode: ErrorCode }[] = []
    let left = 0
    for (const identity of input.members) {
      const result = (errorCode: ErrorCode) => {
        members.push({ memberId: identity.memberId, groupInstanceId: identity.groupInstanceId, errorCode })
        if (errorCode === ErrorCode.None) left++
      }
      const reason = identity.reason ?? 'not provided'
      if (identity.memberId === UNKNOWN_MEMBER_ID) {
        // Admin removal of a static member by its instance id (KIP-345).
        const memberId =
          identity.groupInstanceId === null ? null : group.staticMemberId(identity.groupInstanceId)
        if (memberId === null) {
          result(ErrorCode.UnknownMemberId)
          continue
        }
        this.#removeCurrentMember(group, memberId, reason)
        result(ErrorCode.None)
      } else if (group.isPendingMember(identity.memberId)) {
        group.remove(identity.memberId)
        this.#cancel(heartbeatKey(group.groupId, identity.memberId))
        result(ErrorCode.None)
      } else {
        const invalid = this.#validateMember(group, identity.memberId, identity.groupInstanceId)
        if (invalid === ErrorCode.None) this.#removeCurrentMember(group, identity.memberId, reason)
        result(invalid)
      }
    }
    if (left > 0) {
      if (group.is(GroupState.Stable) || group.is(GroupState.CompletingRebalance)) {
        this.#maybePrepareRebalanceOrCompleteJoin(group, 'explicit LeaveGroup')
      } else if (group.is(GroupState.PreparingRebalance)) {
        this.#maybeCompleteJoinPhase(group)
      }
    }
    return { errorCode: ErrorCode.None, members }
  }

  #removeCurrentMember(group: ClassicGroup, memberId: string, reason: string): void {
    const member = group.member(memberId)
    this.#cancel(heartbeatKey(group.groupId, memberId))
    this.#log('info', `member ${memberId} left group ${group.groupId} (client reason: ${reason})`)
    this.#answerWaiters(group, member, ErrorCode.UnknownMemberId, ErrorCode.UnknownMemberId)
    group.remove(memberId)
  }

  // ------------------------------------------------------------------------------- offsets

  /** OffsetCommit; the answer comes as a `commit` reply once the offsets are written. */
  commitOffsets(token: number, input: CommitInput): void {
    const failAll = (errorCode: ErrorCode) =>
      this.#reply({
        kind: 'commit',
        token,
        result: input.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })),
        })),
      })
    if (input.groupId === '') {
      failAll(ErrorCode.InvalidGroupId)
      return
    }
    let group = this.#groups.get(input.groupId)
    if (group === undefined) {
      if (input.generationId >= 0) {
        // v9+ says the group is missing; older versions said ILLEGAL_GENERATION.
        failAll(input.apiVersion >= 9 ? ErrorCode.GroupIdNotFound : ErrorCode.IllegalGeneration)
        return
      }
      // A "simple" group: offsets committed without group management.
      group = new ClassicGroup(input.groupId, this.#clock.nowMs())
      this.#groups.set(input.groupId, group)
    }
    const invalid = this.#validateOffsetCommit(group, input, false)
    if (invalid !== ErrorCode.None) {
      failAll(invalid)
      return
    }
    if (group.is(GroupState.Stable) || group.is(GroupState.PreparingRebalance)) {
      // A commit keeps the member's session alive, as a heartbeat does.
      const member = group.members.get(input.memberId)
      if (member !== undefined) this.#rescheduleHeartbeat(group, member)
    }
    const nowMs = this.#clock.nowMs()
    const expireTimestampMs = input.retentionTimeMs === -1 ? null : nowMs + input.retentionTimeMs
    const { offsets, result } = this.#offsetsToCommit(input.groupId, input.topics, expireTimestampMs)
    if (offsets.length === 0) {
      this.#reply({ kind: 'commit', token, result })
      return
    }
    this.#write(
      offsets.map((o) => ({ kind: 'offset', ...o })),
      { kind: 'commit', token, offsets, result },
    )
  }

  /**
   * TxnOffsetCommit (Kafka's commitTransactionalOffset); the answer comes as a `txnCommit` reply
   * once the offsets are written, in one transactional batch of the producer. They stay pending
   * until `completeTransaction` for the producer.
   */
  commitTransactionalOffsets(token: number, input: TxnCommitInput): void {
    const failAll = (errorCode: ErrorCode) =>
      this.#reply({
        kind: 'txnCommit',
        token,
        result: input.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })),
        })),
      })
    if (input.groupId === '') {
      failAll(ErrorCode.InvalidGroupId)
      return
    }
    let group = this.#groups.get(input.groupId)
    if (group === undefined) {
      // Without a generation, a simple group is made, as for a plain commit; with one, the
      // member's group is gone.
      if (input.generationId >= 0) {
        failAll(ErrorCode.IllegalGeneration)
        return
      }
      group = new ClassicGroup(input.groupId, this.#clock.nowMs())
      this.#groups.set(input.groupId, group)
    }
    const invalid = this.#validateOffsetCommit(group, input, true)
    if (invalid !== ErrorCode.None) {
      failAll(invalid)
      return
    }
    const { offsets, result } = this.#offsetsToCommit(input.groupId, input.topics, null)
    if (offsets.length === 0) {
      this.#reply({ kind: 'txnCommit', token, result })
      return
    }
    this.#write(
      offsets.map((o) => ({ kind: 'offset', ...o })),
      { kind: 'txnCommit', token, producerId: input.producerId, offsets, result },
      {
        producerId: input.producerId,
        producerEpoch: input.producerEpoch,
        ...(input.verificationGuard === undefined ? {} : { verificationGuard: input.verificationGuard }),
      },
    )
  }

  /**
   * A transaction ended on this partition (its marker is written): COMMIT makes the producer's
   * pending offsets the committed ones, ABORT drops them (Kafka's replayEndTransactionMarker). It
   * applies after the writes issued before it; a `txnCompleted` reply says it has. A marker
   * repeated finds nothing pending and changes nothing.
   */
  completeTransaction(token: number, producerId: bigint, committed: boolean): void {
    this.#afterWrites({ kind: 'marker', token, producerId, committed })
  }

  /**
   * OffsetFetch with requireStable: answered (a `fetch` reply) once the writes issued before it are
   * done, as Kafka answers it from a write operation; a partition with a pending transactional
   * offset is UNSTABLE_OFFSET_COMMIT.
   */
  fetchStableOffsets(
    token: number,
    groupId: GroupId,
    topics: readonly { name: TopicName; partitionIndexes: readonly number[] }[] | null,
  ): void {
    this.#afterWrites({ kind: 'stableFetch', token, groupId, topics })
  }

  #offsetsToCommit(
    groupId: GroupId,
    topics: CommitInput['topics'],
    expireTimestampMs: number | null,
  ): { offsets: (OffsetKey & { value: OffsetAndMetadata })[]; result: CommitResult } {
    const nowMs = this.#clock.nowMs()
    const offsets: (OffsetKey & { value: OffsetAndMetadata })[] = []
    const result: OffsetCommitResponseData.OffsetCommitResponseTopicIn[] = []
    for (const t of topics) {
      const partitions: OffsetCommitResponseData.OffsetCommitResponsePartitionIn[] = []
      for (const p of t.partitions) {
        const metadata = p.committedMetadata ?? ''
        if (metadata.length > this.config.offsetMetadataBytesMax) {
          partitions.push({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.OffsetMetadataTooLarge })
          continue
        }
        partitions.push({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.None })
        offsets.push({
          groupId,
          topic: t.name,
          partition: p.partitionIndex,
          value: {
            offset: p.committedOffset,
            leaderEpoch: p.committedLeaderEpoch < 0 ? -1 : p.committedLeaderEpoch,
            metadata,
            commitTimestampMs: p.commitTimestamp === -1n ? nowMs : Number(p.commitTimestamp),
            expireTimestampMs,
          },
        })
      }
      result.push({ name: t.name, partitions })
    }
    return { offsets, result }
  }

  /**
   * Kafka's ClassicGroup.validateOffsetCommit. A transactional commit may come without a member
   * (TxnOffsetCommit before v3) and during CompletingRebalance.
   */
  #validateOffsetCommit(
    group: ClassicGroup,
    input: Pick<CommitInput, 'generationId' | 'memberId' | 'groupInstanceId'>,
    transactional: boolean,
  ): ErrorCode {
    if (group.is(GroupState.Dead)) return ErrorCode.CoordinatorNotAvailable
    // Admin clients and consumers without group management commit to an Empty group.
    if (input.generationId < 0 && group.is(GroupState.Empty)) return ErrorCode.None
    if (input.generationId >= 0 || input.memberId !== '' || input.groupInstanceId !== null) {
      const invalid = this.#validateMember(group, input.memberId, input.groupInstanceId)
      if (invalid !== ErrorCode.None) return invalid
      if (input.generationId !== group.generationId) return ErrorCode.IllegalGeneration
    } else if (!transactional && !group.is(GroupState.Empty)) {
      return ErrorCode.UnknownMemberId
    }
    // The member has its generation from JoinGroup but no assignment yet.
    if (!transactional && group.is(GroupState.CompletingRebalance)) return ErrorCode.RebalanceInProgress
    return ErrorCode.None
  }

  /**
   * OffsetFetch of one group: `topics` null for every committed offset. An unknown group has no
   * offsets (-1 each), as Kafka answers.
   */
  fetchOffsets(
    groupId: GroupId,
    topics: readonly { name: TopicName; partitionIndexes: readonly number[] }[] | null,
    requireStable = false,
  ): OffsetFetchGroupResult {
    const byTopic = this.#offsets.byGroup.get(groupId)
    const partition = (topic: TopicName, partitionIndex: number) => {
      if (requireStable && this.#hasPendingOffset({ groupId, topic, partition: partitionIndex })) {
        return {
          partitionIndex,
          committedOffset: -1n,
          committedLeaderEpoch: -1,
          metadata: '',
          errorCode: ErrorCode.UnstableOffsetCommit,
        }
      }
      const o = byTopic?.get(topic)?.get(partitionIndex)
      return {
        partitionIndex,
        committedOffset: o?.offset ?? -1n,
        committedLeaderEpoch: o?.leaderEpoch ?? -1,
        metadata: o?.metadata ?? '',
        errorCode: ErrorCode.None,
      }
    }
    if (topics === null) {
      return {
        groupId,
        errorCode: ErrorCode.None,
        topics: [...(byTopic ?? new Map<TopicName, Map<number, StoredOffset>>())].map(([name, parts]) => ({
          name,
          partitions: [...parts.keys()].sort((a, b) => a - b).map((p) => partition(name, p)),
        })),
      }
    }
    return {
      groupId,
      errorCode: ErrorCode.None,
      topics: topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((p) => partition(t.name, p)),
      })),
    }
  }

  /** OffsetDelete; the answer comes as a `deleteOffsets` reply. */
  deleteOffsets(token: number, input: DeleteOffsetsInput): void {
    const reply = (result: DeleteOffsetsResult) => this.#reply({ kind: 'deleteOffsets', token, result })
    const group = this.#groups.get(input.groupId)
    if (group === undefined || group.is(GroupState.Dead)) {
      reply({ errorCode: ErrorCode.GroupIdNotFound, topics: [] })
      return
    }
    if (!group.is(GroupState.Empty) && !group.usesConsumerProtocol()) {
      reply({ errorCode: ErrorCode.NonEmptyGroup, topics: [] })
      return
    }
    const tombstones: OffsetKey[] = []
    const result: DeleteOffsetsResult = {
      errorCode: ErrorCode.None,
      topics: input.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          if (group.isSubscribedToTopic(t.name)) {
            return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.GroupSubscribedToTopic }
          }
          // A tombstone also for an offset only a transaction holds (it drops the pending one).
          const key = { groupId: input.groupId, topic: t.name, partition: p.partitionIndex }
          if (this.#offsets.get(key) !== undefined || this.#hasPendingOffset(key)) tombstones.push(key)
          return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.None }
        }),
      })),
    }
    if (tombstones.length === 0) {
      reply(result)
      return
    }
    this.#write(
      tombstones.map((k) => ({ kind: 'offset', ...k, value: null })),
      { kind: 'tombstones', offsets: tombstones, reply: { kind: 'deleteOffsets', token, result } },
    )
  }

  /** DeleteGroups of groups of this partition; the answer comes as a `deleteGroups` reply. */
  deleteGroups(token: number, groupIds: readonly GroupId[]): void {
    const result: { groupId: GroupId; errorCode: ErrorCode }[] = []
    const records: CoordinatorRecord[] = []
    const tombstones: OffsetKey[] = []
    for (const groupId of groupIds) {
      const group = this.#groups.get(groupId)
      if (group === undefined || group.is(GroupState.Dead)) {
        result.push({ groupId, errorCode: ErrorCode.GroupIdNotFound })
        continue
      }
      if (!group.is(GroupState.Empty)) {
        result.push({ groupId, errorCode: ErrorCode.NonEmptyGroup })
        continue
      }
      const keys = this.#offsetKeysIncludingInFlight(groupId)
      tombstones.push(...keys)
      for (const k of keys) records.push({ kind: 'offset', ...k, value: null })
      records.push({ kind: 'group', groupId, value: null })
      this.#removeGroup(group)
      result.push({ groupId, errorCode: ErrorCode.None })
    }
    if (records.length === 0) {
      this.#reply({ kind: 'deleteGroups', token, result })
      return
    }
    this.#write(records, {
      kind: 'tombstones',
      offsets: tombstones,
      reply: { kind: 'deleteGroups', token, result },
    })
  }

  /**
   * Committed offsets of a group, those its open transactions hold, and those of its commits still
   * being written (Kafka's deleteAllOffsets: pending offsets get a tombstone too).
   */
  #offsetKeysIncludingInFlight(groupId: GroupId): OffsetKey[] {
    const keys = new Map<string, OffsetKey>()
    const add = (k: OffsetKey) => keys.set(JSON.stringify([k.topic, k.partition]), k)
    const stores = [this.#offsets, ...this.#openStoresOf(groupId)]
    for (const store of stores) {
      for (const [topic, parts] of store.byGroup.get(groupId) ?? []) {
        for (const partition of parts.keys()) add({ groupId, topic, partition })
      }
    }
    for (const { pending } of this.#writes.values()) {
      if (pending.kind !== 'commit' && pending.kind !== 'txnCommit') continue
      for (const o of pending.offsets) if (o.groupId === groupId) add(o)
    }
    return [...keys.values()]
  }

  /** The pending offsets of the open transactions of a group. */
  #openStoresOf(groupId: GroupId): OffsetStore[] {
    const stores: OffsetStore[] = []
    for (const producerId of this.#openTxnByGroup.get(groupId) ?? []) {
      const store = this.#pendingTxn.get(producerId)
      if (store !== undefined) stores.push(store)
    }
    return stores
  }

  /** Kafka's hasPendingTransactionalOffsets. */
  #hasPendingOffset(key: OffsetKey): boolean {
    return this.#openStoresOf(key.groupId).some((store) => store.get(key) !== undefined)
  }

  #removeGroup(group: ClassicGroup): void {
    for (const m of group.members.values()) {
      this.#answerWaiters(group, m, ErrorCode.CoordinatorNotAvailable, ErrorCode.CoordinatorNotAvailable)
      this.#cancel(heartbeatKey(group.groupId, m.memberId))
    }
    for (const memberId of group.pendingJoinMembers) this.#cancel(heartbeatKey(group.groupId, memberId))
    this.#cancel(joinKey(group.groupId))
    this.#cancel(syncKey(group.groupId))
    group.transitionTo(GroupState.Dead, this.#clock.nowMs())
    this.#groups.delete(group.groupId)
  }

  /**
   * The offsets.retention.check.interval.ms sweep (Kafka's cleanupGroupMetadata): tombstones for
   * expired offsets, and for groups left Empty with no offsets.
   */
  expireOffsets(): void {
    const nowMs = this.#clock.nowMs()
    const records: CoordinatorRecord[] = []
    const tombstones: OffsetKey[] = []
    for (const group of [...this.#groups.values()]) {
      const groupId = group.groupId
      const byTopic = this.#offsets.byGroup.get(groupId)
      let allExpired = true
      if (byTopic !== undefined) {
        const since = this.#expirationBase(group)
        if (since === null) continue
        for (const [topic, parts] of byTopic) {
          if (group.isSubscribedToTopic(topic)) {
            allExpired = false
            continue
          }
          for (const [partition, o] of parts) {
            const expired =
              o.expireTimestampMs !== null
                ? nowMs >= o.expireTimestampMs
                : nowMs - (since === 'commit' ? o.commitTimestampMs : since) >= this.config.offsetsRetentionMs
            // An offset a transaction is about to replace is kept until the transaction ends.
            if (!expired || this.#hasPendingOffset({ groupId, topic, partition })) {
              allExpired = false
              continue
            }
            tombstones.push({ groupId, topic, partition })
            records.push({ kind: 'offset', groupId, topic, partition, value: null })
          }
        }
      }
      // A group with open transactions stays, as Kafka keeps it (its pending offsets may commit).
      const open = this.#openTxnByGroup.has(groupId)
      if (allExpired && !open && group.is(GroupState.Empty) && !this.#hasCommitInFlight(groupId)) {
        this.#log('info', `group ${groupId} is empty with no offsets left: deleting it`)
        records.push({ kind: 'group', groupId, value: null })
        this.#removeGroup(group)
      }
    }
    if (records.length > 0) this.#write(records, { kind: 'tombstones', offsets: tombstones, reply: null })
  }

  /**
   * Kafka's ClassicGroup.offsetExpirationCondition: from when an offset's retention counts (a
   * timestamp, or 'commit' for each offset's commit time), or null when offsets do not expire now.
   */
  #expirationBase(group: ClassicGroup): number | 'commit' | null {
    if (group.protocolType === null) return 'commit'
    if (group.is(GroupState.Empty)) return group.stateTimestampMs ?? 'commit'
    if (group.usesConsumerProtocol() && group.subscribedTopics !== null && group.is(GroupState.Stable)) {
      return 'commit'
    }
    return null
  }

  #hasCommitInFlight(groupId: GroupId): boolean {
    for (const { pending } of this.#writes.values()) {
      if (pending.kind !== 'commit' && pending.kind !== 'txnCommit') continue
      if (pending.offsets.some((o) => o.groupId === groupId)) return true
    }
    return false
  }

  // ------------------------------------------------------------------------------- admin queries

  /**
   * DescribeGroups for one group. A group that does not exist is Dead, or with `missingAsError`
   * (DescribeGroups v6+, KIP-1043) GROUP_ID_NOT_FOUND with a message, as Kafka answers.
   */
  describeGroup(
    groupId: GroupId,
    includeAuthorizedOperations: boolean,
    missingAsError = false,
  ): DescribeGroupsResponseData.DescribedGroupIn {
    const authorizedOperations = includeAuthorizedOperations
      ? GROUP_AUTHORIZED_OPERATIONS
      : AUTHORIZED_OPERATIONS_OMITTED
    const group = this.#groups.get(groupId)
    if (group === undefined && missingAsError) {
      return {
        errorCode: ErrorCode.GroupIdNotFound,
        errorMessage: `Group ${groupId} not found.`,
        groupId,
        groupState: GroupState.Dead,
        protocolType: '',
        protocolData: '',
        members: [],
        // Kafka fills in authorized operations only for the groups it found.
        authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
      }
    }
    if (group === undefined) {
      return {
        errorCode: ErrorCode.None,
        groupId,
        groupState: GroupState.Dead,
        protocolType: '',
        protocolData: '',
        members: [],
        authorizedOperations,
      }
    }
    const stable = group.is(GroupState.Stable)
    const protocol = group.protocolName
    return {
      errorCode: ErrorCode.None,
      groupId,
      groupState: group.state,
      protocolType: group.protocolType ?? '',
      protocolData: stable ? (protocol ?? '') : '',
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        memberMetadata: stable && protocol !== null ? m.metadataFor(protocol) : EMPTY_ASSIGNMENT,
        memberAssignment: stable ? m.assignment : EMPTY_ASSIGNMENT,
      })),
      authorizedOperations,
    }
  }

  /** ListGroups: states and types filters compare without case, as Kafka does; empty filters pass all. */
  listGroups(
    statesFilter: readonly string[],
    typesFilter: readonly string[],
  ): ListGroupsResponseData.ListedGroupIn[] {
    const states = new Set(statesFilter.map((s) => s.toLowerCase()))
    const types = new Set(typesFilter.map((s) => s.toLowerCase()))
    if (types.size > 0 && !types.has('classic')) return []
    return [...this.#groups.values()]
      .filter((g) => states.size === 0 || states.has(g.state.toLowerCase()))
      .map((g) => ({
        groupId: g.groupId,
        protocolType: g.protocolType ?? '',
        groupState: g.state,
        groupType: 'classic',
      }))
  }

  // ------------------------------------------------------------------------------- timers, writes

  /** A timer set through a `schedule` effect fell due. A key no longer pending is ignored. */
  fire(key: string): void {
    const task = this.#timers.get(key)
    if (task === undefined) return
    this.#timers.delete(key)
    switch (task.kind) {
      case 'heartbeat':
        this.#expireHeartbeat(task.groupId, task.memberId)
        return
      case 'join': {
        const group = this.#groups.get(task.groupId)
        if (group?.is(GroupState.PreparingRebalance)) this.#completeJoin(group)
        return
      }
      case 'initialDelay': {
        const group = this.#groups.get(task.groupId)
        if (group?.is(GroupState.PreparingRebalance)) {
          this.#tryCompleteInitialRebalanceElseSchedule(group, task.delayMs, task.remainingMs)
        }
        return
      }
      case 'sync':
        this.#expirePendingSync(task.groupId, task.generationId)
        return
    }
  }

  /**
   * A write from a `write` effect is done (`errorCode` 0: appended and committed at `baseOffset`,
   * ignored on an error). Completions are applied in the order the writes were issued, whatever
   * order they are reported in.
   */
  onWriteComplete(writeId: number, errorCode: ErrorCode, baseOffset: bigint): void {
    const entry = this.#writes.get(writeId)
    assert(entry !== undefined && entry.result === null, `write ${writeId} is not in flight`)
    entry.result = errorCode
    entry.baseOffset = baseOffset
    this.#completeWrites()
  }

  #completeWrites(): void {
    for (const [id, w] of this.#writes) {
      if (w.result === null) break
      this.#writes.delete(id)
      this.#completeWrite(w.pending, w.result, w.baseOffset)
    }
  }

  /** Queues something that is no write behind the writes in flight, and applies what is due. */
  #afterWrites(pending: PendingWrite): void {
    this.#writes.set(this.#nextWriteId++, { pending, result: ErrorCode.None, baseOffset: -1n })
    this.#completeWrites()
  }

  #completeWrite(pending: PendingWrite, errorCode: ErrorCode, baseOffset: bigint): void {
    const ok = errorCode === ErrorCode.None
    const responseError = writeErrorToResponseError(errorCode)
    switch (pending.kind) {
      case 'groupMetadata':
        if (!ok) this.#log('warn', `failed to write metadata of group ${pending.groupId}: error ${errorCode}`)
        return
      case 'syncAssignment': {
        const group = this.#groups.get(pending.groupId)
        // A member may have joined meanwhile: only the same generation, still completing, proceeds.
        if (group === undefined || !group.is(GroupState.CompletingRebalance)) return
        if (group.generationId !== pending.generationId) return
        if (!ok) {
          this.#resetAndPropagateAssignmentWithError(group, responseError)
          this.#maybePrepareRebalanceOrCompleteJoin(group, `error ${responseError} storing the assignment`)
          return
        }
        this.#setAndPropagateAssignment(group, pending.assignment)
        group.transitionTo(GroupState.Stable, this.#clock.nowMs())
        return
      }
      case 'staticRejoin':
        this.#completeStaticRejoin(pending, ok, responseError)
        return
      case 'commit': {
        // Kafka's offset commit says a too large batch this way (storeOffsets).
        const commitError =
          errorCode === ErrorCode.MessageTooLarge ||
          errorCode === ErrorCode.RecordListTooLarge ||
          errorCode === ErrorCode.InvalidFetchSize
            ? ErrorCode.InvalidCommitOffsetSize
            : responseError
        if (ok) {
          pending.offsets.forEach((o, i) => {
            this.#applyOffset(o, { ...o.value, recordOffset: baseOffset + BigInt(i) })
          })
          this.#reply({ kind: 'commit', token: pending.token, result: pending.result })
          return
        }
        this.#reply({
          kind: 'commit',
          token: pending.token,
          result: pending.result.map((t) => ({
            name: t.name,
            partitions: (t.partitions ?? []).map((p) => ({
              partitionIndex: p.partitionIndex,
              errorCode: p.errorCode === ErrorCode.None ? commitError : p.errorCode,
            })),
          })),
        })
        return
      }
      case 'txnCommit': {
        if (ok) {
          pending.offsets.forEach((o, i) => {
            this.#addPendingOffset(pending.producerId, o, {
              ...o.value,
              recordOffset: baseOffset + BigInt(i),
            })
          })
        }
        this.#reply({
          kind: 'txnCommit',
          token: pending.token,
          result: ok
            ? pending.result
            : pending.result.map((t) => ({
                name: t.name,
                partitions: (t.partitions ?? []).map((p) => ({
                  partitionIndex: p.partitionIndex,
                  errorCode: p.errorCode === ErrorCode.None ? responseError : p.errorCode,
                })),
              })),
        })
        return
      }
      case 'marker':
        // Not applied when the partition moves away: its next coordinator reads it from the log.
        if (ok) this.replayEndTransactionMarker(pending.producerId, pending.committed)
        this.#reply({ kind: 'txnCompleted', token: pending.token })
        return
      case 'stableFetch':
        this.#reply({
          kind: 'fetch',
          token: pending.token,
          result: ok
            ? this.fetchOffsets(pending.groupId, pending.topics, true)
            : { groupId: pending.groupId, errorCode: responseError, topics: [] },
        })
        return
      case 'tombstones': {
        if (ok) for (const k of pending.offsets) this.#applyOffset(k, null)
        const r = pending.reply
        if (r === null) return
        if (r.kind === 'deleteGroups') {
          const result = ok
            ? r.result
            : r.result.map((g) => (g.errorCode === ErrorCode.None ? { ...g, errorCode: responseError } : g))
          this.#reply({ kind: 'deleteGroups', token: r.token, result })
        } else {
          this.#reply({
            kind: 'deleteOffsets',
            token: r.token,
            result: ok ? r.result : { errorCode: responseError, topics: [] },
          })
        }
        return
      }
    }
  }

  #completeStaticRejoin(
    pending: PendingWrite & { kind: 'staticRejoin' },
    ok: boolean,
    errorCode: ErrorCode,
  ): void {
    const group = this.#groups.get(pending.groupId)
    const member = group?.members.get(pending.newMemberId)
    const waiting = member?.awaitingJoin?.token === pending.waiter.token
    if (group === undefined || member === undefined || !waiting) {
      // The member was replaced, removed or rebalanced meanwhile; its JoinGroup was answered then.
      return
    }
    group.setJoinWaiter(member, null)
    if (!ok) {
      // Put the old member id back: the log still names it.
      this.#log(
        'warn',
        `failed to persist static member ${pending.groupInstanceId} of group ${group.groupId}: reverting`,
      )
      group.updateMember(member, pending.old, null)
      const restored = group.replaceStaticMember(
        pending.groupInstanceId,
        pending.newMemberId,
        pending.oldMemberId,
      )
      this.#cancel(heartbeatKey(group.groupId, pending.newMemberId))
      this.#rescheduleHeartbeat(group, restored)
      this.#reply({
        kind: 'join',
        token: pending.waiter.token,
        result: { ...joinError(errorCode, UNKNOWN_MEMBER_ID), generationId: group.generationId },
      })
      return
    }
    if (pending.waiter.apiVersion >= 9) {
      // KIP-814: the leader learns the members but keeps the assignment it has.
      const isLeader = group.isLeader(member.memberId)
      this.#reply({
        kind: 'join',
        token: pending.waiter.token,
        result: this.#joinResult(group, member.memberId, isLeader, isLeader),
      })
      return
    }
    this.#reply({
      kind: 'join',
      token: pending.waiter.token,
      result: {
        ...this.#joinResult(group, member.memberId, false, false),
        leader: pending.previousLeader ?? '',
      },
    })
  }

  /** A committed offset, or a tombstone (which also drops what open transactions hold for it). */
  #applyOffset(key: OffsetKey, value: StoredOffset | null): void {
    if (value === null) {
      this.#offsets.remove(key)
      for (const store of this.#openStoresOf(key.groupId)) store.remove(key)
      return
    }
    this.#offsets.put(key, value)
    this.#ensureGroup(key.groupId)
  }

  #addPendingOffset(producerId: bigint, key: OffsetKey, value: StoredOffset): void {
    let store = this.#pendingTxn.get(producerId)
    if (store === undefined) {
      store = new OffsetStore()
      this.#pendingTxn.set(producerId, store)
    }
    store.put(key, value)
    let open = this.#openTxnByGroup.get(key.groupId)
    if (open === undefined) {
      open = new Set()
      this.#openTxnByGroup.set(key.groupId, open)
    }
    open.add(producerId)
    this.#ensureGroup(key.groupId)
  }

  /** Offsets make a group exist (a simple group), as when Kafka replays them. */
  #ensureGroup(groupId: GroupId): void {
    if (!this.#groups.has(groupId)) {
      this.#groups.set(groupId, new ClassicGroup(groupId, this.#clock.nowMs()))
    }
  }

  /**
   * A transaction's marker, live or read back from the log (Kafka's replayEndTransactionMarker):
   * COMMIT moves the producer's pending offsets to the committed ones, except where a plain commit
   * was written after them; ABORT drops them. Nothing pending: nothing to do.
   */
  replayEndTransactionMarker(producerId: bigint, committed: boolean): void {
    const store = this.#pendingTxn.get(producerId)
    if (store === undefined) return
    this.#pendingTxn.delete(producerId)
    for (const groupId of store.byGroup.keys()) {
      const open = this.#openTxnByGroup.get(groupId)
      open?.delete(producerId)
      if (open?.size === 0) this.#openTxnByGroup.delete(groupId)
    }
    if (!committed) return
    for (const [key, value] of store.entries()) {
      const existing = this.#offsets.get(key)
      if (existing === undefined || value.recordOffset > existing.recordOffset) this.#applyOffset(key, value)
    }
  }

  // ------------------------------------------------------------------------------- loading

  /**
   * Applies one record read back from the log (loading), at its log offset; records must come in
   * log order. An offset of a transactional batch (`producerId` not -1) is pending until the
   * producer's marker (`replayEndTransactionMarker`).
   */
  replay(record: CoordinatorRecord, offset: bigint, producerId = -1n): void {
    if (record.kind === 'offset') {
      const { value } = record
      if (value !== null && producerId !== -1n) {
        this.#addPendingOffset(producerId, record, { ...value, recordOffset: offset })
        return
      }
      this.#applyOffset(record, value === null ? null : { ...value, recordOffset: offset })
      return
    }
    if (record.value === null) {
      this.#groups.delete(record.groupId)
      return
    }
    this.#groups.set(
      record.groupId,
      ClassicGroup.fromPersisted(record.groupId, record.value, this.#clock.nowMs()),
    )
  }

  /**
   * Loading is done: every loaded member gets a session (a static member that restarts in time
   * takes its place without a rebalance); groups over group.max.size rebalance.
   */
  onLoaded(): void {
    for (const group of this.#groups.values()) {
      for (const m of group.members.values()) this.#rescheduleHeartbeat(group, m)
      if (group.size > this.config.groupSizeMax) {
        this.#prepareRebalance(
          group,
          `loaded group ${group.groupId} is over group.max.size ${this.config.groupSizeMax}`,
        )
      }
    }
  }

  /**
   * The partition moved away (or is closing): answer every waiting JoinGroup and SyncGroup with
   * NOT_COORDINATOR and every write in flight as failed, and cancel every timer.
   */
  unload(): void {
    for (const group of this.#groups.values()) {
      for (const m of group.members.values()) {
        this.#answerWaiters(group, m, ErrorCode.NotCoordinator, ErrorCode.NotCoordinator)
      }
    }
    // With the groups gone first, failing the writes only answers their requests.
    this.#groups.clear()
    for (const w of this.#writes.values()) {
      if (w.pending.kind === 'marker' || w.pending.kind === 'stableFetch')
        w.result = ErrorCode.NotLeaderOrFollower
    }
    for (const [id, w] of [...this.#writes]) {
      if (w.result === null) this.onWriteComplete(id, ErrorCode.NotLeaderOrFollower, -1n)
    }
    for (const key of this.#timers.keys()) this.#effects.push({ kind: 'cancel', key })
    this.#timers.clear()
    this.#offsets.byGroup.clear()
    this.#pendingTxn.clear()
    this.#openTxnByGroup.clear()
  }

  // ------------------------------------------------------------------------------- effects

  #reply(reply: Reply): void {
    this.#effects.push({ kind: 'reply', reply })
  }

  #schedule(task: TimerTask, delayMs: number): void {
    const key = timerKey(task)
    this.#timers.set(key, task)
    this.#effects.push({ kind: 'schedule', key, delayMs })
  }

  #cancel(key: string): void {
    if (!this.#timers.delete(key)) return
    this.#effects.push({ kind: 'cancel', key })
  }

  #write(
    records: readonly CoordinatorRecord[],
    pending: PendingWrite,
    transaction: TransactionalProducer | null = null,
  ): void {
    const writeId = this.#nextWriteId++
    this.#writes.set(writeId, { pending, result: null, baseOffset: -1n })
    this.#effects.push({ kind: 'write', writeId, records, transaction })
  }

  /** For tests: the state of every group, to compare after loading. */
  snapshot(): Map<string, PersistedGroup & { state: GroupState }> {
    const out = new Map<string, PersistedGroup & { state: GroupState }>()
    for (const g of this.#groups.values()) {
      const assignment = new Map([...g.members.values()].map((m) => [m.memberId, m.assignment]))
      out.set(g.groupId, { ...g.toPersisted(assignment), state: g.state })
    }
    return out
  }
}
