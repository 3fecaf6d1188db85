/**
 * One classic group's state as Kafka's ClassicGroup keeps it: state and its legal predecessors,
 * generation, protocol type and selected protocol, leader, members (static ones by instance id),
 * members awaiting a JoinGroup or SyncGroup answer, pending members (KIP-394) and pending syncs.
 * Plain data with bookkeeping methods; the transitions that use them live in GroupStateMachine.
 */
import { assert, type GroupId } from '../model/index.ts'
import { ConsumerProtocolSubscriptionData, DecodeError, Reader } from '../protocol/index.ts'
import type { PersistedGroup, PersistedMember } from './coordinator-records.ts'

export const GroupState = {
  Empty: 'Empty',
  PreparingRebalance: 'PreparingRebalance',
  CompletingRebalance: 'CompletingRebalance',
  Stable: 'Stable',
  Dead: 'Dead',
} as const
export type GroupState = (typeof GroupState)[keyof typeof GroupState]

/** Kafka's ClassicGroupState.validPreviousStates: a transition from anywhere else is a bug. */
const VALID_PREVIOUS_STATES: Readonly<Record<GroupState, readonly GroupState[]>> = {
  Empty: [GroupState.PreparingRebalance],
  PreparingRebalance: [GroupState.Stable, GroupState.CompletingRebalance, GroupState.Empty],
  CompletingRebalance: [GroupState.PreparingRebalance],
  Stable: [GroupState.CompletingRebalance],
  Dead: [
    GroupState.Stable,
    GroupState.PreparingRebalance,
    GroupState.CompletingRebalance,
    GroupState.Empty,
    GroupState.Dead,
  ],
}

/** The consumer protocol type: its members' metadata parses as ConsumerProtocolSubscription. */
export const CONSUMER_PROTOCOL_TYPE = 'consumer'
export const EMPTY_ASSIGNMENT: Buffer = Buffer.alloc(0)

export interface MemberProtocol {
  readonly name: string
  readonly metadata: Buffer
}

/** A JoinGroup or SyncGroup request waiting for its answer: the shell's reply token. */
export interface Waiter {
  readonly token: number
  readonly apiVersion: number
}

export class GroupMember {
  memberId: string
  readonly groupInstanceId: string | null
  readonly clientId: string
  readonly clientHost: string
  rebalanceTimeoutMs: number
  sessionTimeoutMs: number
  readonly protocolType: string
  /** In the member's order of preference. */
  protocols: readonly MemberProtocol[]
  assignment: Buffer = EMPTY_ASSIGNMENT
  awaitingJoin: Waiter | null = null
  awaitingSync: Waiter | null = null
  /** Joined but not yet through a completed join phase: its session can expire while it waits. */
  isNew = false

  constructor(init: {
    memberId: string
    groupInstanceId: string | null
    clientId: string
    clientHost: string
    rebalanceTimeoutMs: number
    sessionTimeoutMs: number
    protocolType: string
    protocols: readonly MemberProtocol[]
  }) {
    this.memberId = init.memberId
    this.groupInstanceId = init.groupInstanceId
    this.clientId = init.clientId
    this.clientHost = init.clientHost
    this.rebalanceTimeoutMs = init.rebalanceTimeoutMs
    this.sessionTimeoutMs = init.sessionTimeoutMs
    this.protocolType = init.protocolType
    this.protocols = init.protocols
  }

  get isStatic(): boolean {
    return this.groupInstanceId !== null
  }

  metadataFor(protocolName: string): Buffer {
    const p = this.protocols.find((x) => x.name === protocolName)
    assert(p !== undefined, `member ${this.memberId} does not support protocol ${protocolName}`)
    return p.metadata
  }

  /** Same protocols, same order, same metadata bytes (a JoinGroup that changes nothing). */
  matches(protocols: readonly MemberProtocol[]): boolean {
    if (protocols.length !== this.protocols.length) return false
    return protocols.every((p, i) => {
      const mine = this.protocols[i]!
      return mine.name === p.name && mine.metadata.equals(p.metadata)
    })
  }

  /** Kafka's hasSatisfiedHeartbeat: whether a session expiry now spares the member. */
  hasSatisfiedHeartbeat(): boolean {
    if (this.isNew) return false
    return this.awaitingJoin !== null || this.awaitingSync !== null
  }

  /** The first of this member's protocols that every member supports. */
  vote(candidates: ReadonlySet<string>): string {
    const p = this.protocols.find((x) => candidates.has(x.name))
    assert(p !== undefined, `member ${this.memberId} supports none of the candidate protocols`)
    return p.name
  }
}

export class ClassicGroup {
  readonly groupId: GroupId
  state: GroupState = GroupState.Empty
  previousState: GroupState | null = null
  /** Wall-clock ms of the last transition, or null (a group loaded from an old record). */
  stateTimestampMs: number | null
  /** Null for a group created by offset commits alone (a "simple" group). */
  protocolType: string | null = null
  protocolName: string | null = null
  generationId = 0
  leaderId: string | null = null
  /** Insertion order is join order: Kafka picks the next leader from it. */
  readonly members = new Map<string, GroupMember>()
  /** group.instance.id to member id. */
  readonly staticMembers = new Map<string, string>()
  /** KIP-394: member ids handed out with MEMBER_ID_REQUIRED, not yet joined with them. */
  readonly pendingJoinMembers = new Set<string>()
  /** Members sent a JoinGroup answer whose SyncGroup has not arrived yet. */
  readonly pendingSyncMembers = new Set<string>()
  numAwaitingJoin = 0
  /** Protocol name to the number of members supporting it. */
  readonly supportedProtocols = new Map<string, number>()
  /** A member joined during the initial delay: extend it (group.initial.rebalance.delay.ms). */
  newMemberAdded = false
  /** Topics the members subscribe to (consumer protocol), or null when unknown. */
  subscribedTopics: ReadonlySet<string> | null = null

  constructor(groupId: GroupId, nowMs: number) {
    this.groupId = groupId
    this.stateTimestampMs = nowMs
  }

  is(state: GroupState): boolean {
    return this.state === state
  }

  transitionTo(state: GroupState, nowMs: number): void {
    assert(
      VALID_PREVIOUS_STATES[state].includes(this.state),
      `group ${this.groupId} cannot go from ${this.state} to ${state}`,
    )
    this.previousState = this.state
    this.state = state
    this.stateTimestampMs = nowMs
  }

  /** Kafka's canRebalance: a rebalance may start from this state. */
  canRebalance(): boolean {
    return VALID_PREVIOUS_STATES.PreparingRebalance.includes(this.state)
  }

  get size(): number {
    return this.members.size
  }

  hasMember(memberId: string): boolean {
    return this.members.has(memberId)
  }

  member(memberId: string): GroupMember {
    const m = this.members.get(memberId)
    assert(m !== undefined, `group ${this.groupId} has no member ${memberId}`)
    return m
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId
  }

  isPendingMember(memberId: string): boolean {
    return this.pendingJoinMembers.has(memberId)
  }

  staticMemberId(groupInstanceId: string): string | null {
    return this.staticMembers.get(groupInstanceId) ?? null
  }

  /** The largest rebalance timeout of the members: how long a join phase may wait. */
  rebalanceTimeoutMs(): number {
    let max = 0
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs)
    return max
  }

  hasAllMembersJoined(): boolean {
    return this.members.size === this.numAwaitingJoin && this.pendingJoinMembers.size === 0
  }

  notYetRejoinedMembers(): GroupMember[] {
    return [...this.members.values()].filter((m) => m.awaitingJoin === null)
  }

  add(member: GroupMember, waiter: Waiter | null): void {
    if (member.groupInstanceId !== null) {
      assert(
        !this.staticMembers.has(member.groupInstanceId),
        `static member ${member.groupInstanceId} is already in group ${this.groupId}`,
      )
      this.staticMembers.set(member.groupInstanceId, member.memberId)
    }
    if (this.members.size === 0) this.protocolType = member.protocolType
    if (this.leaderId === null) this.leaderId = member.memberId
    this.members.set(member.memberId, member)
    this.#countProtocols(member, 1)
    member.awaitingJoin = waiter
    if (waiter !== null) this.numAwaitingJoin++
    this.pendingJoinMembers.delete(member.memberId)
  }

  /** Removes a member (its waiters must have been answered); the next member leads if it led. */
  remove(memberId: string): void {
    const removed = this.members.get(memberId)
    if (removed !== undefined) {
      this.members.delete(memberId)
      this.#countProtocols(removed, -1)
      if (removed.awaitingJoin !== null) this.numAwaitingJoin--
      if (removed.groupInstanceId !== null) this.staticMembers.delete(removed.groupInstanceId)
    }
    if (this.isLeader(memberId)) this.leaderId = this.members.keys().next().value ?? null
    this.pendingJoinMembers.delete(memberId)
    this.pendingSyncMembers.delete(memberId)
  }

  updateMember(
    member: GroupMember,
    update: { protocols: readonly MemberProtocol[]; rebalanceTimeoutMs: number; sessionTimeoutMs: number },
    waiter: Waiter | null,
  ): void {
    this.#countProtocols(member, -1)
    member.protocols = update.protocols
    this.#countProtocols(member, 1)
    member.rebalanceTimeoutMs = update.rebalanceTimeoutMs
    member.sessionTimeoutMs = update.sessionTimeoutMs
    this.setJoinWaiter(member, waiter)
  }

  /** Sets (or clears) the member's JoinGroup waiter, keeping the count of waiting members. */
  setJoinWaiter(member: GroupMember, waiter: Waiter | null): void {
    if (waiter !== null && member.awaitingJoin === null) this.numAwaitingJoin++
    else if (waiter === null && member.awaitingJoin !== null) this.numAwaitingJoin--
    member.awaitingJoin = waiter
  }

  /**
   * A static member rejoined with a new member id: the old id leaves, the new one takes its place,
   * its assignment and its leadership. Returns the new member (its old waiters are the caller's).
   */
  replaceStaticMember(groupInstanceId: string, oldMemberId: string, newMemberId: string): GroupMember {
    const old = this.member(oldMemberId)
    assert(old.awaitingJoin === null && old.awaitingSync === null, 'answer the old waiters first')
    this.members.delete(oldMemberId)
    const replacement = new GroupMember({
      memberId: newMemberId,
      groupInstanceId: old.groupInstanceId,
      clientId: old.clientId,
      clientHost: old.clientHost,
      rebalanceTimeoutMs: old.rebalanceTimeoutMs,
      sessionTimeoutMs: old.sessionTimeoutMs,
      protocolType: old.protocolType,
      protocols: old.protocols,
    })
    replacement.assignment = old.assignment
    this.members.set(newMemberId, replacement)
    if (this.isLeader(oldMemberId)) this.leaderId = newMemberId
    this.staticMembers.set(groupInstanceId, newMemberId)
    this.pendingSyncMembers.delete(oldMemberId)
    return replacement
  }

  /**
   * Kafka's supportsProtocols: an Empty group takes any non-empty protocol type and list; else the
   * type must match and one of the member's protocols must be supported by every member.
   */
  supportsProtocols(protocolType: string, protocols: readonly MemberProtocol[]): boolean {
    if (this.is(GroupState.Empty)) return protocolType !== '' && protocols.length > 0
    return (
      this.protocolType === protocolType &&
      protocols.some((p) => (this.supportedProtocols.get(p.name) ?? 0) === this.members.size)
    )
  }

  /** Protocols every member supports. */
  candidateProtocols(): Set<string> {
    const n = this.members.size
    return new Set([...this.supportedProtocols].filter(([, count]) => count === n).map(([name]) => name))
  }

  /**
   * Kafka's selectProtocol: each member votes for its first candidate; the most votes win (ties go
   * to the protocol voted for first, in member order).
   */
  selectProtocol(): string {
    assert(this.members.size > 0, `cannot select a protocol for empty group ${this.groupId}`)
    const candidates = this.candidateProtocols()
    const votes = new Map<string, number>()
    for (const m of this.members.values()) {
      const name = m.vote(candidates)
      votes.set(name, (votes.get(name) ?? 0) + 1)
    }
    let best: string | null = null
    let bestVotes = -1
    for (const [name, count] of votes) {
      if (count > bestVotes) {
        best = name
        bestVotes = count
      }
    }
    return best!
  }

  /** Kafka's initNextGeneration: bump, pick the protocol, and go to CompletingRebalance or Empty. */
  initNextGeneration(nowMs: number): void {
    this.generationId++
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol()
      this.subscribedTopics = this.#computeSubscribedTopics()
      this.transitionTo(GroupState.CompletingRebalance, nowMs)
    } else {
      this.protocolName = null
      this.subscribedTopics = this.#computeSubscribedTopics()
      this.transitionTo(GroupState.Empty, nowMs)
    }
    this.pendingSyncMembers.clear()
  }

  /** Whether offsets of `topic` are in use by the members (OffsetDelete, offset expiry). */
  isSubscribedToTopic(topic: string): boolean {
    return this.subscribedTopics?.has(topic) ?? false
  }

  usesConsumerProtocol(): boolean {
    return this.protocolType === CONSUMER_PROTOCOL_TYPE
  }

  #countProtocols(member: GroupMember, delta: 1 | -1): void {
    for (const p of member.protocols) {
      const n = (this.supportedProtocols.get(p.name) ?? 0) + delta
      if (n === 0) this.supportedProtocols.delete(p.name)
      else this.supportedProtocols.set(p.name, n)
    }
  }

  /** The union of the members' subscribed topics, when every subscription parses. */
  #computeSubscribedTopics(): ReadonlySet<string> | null {
    if (!this.usesConsumerProtocol() || this.protocolName === null) return null
    if (this.members.size === 0) return new Set()
    const topics = new Set<string>()
    for (const m of this.members.values()) {
      const parsed = parseSubscriptionTopics(m.metadataFor(this.protocolName))
      if (parsed === null) return null
      for (const t of parsed) topics.add(t)
    }
    return topics
  }

  /** GroupMetadataValue of this group with `assignment` (member id to bytes; absent: empty). */
  toPersisted(assignment: ReadonlyMap<string, Buffer>): PersistedGroup {
    const protocolName = this.protocolName
    return {
      protocolType: this.protocolType ?? '',
      generationId: this.generationId,
      protocolName,
      leaderId: this.leaderId,
      currentStateTimestampMs: this.stateTimestampMs ?? -1,
      members: [...this.members.values()].map(
        (m): PersistedMember => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          rebalanceTimeoutMs: m.rebalanceTimeoutMs,
          sessionTimeoutMs: m.sessionTimeoutMs,
          subscription: protocolName === null ? EMPTY_ASSIGNMENT : m.metadataFor(protocolName),
          assignment: assignment.get(m.memberId) ?? EMPTY_ASSIGNMENT,
        }),
      ),
    }
  }

  /** Kafka's ClassicGroup.fromRecord: Empty without members, else Stable. */
  static fromPersisted(groupId: GroupId, value: PersistedGroup, nowMs: number): ClassicGroup {
    const group = new ClassicGroup(groupId, nowMs)
    group.protocolType = value.protocolType === '' ? null : value.protocolType
    group.generationId = value.generationId
    group.protocolName = value.protocolName
    group.stateTimestampMs = value.currentStateTimestampMs >= 0 ? value.currentStateTimestampMs : null
    group.state = value.members.length === 0 ? GroupState.Empty : GroupState.Stable
    for (const pm of value.members) {
      const m = new GroupMember({
        memberId: pm.memberId,
        groupInstanceId: pm.groupInstanceId,
        clientId: pm.clientId,
        clientHost: pm.clientHost,
        rebalanceTimeoutMs: pm.rebalanceTimeoutMs < 0 ? pm.sessionTimeoutMs : pm.rebalanceTimeoutMs,
        sessionTimeoutMs: pm.sessionTimeoutMs,
        protocolType: value.protocolType,
        protocols: [{ name: value.protocolName ?? '', metadata: pm.subscription }],
      })
      m.assignment = pm.assignment
      group.members.set(m.memberId, m)
      group.#countProtocols(m, 1)
      if (m.groupInstanceId !== null) group.staticMembers.set(m.groupInstanceId, m.memberId)
    }
    group.leaderId = value.leaderId !== null && group.members.has(value.leaderId) ? value.leaderId : null
    group.subscribedTopics = group.#computeSubscribedTopics()
    return group
  }
}

/** The topics of a ConsumerProtocolSubscription (its int16 version first), or null if it does not parse. */
export function parseSubscriptionTopics(metadata: Buffer): string[] | null {
  try {
    const r = new Reader(metadata)
    const version = r.int16()
    if (version < 0) return null
    const highest = ConsumerProtocolSubscriptionData.consumerProtocolSubscriptionSchema.maxVersion
    return ConsumerProtocolSubscriptionData.readConsumerProtocolSubscription(r, Math.min(version, highest))
      .topics
  } catch (e) {
    if (e instanceof DecodeError) return null
    throw e
  }
}
