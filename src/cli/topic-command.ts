/** `weir topic create|list|describe|alter|delete`: topics over CreateTopics, Metadata, DescribeConfigs, CreatePartitions, IncrementalAlterConfigs, DeleteTopics. */
import {
  alterTopicConfigs,
  type ClusterClient,
  createTopic,
  KafkaError,
  TOPIC_CONFIG_SOURCE,
  topicConfigs,
} from '../client/index.ts'
import { TopicName } from '../model/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
import {
  COMMON_USAGE,
  intFlag,
  keyValues,
  type parse,
  printJson,
  printTable,
  runSubcommands,
  UsageError,
} from './command-support.ts'

export const TOPIC_USAGE = `Usage: weir topic <create|list|describe|alter|delete> [options]

  weir topic create NAME [--partitions N] [--replication-factor N] [--config KEY=VALUE ...] [--if-not-exists]
  weir topic list [--internal]
  weir topic describe [NAME ...]            partitions (leader, replicas, ISR, offline) and configs set on the topic
  weir topic alter NAME [--partitions N] [--config KEY=VALUE ...] [--delete-config KEY ...]
  weir topic delete NAME ... [--if-exists]

Partitions and replication factor default to the broker's num.partitions and default.replication.factor.

${COMMON_USAGE}`

const OPTIONS = {
  partitions: { type: 'string', short: 'p' },
  'replication-factor': { type: 'string', short: 'r' },
  config: { type: 'string', short: 'c', multiple: true },
  'delete-config': { type: 'string', multiple: true },
  'if-not-exists': { type: 'boolean' },
  'if-exists': { type: 'boolean' },
  internal: { type: 'boolean' },
} as const

type Values = ReturnType<typeof parse<typeof OPTIONS>>['values']

export function runTopic(argv: readonly string[]): Promise<number> {
  return runSubcommands('topic', TOPIC_USAGE, OPTIONS, argv, {
    create,
    list: (c, _positionals, values) => list(c, values),
    describe,
    alter,
    delete: remove,
  })
}

function oneName(positionals: readonly string[]): string {
  if (positionals.length !== 1) throw new UsageError('give exactly one topic name')
  return positionals[0]!
}

async function create(
  client: ClusterClient,
  positionals: readonly string[],
  values: Values,
): Promise<number> {
  const name = oneName(positionals)
  const partitions = intFlag(values.partitions, 'partitions', -1, 1)
  const rf = intFlag(values['replication-factor'], 'replication-factor', -1, 1)
  const configs = keyValues(values.config, 'config').map(([k, v]) => ({ name: k, value: v }))
  const r = await createTopic(client, { name, partitions, replicationFactor: rf, configs })
  if (r.errorCode === ErrorCode.TopicAlreadyExists && values['if-not-exists'] === true) {
    if (values.json === true) printJson({ topic: name, created: false })
    else process.stdout.write(`topic ${name} already exists\n`)
    return 0
  }
  if (r.errorCode !== ErrorCode.None)
    throw new KafkaError(
      r.errorCode,
      r.errorCode === ErrorCode.TopicAlreadyExists ? `topic '${name}' already exists` : r.errorMessage,
    )
  if (values.json === true)
    printJson({
      topic: name,
      created: true,
      topicId: r.topicId,
      partitions: r.numPartitions,
      replicationFactor: r.replicationFactor,
    })
  else
    process.stdout.write(
      `created topic ${name} (${r.numPartitions} partitions, replication factor ${r.replicationFactor})\n`,
    )
  return 0
}

async function list(client: ClusterClient, values: Values): Promise<number> {
  const md = await client.refresh({ all: true })
  const topics = [...md.topics.values()]
    .filter((t) => t.errorCode === ErrorCode.None && (values.internal === true || !t.internal))
    .sort((a, b) => a.name.localeCompare(b.name))
  const rows = topics.map((t) => ({
    topic: t.name,
    partitions: t.partitions.length,
    replicationFactor: t.partitions[0]?.replicas.length ?? 0,
    internal: t.internal,
  }))
  if (values.json === true) printJson(rows)
  else
    printTable(
      ['TOPIC', 'PARTITIONS', 'RF'],
      rows.map((r) => [r.topic, r.partitions, r.replicationFactor]),
    )
  return 0
}

async function describe(
  client: ClusterClient,
  positionals: readonly string[],
  values: Values,
): Promise<number> {
  const md = await client.refresh(positionals.length === 0 ? { all: true } : { topics: positionals })
  const names =
    positionals.length === 0
      ? [...md.topics.keys()].filter((n) => !md.topics.get(n)!.internal).sort()
      : positionals
  const out = []
  for (const name of names) {
    const t = await client.topic(name)
    const configs = Object.fromEntries(
      (await topicConfigs(client, name))
        .filter((c) => c.source === TOPIC_CONFIG_SOURCE)
        .map((c) => [c.name, c.value]),
    )
    out.push({
      topic: t.name,
      topicId: t.topicId,
      internal: t.internal,
      partitions: t.partitions.map((p) => ({
        partition: p.partition,
        leader: p.leader,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicas,
        isr: p.isr,
        offline: p.offline,
      })),
      configs,
    })
  }
  if (values.json === true) {
    printJson(positionals.length === 1 ? out[0] : out)
    return 0
  }
  for (const t of out) {
    const configs = Object.entries(t.configs)
      .map(([k, v]) => `${k}=${v ?? '(sensitive)'}`)
      .join(',')
    process.stdout.write(
      `Topic: ${t.topic}  TopicId: ${t.topicId}  Partitions: ${t.partitions.length}  ReplicationFactor: ${t.partitions[0]?.replicas.length ?? 0}  Configs: ${configs === '' ? '-' : configs}\n`,
    )
    printTable(
      ['PARTITION', 'LEADER', 'REPLICAS', 'ISR', 'OFFLINE'],
      t.partitions.map((p) => [
        p.partition,
        p.leader < 0 ? 'none' : p.leader,
        p.replicas,
        p.isr,
        p.offline.length === 0 ? '-' : p.offline,
      ]),
    )
  }
  return 0
}

async function alter(client: ClusterClient, positionals: readonly string[], values: Values): Promise<number> {
  const name = oneName(positionals)
  const set = keyValues(values.config, 'config')
  const deleted = values['delete-config'] ?? []
  if (values.partitions === undefined && set.length === 0 && deleted.length === 0)
    throw new UsageError('nothing to alter: give --partitions, --config or --delete-config')
  const done: Record<string, unknown> = { topic: name }
  if (values.partitions !== undefined) {
    const count = intFlag(values.partitions, 'partitions', 0, 1)
    const { response } = await client.request(apis.CreatePartitions, {
      topics: [{ name: TopicName(name), count, assignments: null }],
      timeoutMs: 30_000,
      validateOnly: false,
    })
    const r = response.results[0]
    if (r !== undefined && r.errorCode !== ErrorCode.None) throw new KafkaError(r.errorCode, r.errorMessage)
    done.partitions = count
  }
  if (set.length > 0 || deleted.length > 0) {
    await alterTopicConfigs(client, name, set, deleted)
    done.set = Object.fromEntries(set)
    done.deleted = deleted
  }
  if (values.json === true) printJson(done)
  else
    process.stdout.write(
      `altered topic ${name}${done.partitions !== undefined ? `: ${done.partitions} partitions` : ''}${set.length + deleted.length > 0 ? `${done.partitions !== undefined ? ',' : ':'} ${set.length} config(s) set, ${deleted.length} deleted` : ''}\n`,
    )
  return 0
}

async function remove(
  client: ClusterClient,
  positionals: readonly string[],
  values: Values,
): Promise<number> {
  if (positionals.length === 0) throw new UsageError('give the topic names to delete')
  const { response } = await client.request(apis.DeleteTopics, (v) =>
    v >= 6
      ? { topics: positionals.map((n) => ({ name: TopicName(n) })), timeoutMs: 30_000 }
      : { topicNames: positionals.map((n) => TopicName(n)), timeoutMs: 30_000 },
  )
  const results = response.responses.map((r) => ({
    topic: r.name ?? '',
    deleted: r.errorCode === ErrorCode.None,
    error: r.errorCode,
    message: r.errorMessage,
  }))
  const failures = results.filter(
    (r) => r.error !== 0 && !(r.error === ErrorCode.UnknownTopicOrPartition && values['if-exists'] === true),
  )
  if (values.json === true) printJson(results.map(({ topic, deleted }) => ({ topic, deleted })))
  else for (const r of results) if (r.deleted) process.stdout.write(`deleted topic ${r.topic}\n`)
  if (failures.length > 0) {
    const f = failures[0]!
    throw new KafkaError(
      f.error,
      f.error === ErrorCode.UnknownTopicOrPartition ? `topic '${f.topic}' does not exist` : f.message,
    )
  }
  return 0
}
