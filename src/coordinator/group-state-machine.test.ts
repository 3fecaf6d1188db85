import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { ManualClock, SeededRandom, type TimerHandle } from '../io/index.ts'
import type { GroupId, TopicName } from '../model/index.ts'
import { ConsumerProtocolSubscriptionData, ErrorCode, Writer } from '../protocol/index.ts'
import type { CoordinatorRecord } from './coordinator-records.ts'
import { GroupState, type MemberProtocol } from './group.ts'
import {
  type CommitInput,
  DEFAULT_GROUP_CONFIG,
  type GroupConfig,
  GroupStateMachine,
  type JoinInput,
  type JoinResult,
  type Reply,
  type SyncResult,
  type TxnCommitInput,
} from './group-state-machine.ts'

const G = 'group' as GroupId
const T1 = 'topic-a' as TopicName
const T2 = 'topic-b' as TopicName
const START_MS = 1_700_000_000_000
const PID = 4000n

/** ConsumerProtocolSubscription v1 bytes, as a Java consumer sends them. */
function subscription(topics: string[]): Buffer {
  const w = new Writer()
  w.int16(1)
  ConsumerProtocolSubscriptionData.writeConsumerProtocolSubscription(w, { topics, userData: null }, 1)
  return w.toBuffer()
}

const RANGE: MemberProtocol[] = [{ name: 'range', metadata: subscription([T1]) }]

/**
 * Drives a GroupStateMachine as the shell does: timers on a ManualClock, writes completed at once
 * (or held), replies collected by token.
 */
class Harness {
  readonly clock = new ManualClock({ nowMs: START_MS })
  readonly machine: GroupStateMachine
  readonly replies = new Map<number, Reply>()
  readonly timers = new Map<string, TimerHandle>()
  /** Every batch written, in order. */
  readonly written: CoordinatorRecord[][] = []
  /** Every batch written, as a log holds it: its base offset and producer id (-1: not transactional). */
  readonly log: (
    | { baseOffset: bigint; producerId: bigint; records: readonly CoordinatorRecord[] }
    | { baseOffset: bigint; producerId: bigint; committed: boolean }
  )[] = []
  /** Writes not yet completed (when `holdWrites`). */
  readonly held: { writeId: number; records: readonly CoordinatorRecord[]; baseOffset: bigint }[] = []
  /** The log end: the offset the next batch gets. */
  nextOffset = 0n
  holdWrites = false
  /** Error code every write completes with. */
  writeError: ErrorCode = ErrorCode.None
  #token = 1

  constructor(config: Partial<GroupConfig> = {}) {
    this.machine = new GroupStateMachine({
      config: { ...DEFAULT_GROUP_CONFIG, ...config },
      clock: this.clock,
      random: new SeededRandom(7),
    })
  }

  drain(): void {
    for (;;) {
      const effects = this.machine.takeEffects()
      if (effects.length === 0) return
      for (const e of effects) {
        switch (e.kind) {
          case 'reply':
            assert.ok(!this.replies.has(e.reply.token), `token ${e.reply.token} answered twice`)
            this.replies.set(e.reply.token, e.reply)
            break
          case 'schedule': {
            const old = this.timers.get(e.key)
            if (old !== undefined) this.clock.clearTimer(old)
            this.timers.set(
              e.key,
              this.clock.setTimer(e.delayMs, () => {
                this.timers.delete(e.key)
                this.machine.fire(e.key)
                this.drain()
              }),
            )
            break
          }
          case 'cancel': {
            const old = this.timers.get(e.key)
            if (old !== undefined) this.clock.clearTimer(old)
            this.timers.delete(e.key)
            break
          }
          case 'write': {
            this.written.push([...e.records])
            const baseOffset = this.nextOffset
            if (this.writeError === ErrorCode.None) {
              this.nextOffset += BigInt(e.records.length)
              this.log.push({ baseOffset, producerId: e.transaction?.producerId ?? -1n, records: e.records })
            }
            if (this.holdWrites) this.held.push({ writeId: e.writeId, records: e.records, baseOffset })
            else this.machine.onWriteComplete(e.writeId, this.writeError, baseOffset)
            break
          }
        }
      }
    }
  }

  /** Replays what `other` wrote, as a load reads its log, then ends the load. */
  loadFrom(other: Harness): void {
    for (const batch of other.log) {
      if ('committed' in batch) {
        this.machine.replayEndTransactionMarker(batch.producerId, batch.committed)
        continue
      }
      batch.records.forEach((r, i) => {
        this.machine.replay(r, batch.baseOffset + BigInt(i), batch.producerId)
      })
    }
    this.machine.onLoaded()
    this.drain()
  }

  completeHeld(errorCode: ErrorCode = ErrorCode.None): void {
    for (const w of this.held.splice(0)) this.machine.onWriteComplete(w.writeId, errorCode, w.baseOffset)
    this.drain()
  }

  /**
   * Moves time until every token is answered: the initial delay is extended for each member that
   * joined during it, so a group of several takes more than one delay.
   */
  advanceUntilAnswered(tokens: readonly number[]): void {
    for (let i = 0; i < 100 && !tokens.every((t) => this.answered(t)); i++) this.advance(1000)
  }

  advance(ms: number): void {
    this.clock.advance(ms)
    this.drain()
  }

  state(groupId: GroupId = G): GroupState | undefined {
    return this.machine.group(groupId)?.state
  }

  join(input: Partial<JoinInput> & { memberId?: string }): number {
    const token = this.#token++
    this.machine.joinGroup(token, {
      groupId: G,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: RANGE,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 30_000,
      clientId: 'client',
      clientHost: '/127.0.0.1',
      apiVersion: 3,
      reason: null,
      ...input,
    })
    this.drain()
    return token
  }

  /** A join whose answer must have come already. */
  joinNow(input: Partial<JoinInput>): JoinResult {
    const token = this.join(input)
    return this.joinResult(token)
  }

  joinResult(token: number): JoinResult {
    const r = this.replies.get(token)
    assert.ok(r !== undefined, `JoinGroup ${token} has no answer yet`)
    assert.equal(r.kind, 'join')
    return (r as Reply & { kind: 'join' }).result
  }

  answered(token: number): boolean {
    return this.replies.has(token)
  }

  sync(
    memberId: string,
    generationId: number,
    assignments: { memberId: string; assignment: Buffer }[] = [],
  ): number {
    const token = this.#token++
    this.machine.syncGroup(token, {
      groupId: G,
      generationId,
      memberId,
      groupInstanceId: this.machine.group(G)?.members.get(memberId)?.groupInstanceId ?? null,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments,
      apiVersion: 5,
    })
    this.drain()
    return token
  }

  syncResult(token: number): SyncResult {
    const r = this.replies.get(token)
    assert.ok(r !== undefined, `SyncGroup ${token} has no answer yet`)
    assert.equal(r.kind, 'sync')
    return (r as Reply & { kind: 'sync' }).result
  }

  heartbeat(memberId: string, generationId: number, groupInstanceId: string | null = null): ErrorCode {
    const e = this.machine.heartbeat({ groupId: G, memberId, generationId, groupInstanceId })
    this.drain()
    return e
  }

  commit(
    input: Partial<CommitInput>,
    offsets: { topic: TopicName; partition: number; offset: bigint }[],
  ): number {
    const token = this.#token++
    this.machine.commitOffsets(token, {
      groupId: G,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1,
      apiVersion: 8,
      topics: [...new Set(offsets.map((o) => o.topic))].map((name) => ({
        name,
        partitions: offsets
          .filter((o) => o.topic === name)
          .map((o) => ({
            partitionIndex: o.partition,
            committedOffset: o.offset,
            committedLeaderEpoch: 3,
            commitTimestamp: -1n,
            committedMetadata: 'meta',
          })),
      })),
      ...input,
    })
    this.drain()
    return token
  }

  txnCommit(
    input: Partial<TxnCommitInput>,
    offsets: { topic: TopicName; partition: number; offset: bigint }[],
  ): number {
    const token = this.#token++
    this.machine.commitTransactionalOffsets(token, {
      groupId: G,
      producerId: PID,
      producerEpoch: 0,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [...new Set(offsets.map((o) => o.topic))].map((name) => ({
        name,
        partitions: offsets
          .filter((o) => o.topic === name)
          .map((o) => ({
            partitionIndex: o.partition,
            committedOffset: o.offset,
            committedLeaderEpoch: 5,
            commitTimestamp: -1n,
            committedMetadata: 'txn',
          })),
      })),
      ...input,
    })
    this.drain()
    return token
  }

  txnCommitErrors(token: number): number[] {
    const r = this.replies.get(token)
    assert.ok(r !== undefined && r.kind === 'txnCommit', `TxnOffsetCommit ${token} has no answer yet`)
    return r.result.flatMap((t) => (t.partitions ?? []).map((p) => p.errorCode ?? ErrorCode.None))
  }

  /** The marker of `producerId`'s transaction, written to the log and then applied. Returns its token. */
  marker(producerId: bigint, committed: boolean): number {
    const token = this.#token++
    this.log.push({ baseOffset: this.nextOffset++, producerId, committed })
    this.machine.completeTransaction(token, producerId, committed)
    this.drain()
    return token
  }

  /** OffsetFetch with requireStable of `topic`'s partitions: [offset, error] each, or null if not answered yet. */
  stableFetch(topic: TopicName, partitions: number[]): { token: number; answer: () => [bigint, number][] } {
    const token = this.#token++
    this.machine.fetchStableOffsets(token, G, [{ name: topic, partitionIndexes: partitions }])
    this.drain()
    return {
      token,
      answer: () => {
        const r = this.replies.get(token)
        assert.ok(r !== undefined && r.kind === 'fetch', `OffsetFetch ${token} has no answer yet`)
        return r.result.topics[0]!.partitions!.map((p) => [p.committedOffset!, p.errorCode ?? ErrorCode.None])
      },
    }
  }

  commitErrors(token: number): number[] {
    const r = this.replies.get(token)
    assert.ok(r !== undefined && r.kind === 'commit', `OffsetCommit ${token} has no answer yet`)
    return r.result.flatMap((t) => (t.partitions ?? []).map((p) => p.errorCode ?? ErrorCode.None))
  }

  /** A stable group of `n` dynamic members (v3 joins, one initial delay), synced. Returns member ids. */
  stableGroup(n: number): { members: string[]; leader: string; generation: number } {
    const tokens = Array.from({ length: n }, (_, i) => this.join({ clientId: `c${i}` }))
    this.advanceUntilAnswered(tokens)
    const results = tokens.map((t) => this.joinResult(t))
    const leader = results[0]!.leader
    const generation = results[0]!.generationId
    const members = results.map((r) => r.memberId)
    const syncs = members.map((m) =>
      this.sync(
        m,
        generation,
        m === leader ? members.map((id, i) => ({ memberId: id, assignment: Buffer.from(`a${i}`) })) : [],
      ),
    )
    for (const s of syncs) assert.equal(this.syncResult(s).errorCode, ErrorCode.None)
    assert.equal(this.state(), GroupState.Stable)
    return { members, leader, generation }
  }
}

describe('GroupStateMachine: joining', () => {
  test('the first JoinGroup moves Empty to PreparingRebalance; the initial delay ends the join phase', () => {
    const h = new Harness()
    const t = h.join({})
    assert.equal(h.state(), GroupState.PreparingRebalance)
    assert.equal(h.answered(t), false)
    h.advance(2999)
    assert.equal(h.answered(t), false, 'group.initial.rebalance.delay.ms has not passed')
    h.advance(1)
    const r = h.joinResult(t)
    assert.equal(r.errorCode, ErrorCode.None)
    assert.equal(r.generationId, 1)
    assert.equal(r.leader, r.memberId)
    assert.equal(r.protocolName, 'range')
    assert.equal(r.protocolType, 'consumer')
    assert.equal(r.members.length, 1)
    assert.match(r.memberId, /^client-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.equal(h.state(), GroupState.CompletingRebalance)
  })

  test('members joining during the initial delay extend it, up to the rebalance timeout', () => {
    const h = new Harness({ initialRebalanceDelayMs: 3000 })
    const a = h.join({ rebalanceTimeoutMs: 7000 })
    h.advance(2000)
    const b = h.join({ rebalanceTimeoutMs: 7000 })
    h.advance(1000) // first delay ends at 3000: a member was added, so wait min(3000, 4000) more
    assert.equal(h.answered(a), false)
    h.advance(2000)
    const c = h.join({ rebalanceTimeoutMs: 7000 })
    h.advance(1000) // second delay ends at 6000: added again, remaining 1000
    assert.equal(h.answered(a), false)
    h.advance(1000) // third delay of 1000 ends at 7000: remaining is 0, complete
    for (const t of [a, b, c]) assert.equal(h.joinResult(t).generationId, 1)
    assert.equal(h.joinResult(a).members.length, 3)
    assert.equal(h.joinResult(b).members.length, 0, 'only the leader gets the members')
  })

  test('JoinGroup v4+ without a member id is answered MEMBER_ID_REQUIRED with one (KIP-394)', () => {
    const h = new Harness()
    const first = h.joinNow({ apiVersion: 4 })
    assert.equal(first.errorCode, ErrorCode.MemberIdRequired)
    assert.notEqual(first.memberId, '')
    assert.equal(h.state(), GroupState.Empty)
    const t = h.join({ apiVersion: 4, memberId: first.memberId })
    h.advance(3000)
    assert.equal(h.joinResult(t).memberId, first.memberId)
    assert.equal(h.joinResult(t).errorCode, ErrorCode.None)
  })

  test('a pending member that never comes back expires after its session timeout', () => {
    const h = new Harness()
    const first = h.joinNow({ apiVersion: 9, sessionTimeoutMs: 6000 })
    assert.ok(h.machine.group(G)!.isPendingMember(first.memberId))
    h.advance(6000)
    assert.equal(h.machine.group(G)!.isPendingMember(first.memberId), false)
    assert.equal(h.joinNow({ apiVersion: 9, memberId: first.memberId }).errorCode, ErrorCode.UnknownMemberId)
  })

  test('a known member id for a group that does not exist is UNKNOWN_MEMBER_ID', () => {
    const h = new Harness()
    assert.equal(h.joinNow({ memberId: 'someone' }).errorCode, ErrorCode.UnknownMemberId)
    assert.equal(h.state(), undefined)
  })

  test('session timeouts outside group.min/max.session.timeout.ms are INVALID_SESSION_TIMEOUT', () => {
    const h = new Harness({ sessionTimeoutMsMin: 6000, sessionTimeoutMsMax: 300_000 })
    assert.equal(h.joinNow({ sessionTimeoutMs: 5999 }).errorCode, ErrorCode.InvalidSessionTimeout)
    assert.equal(h.joinNow({ sessionTimeoutMs: 300_001 }).errorCode, ErrorCode.InvalidSessionTimeout)
    assert.equal(h.state(), undefined, 'no group is left behind')
  })

  test('an empty group id is INVALID_GROUP_ID', () => {
    const h = new Harness()
    assert.equal(h.joinNow({ groupId: '' as GroupId }).errorCode, ErrorCode.InvalidGroupId)
  })

  test('a protocol type or protocols the group does not share are INCONSISTENT_GROUP_PROTOCOL', () => {
    const h = new Harness()
    assert.equal(h.joinNow({ protocolType: '' }).errorCode, ErrorCode.InconsistentGroupProtocol)
    assert.equal(h.joinNow({ protocols: [] }).errorCode, ErrorCode.InconsistentGroupProtocol)
    h.join({})
    assert.equal(h.joinNow({ protocolType: 'connect' }).errorCode, ErrorCode.InconsistentGroupProtocol)
    assert.equal(
      h.joinNow({ protocols: [{ name: 'sticky', metadata: Buffer.alloc(0) }] }).errorCode,
      ErrorCode.InconsistentGroupProtocol,
    )
  })

  test('the protocol is one every member supports, by most first-choice votes', () => {
    const h = new Harness()
    const p = (name: string) => ({ name, metadata: subscription([T1]) })
    const a = h.join({ protocols: [p('range'), p('roundrobin')] })
    const b = h.join({ protocols: [p('roundrobin'), p('range')] })
    const c = h.join({ protocols: [p('roundrobin'), p('range'), p('sticky')] })
    h.advanceUntilAnswered([a, b, c])
    for (const t of [a, b, c]) assert.equal(h.joinResult(t).protocolName, 'roundrobin')
    const leader = h.joinResult(a)
    assert.ok(leader.members.every((m) => m.metadata.equals(subscription([T1]))))
  })

  test('group.max.size refuses members beyond it with GROUP_MAX_SIZE_REACHED', () => {
    const h = new Harness({ groupSizeMax: 2 })
    const { generation } = h.stableGroup(2)
    const r = h.joinNow({})
    assert.equal(r.errorCode, ErrorCode.GroupMaxSizeReached)
    assert.equal(h.state(), GroupState.Stable)
    assert.equal(h.machine.group(G)!.generationId, generation)
  })
})

describe('GroupStateMachine: syncing', () => {
  test('the leader assignment is persisted, then every member gets its part and the group is Stable', () => {
    const h = new Harness()
    h.holdWrites = true
    const a = h.join({ clientId: 'a' })
    const b = h.join({ clientId: 'b' })
    h.advanceUntilAnswered([a, b])
    const ra = h.joinResult(a)
    const rb = h.joinResult(b)
    const leader = ra.leader
    const follower = leader === ra.memberId ? rb.memberId : ra.memberId
    const fs = h.sync(follower, 1)
    assert.equal(h.answered(fs), false, 'a follower waits for the leader')
    const ls = h.sync(leader, 1, [
      { memberId: leader, assignment: Buffer.from('L') },
      { memberId: follower, assignment: Buffer.from('F') },
    ])
    assert.equal(h.answered(ls), false, 'nothing is answered before the assignment is written')
    assert.equal(h.state(), GroupState.CompletingRebalance)
    const [record] = h.written.at(-1)!
    assert.equal(record?.kind, 'group')
    assert.equal(record?.value?.generationId, 1)
    assert.deepEqual(record?.value?.members.map((m) => m.assignment.toString()).sort(), ['F', 'L'])
    h.completeHeld()
    assert.equal(h.state(), GroupState.Stable)
    assert.equal(h.syncResult(ls).assignment.toString(), 'L')
    assert.equal(h.syncResult(fs).assignment.toString(), 'F')
    assert.equal(h.syncResult(fs).protocolName, 'range')
    // A SyncGroup in Stable returns the member's assignment.
    assert.equal(h.syncResult(h.sync(follower, 1)).assignment.toString(), 'F')
  })

  test('a member missing from the leader assignment gets an empty one', () => {
    const h = new Harness()
    const a = h.join({})
    const b = h.join({})
    h.advanceUntilAnswered([a, b])
    const leader = h.joinResult(a).leader
    const other = [h.joinResult(a).memberId, h.joinResult(b).memberId].find((m) => m !== leader)!
    h.sync(leader, 1, [{ memberId: leader, assignment: Buffer.from('x') }])
    assert.equal(h.syncResult(h.sync(other, 1)).assignment.length, 0)
  })

  test('a failed assignment write answers the waiting members with the error and rebalances', () => {
    const h = new Harness()
    h.holdWrites = true
    const a = h.join({})
    h.advance(3000)
    const m = h.joinResult(a).memberId
    const s = h.sync(m, 1, [{ memberId: m, assignment: Buffer.from('x') }])
    h.completeHeld(ErrorCode.NotLeaderOrFollower)
    assert.equal(h.syncResult(s).errorCode, ErrorCode.NotCoordinator)
    assert.equal(h.state(), GroupState.PreparingRebalance)
  })

  test('SyncGroup errors: unknown group or member, wrong generation, inconsistent protocol, rebalancing', () => {
    const h = new Harness()
    assert.equal(h.syncResult(h.sync('nobody', 1)).errorCode, ErrorCode.UnknownMemberId)
    const { members, generation } = h.stableGroup(2)
    assert.equal(h.syncResult(h.sync('nobody', generation)).errorCode, ErrorCode.UnknownMemberId)
    assert.equal(h.syncResult(h.sync(members[0]!, generation + 1)).errorCode, ErrorCode.IllegalGeneration)
    const token = 999
    h.machine.syncGroup(token, {
      groupId: G,
      generationId: generation,
      memberId: members[0]!,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocolName: 'roundrobin',
      assignments: [],
      apiVersion: 5,
    })
    h.drain()
    assert.equal(h.syncResult(token).errorCode, ErrorCode.InconsistentGroupProtocol)
    h.join({})
    assert.equal(h.state(), GroupState.PreparingRebalance)
    assert.equal(h.syncResult(h.sync(members[0]!, generation)).errorCode, ErrorCode.RebalanceInProgress)
  })

  test('a member that does not sync within the rebalance timeout is removed (pending sync expiry)', () => {
    const h = new Harness()
    const a = h.join({ rebalanceTimeoutMs: 20_000, sessionTimeoutMs: 30_000 })
    const b = h.join({ rebalanceTimeoutMs: 20_000, sessionTimeoutMs: 30_000 })
    h.advanceUntilAnswered([a, b])
    const leader = h.joinResult(a).leader
    const other = [h.joinResult(a).memberId, h.joinResult(b).memberId].find((m) => m !== leader)!
    const s = h.sync(leader, 1, [{ memberId: leader, assignment: Buffer.from('x') }])
    assert.equal(h.syncResult(s).errorCode, ErrorCode.None)
    assert.equal(h.state(), GroupState.Stable)
    h.advance(19_999)
    assert.ok(h.machine.group(G)!.hasMember(other))
    h.advance(1)
    assert.equal(h.machine.group(G)!.hasMember(other), false)
    assert.equal(h.state(), GroupState.PreparingRebalance)
  })
})

describe('GroupStateMachine: rebalancing', () => {
  test('a new member rebalances a Stable group; heartbeats answer REBALANCE_IN_PROGRESS until all rejoin', () => {
    const h = new Harness()
    const { members, generation } = h.stableGroup(2)
    const n = h.join({ clientId: 'new' })
    assert.equal(h.state(), GroupState.PreparingRebalance)
    for (const m of members) assert.equal(h.heartbeat(m, generation), ErrorCode.RebalanceInProgress)
    const rejoins = members.map((memberId) => h.join({ memberId }))
    // No initial delay now: the last rejoin completes the phase at once.
    for (const t of [n, ...rejoins]) assert.equal(h.joinResult(t).generationId, generation + 1)
    assert.equal(h.state(), GroupState.CompletingRebalance)
    assert.equal(h.machine.group(G)!.size, 3)
  })

  test('a member that does not rejoin within the rebalance timeout is removed', () => {
    const h = new Harness()
    const { members, leader, generation } = h.stableGroup(2)
    const follower = members.find((m) => m !== leader)!
    const rejoin = h.join({ memberId: leader, rebalanceTimeoutMs: 30_000 })
    assert.equal(h.state(), GroupState.PreparingRebalance)
    // The follower keeps heartbeating (session 10 s) but never rejoins.
    for (let i = 0; i < 3; i++) {
      h.advance(9000)
      assert.equal(h.heartbeat(follower, generation), ErrorCode.RebalanceInProgress)
      assert.equal(h.answered(rejoin), false)
    }
    h.advance(3000)
    const r = h.joinResult(rejoin)
    assert.equal(r.generationId, generation + 1)
    assert.equal(r.members.length, 1)
    assert.equal(h.machine.group(G)!.hasMember(follower), false)
    assert.equal(h.heartbeat(follower, generation), ErrorCode.UnknownMemberId)
  })

  test('a Stable member that stops heartbeating is removed after its session timeout', () => {
    const h = new Harness()
    const { members, generation } = h.stableGroup(2)
    for (let i = 0; i < 3; i++) {
      h.advance(3000)
      assert.equal(h.heartbeat(members[0]!, generation), ErrorCode.None)
    }
    assert.ok(h.machine.group(G)!.hasMember(members[1]!))
    h.advance(1000)
    // members[1] last showed life at its sync, 10 s (its session timeout) ago: it is gone.
    assert.equal(h.machine.group(G)!.hasMember(members[1]!), false)
    assert.equal(h.state(), GroupState.PreparingRebalance)
    assert.equal(h.heartbeat(members[0]!, generation), ErrorCode.RebalanceInProgress)
    const t = h.join({ memberId: members[0]! })
    const r = h.joinResult(t)
    assert.equal(r.generationId, generation + 1)
    assert.equal(r.members.length, 1, 'the survivor leads alone and assigns itself everything')
    assert.equal(h.heartbeat(members[1]!, generation), ErrorCode.UnknownMemberId)
  })

  test('the leader rejoining a Stable group forces a rebalance; a follower with the same metadata does not', () => {
    const h = new Harness()
    const { members, leader, generation } = h.stableGroup(2)
    const follower = members.find((m) => m !== leader)!
    const f = h.joinNow({ memberId: follower })
    assert.equal(f.generationId, generation)
    assert.equal(h.state(), GroupState.Stable)
    h.join({ memberId: leader })
    assert.equal(h.state(), GroupState.PreparingRebalance)
  })

  test('a member with new metadata rebalances; one that missed its JoinGroup answer gets it again', () => {
    const h = new Harness()
    const a = h.join({})
    const b = h.join({})
    h.advanceUntilAnswered([a, b])
    const leader = h.joinResult(a).leader
    const ma = h.joinResult(a).memberId === leader ? h.joinResult(b).memberId : h.joinResult(a).memberId
    const mb = leader
    assert.equal(h.state(), GroupState.CompletingRebalance)
    const again = h.joinNow({ memberId: mb })
    assert.equal(again.generationId, 1)
    assert.equal(again.members.length, 2, 'the leader gets the members again')
    assert.equal(h.state(), GroupState.CompletingRebalance)
    const s = h.sync(ma, 1)
    assert.equal(h.answered(s), false)
    h.join({ memberId: mb, protocols: [{ name: 'range', metadata: subscription([T1, T2]) }] })
    assert.equal(h.state(), GroupState.PreparingRebalance)
    assert.equal(h.syncResult(s).errorCode, ErrorCode.RebalanceInProgress)
  })

  test('the last member leaving empties the group and persists the empty generation', () => {
    const h = new Harness()
    const { members, generation } = h.stableGroup(2)
    let r = h.machine.leaveGroup({
      groupId: G,
      members: [{ memberId: members[0]!, groupInstanceId: null, reason: 'bye' }],
    })
    h.drain()
    assert.deepEqual(
      r.members.map((m) => m.errorCode),
      [ErrorCode.None],
    )
    assert.equal(h.state(), GroupState.PreparingRebalance)
    r = h.machine.leaveGroup({
      groupId: G,
      members: [{ memberId: members[1]!, groupInstanceId: null, reason: null }],
    })
    h.drain()
    assert.equal(h.state(), GroupState.Empty)
    const last = h.written.at(-1)![0]!
    assert.equal(last.kind, 'group')
    assert.equal(last.value?.generationId, generation + 1)
    assert.equal(last.value?.members.length, 0)
    assert.equal(last.value?.protocolName, null)
  })

  test('LeaveGroup answers per member: unknown members, pending members, by instance id', () => {
    const h = new Harness()
    const pending = h.joinNow({ apiVersion: 9 }).memberId
    const s = h.join({ groupInstanceId: 'static-1', apiVersion: 5 })
    h.advance(3000)
    const staticId = h.joinResult(s).memberId
    const r = h.machine.leaveGroup({
      groupId: G,
      members: [
        { memberId: 'nobody', groupInstanceId: null, reason: null },
        { memberId: pending, groupInstanceId: null, reason: null },
        { memberId: '', groupInstanceId: 'static-1', reason: 'admin' },
        { memberId: '', groupInstanceId: 'static-2', reason: null },
      ],
    })
    h.drain()
    assert.deepEqual(
      r.members.map((m) => m.errorCode),
      [ErrorCode.UnknownMemberId, ErrorCode.None, ErrorCode.None, ErrorCode.UnknownMemberId],
    )
    assert.equal(h.machine.group(G)!.hasMember(staticId), false)
    assert.equal(
      h.machine.leaveGroup({ groupId: 'other' as GroupId, members: [] }).errorCode,
      ErrorCode.UnknownMemberId,
    )
  })

  test('a new member whose JoinGroup waits too long is dropped (new member join timeout)', () => {
    const h = new Harness({ newMemberJoinTimeoutMs: 60_000 })
    const { members } = h.stableGroup(1)
    // A slow rebalance: the old member keeps heartbeating through the whole rebalance timeout.
    h.join({ memberId: members[0]!, rebalanceTimeoutMs: 600_000, sessionTimeoutMs: 600_000 })
    h.join({ memberId: members[0]!, rebalanceTimeoutMs: 600_000, sessionTimeoutMs: 600_000 })
    assert.equal(h.state(), GroupState.CompletingRebalance)
    const late = h.join({ clientId: 'late', rebalanceTimeoutMs: 600_000 })
    assert.equal(h.state(), GroupState.PreparingRebalance)
    h.advance(60_000)
    const r = h.joinResult(late)
    assert.equal(r.errorCode, ErrorCode.UnknownMemberId)
    assert.equal(r.memberId, '')
  })
})

describe('GroupStateMachine: static membership', () => {
  test('a static member that restarts takes its old place without a rebalance; the old id is fenced', () => {
    const h = new Harness()
    const a = h.join({ groupInstanceId: 'i-a' })
    const b = h.join({ groupInstanceId: 'i-b' })
    h.advanceUntilAnswered([a, b])
    const ra = h.joinResult(a)
    const rb = h.joinResult(b)
    const leader = ra.leader
    h.sync(ra.memberId, 1, [
      { memberId: ra.memberId, assignment: Buffer.from('A') },
      { memberId: rb.memberId, assignment: Buffer.from('B') },
    ])
    h.sync(rb.memberId, 1)
    assert.equal(h.state(), GroupState.Stable)
    // b restarts: a JoinGroup with no member id and its instance id.
    const restarted = h.joinNow({ groupInstanceId: 'i-b' })
    assert.equal(restarted.errorCode, ErrorCode.None)
    assert.notEqual(restarted.memberId, rb.memberId)
    assert.equal(restarted.generationId, 1, 'same generation: no rebalance')
    assert.equal(restarted.leader, leader)
    assert.equal(h.state(), GroupState.Stable)
    const persisted = h.written.at(-1)![0]!
    assert.equal(persisted.kind, 'group')
    assert.ok(
      persisted.value?.members.some((m) => m.memberId === restarted.memberId && m.groupInstanceId === 'i-b'),
    )
    assert.equal(h.syncResult(h.sync(restarted.memberId, 1)).assignment.toString(), 'B')
    assert.equal(h.heartbeat(rb.memberId, 1, 'i-b'), ErrorCode.FencedInstanceId)
    assert.equal(h.heartbeat(restarted.memberId, 1, 'i-b'), ErrorCode.None)
  })

  test('v9: a restarted static leader learns the members and skips the assignment (KIP-814)', () => {
    const h = new Harness()
    const a = h.join({ groupInstanceId: 'i-a' })
    h.advance(3000)
    const ra = h.joinResult(a)
    h.sync(ra.memberId, 1, [{ memberId: ra.memberId, assignment: Buffer.from('A') }])
    const restarted = h.joinNow({ groupInstanceId: 'i-a', apiVersion: 9 })
    assert.equal(restarted.leader, restarted.memberId)
    assert.equal(restarted.skipAssignment, true)
    assert.equal(restarted.members.length, 1)
  })

  test('a failed write of the replacement puts the old member id back', () => {
    const h = new Harness()
    const a = h.join({ groupInstanceId: 'i-a' })
    h.advance(3000)
    const ra = h.joinResult(a)
    h.sync(ra.memberId, 1, [{ memberId: ra.memberId, assignment: Buffer.from('A') }])
    h.holdWrites = true
    const t = h.join({ groupInstanceId: 'i-a' })
    h.completeHeld(ErrorCode.NotEnoughReplicas)
    const r = h.joinResult(t)
    assert.equal(r.errorCode, ErrorCode.CoordinatorNotAvailable)
    assert.equal(h.machine.group(G)!.staticMemberId('i-a'), ra.memberId)
    assert.equal(h.heartbeat(ra.memberId, 1, 'i-a'), ErrorCode.None)
  })

  test('a static member rejoining with other protocols rebalances; during CompletingRebalance too', () => {
    const h = new Harness()
    const p = (name: string) => ({ name, metadata: subscription([T1]) })
    const a = h.join({ groupInstanceId: 'i-a', protocols: [p('range'), p('roundrobin')] })
    const b = h.join({ groupInstanceId: 'i-b', protocols: [p('roundrobin'), p('range')] })
    h.advanceUntilAnswered([a, b])
    const ra = h.joinResult(a)
    const rb = h.joinResult(b)
    assert.equal(ra.protocolName, 'range', 'a tie goes to the first vote')
    assert.equal(h.state(), GroupState.CompletingRebalance)
    // A static member restarting while the leader assigns: rebalance, the leader may know the old id.
    const again = h.join({ groupInstanceId: 'i-b', protocols: [p('roundrobin'), p('range')] })
    assert.equal(h.state(), GroupState.PreparingRebalance)
    const rejoinA = h.join({
      memberId: ra.memberId,
      groupInstanceId: 'i-a',
      protocols: [p('range'), p('roundrobin')],
    })
    const g2 = h.joinResult(rejoinA).generationId
    assert.equal(g2, 2)
    const newB = h.joinResult(again).memberId
    assert.notEqual(newB, rb.memberId)
    h.sync(ra.leader === ra.memberId ? ra.memberId : newB, g2, [])
    h.sync(ra.leader === ra.memberId ? newB : ra.memberId, g2)
    assert.equal(h.state(), GroupState.Stable)
    // In Stable, a restart that changes the selected protocol rebalances.
    h.join({ groupInstanceId: 'i-a', protocols: [p('roundrobin'), p('range')] })
    assert.equal(h.state(), GroupState.PreparingRebalance)
  })

  test('a static member that does not rejoin stays through the join phase until its session expires', () => {
    const h = new Harness()
    const a = h.join({ groupInstanceId: 'i-a', sessionTimeoutMs: 45_000, rebalanceTimeoutMs: 20_000 })
    const b = h.join({ groupInstanceId: 'i-b', sessionTimeoutMs: 45_000, rebalanceTimeoutMs: 20_000 })
    h.advanceUntilAnswered([a, b])
    const ra = h.joinResult(a)
    const rb = h.joinResult(b)
    h.sync(ra.leader, 1, [])
    h.sync(ra.leader === ra.memberId ? rb.memberId : ra.memberId, 1)
    assert.equal(h.state(), GroupState.Stable)
    const leader = ra.leader
    const other = leader === ra.memberId ? rb.memberId : ra.memberId
    // The leader rejoins (rebalance); the other static member stays silent.
    const t = h.join({
      memberId: leader,
      groupInstanceId: leader === ra.memberId ? 'i-a' : 'i-b',
      sessionTimeoutMs: 45_000,
      rebalanceTimeoutMs: 20_000,
    })
    h.advance(20_000)
    assert.equal(h.joinResult(t).generationId, 2)
    assert.ok(h.machine.group(G)!.hasMember(other), 'a static member is not dropped by the join phase')
    h.advance(25_000)
    assert.equal(h.machine.group(G)!.hasMember(other), false, 'its session expired')
  })
})

describe('GroupStateMachine: offsets', () => {
  test('a commit without group management creates a simple group; offsets are visible once written', () => {
    const h = new Harness()
    h.holdWrites = true
    const t = h.commit({}, [{ topic: T1, partition: 0, offset: 42n }])
    assert.equal(h.answered(t), false)
    assert.equal(h.machine.committedOffset(G, T1, 0), undefined, 'not visible before the write completes')
    h.completeHeld()
    assert.deepEqual(h.commitErrors(t), [ErrorCode.None])
    const o = h.machine.committedOffset(G, T1, 0)!
    assert.equal(o.offset, 42n)
    assert.equal(o.leaderEpoch, 3)
    assert.equal(o.metadata, 'meta')
    assert.equal(o.commitTimestampMs, START_MS)
    assert.equal(h.state(), GroupState.Empty)
    assert.equal(h.machine.group(G)!.protocolType, null)
    const fetched = h.machine.fetchOffsets(G, [{ name: T1, partitionIndexes: [0, 1] }])
    assert.deepEqual(
      fetched.topics[0]!.partitions!.map((p) => [p.committedOffset, p.committedLeaderEpoch, p.metadata]),
      [
        [42n, 3, 'meta'],
        [-1n, -1, ''],
      ],
    )
    assert.deepEqual(
      h.machine.fetchOffsets(G, null).topics.map((x) => x.name),
      [T1],
    )
    assert.deepEqual(h.machine.fetchOffsets('nobody' as GroupId, null).topics, [])
  })

  test('commits by members: generation and member checked; REBALANCE_IN_PROGRESS while completing', () => {
    const h = new Harness()
    const a = h.join({})
    h.advance(3000)
    const m = h.joinResult(a).memberId
    const o = [{ topic: T1, partition: 0, offset: 1n }]
    assert.deepEqual(h.commitErrors(h.commit({ generationId: 1, memberId: m }, o)), [
      ErrorCode.RebalanceInProgress,
    ])
    h.sync(m, 1, [{ memberId: m, assignment: Buffer.from('x') }])
    assert.deepEqual(h.commitErrors(h.commit({ generationId: 1, memberId: m }, o)), [ErrorCode.None])
    assert.deepEqual(h.commitErrors(h.commit({ generationId: 2, memberId: m }, o)), [
      ErrorCode.IllegalGeneration,
    ])
    assert.deepEqual(h.commitErrors(h.commit({ generationId: 1, memberId: 'x' }, o)), [
      ErrorCode.UnknownMemberId,
    ])
    assert.deepEqual(
      h.commitErrors(h.commit({}, o)),
      [ErrorCode.UnknownMemberId],
      'no member id on a live group',
    )
    const other = { groupId: 'other' as GroupId, generationId: 3, memberId: 'x' }
    assert.deepEqual(h.commitErrors(h.commit({ ...other, apiVersion: 8 }, o)), [ErrorCode.IllegalGeneration])
    assert.deepEqual(h.commitErrors(h.commit({ ...other, apiVersion: 9 }, o)), [ErrorCode.GroupIdNotFound])
  })

  test('a commit counts as a heartbeat for a Stable member', () => {
    const h = new Harness()
    const { members, generation } = h.stableGroup(1)
    for (let i = 0; i < 5; i++) {
      h.advance(8000)
      h.commit({ generationId: generation, memberId: members[0]! }, [
        { topic: T1, partition: 0, offset: BigInt(i) },
      ])
    }
    assert.equal(h.state(), GroupState.Stable)
  })

  test('metadata longer than offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE for that partition only', () => {
    const h = new Harness({ offsetMetadataBytesMax: 3 })
    const t = h.commit({}, [
      { topic: T1, partition: 0, offset: 1n },
      { topic: T1, partition: 1, offset: 1n },
    ])
    assert.deepEqual(h.commitErrors(t), [ErrorCode.OffsetMetadataTooLarge, ErrorCode.OffsetMetadataTooLarge])
    assert.equal(h.written.length, 0)
  })

  test('a failed commit write answers the mapped error and leaves the offsets as they were', () => {
    const h = new Harness()
    h.writeError = ErrorCode.NotLeaderOrFollower
    const t = h.commit({}, [{ topic: T1, partition: 0, offset: 5n }])
    assert.deepEqual(h.commitErrors(t), [ErrorCode.NotCoordinator])
    assert.equal(h.machine.committedOffset(G, T1, 0), undefined)
    h.writeError = ErrorCode.MessageTooLarge
    assert.deepEqual(h.commitErrors(h.commit({}, [{ topic: T1, partition: 0, offset: 5n }])), [
      ErrorCode.InvalidCommitOffsetSize,
    ])
  })

  test('writes completed out of order apply in the order they were issued', () => {
    const h = new Harness()
    h.holdWrites = true
    const a = h.commit({}, [{ topic: T1, partition: 0, offset: 1n }])
    const b = h.commit({}, [{ topic: T1, partition: 0, offset: 2n }])
    const [wa, wb] = h.held.splice(0)
    h.machine.onWriteComplete(wb!.writeId, ErrorCode.None, wb!.baseOffset)
    h.drain()
    assert.equal(h.answered(b), false, 'waits for the earlier write')
    h.machine.onWriteComplete(wa!.writeId, ErrorCode.None, wa!.baseOffset)
    h.drain()
    assert.ok(h.answered(a) && h.answered(b))
    assert.equal(h.machine.committedOffset(G, T1, 0)!.offset, 2n)
  })

  test('DeleteGroups: only empty groups; tombstones for the group and its offsets', () => {
    const h = new Harness()
    h.commit({}, [
      { topic: T1, partition: 0, offset: 1n },
      { topic: T2, partition: 3, offset: 1n },
    ])
    const busy = 'busy' as GroupId
    h.join({ groupId: busy })
    const token = 77
    h.machine.deleteGroups(token, [G, busy, 'missing' as GroupId])
    h.drain()
    const r = h.replies.get(token)
    assert.ok(r?.kind === 'deleteGroups')
    assert.deepEqual(
      r.result.map((x) => x.errorCode),
      [ErrorCode.None, ErrorCode.NonEmptyGroup, ErrorCode.GroupIdNotFound],
    )
    const batch = h.written.at(-1)!
    assert.deepEqual(
      batch.map((x) => (x.kind === 'offset' ? `${x.topic}-${x.partition}:${x.value}` : `group:${x.value}`)),
      ['topic-a-0:null', 'topic-b-3:null', 'group:null'],
    )
    assert.equal(h.state(), undefined)
    assert.equal(h.machine.committedOffset(G, T1, 0), undefined)
  })

  test('OffsetDelete: empty groups lose offsets; consumer groups keep those of subscribed topics', () => {
    const h = new Harness()
    const { members, generation } = h.stableGroup(1)
    h.commit({ generationId: generation, memberId: members[0]! }, [
      { topic: T1, partition: 0, offset: 1n },
      { topic: T2, partition: 0, offset: 1n },
    ])
    const token = 55
    h.machine.deleteOffsets(token, {
      groupId: G,
      topics: [
        { name: T1, partitions: [{ partitionIndex: 0 }] },
        { name: T2, partitions: [{ partitionIndex: 0 }, { partitionIndex: 9 }] },
      ],
    })
    h.drain()
    const r = h.replies.get(token)
    assert.ok(r?.kind === 'deleteOffsets')
    assert.equal(r.result.errorCode, ErrorCode.None)
    assert.deepEqual(
      r.result.topics?.map((t) => t.partitions?.map((p) => p.errorCode)),
      [[ErrorCode.GroupSubscribedToTopic], [ErrorCode.None, ErrorCode.None]],
    )
    assert.ok(h.machine.committedOffset(G, T1, 0) !== undefined)
    assert.equal(h.machine.committedOffset(G, T2, 0), undefined)
    h.machine.deleteOffsets(56, { groupId: 'missing' as GroupId, topics: [] })
    h.drain()
    const missing = h.replies.get(56)
    assert.ok(missing?.kind === 'deleteOffsets' && missing.result.errorCode === ErrorCode.GroupIdNotFound)
  })

  test('OffsetDelete on a live group of another protocol type is NON_EMPTY_GROUP', () => {
    const h = new Harness()
    h.join({ protocolType: 'connect' })
    h.machine.deleteOffsets(1000, { groupId: G, topics: [{ name: T1, partitions: [{ partitionIndex: 0 }] }] })
    h.drain()
    const r = h.replies.get(1000)
    assert.ok(r?.kind === 'deleteOffsets' && r.result.errorCode === ErrorCode.NonEmptyGroup)
  })
})

describe('GroupStateMachine: transactional offsets', () => {
  const at = (offset: bigint, partition = 0) => [{ topic: T1, partition, offset }]

  test('written in one transactional batch, pending until COMMIT, then committed; requireStable says UNSTABLE_OFFSET_COMMIT meanwhile', () => {
    const h = new Harness()
    const t = h.txnCommit({}, at(12n))
    assert.deepEqual(h.txnCommitErrors(t), [ErrorCode.None])
    assert.deepEqual(h.log.at(-1), { baseOffset: 0n, producerId: PID, records: h.written.at(-1) })
    assert.equal(h.state(), GroupState.Empty, 'a simple group, as a plain commit without generation')
    assert.equal(h.machine.committedOffset(G, T1, 0), undefined)
    assert.equal(h.machine.pendingOffset(PID, G, T1, 0)?.offset, 12n)
    assert.deepEqual(
      h.machine.fetchOffsets(G, [{ name: T1, partitionIndexes: [0] }]).topics[0]!.partitions![0]!
        .committedOffset,
      -1n,
      'OffsetFetch without requireStable sees only committed offsets',
    )
    assert.deepEqual(h.machine.fetchOffsets(G, null).topics, [])
    assert.deepEqual(h.stableFetch(T1, [0, 1]).answer(), [
      [-1n, ErrorCode.UnstableOffsetCommit],
      [-1n, ErrorCode.None],
    ])
    const m = h.marker(PID, true)
    assert.equal(h.replies.get(m)?.kind, 'txnCompleted')
    const o = h.machine.committedOffset(G, T1, 0)!
    assert.deepEqual([o.offset, o.leaderEpoch, o.metadata, o.commitTimestampMs], [12n, 5, 'txn', START_MS])
    assert.equal(h.machine.pendingOffset(PID, G, T1, 0), undefined)
    assert.deepEqual(h.stableFetch(T1, [0]).answer(), [[12n, ErrorCode.None]])
  })

  test('ABORT drops them and keeps the committed offset; a marker repeated changes nothing', () => {
    const h = new Harness()
    h.commit({}, at(3n))
    h.txnCommit({}, at(12n))
    h.marker(PID, false)
    assert.equal(h.machine.committedOffset(G, T1, 0)?.offset, 3n)
    assert.deepEqual(h.stableFetch(T1, [0]).answer(), [[3n, ErrorCode.None]])
    h.txnCommit({ producerEpoch: 1 }, at(14n))
    h.marker(PID, true)
    h.commit({}, at(20n))
    h.marker(PID, true)
    h.marker(PID, false)
    assert.equal(
      h.machine.committedOffset(G, T1, 0)?.offset,
      20n,
      'the retried markers found nothing pending',
    )
  })

  test('a plain commit written after the transactional one wins at COMMIT; one written before loses', () => {
    const h = new Harness()
    h.txnCommit({}, [...at(12n, 0), ...at(12n, 1)])
    h.commit({}, at(20n, 0))
    h.marker(PID, true)
    assert.equal(h.machine.committedOffset(G, T1, 0)?.offset, 20n, 'the newer record is kept')
    assert.equal(h.machine.committedOffset(G, T1, 1)?.offset, 12n)
    const other = 4001n
    h.commit({}, at(30n, 1))
    h.txnCommit({ producerId: other }, at(31n, 1))
    h.marker(other, true)
    assert.equal(h.machine.committedOffset(G, T1, 1)?.offset, 31n)
  })

  test('producers pend apart: one ends, the other stays pending', () => {
    const h = new Harness()
    h.txnCommit({}, at(1n, 0))
    h.txnCommit({ producerId: 4001n }, at(2n, 1))
    h.marker(PID, true)
    assert.deepEqual(h.stableFetch(T1, [0, 1]).answer(), [
      [1n, ErrorCode.None],
      [-1n, ErrorCode.UnstableOffsetCommit],
    ])
  })

  test('the marker and requireStable wait for the writes issued before them', () => {
    const h = new Harness()
    h.holdWrites = true
    const t = h.txnCommit({}, at(12n))
    const f = h.stableFetch(T1, [0])
    const m = h.marker(PID, true)
    assert.equal(h.answered(t) || h.answered(f.token) || h.answered(m), false)
    h.completeHeld()
    assert.deepEqual(f.answer(), [[-1n, ErrorCode.UnstableOffsetCommit]], 'pending when the fetch applied')
    assert.ok(h.answered(m))
    assert.equal(h.machine.committedOffset(G, T1, 0)?.offset, 12n)
  })

  test('unload answers a stable fetch and a marker waiting behind a write: NOT_COORDINATOR, not applied', () => {
    const h = new Harness()
    h.holdWrites = true
    const t = h.txnCommit({}, at(12n))
    const f = h.stableFetch(T1, [0])
    const m = h.marker(PID, true)
    h.machine.unload()
    h.drain()
    assert.deepEqual(h.txnCommitErrors(t), [ErrorCode.NotCoordinator])
    const r = h.replies.get(f.token)
    assert.ok(r?.kind === 'fetch')
    assert.deepEqual([r.result.errorCode, r.result.topics], [ErrorCode.NotCoordinator, []])
    assert.equal(h.replies.get(m)?.kind, 'txnCompleted')
    assert.equal(h.machine.groupCount, 0)
  })

  test('a failed write answers the mapped error and leaves nothing pending', () => {
    const h = new Harness()
    h.writeError = ErrorCode.NotEnoughReplicas
    assert.deepEqual(h.txnCommitErrors(h.txnCommit({}, at(1n))), [ErrorCode.CoordinatorNotAvailable])
    h.writeError = ErrorCode.InvalidProducerEpoch
    assert.deepEqual(h.txnCommitErrors(h.txnCommit({}, at(1n))), [ErrorCode.InvalidProducerEpoch])
    assert.equal(h.machine.pendingOffset(PID, G, T1, 0), undefined)
    const big = new Harness({ offsetMetadataBytesMax: 2 })
    assert.deepEqual(big.txnCommitErrors(big.txnCommit({}, at(1n))), [ErrorCode.OffsetMetadataTooLarge])
    assert.equal(big.written.length, 0)
  })

  test('KIP-447: the member, generation and instance id are checked; no member is needed, nor a completed rebalance', () => {
    const h = new Harness()
    const a = h.join({ groupInstanceId: 'i-a' })
    h.advance(3000)
    const m = h.joinResult(a).memberId
    assert.equal(h.state(), GroupState.CompletingRebalance)
    const member = { generationId: 1, memberId: m, groupInstanceId: 'i-a' }
    assert.deepEqual(h.txnCommitErrors(h.txnCommit(member, at(1n))), [ErrorCode.None], 'while completing')
    h.sync(m, 1, [{ memberId: m, assignment: Buffer.from('x') }])
    assert.deepEqual(h.txnCommitErrors(h.txnCommit({ ...member, generationId: 2 }, at(1n))), [
      ErrorCode.IllegalGeneration,
    ])
    assert.deepEqual(h.txnCommitErrors(h.txnCommit({ ...member, memberId: 'old' }, at(1n))), [
      ErrorCode.FencedInstanceId,
    ])
    assert.deepEqual(
      h.txnCommitErrors(h.txnCommit({ generationId: 1, memberId: 'x', groupInstanceId: null }, at(1n))),
      [ErrorCode.UnknownMemberId],
    )
    assert.deepEqual(
      h.txnCommitErrors(h.txnCommit({}, at(1n))),
      [ErrorCode.None],
      'v0-2: no member on a live group',
    )
    assert.deepEqual(
      h.txnCommitErrors(h.txnCommit({ groupId: 'gone' as GroupId, generationId: 3, memberId: 'x' }, at(1n))),
      [ErrorCode.IllegalGeneration],
      'a generation of a group that does not exist',
    )
    assert.deepEqual(h.txnCommitErrors(h.txnCommit({ groupId: '' as GroupId }, at(1n))), [
      ErrorCode.InvalidGroupId,
    ])
  })

  test('loading: an open transaction stays pending; markers in the log commit or abort', () => {
    const h = new Harness()
    h.commit({}, at(3n, 0))
    h.txnCommit({}, [...at(12n, 0), ...at(12n, 1)])
    h.txnCommit({ producerId: 4001n }, at(40n, 2))
    h.marker(4001n, false)
    h.txnCommit({ producerId: 4002n }, at(50n, 3))
    h.marker(4002n, true)
    const loaded = new Harness()
    loaded.loadFrom(h)
    assert.equal(loaded.machine.committedOffset(G, T1, 0)?.offset, 3n)
    assert.equal(loaded.machine.pendingOffset(PID, G, T1, 1)?.offset, 12n)
    assert.equal(loaded.machine.committedOffset(G, T1, 2), undefined, 'aborted')
    assert.equal(loaded.machine.committedOffset(G, T1, 3)?.offset, 50n, 'committed')
    assert.deepEqual(loaded.stableFetch(T1, [0, 1, 3]).answer(), [
      [-1n, ErrorCode.UnstableOffsetCommit],
      [-1n, ErrorCode.UnstableOffsetCommit],
      [50n, ErrorCode.None],
    ])
    loaded.nextOffset = h.nextOffset
    loaded.marker(PID, true)
    assert.equal(loaded.machine.committedOffset(G, T1, 0)?.offset, 12n)
    assert.equal(loaded.machine.committedOffset(G, T1, 1)?.offset, 12n)
  })

  test('DeleteGroups and OffsetDelete write tombstones for pending offsets too, which drop them', () => {
    const h = new Harness()
    h.txnCommit({}, [...at(1n, 0), ...at(1n, 1)])
    h.machine.deleteOffsets(900, { groupId: G, topics: [{ name: T1, partitions: [{ partitionIndex: 1 }] }] })
    h.drain()
    assert.deepEqual(
      h.written.at(-1)!.map((r) => (r.kind === 'offset' ? [r.partition, r.value] : r.kind)),
      [[1, null]],
    )
    assert.equal(h.machine.pendingOffset(PID, G, T1, 1), undefined)
    h.machine.deleteGroups(901, [G])
    h.drain()
    assert.deepEqual(
      h.written.at(-1)!.map((r) => (r.kind === 'offset' ? `${r.partition}:${r.value}` : `group:${r.value}`)),
      ['0:null', 'group:null'],
    )
    h.marker(PID, true)
    assert.equal(h.machine.committedOffset(G, T1, 0), undefined, 'nothing left to commit')
    const loaded = new Harness()
    loaded.loadFrom(h)
    assert.equal(loaded.machine.committedOffset(G, T1, 0), undefined, 'the log says the same')
  })

  test('retention keeps an offset a transaction holds, and the group while it has open transactions', () => {
    const retention = 60_000
    const h = new Harness({ offsetsRetentionMs: retention })
    h.commit({}, at(1n, 0))
    h.txnCommit({}, at(2n, 0))
    h.advance(retention)
    h.machine.expireOffsets()
    h.drain()
    assert.equal(h.machine.committedOffset(G, T1, 0)?.offset, 1n)
    h.txnCommit({ groupId: 'only-pending' as GroupId }, at(5n, 0))
    h.advance(retention)
    h.machine.expireOffsets()
    h.drain()
    assert.ok(h.machine.group('only-pending'), 'a group with an open transaction stays')
    h.marker(PID, true)
    assert.equal(h.machine.committedOffset(G, T1, 0)?.offset, 2n)
    assert.equal(h.machine.committedOffset('only-pending' as GroupId, T1, 0)?.offset, 5n)
  })
})

describe('GroupStateMachine: transactional offsets, a property', () => {
  type Op =
    | { op: 'commit'; partition: number; offset: bigint }
    | { op: 'txnCommit'; producer: number; partition: number; offset: bigint }
    | { op: 'marker'; producer: number; committed: boolean }
    | { op: 'deleteOffset'; partition: number }
  const partition = fc.integer({ min: 0, max: 2 })
  const producer = fc.integer({ min: 0, max: 1 })
  const offset = fc.bigInt({ min: 0n, max: 99n })
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constant('commit' as const), partition, offset }),
    fc.record({ op: fc.constant('txnCommit' as const), producer, partition, offset }),
    fc.record({ op: fc.constant('marker' as const), producer, committed: fc.boolean() }),
    fc.record({ op: fc.constant('deleteOffset' as const), partition }),
  )

  test('what the coordinator holds is what loading its log gives, and a model of Kafka says the same', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const h = new Harness()
        // Kafka's semantics, by record order: committed offsets, and each producer's pending ones.
        const committed = new Map<number, { offset: bigint; at: number }>()
        const pending = [new Map<number, { offset: bigint; at: number }>(), new Map()]
        ops.forEach((o, at) => {
          if (o.op === 'commit') {
            h.commit({}, [{ topic: T1, partition: o.partition, offset: o.offset }])
            committed.set(o.partition, { offset: o.offset, at })
          } else if (o.op === 'txnCommit') {
            h.txnCommit({ producerId: PID + BigInt(o.producer) }, [
              { topic: T1, partition: o.partition, offset: o.offset },
            ])
            pending[o.producer]!.set(o.partition, { offset: o.offset, at })
          } else if (o.op === 'marker') {
            h.marker(PID + BigInt(o.producer), o.committed)
            for (const [p, v] of pending[o.producer]!) {
              if (o.committed && (committed.get(p)?.at ?? -1) < v.at) committed.set(p, v)
            }
            pending[o.producer]!.clear()
          } else {
            h.machine.deleteOffsets(100_000 + at, {
              groupId: G,
              topics: [{ name: T1, partitions: [{ partitionIndex: o.partition }] }],
            })
            h.drain()
            committed.delete(o.partition)
            for (const p of pending) p.delete(o.partition)
          }
        })
        const loaded = new Harness()
        loaded.loadFrom(h)
        for (const machine of [h.machine, loaded.machine]) {
          for (let p = 0; p <= 2; p++) {
            assert.equal(
              machine.committedOffset(G, T1, p)?.offset,
              committed.get(p)?.offset,
              `partition ${p}`,
            )
            for (let i = 0; i <= 1; i++) {
              assert.equal(
                machine.pendingOffset(PID + BigInt(i), G, T1, p)?.offset,
                pending[i]!.get(p)?.offset,
              )
            }
          }
        }
      }),
      { numRuns: 300 },
    )
  })
})

describe('GroupStateMachine: offset expiry', () => {
  const retention = 60_000

  test('offsets of an empty group expire a retention after it became empty; then the group goes', () => {
    const h = new Harness({ offsetsRetentionMs: retention })
    const { members, generation } = h.stableGroup(1)
    h.commit({ generationId: generation, memberId: members[0]! }, [{ topic: T1, partition: 0, offset: 9n }])
    for (let i = 0; i < 12; i++) {
      h.advance(9000)
      h.heartbeat(members[0]!, generation)
    }
    h.machine.expireOffsets()
    h.drain()
    assert.ok(h.machine.committedOffset(G, T1, 0), 'a subscribed topic of a Stable group is kept')
    h.machine.leaveGroup({
      groupId: G,
      members: [{ memberId: members[0]!, groupInstanceId: null, reason: null }],
    })
    h.drain()
    assert.equal(h.state(), GroupState.Empty)
    h.advance(retention - 1)
    h.machine.expireOffsets()
    h.drain()
    assert.ok(h.machine.committedOffset(G, T1, 0), 'retention counts from when the group emptied')
    h.advance(1)
    h.machine.expireOffsets()
    h.drain()
    assert.equal(h.machine.committedOffset(G, T1, 0), undefined)
    assert.equal(h.state(), undefined, 'an empty group with no offsets is deleted')
    assert.deepEqual(
      h.written.at(-1)!.map((r) => r.kind),
      ['offset', 'group'],
    )
  })

  test('offsets of a simple group expire by their commit time; expire timestamps (v2-4) win', () => {
    const h = new Harness({ offsetsRetentionMs: retention })
    h.commit({}, [{ topic: T1, partition: 0, offset: 1n }])
    h.advance(30_000)
    h.commit({ retentionTimeMs: 5_000 }, [{ topic: T2, partition: 0, offset: 1n }])
    h.commit({}, [{ topic: T1, partition: 1, offset: 1n }])
    h.advance(5_000)
    h.machine.expireOffsets()
    h.drain()
    assert.equal(h.machine.committedOffset(G, T2, 0), undefined, 'its own expire timestamp passed')
    assert.ok(h.machine.committedOffset(G, T1, 0))
    h.advance(25_000)
    h.machine.expireOffsets()
    h.drain()
    assert.equal(h.machine.committedOffset(G, T1, 0), undefined)
    assert.ok(h.machine.committedOffset(G, T1, 1))
    assert.equal(h.state(), GroupState.Empty)
  })

  test('a Stable consumer group loses offsets of topics it no longer subscribes to', () => {
    const h = new Harness({ offsetsRetentionMs: retention })
    const { members, generation } = h.stableGroup(1)
    h.commit({ generationId: generation, memberId: members[0]! }, [
      { topic: T1, partition: 0, offset: 1n },
      { topic: T2, partition: 0, offset: 1n },
    ])
    for (let i = 0; i < 7; i++) {
      h.advance(9_000)
      h.heartbeat(members[0]!, generation)
    }
    h.machine.expireOffsets()
    h.drain()
    assert.ok(h.machine.committedOffset(G, T1, 0))
    assert.equal(h.machine.committedOffset(G, T2, 0), undefined)
    assert.equal(h.state(), GroupState.Stable)
  })
})

describe('GroupStateMachine: loading and moving', () => {
  test('a replayed Stable group keeps its members, who get a session; a static one rejoins without rebalance', () => {
    const h = new Harness()
    const a = h.join({ groupInstanceId: 'i-a' })
    h.advance(3000)
    const ra = h.joinResult(a)
    h.sync(ra.memberId, 1, [{ memberId: ra.memberId, assignment: Buffer.from('A') }])
    h.commit({ generationId: 1, memberId: ra.memberId, groupInstanceId: 'i-a' }, [
      { topic: T1, partition: 0, offset: 7n },
    ])

    const loaded = new Harness()
    loaded.loadFrom(h)
    assert.equal(loaded.state(), GroupState.Stable)
    assert.equal(loaded.machine.committedOffset(G, T1, 0)?.offset, 7n)
    const restarted = loaded.joinNow({ groupInstanceId: 'i-a' })
    assert.equal(restarted.generationId, 1)
    assert.equal(loaded.state(), GroupState.Stable)
    assert.equal(loaded.syncResult(loaded.sync(restarted.memberId, 1)).assignment.toString(), 'A')
  })

  test('a loaded member that never comes back is removed after its session timeout', () => {
    const h = new Harness()
    const { members } = h.stableGroup(1)
    const loaded = new Harness()
    loaded.loadFrom(h)
    assert.ok(loaded.machine.group(G)!.hasMember(members[0]!))
    loaded.advance(10_000)
    assert.equal(loaded.machine.group(G)!.size, 0)
  })

  test('unload answers waiting requests NOT_COORDINATOR and cancels every timer', () => {
    const h = new Harness()
    h.holdWrites = true
    const j = h.join({})
    const c = h.commit({ groupId: 'simple' as GroupId }, [{ topic: T1, partition: 0, offset: 1n }])
    h.machine.unload()
    h.drain()
    assert.equal(h.joinResult(j).errorCode, ErrorCode.NotCoordinator)
    assert.deepEqual(h.commitErrors(c), [ErrorCode.NotCoordinator])
    assert.equal(h.timers.size, 0)
    assert.equal(h.machine.groupCount, 0)
  })
})

describe('GroupStateMachine: describe and list', () => {
  test('DescribeGroups shows metadata and assignments only when Stable; unknown groups are Dead', () => {
    const h = new Harness()
    const { members } = h.stableGroup(2)
    const d = h.machine.describeGroup(G, true)
    assert.equal(d.groupState, 'Stable')
    assert.equal(d.protocolType, 'consumer')
    assert.equal(d.protocolData, 'range')
    assert.deepEqual(d.members?.map((m) => m.memberId).sort(), [...members].sort())
    assert.ok(d.members?.every((m) => (m.memberAssignment?.length ?? 0) > 0 && m.clientHost === '/127.0.0.1'))
    // READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, as Kafka 4.0 answers.
    assert.equal(d.authorizedOperations, 3400)
    h.join({})
    const p = h.machine.describeGroup(G, false)
    assert.equal(p.groupState, 'PreparingRebalance')
    assert.ok(p.members?.every((m) => m.memberAssignment?.length === 0 && m.memberMetadata?.length === 0))
    assert.equal(h.machine.describeGroup('nope' as GroupId, false).groupState, 'Dead')
    const missing = h.machine.describeGroup('nope' as GroupId, true, true)
    assert.equal(missing.errorCode, ErrorCode.GroupIdNotFound)
    assert.equal(missing.authorizedOperations, -2147483648)
  })

  test('ListGroups filters by state and type without case', () => {
    const h = new Harness()
    h.stableGroup(1)
    h.commit({ groupId: 'simple' as GroupId }, [{ topic: T1, partition: 0, offset: 1n }])
    assert.deepEqual(
      h.machine.listGroups([], []).map((g) => [g.groupId, g.groupState, g.protocolType]),
      [
        ['group', 'Stable', 'consumer'],
        ['simple', 'Empty', ''],
      ],
    )
    assert.deepEqual(
      h.machine.listGroups(['stable'], []).map((g) => g.groupId),
      ['group'],
    )
    assert.deepEqual(h.machine.listGroups([], ['Consumer']), [])
    assert.equal(h.machine.listGroups([], ['CLASSIC']).length, 2)
  })
})
