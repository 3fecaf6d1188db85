/** `weir consume TOPIC`: records to stdout, by partition or as a group member, up to the end or following. */
import {
  type ClusterClient,
  decodeRecords,
  EARLIEST,
  Fetcher,
  fetchCommitted,
  GroupMember,
  LATEST,
  listOffsets,
  type TopicPartitionOffset,
} from '../client/index.ts'
import type { KafkaRecord } from '../protocol/index.ts'
import {
  COMMON_USAGE,
  help,
  intFlag,
  parse,
  runCommand,
  toJson,
  UsageError,
  withClient,
} from './command-support.ts'

export const CONSUME_USAGE = `Usage: weir consume TOPIC [options]

Prints the topic's records, one per line, and exits at the end of each partition as it was when the
command started; with --follow, keeps printing new records until Ctrl-C.

Where to start (default: the beginning; with --group, the group's committed offsets, then this):
  --from-beginning           the log start
  --from-end                 the end: only records produced from now on
  --offset N                 offset N (of --partition, or of every partition)
  --from-time TIME           the first record at or after TIME (ISO 8601, or ms since the epoch)

Options:
  -p, --partition N          only partition N
  -g, --group GROUP          consume as a member of GROUP (range assignor), committing offsets
  -f, --follow               keep consuming new records
  -n, --max-messages N       stop after N records
  --format TEMPLATE          each record as TEMPLATE (default '{value}'); fields: {topic} {partition}
                             {offset} {timestamp} {key} {value} {headers}; \\t and \\n are tab and newline
  --json                     one JSON object per record (topic, partition, offset, timestamp, key, value, headers)

${COMMON_USAGE}`

const OPTIONS = {
  'from-beginning': { type: 'boolean' },
  'from-end': { type: 'boolean' },
  offset: { type: 'string' },
  'from-time': { type: 'string' },
  partition: { type: 'string', short: 'p' },
  group: { type: 'string', short: 'g' },
  follow: { type: 'boolean', short: 'f' },
  'max-messages': { type: 'string', short: 'n' },
  format: { type: 'string' },
} as const

type Start = { kind: 'timestamp'; timestamp: bigint } | { kind: 'offset'; offset: bigint }

/** Parses a time as ISO 8601 or ms since the epoch. */
export function parseTime(value: string, flag: string): bigint {
  if (/^\d+$/.test(value)) return BigInt(value)
  const ms = Date.parse(value)
  if (Number.isNaN(ms))
    throw new UsageError(`--${flag}: '${value}' is not an ISO 8601 time or ms since the epoch`)
  return BigInt(ms)
}

export function formatRecord(template: string, topic: string, partition: number, r: KafkaRecord): string {
  return template
    .replaceAll('\\t', '\t')
    .replaceAll('\\n', '\n')
    .replace(/\{(topic|partition|offset|timestamp|key|value|headers)\}/g, (_m, field: string) => {
      switch (field) {
        case 'topic':
          return topic
        case 'partition':
          return String(partition)
        case 'offset':
          return String(r.offset)
        case 'timestamp':
          return String(r.timestamp)
        case 'key':
          return r.key === null ? 'null' : r.key.toString('utf8')
        case 'value':
          return r.value === null ? 'null' : r.value.toString('utf8')
        default:
          return r.headers
            .map((h) => `${h.key}=${h.value === null ? 'null' : h.value.toString('utf8')}`)
            .join(',')
      }
    })
}

export async function runConsume(argv: readonly string[]): Promise<number> {
  return runCommand('consume', async () => {
    const { values, positionals } = parse(argv, OPTIONS)
    if (values.help === true) return help(CONSUME_USAGE)
    if (positionals.length !== 1) throw new UsageError('give exactly one topic')
    const topic = positionals[0]!
    const starts = [values['from-beginning'], values['from-end'], values.offset, values['from-time']].filter(
      (x) => x !== undefined && x !== false,
    )
    if (starts.length > 1)
      throw new UsageError('give at most one of --from-beginning, --from-end, --offset, --from-time')
    let start: Start = { kind: 'timestamp', timestamp: EARLIEST }
    if (values['from-end'] === true) start = { kind: 'timestamp', timestamp: LATEST }
    if (values['from-time'] !== undefined)
      start = { kind: 'timestamp', timestamp: parseTime(values['from-time'], 'from-time') }
    if (values.offset !== undefined)
      start = { kind: 'offset', offset: BigInt(intFlag(values.offset, 'offset', 0, 0)) }
    const partition =
      values.partition === undefined ? undefined : intFlag(values.partition, 'partition', 0, 0)
    if (partition !== undefined && values.group !== undefined)
      throw new UsageError('--partition and --group do not go together: a group assigns partitions')
    const max =
      values['max-messages'] === undefined
        ? Number.POSITIVE_INFINITY
        : intFlag(values['max-messages'], 'max-messages', 0, 1)
    const template = values.format ?? '{value}'
    const json = values.json === true
    const follow = values.follow === true
    return withClient(values, async (client) => {
      let stopping = false
      const onSignal = () => {
        stopping = true
      }
      process.once('SIGINT', onSignal)
      process.once('SIGTERM', onSignal)
      try {
        const t = await client.topic(topic)
        if (partition !== undefined && !t.partitions.some((p) => p.partition === partition))
          throw new UsageError(`topic ${topic} has no partition ${partition}`)
        const fetcher = new Fetcher(client, {
          resetPolicy: 'earliest',
          maxWaitMs: follow ? 500 : 100,
          // A partition without a leader fails the command after --timeout, with the Kafka error.
          stallTimeoutMs: client.retryTimeoutMs,
        })
        const member =
          values.group === undefined
            ? null
            : new GroupMember(client, { groupId: values.group, topics: [topic] })
        let assigned: Array<{ topic: string; partition: number }> = []
        const ends = new Map<number, bigint>()
        const assign = async () => {
          if (member !== null) assigned = [...(await member.join()).partitions]
          else
            assigned = t.partitions
              .filter((p) => partition === undefined || p.partition === partition)
              .map((p) => ({ topic, partition: p.partition }))
          const positions = await startPositions(client, values.group, assigned, start)
          fetcher.assign(positions)
          if (!follow)
            for (const e of await listOffsets(
              client,
              assigned.map((p) => ({ ...p, timestamp: LATEST })),
            ))
              if (!ends.has(e.partition)) ends.set(e.partition, e.offset)
        }
        await assign()
        let printed = 0
        const done = () =>
          printed >= max ||
          (!follow && fetcher.positions().every((p) => p.offset >= (ends.get(p.partition) ?? 0n)))
        const out: string[] = []
        while (!stopping && !done()) {
          if (member?.rejoinNeeded === true) {
            await member.commit(fetcher.positions())
            await assign()
            continue
          }
          const fetched = await fetcher.fetch()
          for (const f of fetched) {
            for (const r of decodeRecords(f.records, f.fetchOffset)) {
              if (printed >= max) {
                // Stop exactly after max: the next read starts at this record.
                fetcher.seek(f.topic, f.partition, r.offset)
                break
              }
              const end = ends.get(f.partition)
              if (!follow && end !== undefined && r.offset >= end) break
              printed++
              out.push(
                json
                  ? toJson({
                      topic: f.topic,
                      partition: f.partition,
                      offset: r.offset,
                      timestamp: r.timestamp,
                      key: r.key === null ? null : r.key.toString('utf8'),
                      value: r.value === null ? null : r.value.toString('utf8'),
                      headers: Object.fromEntries(
                        r.headers.map((h) => [h.key, h.value === null ? null : h.value.toString('utf8')]),
                      ),
                    })
                  : formatRecord(template, f.topic, f.partition, r),
              )
            }
          }
          if (out.length > 0) {
            const ok = process.stdout.write(`${out.join('\n')}\n`)
            out.length = 0
            if (!ok) await new Promise((resolve) => process.stdout.once('drain', resolve))
          }
          if (member !== null && fetched.length > 0) await member.commit(fetcher.positions())
        }
        if (member !== null) {
          await member.commit(fetcher.positions()).catch(() => {})
          await member.leave()
        }
        return 0
      } finally {
        process.off('SIGINT', onSignal)
        process.off('SIGTERM', onSignal)
      }
    })
  })
}

async function startPositions(
  client: ClusterClient,
  group: string | undefined,
  partitions: ReadonlyArray<{ topic: string; partition: number }>,
  start: Start,
): Promise<TopicPartitionOffset[]> {
  if (partitions.length === 0) return []
  const committed = new Map<number, bigint>()
  if (group !== undefined)
    for (const c of await fetchCommitted(client, group, partitions))
      if (c.offset >= 0n) committed.set(c.partition, c.offset)
  const rest = partitions.filter((p) => !committed.has(p.partition))
  const out: TopicPartitionOffset[] = partitions
    .filter((p) => committed.has(p.partition))
    .map((p) => ({ ...p, offset: committed.get(p.partition)! }))
  if (rest.length === 0) return out
  if (start.kind === 'offset') return [...out, ...rest.map((p) => ({ ...p, offset: start.offset }))]
  return [
    ...out,
    ...(await listOffsets(
      client,
      rest.map((p) => ({ ...p, timestamp: start.timestamp })),
    )),
  ]
}
