/**
 * `weir bench produce|consume`: load from this process through client/Producer and client/Fetcher
 * (batches as bytes, requests pipelined), a live progress bar on a terminal, and at the end the
 * throughput and latency percentiles.
 */
import { randomBytes } from 'node:crypto'
import {
  type ClusterClient,
  countRecords,
  EARLIEST,
  Fetcher,
  KafkaError,
  LATEST,
  listOffsets,
  Producer,
} from '../client/index.ts'
import { TopicName } from '../model/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
import {
  COMMON_USAGE,
  intFlag,
  type parse,
  printJson,
  printTable,
  runSubcommands,
  UsageError,
  withoutArguments,
} from './command-support.ts'
import { parseAcks, parseCompression } from './produce-command.ts'

export const BENCH_USAGE = `Usage: weir bench <produce|consume> [options]

  weir bench produce [--topic T] [--records N] [--record-size BYTES] [--acks 0|1|all]
                     [--compression CODEC] [--rate RECORDS_PER_S] [--partitions N] [--batch-bytes N]
  weir bench consume [--topic T] [--records N]

produce: N records of BYTES random bytes (no key) as fast as possible, or at --rate; creates the
topic (--partitions, default 1) when it does not exist. Latency is per record, from append to its
acknowledgement. consume: reads N records (default: everything up to the end) from the start of
every partition; latency is per Fetch round trip. Both print records/s, MB/s and p50/p95/p99/p99.9.

Options:
  -t, --topic T          default weir-bench
  -n, --records N        default 100000 (produce)
  -s, --record-size B    default 100
  --no-progress          no progress bar (it is drawn only on a terminal anyway)

${COMMON_USAGE}`

const OPTIONS = {
  topic: { type: 'string', short: 't' },
  records: { type: 'string', short: 'n' },
  'record-size': { type: 'string', short: 's' },
  acks: { type: 'string', short: 'a' },
  compression: { type: 'string', short: 'z' },
  rate: { type: 'string' },
  partitions: { type: 'string', short: 'p' },
  'batch-bytes': { type: 'string' },
  'no-progress': { type: 'boolean' },
} as const

type Values = ReturnType<typeof parse<typeof OPTIONS>>['values']

export function runBench(argv: readonly string[]): Promise<number> {
  return runSubcommands('bench', BENCH_USAGE, OPTIONS, argv, {
    produce: withoutArguments(benchProduce),
    consume: withoutArguments(benchConsume),
  })
}

/** Percentiles (nearest rank) of a sample, in its unit. */
export function percentiles(sample: Float64Array, ps: readonly number[]): number[] {
  if (sample.length === 0) return ps.map(() => 0)
  const sorted = Float64Array.from(sample).sort()
  return ps.map(
    (p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!,
  )
}

class Progress {
  readonly #total: number
  readonly #enabled: boolean
  readonly #started = performance.now()
  #timer: ReturnType<typeof setInterval> | null = null
  done = 0

  constructor(total: number, enabled: boolean) {
    this.#total = total
    this.#enabled = enabled && process.stderr.isTTY === true
    if (this.#enabled) this.#timer = setInterval(() => this.#draw(), 200)
  }

  #draw(): void {
    const width = 30
    const share = this.#total > 0 ? Math.min(1, this.done / this.#total) : 0
    const filled = Math.round(share * width)
    const seconds = (performance.now() - this.#started) / 1000
    const rate = seconds > 0 ? Math.round(this.done / seconds) : 0
    process.stderr.write(
      `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(share * 100).toFixed(0).padStart(3)}%  ${this.done.toLocaleString('en')}/${this.#total.toLocaleString('en')} records  ${rate.toLocaleString('en')} rec/s `,
    )
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    if (this.#enabled) {
      this.#draw()
      process.stderr.write('\n')
    }
  }
}

function report(
  json: boolean,
  kind: string,
  result: { records: number; bytes: number; seconds: number; latenciesMs: Float64Array; latencyOf: string },
  extra: Record<string, unknown>,
): void {
  const [p50, p95, p99, p999] = percentiles(result.latenciesMs, [50, 95, 99, 99.9])
  const max = result.latenciesMs.length === 0 ? 0 : Math.max(...percentiles(result.latenciesMs, [100]))
  const summary = {
    kind,
    ...extra,
    records: result.records,
    bytes: result.bytes,
    seconds: Number(result.seconds.toFixed(3)),
    recordsPerSecond: Math.round(result.records / result.seconds),
    mbPerSecond: Number((result.bytes / 1e6 / result.seconds).toFixed(2)),
    latencyMs: {
      of: result.latencyOf,
      p50: round(p50!),
      p95: round(p95!),
      p99: round(p99!),
      p999: round(p999!),
      max: round(max),
    },
  }
  if (json) {
    printJson(summary)
    return
  }
  process.stdout.write(
    `${kind}: ${summary.records.toLocaleString('en')} records, ${(summary.bytes / 1e6).toFixed(1)} MB in ${summary.seconds} s: ` +
      `${summary.recordsPerSecond.toLocaleString('en')} records/s, ${summary.mbPerSecond} MB/s\n`,
  )
  printTable(
    ['LATENCY (ms)', 'p50', 'p95', 'p99', 'p99.9', 'max'],
    [
      [
        result.latencyOf,
        summary.latencyMs.p50,
        summary.latencyMs.p95,
        summary.latencyMs.p99,
        summary.latencyMs.p999,
        summary.latencyMs.max,
      ],
    ],
  )
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100
}

async function ensureTopic(client: ClusterClient, topic: string, partitions: number): Promise<void> {
  const { response } = await client.request(apis.CreateTopics, {
    topics: [
      {
        name: TopicName(topic),
        numPartitions: partitions,
        replicationFactor: -1,
        assignments: [],
        configs: [],
      },
    ],
    timeoutMs: 30_000,
    validateOnly: false,
  })
  const r = response.topics[0]
  if (r !== undefined && r.errorCode !== ErrorCode.None && r.errorCode !== ErrorCode.TopicAlreadyExists)
    throw new KafkaError(r.errorCode, r.errorMessage)
  // The new topic's leaders take a moment to appear in every broker's metadata.
  await client.retrying(async () => {
    const t = await client.topic(topic, { refresh: true })
    if (t.partitions.some((p) => p.leader < 0)) throw new KafkaError(ErrorCode.LeaderNotAvailable)
  })
}

async function benchProduce(client: ClusterClient, values: Values): Promise<number> {
  const topic = values.topic ?? 'weir-bench'
  const total = intFlag(values.records, 'records', 100_000, 1)
  const size = intFlag(values['record-size'], 'record-size', 100, 0)
  const rate = intFlag(values.rate, 'rate', 0, 0)
  const partitions = intFlag(values.partitions, 'partitions', 1, 1)
  const acks = parseAcks(values.acks)
  const compression = parseCompression(values.compression)
  const batchBytes = intFlag(values['batch-bytes'], 'batch-bytes', 256 * 1024, 1)
  await ensureTopic(client, topic, partitions)
  const producer = new Producer(client, {
    acks,
    compression,
    batchBytes,
    lingerMs: rate > 0 ? 1 : 5,
    deliveryTimeoutMs: client.retryTimeoutMs,
  })
  await producer.prepare(topic)
  const value = randomBytes(size)
  const latencies = new Float64Array(total)
  let acked = 0
  let failure: Error | null = null
  const progress = new Progress(total, values['no-progress'] !== true)
  const window = Math.max(1000, Math.ceil((batchBytes / Math.max(size, 1)) * 8))
  const started = performance.now()
  for (let i = 0; i < total && failure === null; i++) {
    if (rate > 0) {
      const due = started + (i / rate) * 1000
      const wait = due - performance.now()
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
    } else if (producer.buffered >= window) await producer.waitBelow(window / 2)
    const sent = performance.now()
    producer.append(topic, { value }, (e) => {
      if (e !== null) failure ??= e
      else latencies[acked++] = performance.now() - sent
      progress.done = acked
    })
  }
  await producer.flush()
  const seconds = (performance.now() - started) / 1000
  progress.stop()
  if (failure !== null) throw failure
  report(
    values.json === true,
    'produce',
    {
      records: total,
      bytes: total * size,
      seconds,
      latenciesMs: latencies.subarray(0, acked),
      latencyOf: 'append to ack',
    },
    {
      topic,
      recordSize: size,
      acks: acks === -1 ? 'all' : acks,
      compression: values.compression ?? 'none',
      targetRate: rate === 0 ? null : rate,
    },
  )
  return 0
}

async function benchConsume(client: ClusterClient, values: Values): Promise<number> {
  const topic = values.topic ?? 'weir-bench'
  const t = await client.topic(topic)
  const parts = t.partitions.map((p) => ({ topic, partition: p.partition }))
  const starts = await listOffsets(
    client,
    parts.map((p) => ({ ...p, timestamp: EARLIEST })),
  )
  const ends = await listOffsets(
    client,
    parts.map((p) => ({ ...p, timestamp: LATEST })),
  )
  const available = ends.reduce(
    (n, e) => n + Number(e.offset - (starts.find((s) => s.partition === e.partition)?.offset ?? 0n)),
    0,
  )
  const total = values.records === undefined ? available : intFlag(values.records, 'records', 0, 1)
  if (total === 0)
    throw new UsageError(`topic ${topic} has no records to consume: run 'weir bench produce' first`)
  const fetcher = new Fetcher(client, {
    partitionMaxBytes: 8 * 1024 * 1024,
    maxWaitMs: 500,
    stallTimeoutMs: client.retryTimeoutMs,
  })
  fetcher.assign(starts)
  const progress = new Progress(total, values['no-progress'] !== true)
  const latencies: number[] = []
  let records = 0
  let bytes = 0
  const started = performance.now()
  while (records < total) {
    const sent = performance.now()
    const fetched = await fetcher.fetch()
    latencies.push(performance.now() - sent)
    for (const f of fetched) {
      records += countRecords(f.records, f.fetchOffset)
      bytes += f.records.length
    }
    progress.done = records
  }
  const seconds = (performance.now() - started) / 1000
  progress.stop()
  report(
    values.json === true,
    'consume',
    { records, bytes, seconds, latenciesMs: Float64Array.from(latencies), latencyOf: 'fetch round trip' },
    { topic, partitions: parts.length },
  )
  return 0
}
