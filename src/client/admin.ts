/**
 * Admin reads that the `weir` command and the web console share: the cluster's status (DescribeCluster,
 * DescribeQuorum, Metadata), a topic's partitions and configs, consumer groups with their members
 * and lag. Each returns plain data; how it is shown is the caller's business.
 */
import { GroupId, TopicName } from '../model/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
import type { ClusterClient, PartitionInfo } from './cluster-client.ts'
import { EARLIEST, LATEST, listOffsets } from './fetcher.ts'
import { commitOffsets, decodeAssignment, fetchCommitted } from './group-member.ts'
import { ConnectionError } from './kafka-connection.ts'
import { KafkaError } from './kafka-error.ts'

/** DescribeConfigs' resource type of a topic. */
export const TOPIC_RESOURCE = 2

export interface ClusterStatus {
  readonly clusterId: string | null
  readonly controllerId: number
  readonly quorum: {
    readonly leaderId: number
    readonly leaderEpoch: number
    readonly highWatermark: bigint
    readonly voters: ReadonlyArray<{ nodeId: number; logEndOffset: bigint; lag: bigint | null }>
    readonly observers: ReadonlyArray<{ nodeId: number; logEndOffset: bigint }>
  }
  readonly brokers: ReadonlyArray<{ nodeId: number; host: string; port: number; rack: string | null }>
  readonly topics: number
  readonly partitions: number
  readonly underReplicated: ReadonlyArray<PartitionState>
  readonly offline: ReadonlyArray<PartitionState>
}

export interface PartitionState {
  readonly topic: string
  readonly partition: number
  readonly leader: number
  readonly replicas: readonly number[]
  readonly isr: readonly number[]
}

/**
 * The cluster id, the KRaft quorum, the brokers and partition health, from one Metadata response
 * (so a broker fenced meanwhile is not listed beside the partitions its fencing left offline).
 */
export async function clusterStatus(client: ClusterClient): Promise<ClusterStatus> {
  const { response: cluster } = await client.request(apis.DescribeCluster, {
    includeClusterAuthorizedOperations: false,
    endpointType: 1,
  })
  if (cluster.errorCode !== ErrorCode.None) throw new KafkaError(cluster.errorCode, cluster.errorMessage)
  const { response: q } = await client.request(apis.DescribeQuorum, {
    topics: [{ topicName: TopicName('__cluster_metadata'), partitions: [{ partitionIndex: 0 }] }],
  })
  if (q.errorCode !== ErrorCode.None) throw new KafkaError(q.errorCode, q.errorMessage)
  const qp = q.topics[0]?.partitions[0]
  if (qp !== undefined && qp.errorCode !== ErrorCode.None) throw new KafkaError(qp.errorCode, qp.errorMessage)
  const md = await client.refresh({ all: true })
  const partitions = [...md.topics.values()].flatMap((t) =>
    t.partitions.map((p) => partitionState(t.name, p)),
  )
  const hw = qp?.highWatermark ?? -1n
  return {
    clusterId: cluster.clusterId,
    controllerId: cluster.controllerId,
    quorum: {
      leaderId: qp?.leaderId ?? -1,
      leaderEpoch: qp?.leaderEpoch ?? -1,
      highWatermark: hw,
      voters: (qp?.currentVoters ?? []).map((v) => ({
        nodeId: v.replicaId,
        logEndOffset: v.logEndOffset,
        lag: v.logEndOffset >= 0n && hw >= 0n ? (hw > v.logEndOffset ? hw - v.logEndOffset : 0n) : null,
      })),
      observers: (qp?.observers ?? []).map((v) => ({ nodeId: v.replicaId, logEndOffset: v.logEndOffset })),
    },
    brokers: [...md.brokers.values()]
      .map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }))
      .sort((a, b) => a.nodeId - b.nodeId),
    topics: md.topics.size,
    partitions: partitions.length,
    underReplicated: partitions.filter((p) => p.leader >= 0 && p.isr.length < p.replicas.length),
    offline: partitions.filter((p) => p.leader < 0),
  }
}

function partitionState(topic: string, p: PartitionInfo): PartitionState {
  return { topic, partition: p.partition, leader: p.leader, replicas: p.replicas, isr: p.isr }
}

export interface TopicConfig {
  readonly name: string
  /** Null when the broker marks it sensitive. */
  readonly value: string | null
  /** DescribeConfigs' source: 1 set on the topic, 4-5 the broker's, 5 the default... */
  readonly source: number
  readonly readOnly: boolean
  readonly sensitive: boolean
}

/** A topic's configs as DescribeConfigs gives them (every key, with its source). */
export async function topicConfigs(client: ClusterClient, topic: string): Promise<TopicConfig[]> {
  const { response } = await client.request(apis.DescribeConfigs, {
    resources: [{ resourceType: TOPIC_RESOURCE, resourceName: topic, configurationKeys: null }],
    includeSynonyms: false,
    includeDocumentation: false,
  })
  const result = response.results[0]
  if (result === undefined)
    throw new KafkaError(ErrorCode.UnknownServerError, 'DescribeConfigs gave no result')
  if (result.errorCode !== ErrorCode.None) throw new KafkaError(result.errorCode, result.errorMessage)
  return result.configs.map((c) => ({
    name: c.name,
    value: c.isSensitive ? null : c.value,
    source: c.configSource,
    readOnly: c.readOnly,
    sensitive: c.isSensitive,
  }))
}

/** DescribeConfigs' configSource of a config set on the topic itself. */
export const TOPIC_CONFIG_SOURCE = 1

export interface GroupListing {
  readonly group: string
  readonly state: string
  readonly protocolType: string
}

/**
 * ListGroups from every broker. A broker that does not answer is listed in `unreachable` and its
 * groups are missing, so one broker down does not hide the others' groups.
 */
export async function listGroups(
  client: ClusterClient,
): Promise<{ groups: GroupListing[]; unreachable: Array<{ broker: number; error: string }> }> {
  const md = await client.refresh()
  const groups = new Map<string, GroupListing>()
  const unreachable: Array<{ broker: number; error: string }> = []
  await Promise.all(
    [...md.brokers.keys()].map(async (id) => {
      let response: Awaited<ReturnType<typeof listGroupsOf>>
      try {
        response = await listGroupsOf(client, id)
      } catch (e) {
        if (!(e instanceof ConnectionError)) throw e
        unreachable.push({ broker: id, error: e.message })
        return
      }
      if (response.errorCode !== ErrorCode.None) throw new KafkaError(response.errorCode)
      for (const g of response.groups)
        groups.set(g.groupId, { group: g.groupId, state: g.groupState, protocolType: g.protocolType })
    }),
  )
  return {
    groups: [...groups.values()].sort((a, b) => a.group.localeCompare(b.group)),
    unreachable: unreachable.sort((a, b) => a.broker - b.broker),
  }
}

async function listGroupsOf(client: ClusterClient, brokerId: number) {
  return (await client.request(apis.ListGroups, { statesFilter: [], typesFilter: [] }, { to: brokerId }))
    .response
}

export interface GroupMemberInfo {
  readonly memberId: string
  readonly clientId: string
  readonly host: string
  readonly partitions: ReadonlyArray<{ topic: string; partition: number }>
}

export interface GroupDescription {
  readonly group: string
  /** Kafka's group state; 'Dead' when the group does not exist. */
  readonly state: string
  readonly protocolType: string
  readonly protocol: string
  readonly members: readonly GroupMemberInfo[]
}

/** DescribeGroups at the group's coordinator, members' assignments decoded for consumer groups. */
export async function describeGroup(client: ClusterClient, group: string): Promise<GroupDescription> {
  return client.retrying(
    async () => {
      const coordinator = await client.coordinator(group)
      const { response } = await client.request(
        apis.DescribeGroups,
        { groups: [GroupId(group)], includeAuthorizedOperations: false },
        { to: coordinator },
      )
      const g = response.groups[0]
      if (g === undefined)
        throw new KafkaError(ErrorCode.UnknownServerError, 'DescribeGroups returned no group')
      // DescribeGroups v6+ (KIP-1043) answers a group that does not exist so; older versions Dead.
      if (g.errorCode === ErrorCode.GroupIdNotFound)
        return { group, state: 'Dead', protocolType: '', protocol: '', members: [] }
      if (g.errorCode !== ErrorCode.None) throw new KafkaError(g.errorCode, `group '${group}'`)
      return {
        group,
        state: g.groupState,
        protocolType: g.protocolType,
        protocol: g.protocolData,
        members: g.members.map((m) => ({
          memberId: m.memberId,
          clientId: m.clientId,
          host: m.clientHost,
          partitions: g.protocolType === 'consumer' ? safeAssignment(m.memberAssignment) : [],
        })),
      }
    },
    () => client.forgetCoordinator(group),
  )
}

function safeAssignment(bytes: Buffer): Array<{ topic: string; partition: number }> {
  try {
    return decodeAssignment(bytes)
  } catch {
    return []
  }
}

export interface GroupPartitionOffset {
  readonly topic: string
  readonly partition: number
  readonly currentOffset: bigint | null
  readonly logEndOffset: bigint | null
  readonly lag: bigint | null
  readonly memberId: string | null
  readonly host: string | null
  readonly clientId: string | null
}

/**
 * Per partition the group committed to or has assigned: the committed offset, the log end, the lag
 * between them and the member that owns it, sorted by topic and partition.
 */
export async function groupOffsets(
  client: ClusterClient,
  description: GroupDescription,
): Promise<GroupPartitionOffset[]> {
  const committed = (await fetchCommitted(client, description.group, null)).filter((c) => c.offset >= 0n)
  const key = (p: { topic: string; partition: number }) => `${p.topic}\u0000${p.partition}`
  const owners = new Map<string, GroupMemberInfo>()
  for (const m of description.members) for (const p of m.partitions) owners.set(key(p), m)
  const keys = new Map<string, { topic: string; partition: number }>()
  for (const c of committed) keys.set(key(c), c)
  for (const m of description.members) for (const p of m.partitions) keys.set(key(p), p)
  const partitions = [...keys.values()].sort(
    (a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition,
  )
  const ends = new Map<string, bigint>()
  if (partitions.length > 0)
    for (const e of await listOffsets(
      client,
      partitions.map((p) => ({ ...p, timestamp: LATEST })),
    ))
      ends.set(key(e), e.offset)
  const current = new Map(committed.map((c) => [key(c), c.offset]))
  return partitions.map((p) => {
    const k = key(p)
    const offset = current.get(k) ?? null
    const end = ends.get(k) ?? null
    const owner = owners.get(k)
    return {
      topic: p.topic,
      partition: p.partition,
      currentOffset: offset,
      logEndOffset: end,
      lag: offset !== null && end !== null ? end - offset : null,
      memberId: owner?.memberId ?? null,
      host: owner?.host ?? null,
      clientId: owner?.clientId ?? null,
    }
  })
}

/** Each partition's log start and end offsets (ListOffsets EARLIEST and LATEST). */
export async function offsetRanges(
  client: ClusterClient,
  partitions: ReadonlyArray<{ topic: string; partition: number }>,
): Promise<Map<string, { start: bigint; end: bigint }>> {
  const out = new Map<string, { start: bigint; end: bigint }>()
  if (partitions.length === 0) return out
  const [starts, ends] = await Promise.all([
    listOffsets(
      client,
      partitions.map((p) => ({ ...p, timestamp: EARLIEST })),
    ),
    listOffsets(
      client,
      partitions.map((p) => ({ ...p, timestamp: LATEST })),
    ),
  ])
  const key = (p: { topic: string; partition: number }) => `${p.topic}\u0000${p.partition}`
  for (const s of starts) out.set(key(s), { start: s.offset, end: s.offset })
  for (const e of ends) {
    const r = out.get(key(e))
    if (r !== undefined) r.end = e.offset
  }
  return out
}

/** Where a reset moves a group's offsets, as `kafka-consumer-groups --reset-offsets` takes it. */
export type OffsetResetSpec =
  | { readonly to: 'earliest' | 'latest' }
  | { readonly to: 'datetime'; readonly timestampMs: bigint }
  | { readonly to: 'offset'; readonly offset: bigint }
  | { readonly to: 'shift'; readonly by: bigint }

export interface OffsetResetPlan {
  readonly topic: string
  readonly partition: number
  readonly currentOffset: bigint | null
  readonly newOffset: bigint
}

/**
 * The new offset of each partition, clamped into the log as Kafka's tool clamps it (`offset` and
 * `shift`); `partitions` null means every partition the group committed to.
 */
export async function planOffsetReset(
  client: ClusterClient,
  group: string,
  partitions: ReadonlyArray<{ topic: string; partition: number }> | null,
  spec: OffsetResetSpec,
): Promise<OffsetResetPlan[]> {
  const committed = (await fetchCommitted(client, group, null)).filter((c) => c.offset >= 0n)
  const chosen = partitions ?? committed
  const key = (p: { topic: string; partition: number }) => `${p.topic}\u0000${p.partition}`
  const current = new Map(committed.map((c) => [key(c), c.offset]))
  const ranges = await offsetRanges(client, chosen)
  const byTime = new Map<string, bigint>()
  if (spec.to === 'datetime' && chosen.length > 0)
    for (const e of await listOffsets(
      client,
      chosen.map((p) => ({ ...p, timestamp: spec.timestampMs })),
    ))
      byTime.set(key(e), e.offset)
  return chosen
    .map((p) => {
      const k = key(p)
      const range = ranges.get(k) ?? { start: 0n, end: 0n }
      const newOffset = resetTarget(spec, range, current.get(k) ?? null, byTime.get(k))
      return { topic: p.topic, partition: p.partition, currentOffset: current.get(k) ?? null, newOffset }
    })
    .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition)
}

function resetTarget(
  spec: OffsetResetSpec,
  range: { start: bigint; end: bigint },
  current: bigint | null,
  atTime: bigint | undefined,
): bigint {
  const clamp = (o: bigint) => (o < range.start ? range.start : o > range.end ? range.end : o)
  switch (spec.to) {
    case 'earliest':
      return range.start
    case 'latest':
      return range.end
    case 'datetime':
      return atTime ?? range.end
    case 'offset':
      return clamp(spec.offset)
    case 'shift':
      return clamp((current ?? range.start) + spec.by)
  }
}

/** Commits a reset plan: only while the group has no active members (Kafka's rule). */
export async function applyOffsetReset(
  client: ClusterClient,
  group: string,
  plan: readonly OffsetResetPlan[],
): Promise<void> {
  if (plan.length === 0) return
  const d = await describeGroup(client, group)
  if (d.state !== 'Empty' && d.state !== 'Dead')
    throw new KafkaError(
      ErrorCode.NonEmptyGroup,
      `group '${group}' has active members (state ${d.state}): stop them before resetting its offsets`,
    )
  await commitOffsets(
    client,
    group,
    plan.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.newOffset })),
  )
}

export interface NewTopic {
  readonly name: string
  /** -1: the broker's num.partitions. */
  readonly partitions: number
  /** -1: the broker's default.replication.factor. */
  readonly replicationFactor: number
  readonly configs: ReadonlyArray<{ name: string; value: string }>
}

/** CreateTopics for one topic; its result as the broker gave it (the caller decides what an error means). */
export async function createTopic(client: ClusterClient, topic: NewTopic) {
  const { response } = await client.request(apis.CreateTopics, {
    topics: [
      {
        name: TopicName(topic.name),
        numPartitions: topic.partitions,
        replicationFactor: topic.replicationFactor,
        assignments: [],
        configs: [...topic.configs],
      },
    ],
    timeoutMs: 30_000,
    validateOnly: false,
  })
  const r = response.topics[0]
  if (r === undefined) throw new KafkaError(ErrorCode.UnknownServerError, 'CreateTopics returned no result')
  return r
}

/** IncrementalAlterConfigs on a topic: `set` SET, `deleted` DELETE (back to the default). */
export async function alterTopicConfigs(
  client: ClusterClient,
  topic: string,
  set: ReadonlyArray<readonly [string, string]>,
  deleted: readonly string[],
): Promise<void> {
  const { response } = await client.request(apis.IncrementalAlterConfigs, {
    resources: [
      {
        resourceType: TOPIC_RESOURCE,
        resourceName: topic,
        configs: [
          ...set.map(([k, v]) => ({ name: k, configOperation: 0, value: v })),
          ...deleted.map((k) => ({ name: k, configOperation: 1, value: null })),
        ],
      },
    ],
    validateOnly: false,
  })
  const r = response.responses[0]
  if (r !== undefined && r.errorCode !== ErrorCode.None) throw new KafkaError(r.errorCode, r.errorMessage)
}
