/**
 * A member of a classic consumer group: JoinGroup (with the member id round trip of KIP-394),
 * the range assignor when elected leader, SyncGroup, heartbeats on the Clock, committed offsets
 * (OffsetFetch/OffsetCommit) and LeaveGroup. The caller fetches the assigned partitions and calls
 * `join` again when `rejoinNeeded` says a rebalance began.
 */
import type { TimerHandle } from '../io/index.ts'
import { GroupId, TopicName } from '../model/index.ts'
import {
  type Api,
  apis,
  ConsumerProtocolAssignmentData,
  ConsumerProtocolSubscriptionData,
  ErrorCode,
  Reader,
  Writer,
} from '../protocol/index.ts'
import type { ClusterClient } from './cluster-client.ts'
import { ConnectionError } from './kafka-connection.ts'
import { KafkaError } from './kafka-error.ts'

export interface GroupMemberOptions {
  readonly groupId: string
  readonly topics: readonly string[]
  /** `session.timeout.ms`; default 10000. */
  readonly sessionTimeoutMs?: number
  /** `max.poll.interval.ms` (the rebalance timeout); default 30000. */
  readonly rebalanceTimeoutMs?: number
  /** `heartbeat.interval.ms`; default 1000. */
  readonly heartbeatIntervalMs?: number
}

export interface Assignment {
  readonly generationId: number
  readonly memberId: string
  readonly leader: boolean
  readonly partitions: ReadonlyArray<{ topic: string; partition: number }>
}

/** Kafka's RangeAssignor: per topic, members sorted by id take contiguous ranges, the first ones one more. */
export function rangeAssign(
  members: ReadonlyArray<{ memberId: string; topics: readonly string[] }>,
  partitionCounts: ReadonlyMap<string, number>,
): Map<string, Array<{ topic: string; partitions: number[] }>> {
  const out = new Map<string, Array<{ topic: string; partitions: number[] }>>(
    members.map((m) => [m.memberId, []]),
  )
  const topics = [...new Set(members.flatMap((m) => m.topics))].sort()
  for (const topic of topics) {
    const count = partitionCounts.get(topic) ?? 0
    const subscribed = members
      .filter((m) => m.topics.includes(topic))
      .map((m) => m.memberId)
      .sort()
    const each = Math.floor(count / subscribed.length)
    const extra = count % subscribed.length
    let next = 0
    subscribed.forEach((memberId, i) => {
      const n = each + (i < extra ? 1 : 0)
      if (n === 0) return
      out.get(memberId)!.push({ topic, partitions: Array.from({ length: n }, (_, j) => next + j) })
      next += n
    })
  }
  return out
}

export function encodeSubscription(topics: readonly string[]): Buffer {
  const w = new Writer()
  w.int16(0)
  ConsumerProtocolSubscriptionData.writeConsumerProtocolSubscription(w, { topics, userData: null }, 0)
  return w.toBuffer()
}

export function decodeSubscription(bytes: Buffer): string[] {
  const r = new Reader(bytes)
  const version = r.int16()
  const max = ConsumerProtocolSubscriptionData.consumerProtocolSubscriptionSchema.maxVersion
  return ConsumerProtocolSubscriptionData.readConsumerProtocolSubscription(r, Math.min(version, max)).topics
}

export function encodeAssignment(partitions: ReadonlyArray<{ topic: string; partitions: number[] }>): Buffer {
  const w = new Writer()
  w.int16(0)
  ConsumerProtocolAssignmentData.writeConsumerProtocolAssignment(
    w,
    {
      assignedPartitions: partitions.map((p) => ({ topic: TopicName(p.topic), partitions: p.partitions })),
      userData: null,
    },
    0,
  )
  return w.toBuffer()
}

export function decodeAssignment(bytes: Buffer): Array<{ topic: string; partition: number }> {
  if (bytes.length === 0) return []
  const r = new Reader(bytes)
  const version = r.int16()
  const max = ConsumerProtocolAssignmentData.consumerProtocolAssignmentSchema.maxVersion
  const a = ConsumerProtocolAssignmentData.readConsumerProtocolAssignment(r, Math.min(version, max))
  return a.assignedPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition })))
}

export class GroupMember {
  readonly #client: ClusterClient
  readonly #o: Required<GroupMemberOptions>
  #memberId = ''
  #generationId = -1
  #heartbeat: TimerHandle | null = null
  #rejoin = false
  #left = false

  constructor(client: ClusterClient, options: GroupMemberOptions) {
    this.#client = client
    this.#o = { sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 30_000, heartbeatIntervalMs: 1000, ...options }
  }

  get rejoinNeeded(): boolean {
    return this.#rejoin
  }

  get generationId(): number {
    return this.#generationId
  }

  get memberId(): string {
    return this.#memberId
  }

  async #coordinatorRequest<Res extends { errorCode: number }, ReqIn>(
    api: Api<unknown, ReqIn, Res, never>,
    body: ReqIn | ((version: number) => ReqIn),
    maxVersion?: number,
  ): Promise<Res> {
    const groupId = this.#o.groupId
    return this.#client.retrying(
      async () => {
        const coordinator = await this.#client.coordinator(groupId)
        const { response } = await this.#client.request(api, body, {
          to: coordinator,
          ...(maxVersion === undefined ? {} : { maxVersion }),
          timeoutMs: this.#o.rebalanceTimeoutMs + 5000,
        })
        const r = response
        if (
          r.errorCode === ErrorCode.NotCoordinator ||
          r.errorCode === ErrorCode.CoordinatorNotAvailable ||
          r.errorCode === ErrorCode.CoordinatorLoadInProgress
        )
          throw new KafkaError(r.errorCode)
        return r
      },
      (e) => {
        if (e instanceof ConnectionError || e instanceof KafkaError) this.#client.forgetCoordinator(groupId)
      },
    )
  }

  /** Joins (or rejoins) the group and resolves with this member's partitions. */
  async join(): Promise<Assignment> {
    this.#stopHeartbeat()
    this.#rejoin = false
    const groupId = GroupId(this.#o.groupId)
    for (let attempt = 0; ; attempt++) {
      const joined = await this.#coordinatorRequest(apis.JoinGroup, {
        groupId,
        sessionTimeoutMs: this.#o.sessionTimeoutMs,
        rebalanceTimeoutMs: this.#o.rebalanceTimeoutMs,
        memberId: this.#memberId,
        groupInstanceId: null,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: encodeSubscription(this.#o.topics) }],
        reason: null,
      })
      if (joined.errorCode === ErrorCode.MemberIdRequired) {
        this.#memberId = joined.memberId
        continue
      }
      if (joined.errorCode === ErrorCode.UnknownMemberId && attempt < 5) {
        this.#memberId = ''
        continue
      }
      if (joined.errorCode === ErrorCode.RebalanceInProgress && attempt < 20) continue
      if (joined.errorCode !== ErrorCode.None) throw new KafkaError(joined.errorCode, `JoinGroup ${groupId}`)
      this.#memberId = joined.memberId
      this.#generationId = joined.generationId
      const leader = joined.leader === joined.memberId
      let assignments: Array<{ memberId: string; assignment: Buffer }> = []
      if (leader) {
        const members = joined.members.map((m) => ({
          memberId: m.memberId,
          topics: decodeSubscription(m.metadata),
        }))
        const counts = new Map<string, number>()
        for (const t of new Set(members.flatMap((m) => m.topics))) {
          const info = await this.#client.topic(t).catch(() => undefined)
          counts.set(t, info?.partitions.length ?? 0)
        }
        assignments = [...rangeAssign(members, counts)].map(([memberId, parts]) => ({
          memberId,
          assignment: encodeAssignment(parts),
        }))
      }
      const synced = await this.#coordinatorRequest(apis.SyncGroup, {
        groupId,
        generationId: this.#generationId,
        memberId: this.#memberId,
        groupInstanceId: null,
        protocolType: 'consumer',
        protocolName: 'range',
        assignments,
      })
      if (synced.errorCode === ErrorCode.RebalanceInProgress && attempt < 20) continue
      if (synced.errorCode !== ErrorCode.None) throw new KafkaError(synced.errorCode, `SyncGroup ${groupId}`)
      this.#scheduleHeartbeat()
      return {
        generationId: this.#generationId,
        memberId: this.#memberId,
        leader,
        partitions: decodeAssignment(synced.assignment),
      }
    }
  }

  #scheduleHeartbeat(): void {
    if (this.#left) return
    this.#heartbeat = this.#client.clock.setTimer(this.#o.heartbeatIntervalMs, () => {
      this.#heartbeat = null
      void this.#sendHeartbeat()
    })
  }

  async #sendHeartbeat(): Promise<void> {
    try {
      const r = await this.#coordinatorRequest(apis.Heartbeat, {
        groupId: GroupId(this.#o.groupId),
        generationId: this.#generationId,
        memberId: this.#memberId,
        groupInstanceId: null,
      })
      if (r.errorCode === ErrorCode.RebalanceInProgress) this.#rejoin = true
      else if (r.errorCode === ErrorCode.UnknownMemberId || r.errorCode === ErrorCode.IllegalGeneration) {
        if (r.errorCode === ErrorCode.UnknownMemberId) this.#memberId = ''
        this.#rejoin = true
      }
    } catch {
      this.#rejoin = true
    }
    if (!this.#rejoin) this.#scheduleHeartbeat()
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat !== null) this.#client.clock.clearTimer(this.#heartbeat)
    this.#heartbeat = null
  }

  /** The group's committed offsets for `partitions` (-1 where none). */
  async committed(
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
  ): Promise<Array<{ topic: string; partition: number; offset: bigint }>> {
    return fetchCommitted(this.#client, this.#o.groupId, partitions)
  }

  /** Commits offsets (the next record to read) as this member of its generation. */
  async commit(offsets: ReadonlyArray<{ topic: string; partition: number; offset: bigint }>): Promise<void> {
    if (offsets.length === 0) return
    await commitOffsets(this.#client, this.#o.groupId, offsets, {
      generationId: this.#generationId,
      memberId: this.#memberId,
    })
  }

  /** Leaves the group (its partitions are reassigned at once) and stops heartbeating. */
  async leave(): Promise<void> {
    this.#left = true
    this.#stopHeartbeat()
    if (this.#memberId === '') return
    await this.#coordinatorRequest(apis.LeaveGroup, (v: number) =>
      v >= 3
        ? {
            groupId: GroupId(this.#o.groupId),
            members: [{ memberId: this.#memberId, groupInstanceId: null }],
          }
        : { groupId: GroupId(this.#o.groupId), memberId: this.#memberId },
    ).catch(() => {})
  }
}

/** OffsetFetch for a group (v7 and below: one group per request). -1 where nothing is committed. */
export async function fetchCommitted(
  client: ClusterClient,
  groupId: string,
  partitions: ReadonlyArray<{ topic: string; partition: number }> | null,
): Promise<Array<{ topic: string; partition: number; offset: bigint }>> {
  return client.retrying(
    async () => {
      const coordinator = await client.coordinator(groupId)
      const topics = new Map<string, number[]>()
      for (const p of partitions ?? []) topics.set(p.topic, [...(topics.get(p.topic) ?? []), p.partition])
      const { response } = await client.request(
        apis.OffsetFetch,
        {
          groupId: GroupId(groupId),
          topics:
            partitions === null
              ? null
              : [...topics].map(([name, partitionIndexes]) => ({
                  name: TopicName(name),
                  partitionIndexes,
                })),
          requireStable: false,
        },
        { to: coordinator, maxVersion: 7 },
      )
      if (response.errorCode !== ErrorCode.None)
        throw new KafkaError(response.errorCode, `OffsetFetch ${groupId}`)
      const out: Array<{ topic: string; partition: number; offset: bigint }> = []
      for (const t of response.topics)
        for (const p of t.partitions) {
          if (p.errorCode !== ErrorCode.None)
            throw new KafkaError(p.errorCode, `OffsetFetch ${groupId} ${t.name}-${p.partitionIndex}`)
          out.push({ topic: t.name, partition: p.partitionIndex, offset: p.committedOffset })
        }
      return out
    },
    () => client.forgetCoordinator(groupId),
  )
}

/**
 * OffsetCommit. With no member (generation -1, member ''), as an admin commit: the broker accepts
 * it only while the group has no active members (Kafka's rule), else UNKNOWN_MEMBER_ID.
 */
export async function commitOffsets(
  client: ClusterClient,
  groupId: string,
  offsets: ReadonlyArray<{ topic: string; partition: number; offset: bigint }>,
  member: { generationId: number; memberId: string } = { generationId: -1, memberId: '' },
): Promise<void> {
  await client.retrying(
    async () => {
      const coordinator = await client.coordinator(groupId)
      const topics = new Map<string, Array<{ partitionIndex: number; committedOffset: bigint }>>()
      for (const o of offsets)
        topics.set(o.topic, [
          ...(topics.get(o.topic) ?? []),
          { partitionIndex: o.partition, committedOffset: o.offset },
        ])
      const { response } = await client.request(
        apis.OffsetCommit,
        {
          groupId: GroupId(groupId),
          generationIdOrMemberEpoch: member.generationId,
          memberId: member.memberId,
          groupInstanceId: null,
          retentionTimeMs: -1n,
          topics: [...topics].map(([name, partitions]) => ({
            name: TopicName(name),
            partitions: partitions.map((p) => ({ ...p, committedLeaderEpoch: -1, committedMetadata: '' })),
          })),
        },
        { to: coordinator, maxVersion: 8 },
      )
      for (const t of response.topics)
        for (const p of t.partitions)
          if (p.errorCode !== ErrorCode.None)
            throw new KafkaError(p.errorCode, `OffsetCommit ${groupId} ${t.name}-${p.partitionIndex}`)
    },
    () => client.forgetCoordinator(groupId),
  )
}
