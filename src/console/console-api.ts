/**
 * What the web console shows and does, as JSON over a ClusterClient: only the Kafka protocol, so it
 * works against any Kafka-compatible cluster, and as whichever principal the client authenticated,
 * so ACLs apply to everything. Lists are paged; record values are bounded per record and per page.
 */
import {
  alterTopicConfigs,
  applyOffsetReset,
  type ClusterClient,
  clusterStatus,
  createTopic,
  decodeRecords,
  describeGroup,
  Fetcher,
  groupOffsets,
  KafkaError,
  listGroups,
  listOffsets,
  type OffsetResetSpec,
  offsetRanges,
  Producer,
  planOffsetReset,
  topicConfigs,
} from '../client/index.ts'
import { TopicName } from '../model/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'

/** A bad argument from the page: answered 400 with its message. */
export class ConsoleInputError extends Error {
  override name = 'ConsoleInputError'
}

/** Rows per page when the page does not say; the most it may ask for. */
export const PAGE_DEFAULT = 100
export const PAGE_MAX = 1000
/** Records one read returns at most, and the bytes of a key or value shown (the rest is cut). */
export const RECORDS_MAX = 500
export const RECORD_BYTES_SHOWN = 64 * 1024
/** Fetch rounds a record read takes at most before answering with what it has. */
const FETCH_ROUNDS_MAX = 5

export interface Page {
  readonly offset: number
  readonly limit: number
}

function paged<T>(rows: readonly T[], page: Page): { total: number; offset: number; rows: T[] } {
  return { total: rows.length, offset: page.offset, rows: rows.slice(page.offset, page.offset + page.limit) }
}

/** Troubled partitions of each kind the cluster view lists itself (the rest are paged by `/partitions`). */
export const TROUBLED_SHOWN = 20

/** The cluster view, from one status read: with the first troubled partitions of each kind. */
export async function overview(client: ClusterClient) {
  const s = await clusterStatus(client)
  const first = { offset: 0, limit: TROUBLED_SHOWN }
  return {
    clusterId: s.clusterId,
    controllerId: s.controllerId,
    quorum: s.quorum,
    brokers: s.brokers,
    topics: s.topics,
    partitions: s.partitions,
    underReplicated: paged(s.underReplicated, first),
    offline: paged(s.offline, first),
  }
}

/** Partitions in trouble: under-replicated (ISR smaller than the replicas) or offline (no leader). */
export async function troubledPartitions(
  client: ClusterClient,
  state: 'under-replicated' | 'offline',
  page: Page,
) {
  const s = await clusterStatus(client)
  return paged(state === 'offline' ? s.offline : s.underReplicated, page)
}

export async function topics(client: ClusterClient, filter: { text: string; internal: boolean }, page: Page) {
  const md = await client.refresh({ all: true })
  const rows = [...md.topics.values()]
    .filter(
      (t) =>
        t.errorCode === ErrorCode.None &&
        (filter.internal || !t.internal) &&
        (filter.text === '' || t.name.includes(filter.text)),
    )
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((t) => ({
      name: t.name,
      internal: t.internal,
      partitions: t.partitions.length,
      replicationFactor: t.partitions[0]?.replicas.length ?? 0,
      underReplicated: t.partitions.filter((p) => p.leader >= 0 && p.isr.length < p.replicas.length).length,
      offline: t.partitions.filter((p) => p.leader < 0).length,
    }))
  return paged(rows, page)
}

/** A topic's partitions (leader, replicas, ISR, offsets, size) and its configs, partitions paged. */
export async function topic(client: ClusterClient, name: string, page: Page) {
  const t = await client.topic(name, { refresh: true })
  if (t.errorCode !== ErrorCode.None) throw new KafkaError(t.errorCode, `topic '${name}'`)
  const shown = t.partitions.slice(page.offset, page.offset + page.limit)
  const [ranges, sizes, configs] = await Promise.all([
    offsetRanges(
      client,
      shown.filter((p) => p.leader >= 0).map((p) => ({ topic: name, partition: p.partition })),
    ).catch(() => new Map<string, { start: bigint; end: bigint }>()),
    partitionSizes(
      client,
      name,
      shown.map((p) => ({ partition: p.partition, leader: p.leader })),
    ),
    // A user may describe a topic without DESCRIBE_CONFIGS on it: the rest of the view still shows.
    topicConfigs(client, name).catch((e: unknown) => {
      if (e instanceof KafkaError) return e
      throw e
    }),
  ])
  return {
    name: t.name,
    topicId: t.topicId,
    internal: t.internal,
    total: t.partitions.length,
    offset: page.offset,
    partitions: shown.map((p) => {
      const r = ranges.get(`${name}\u0000${p.partition}`)
      return {
        partition: p.partition,
        leader: p.leader,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicas,
        isr: p.isr,
        offline: p.offline,
        startOffset: r?.start ?? null,
        endOffset: r?.end ?? null,
        sizeBytes: sizes.get(p.partition) ?? null,
      }
    }),
    configs: configs instanceof KafkaError ? null : configs,
    configsError:
      configs instanceof KafkaError ? { error: configs.errorName, message: configs.message } : null,
  }
}

/**
 * Each partition's size on its leader (DescribeLogDirs to each leader, this topic's partitions
 * only); a leader that does not answer leaves its partitions' sizes unknown.
 */
async function partitionSizes(
  client: ClusterClient,
  name: string,
  partitions: ReadonlyArray<{ partition: number; leader: number }>,
): Promise<Map<number, bigint>> {
  const byLeader = new Map<number, number[]>()
  for (const p of partitions)
    if (p.leader >= 0) byLeader.set(p.leader, [...(byLeader.get(p.leader) ?? []), p.partition])
  const sizes = new Map<number, bigint>()
  await Promise.all(
    [...byLeader].map(async ([leader, list]) => {
      try {
        const { response } = await client.request(
          apis.DescribeLogDirs,
          { topics: [{ topic: TopicName(name), partitions: list }] },
          { to: leader },
        )
        for (const dir of response.results)
          for (const t of dir.topics)
            if (t.name === name)
              for (const p of t.partitions)
                sizes.set(p.partitionIndex, (sizes.get(p.partitionIndex) ?? 0n) + p.partitionSize)
      } catch {
        // Sizes are a detail of the view: a broker down or refusing leaves them blank.
      }
    }),
  )
  return sizes
}

export async function groups(client: ClusterClient, text: string, page: Page) {
  const { groups: all, unreachable } = await listGroups(client)
  const rows = all.filter((g) => text === '' || g.group.includes(text))
  return { ...paged(rows, page), unreachable }
}

export async function group(client: ClusterClient, id: string) {
  const d = await describeGroup(client, id)
  if (d.state === 'Dead') throw new KafkaError(ErrorCode.GroupIdNotFound, `group '${id}' does not exist`)
  const offsets = await groupOffsets(client, d)
  const totalLag = offsets.reduce((sum, o) => sum + (o.lag ?? 0n), 0n)
  return { ...d, offsets, totalLag }
}

export interface RecordsQuery {
  readonly topic: string
  readonly partition: number
  /** Where to start: an offset, or the first record at or after a time (ms). */
  readonly from: { offset: bigint } | { timestampMs: bigint }
  readonly limit: number
}

function shown(bytes: Buffer | null): { base64: string; size: number; truncated: boolean } | null {
  if (bytes === null) return null
  const cut = bytes.length > RECORD_BYTES_SHOWN
  return {
    base64: (cut ? bytes.subarray(0, RECORD_BYTES_SHOWN) : bytes).toString('base64'),
    size: bytes.length,
    truncated: cut,
  }
}

/** Up to `limit` records of one partition from an offset or a time; keys and values as base64. */
export async function records(client: ClusterClient, q: RecordsQuery) {
  const t = await client.topic(q.topic)
  if (t.errorCode !== ErrorCode.None) throw new KafkaError(t.errorCode, `topic '${q.topic}'`)
  if (!t.partitions.some((p) => p.partition === q.partition))
    throw new KafkaError(
      ErrorCode.UnknownTopicOrPartition,
      `topic '${q.topic}' has no partition ${q.partition}`,
    )
  const range = (await offsetRanges(client, [{ topic: q.topic, partition: q.partition }])).get(
    `${q.topic}\u0000${q.partition}`,
  )!
  let start: bigint
  if ('offset' in q.from) {
    // Before the log start (deleted or compacted away): from the first record there is.
    start = q.from.offset
    if (start < range.start) start = range.start
  } else {
    const [at] = await listOffsets(client, [
      { topic: q.topic, partition: q.partition, timestamp: q.from.timestampMs },
    ])
    start = at!.offset
  }
  const out: Array<{
    offset: bigint
    timestamp: bigint
    key: ReturnType<typeof shown>
    value: ReturnType<typeof shown>
    headers: Array<{ key: string; value: ReturnType<typeof shown> }>
  }> = []
  const fetcher = new Fetcher(client, {
    maxWaitMs: 100,
    partitionMaxBytes: 1024 * 1024,
    maxBytes: 4 * 1024 * 1024,
  })
  fetcher.assign([{ topic: q.topic, partition: q.partition, offset: start }])
  for (let round = 0; round < FETCH_ROUNDS_MAX && out.length < q.limit; round++) {
    if ((fetcher.positions()[0]?.offset ?? range.end) >= range.end) break
    for (const f of await fetcher.fetch())
      for (const r of decodeRecords(f.records, f.fetchOffset)) {
        if (out.length >= q.limit) break
        out.push({
          offset: r.offset,
          timestamp: r.timestamp,
          key: shown(r.key),
          value: shown(r.value),
          headers: r.headers.map((h) => ({ key: h.key, value: shown(h.value) })),
        })
      }
  }
  return {
    topic: q.topic,
    partition: q.partition,
    startOffset: range.start,
    endOffset: range.end,
    from: start,
    records: out,
  }
}

export interface NewTopicInput {
  readonly name: string
  readonly partitions: number
  readonly replicationFactor: number
  readonly configs: Readonly<Record<string, string>>
}

export async function newTopic(client: ClusterClient, input: NewTopicInput) {
  const r = await createTopic(client, {
    name: input.name,
    partitions: input.partitions,
    replicationFactor: input.replicationFactor,
    configs: Object.entries(input.configs).map(([name, value]) => ({ name, value })),
  })
  if (r.errorCode !== ErrorCode.None)
    throw new KafkaError(
      r.errorCode,
      r.errorCode === ErrorCode.TopicAlreadyExists ? `topic '${input.name}' already exists` : r.errorMessage,
    )
  return {
    name: input.name,
    topicId: r.topicId,
    partitions: r.numPartitions,
    replicationFactor: r.replicationFactor,
  }
}

export async function editConfigs(
  client: ClusterClient,
  name: string,
  set: Readonly<Record<string, string>>,
  deleted: readonly string[],
) {
  await alterTopicConfigs(client, name, Object.entries(set), deleted)
  return { name, set, deleted }
}

export interface ProduceInput {
  readonly topic: string
  readonly partition: number | null
  readonly key: Buffer | null
  readonly value: Buffer | null
  readonly headers: ReadonlyArray<{ key: string; value: Buffer }>
}

/** One record, acks=all; answers where it landed. */
export async function produce(client: ClusterClient, input: ProduceInput) {
  const producer = new Producer(client, { acks: -1, lingerMs: 0, deliveryTimeoutMs: 30_000 })
  try {
    await producer.prepare(input.topic)
    const d = await producer.send(
      input.topic,
      { key: input.key, value: input.value, headers: input.headers },
      input.partition ?? undefined,
    )
    return { topic: d.topic, partition: d.partition, offset: d.offset }
  } finally {
    await producer.close()
  }
}

/** Plans, and with `execute` applies, a reset of the group's offsets on one topic's partitions. */
export async function resetOffsets(
  client: ClusterClient,
  groupId: string,
  topicName: string,
  spec: OffsetResetSpec,
  execute: boolean,
) {
  const t = await client.topic(topicName)
  if (t.errorCode !== ErrorCode.None) throw new KafkaError(t.errorCode, `topic '${topicName}'`)
  const plan = await planOffsetReset(
    client,
    groupId,
    t.partitions.map((p) => ({ topic: topicName, partition: p.partition })),
    spec,
  )
  if (execute) await applyOffsetReset(client, groupId, plan)
  return { group: groupId, executed: execute, partitions: plan }
}
