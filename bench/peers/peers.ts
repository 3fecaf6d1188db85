/**
 * Weir beside the systems a user would pick instead, on this machine and in one run: Apache Kafka
 * (KRaft, the jars of tools/kafka), Weir single node, Weir 3 nodes (replication factor 3), Redis
 * Streams, NATS JetStream and RabbitMQ Streams, each started here as a child process on loopback
 * with a temp data dir and stopped at the end (also on failure), one system at a time.
 *
 *   bench/peers/install.sh                       # once: Debian's servers, kcat, the Go client
 *   npm run bench:peers                          # everything (~10-20 min on 2 cores)
 *   npm run bench:peers -- --systems weir,redis --workloads p100,lat --records 100000
 *
 * Workloads (one producer, then one consumer of what it wrote):
 * - p100 / c100: `--records` (1,000,000) records of 100 B produced, then consumed from the start;
 * - p1k / c1k: `--big-records` (100,000) records of 1 KiB;
 * - lat: `--latency-records` (100,000) records of 100 B at a fixed `--rate` (20,000/s), each timed
 *   from its send to its ack: p50/p99.
 * Clients (`--clients`), for Kafka and Weir alike, with acks=1 and acks=all: `java`, Kafka's own perf
 * tools (`ProducerPerformance` / `ConsumerPerformance` of the Kafka 4.4.0 jars, i.e.
 * kafka-producer-perf-test and kafka-consumer-perf-test); `rdkafka`, librdkafka through kcat for
 * throughput (timed from outside, process start included; kcat formats and writes every record it
 * consumes, which caps it at ~1.1-1.3 M records/s here) and confluent-kafka for the fixed-rate
 * latency; `rdkafka-c`, librdkafka through bench/peers/rdkafka-perf.c (built by install.sh; the
 * same Debian librdkafka 2.0.2 as kcat, the same settings), which only counts what it consumes and
 * produces from one buffer in memory: the fastest librdkafka client. Its consume figure is timed
 * from the first record received (the table adds, in brackets, the rate from its process start,
 * as kcat's); its produce figure from the first send to the last delivery report; it runs no
 * latency workload (the `rdkafka` row's confluent-kafka does); `franz`, franz-go (kgo) through
 * bench/peers/client (-system kafka: the same settings, its record-slice pool on), timed as
 * rdkafka-perf, with its own fixed-rate latency run. For the others bench/peers/client
 * (Go): a raw pipelined RESP client for Redis (XADD / XREAD COUNT), nats.go for JetStream
 * (PublishAsync, pull consumer), the stream-protocol client for RabbitMQ. RSS is the peak resident set (VmHWM) of the server
 * process(es) over the system's whole run (all its workloads; summed over the 3 Weir nodes); CPU s
 * is the CPU time (user + system, /proc) the server process(es) spent during the 100 B produce and
 * consume: a figure that a busy shared machine disturbs much less than records/s.
 * `--drop-caches` (root): the clean page cache is dropped before every produce step, so that no
 * case pays this VM's cost of growing the page cache (`dropPageCache`); each case consumes right
 * after its own produce, so no consume reads what a drop evicted.
 * By default (`--order interleaved`) every system is up at once and each workload runs on every
 * system in turn, the first one rotating, so that the load of a shared machine drifting during the
 * run spreads over all systems instead of favouring the ones that ran first; `--order sequential`
 * runs one system at a time (only its servers up). Weir runs compiled: the bench runs `npm run
 * build` first (`--from-source`: the TypeScript sources, as bin/weir.js runs them without a build).
 * Prints one table and Weir's ratios to each peer
 * from this same run. Never fails on a figure.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { apis } from '../../src/protocol/index.ts'
import { WeirCluster } from '../../test/support/cluster.ts'
import { openConnection } from '../../test/support/connection.ts'
import { freePorts, NODE, REPO, WEIR } from '../../test/support/weir-process.ts'
import { kafkaVersion, startKafka } from '../../tools/kafka/kafka.ts'
import { kcatProduceArgs } from '../kcat-producer.ts'

const { values: opts } = parseArgs({
  options: {
    systems: { type: 'string', default: 'kafka,weir,weir3,redis,nats,rabbit' },
    workloads: { type: 'string', default: 'p100,c100,p1k,c1k,lat' },
    clients: { type: 'string', default: 'java,rdkafka,rdkafka-c,franz' },
    /** Extra arguments for the franz client's consume (bench/peers/client, e.g. `-crc=false`). */
    'franz-args': { type: 'string', default: '' },
    acks: { type: 'string', default: '1,all' },
    records: { type: 'string', default: '1000000' },
    'big-records': { type: 'string', default: '100000' },
    'latency-records': { type: 'string', default: '100000' },
    rate: { type: 'string', default: '20000' },
    json: { type: 'string' },
    /** interleaved: every system up at once, each workload run on all of them in turn; sequential: one system at a time. */
    order: { type: 'string', default: 'interleaved' },
    /** Rounds of all workloads; the table shows each figure's median over them. */
    rounds: { type: 'string', default: '1' },
    /** Before every produce step: `sync`, then drop the clean page cache (root only; see dropPageCache). */
    'drop-caches': { type: 'boolean', default: false },
    /**
     * Run Weir from its TypeScript sources (type stripping) instead of building it first
     * (`npm run build`, as a production install runs it; bin/weir.js then runs dist/).
     */
    'from-source': { type: 'boolean', default: false },
  },
})
const list = (s: string) => s.split(',').filter((x) => x !== '')
const SYSTEMS = list(opts.systems)
const WORKLOADS = new Set(list(opts.workloads))
type Client = 'java' | 'rdkafka' | 'rdkafka-c' | 'franz'
const CLIENT_LABEL: Record<Client, string> = {
  java: 'kafka perf tools (Java)',
  rdkafka: 'librdkafka (kcat)',
  'rdkafka-c': 'librdkafka (C, rdkafka-perf)',
  franz: 'franz-go (Go, kgo)',
}
const CLIENTS = list(opts.clients) as Client[]
for (const c of CLIENTS) {
  if (CLIENT_LABEL[c] === undefined)
    throw new Error(`unknown client ${c} (known: ${Object.keys(CLIENT_LABEL).join(', ')})`)
}
const ACKS = list(opts.acks) as Array<'1' | 'all'>
const RECORDS = Number(opts.records)
const BIG_RECORDS = Number(opts['big-records'])
const LATENCY_RECORDS = Number(opts['latency-records'])
const RATE = Number(opts.rate)
const ROUNDS = Math.max(1, Number(opts.rounds))
/** The round being run (topic and stream names carry it, so that every round writes fresh ones). */
let round = 1
const SMALL = 100
const BIG = 1024
const MB = 1_000_000

const KAFKA_LIBS = join(REPO, '.cache/kafka', kafkaVersion(), 'libs')
/** The binaries install.sh built from this checkout's sources (set in main, from its stdout). */
let PEERS_CLIENT = ''
let RDKAFKA_PERF = ''
const PY = join(REPO, '.cache/compat/pyvenv/bin/python')
const PY_CLIENT = join(REPO, 'bench/broker-client.py')

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

interface Row {
  system: string
  client: string
  acks: string
  fsync: string
  /** records/s by workload (p100, c100, p1k, c1k). */
  rps: Partial<Record<'p100' | 'c100' | 'p1k' | 'c1k', number>>
  /**
   * rdkafka-perf's consume records/s timed from its process start (setup, connection and metadata
   * included, as kcat's); `rps` then holds its rate from the first record received.
   */
  fromStart: Partial<Record<'c100' | 'c1k', number>>
  /** CPU seconds (user + system) the server process(es) spent during each throughput workload. */
  cpu: Partial<Record<'p100' | 'c100' | 'p1k' | 'c1k', number>>
  p50?: number
  p99?: number
  /** Every round's figure by key (p100, cpu:p100, p50, ...), for the medians. */
  samples: Record<string, number[]>
  rssBytes?: number
  notes: string[]
}
const rows: Row[] = []

function row(system: string, client: string, acks: string, fsync: string): Row {
  const r: Row = { system, client, acks, fsync, rps: {}, cpu: {}, fromStart: {}, samples: {}, notes: [] }
  rows.push(r)
  return r
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

/** Every server started, so that all of them stop at the end, also on failure. */
const running = new Set<() => Promise<void>>()

/** Runs a command to its end; resolves with its stdout and its wall time. */
function run(
  cmd: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; count?: boolean; timeoutMs?: number } = {},
): Promise<{ out: string; ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env })
    let out = ''
    let err = ''
    let bytes = 0
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 300_000)
    child.stdout.on('data', (d: Buffer) => {
      bytes += d.length
      if (!options.count || out.length < 4096) out += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 65536) err += d.toString()
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      const ms = performance.now() - start
      if (code === 0) resolve({ out, ms, bytes })
      else reject(new Error(`${cmd} ${args.join(' ')} exited with ${code ?? signal}:\n${err.slice(-4000)}`))
    })
  })
}

/** A process and all its descendants (from /proc), for their RSS and CPU time. */
function processTree(pid: number | undefined): number[] {
  if (pid === undefined) return []
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const list = children.get(ppid) ?? []
      list.push(Number(entry))
      children.set(ppid, list)
    } catch {}
  }
  const all: number[] = []
  const visit = (p: number) => {
    all.push(p)
    for (const c of children.get(p) ?? []) visit(c)
  }
  visit(pid)
  return all
}

/** Peak RSS (VmHWM) of a process and all its descendants, in bytes; 0 if it is gone. */
function peakRssTree(pid: number | undefined): number {
  let total = 0
  for (const p of processTree(pid)) {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))
      if (m !== null) total += Number(m[1]) * 1024
    } catch {}
  }
  return total
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100

/** CPU seconds (utime + stime) spent so far by a process and its live descendants. */
function cpuSecondsTree(pid: number | undefined): number {
  let ticks = 0
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(f[11]) + Number(f[12])
    } catch {}
  }
  return ticks / CLOCK_TICKS
}

/** A server child process of ours: spawned, waited for, stopped with SIGTERM (SIGKILL after 20 s). */
class Child {
  readonly child: ChildProcess
  readonly exited: Promise<void>
  output = ''

  constructor(cmd: string, args: readonly string[], env?: NodeJS.ProcessEnv) {
    this.child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env })
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()))
    const keep = (d: Buffer) => {
      if (this.output.length < 1 << 20) this.output += d.toString()
    }
    this.child.stdout?.on('data', keep)
    this.child.stderr?.on('data', keep)
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    this.child.kill(signal)
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20_000)
    await this.exited
    clearTimeout(timer)
  }
}

async function waitPort(port: number, what: string, child?: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port })
      s.once('connect', () => {
        s.destroy()
        resolve(true)
      })
      s.once('error', () => resolve(false))
    })
    if (ok) return
    if (child !== undefined && child.child.exitCode !== null)
      throw new Error(`${what} exited:\n${child.output.slice(-4000)}`)
    if (Date.now() > deadline)
      throw new Error(`${what} did not listen on ${port}:\n${child?.output.slice(-4000)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

function tempDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `weir-peers-${name}-`))
}

// ---------------------------------------------------------------------------------------------
// Kafka-compatible systems: Apache Kafka, Weir, Weir x3
// ---------------------------------------------------------------------------------------------

interface KafkaLike {
  bootstrap: string
  replicationFactor: number
  /** Topic configs for a topic written with these acks (Kafka: flush.messages=1 under acks=all). */
  topicConfig(acks: string): string
  fsync(acks: string): string
  rss(): number
  /** CPU seconds the server process(es) spent so far. */
  cpu(): number
  stop(): Promise<void>
}

const recordFiles = new Map<number, string>()
function recordsFile(size: number, n: number): string {
  const key = size * 1e9 + n
  let f = recordFiles.get(key)
  if (f === undefined) {
    f = join(tmpdir(), `weir-peers-records-${size}-${n}-${process.pid}.txt`)
    writeFileSync(f, `${'r'.repeat(size)}\n`.repeat(n))
    recordFiles.set(key, f)
  }
  return f
}

async function createTopic(k: KafkaLike, topic: string, acks: string): Promise<void> {
  await run(PY, [
    PY_CLIENT,
    'create',
    k.bootstrap,
    topic,
    '1',
    String(k.replicationFactor),
    k.topicConfig(acks),
  ])
  await waitTopicReady(k, topic)
}

/**
 * Until every broker of `k` names a leader for the topic's partition and a full ISR: a producer
 * started earlier spends its first second in metadata retries (NOT_LEADER_OR_FOLLOWER on a broker
 * that has not applied the new topic yet), which on a short run of a 3-node cluster is most of it.
 */
async function waitTopicReady(k: KafkaLike, topic: string): Promise<void> {
  const deadline = Date.now() + 30_000
  for (const address of k.bootstrap.split(',')) {
    const [host, port] = address.split(':')
    const c = await openConnection({ host: host!, port: Number(port) }, 'bench-peers', 5_000)
    try {
      for (;;) {
        const m = await c.request(apis.Metadata, 12, {
          topics: null,
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false,
        })
        const p = m.topics.find((t) => t.name === topic)?.partitions[0]
        if (
          p !== undefined &&
          p.errorCode === 0 &&
          p.leaderId >= 0 &&
          p.isrNodes.length >= k.replicationFactor
        )
          break
        if (Date.now() > deadline) throw new Error(`${topic} not ready on ${address} within 30 s`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } finally {
      c.close()
    }
  }
}

function javaTool(cls: string, args: string[]): Promise<{ out: string }> {
  return run('java', [
    '-Xmx1g',
    '-XX:+UseG1GC',
    `-Dlog4j2.configurationFile=${join(REPO, 'tools/kafka/log4j2-tools.properties')}`,
    '-cp',
    `${KAFKA_LIBS}/*`,
    cls,
    ...args,
  ])
}

const PRODUCER_PROPS = [
  'linger.ms=5',
  'batch.size=1000000',
  'buffer.memory=268435456',
  'compression.type=none',
  'enable.idempotence=false',
  'max.in.flight.requests.per.connection=5',
]

/** kafka-producer-perf-test: records/s and latency p50/p99 as it prints them. */
async function javaProduce(
  k: KafkaLike,
  topic: string,
  n: number,
  size: number,
  acks: string,
  rate: number,
): Promise<{ rps: number; p50: number; p99: number }> {
  const { out } = await javaTool('org.apache.kafka.tools.ProducerPerformance', [
    '--topic',
    topic,
    '--num-records',
    String(n),
    '--record-size',
    String(size),
    '--throughput',
    String(rate > 0 ? rate : -1),
    '--producer-props',
    `bootstrap.servers=${k.bootstrap}`,
    `acks=${acks}`,
    ...PRODUCER_PROPS,
  ])
  // "1000000 records sent, 512345.6 records/sec (48.86 MB/sec), 50.12 ms avg latency, 300.00 ms max
  // latency, 45 ms 50th, 120 ms 95th, 150 ms 99th, 160 ms 99.9th."
  const last = out.trim().split('\n').at(-1) ?? ''
  const m = /([\d.]+) records\/sec.*?(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th/.exec(last)
  if (m === null) throw new Error(`ProducerPerformance printed no summary:\n${out.slice(-2000)}`)
  const sent = Number(/^(\d+) records sent/.exec(last)?.[1])
  if (sent !== n) throw new Error(`ProducerPerformance sent ${sent} of ${n}`)
  return { rps: Number(m[1]), p50: Number(m[2]), p99: Number(m[4]) }
}

/** kafka-consumer-perf-test: records/s over its fetch time (group join excluded). */
async function javaConsume(k: KafkaLike, topic: string, n: number): Promise<number> {
  const { out } = await javaTool('org.apache.kafka.tools.ConsumerPerformance', [
    '--bootstrap-server',
    k.bootstrap,
    '--topic',
    topic,
    '--num-records',
    String(n),
    '--timeout',
    '60000',
    '--group',
    `peers-${topic}`,
    '--command-property',
    'fetch.max.bytes=52428800',
    '--command-property',
    'max.partition.fetch.bytes=10485760',
    '--command-property',
    'receive.buffer.bytes=4194304',
  ])
  // start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
  // rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
  const last = (out.trim().split('\n').at(-1) ?? '').split(',').map((s) => s.trim())
  const got = Number(last[4])
  if (got < n) throw new Error(`ConsumerPerformance consumed ${got} of ${n}:\n${out.slice(-2000)}`)
  return Number(last[9])
}

async function kcatProduce(
  k: KafkaLike,
  topic: string,
  n: number,
  size: number,
  acks: string,
): Promise<number> {
  const { ms } = await run('kcat', kcatProduceArgs(k.bootstrap, topic, acks, recordsFile(size, n)))
  return n / (ms / 1000)
}

async function kcatConsume(k: KafkaLike, topic: string, n: number): Promise<number> {
  const { ms, bytes } = await run(
    'kcat',
    [
      '-C',
      '-b',
      k.bootstrap,
      '-t',
      topic,
      '-o',
      'beginning',
      '-e',
      '-q',
      '-X',
      'fetch.max.bytes=52428800',
      '-X',
      'fetch.message.max.bytes=10485760',
      '-X',
      'queued.max.messages.kbytes=1048576',
      '-f',
      '.',
    ],
    { count: true },
  )
  if (bytes !== n) throw new Error(`kcat consumed ${bytes} records of ${n}`)
  return n / (ms / 1000)
}

interface PerfResult {
  n: number
  bytes: number
  /** Seconds from the first record received (consume) or sent (produce) to the last. */
  first_s: number
  /** Seconds from the process start to the last record (consume) or delivery report (produce). */
  start_s: number
  librdkafka: string
}

/** bench/peers/rdkafka-perf.c: librdkafka with nothing per record but a count. */
async function rdkafkaPerf(args: string[], n: number): Promise<PerfResult> {
  const { out } = await run(RDKAFKA_PERF, args)
  const r = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as PerfResult
  if (r.n !== n) throw new Error(`rdkafka-perf ${args[0]} counted ${r.n} of ${n}`)
  return r
}

/** Produce records/s, from the first produce call to the last delivery report. */
async function cProduce(k: KafkaLike, topic: string, n: number, size: number, acks: string): Promise<number> {
  const r = await rdkafkaPerf(['produce', k.bootstrap, topic, String(n), String(size), acks], n)
  return n / r.first_s
}

/** Consume records/s from the first record received, and from the process start. */
async function cConsume(k: KafkaLike, topic: string, n: number): Promise<{ first: number; start: number }> {
  const r = await rdkafkaPerf(['consume', k.bootstrap, topic, String(n)], n)
  return { first: n / r.first_s, start: n / r.start_s }
}

interface FranzResult extends GoResult {
  first_s: number
  start_s: number
  /** The client's own CPU seconds (user + system) over its whole run. */
  cpu_s: number
}

/** bench/peers/client's franz-go driver (-system kafka); fails unless it counted n records. */
async function franz(args: string[], n: number): Promise<FranzResult> {
  const { out } = await run(PEERS_CLIENT, ['-system', 'kafka', ...args, '-n', String(n)])
  const r = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as FranzResult
  if (r.n !== n) throw new Error(`franz ${args[1]} counted ${r.n} of ${n}`)
  return r
}

/** franz-go produce at full speed (rate 0: records/s from the first send to the end of Flush) or at a fixed rate. */
function franzProduce(k: KafkaLike, topic: string, n: number, size: number, acks: string, rate = 0) {
  return franz(
    [
      '-mode',
      'produce',
      '-addr',
      k.bootstrap,
      '-stream',
      topic,
      '-size',
      String(size),
      '-acks',
      acks,
      '-rate',
      String(rate),
    ],
    n,
  )
}

/** franz-go at the fixed `--rate` (linger 1 ms): each record from its Produce call to its promise. */
async function franzLatency(
  k: KafkaLike,
  topic: string,
  acks: string,
): Promise<{ p50: number; p99: number }> {
  const r = await franzProduce(k, topic, LATENCY_RECORDS, SMALL, acks, RATE)
  if (r.p50 === undefined || r.p99 === undefined) throw new Error('franz printed no latencies')
  return { p50: r.p50, p99: r.p99 }
}

/**
 * franz-go consume from offset 0, no group: records/s from the first record received and from the
 * process start. `-pools` (kgo.WithPools, a record-slice pool) is its fastest path measured here
 * (docs/performance.md, "Running the benchmarks"); `--franz-args` adds more.
 */
async function franzConsume(k: KafkaLike, topic: string, n: number) {
  const extra = opts['franz-args'].split(' ').filter((x) => x !== '')
  const r = await franz(['-mode', 'consume', '-addr', k.bootstrap, '-stream', topic, '-pools', ...extra], n)
  return { first: n / r.first_s, start: n / r.start_s, cpu: r.cpu_s }
}

async function pyLatency(k: KafkaLike, topic: string, acks: string): Promise<{ p50: number; p99: number }> {
  const { out } = await run(PY, [
    PY_CLIENT,
    'produce',
    k.bootstrap,
    topic,
    String(LATENCY_RECORDS),
    '100',
    acks,
    String(RATE),
  ])
  const r = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Record<string, number>
  if (r.errors! > 0) throw new Error(`${r.errors} delivery errors`)
  return { p50: r.p50!, p99: r.p99! }
}

/** One row of the table: a system with one client (and acks), run workload by workload. */
interface Case {
  readonly row: Row
  /** Runs one workload (p100, c100, p1k, c1k, lat) and records its figure in the row. */
  step(workload: string): Promise<void>
}

/** A started system: its cases, its servers' peak RSS, and how to stop it. */
interface System {
  readonly cases: Case[]
  rss(): number
  stop(): Promise<void>
}

/** The order a case runs its workloads in: a produce, then the consume of what it wrote. */
const WORKLOAD_GROUPS = [['p100', 'c100'], ['p1k', 'c1k'], ['lat']] as const
const SIZES: Record<string, readonly [size: number, n: () => number]> = {
  '100': [SMALL, () => RECORDS],
  '1k': [BIG, () => BIG_RECORDS],
}

/** Wraps a case's steps: a failed step is noted in the row and the case's later steps are skipped. */
function makeCase(
  r: Row,
  label: string,
  cpu: () => number,
  step: (workload: string) => Promise<string>,
): Case {
  let failed = false
  return {
    row: r,
    async step(workload) {
      if (failed) return
      try {
        const before = cpu()
        const said = await step(workload)
        const spent = cpu() - before
        const sample = (key: string, x: number | undefined) => {
          if (x === undefined) return
          const xs = r.samples[key] ?? []
          xs.push(x)
          r.samples[key] = xs
        }
        if (workload === 'lat') {
          sample('p50', r.p50)
          sample('p99', r.p99)
        } else {
          r.cpu[workload as 'p100'] = spent
          sample(workload, r.rps[workload as 'p100'])
          sample(`cpu:${workload}`, spent)
          sample(`start:${workload}`, r.fromStart[workload as 'c100'])
        }
        progress(`${label} ${workload}: ${said}, server CPU ${spent.toFixed(2)} s`)
      } catch (e) {
        failed = true
        r.notes.push(`failed in ${workload}: ${failure(e)}`)
        progress(`${label} ${workload}: ${(e as Error).message}`)
      }
    },
  }
}

function kafkaLikeCases(system: string, k: KafkaLike): Case[] {
  const cases: Case[] = []
  for (const acks of ACKS) {
    for (const client of CLIENTS) {
      const r = row(system, CLIENT_LABEL[client], acks, k.fsync(acks))
      const t = (w: string) => `${client}-a${acks}-${w}-r${round}`
      const rps = (x: number) => `${Math.round(x)} rec/s`
      cases.push(
        makeCase(r, `${system} ${client} acks=${acks}`, k.cpu, async (workload) => {
          const [kind, w] = [workload[0], workload.slice(1)]
          if (workload === 'lat') {
            // confluent-kafka (librdkafka) is the librdkafka row's latency client: not run twice.
            if (client === 'rdkafka-c') return 'skipped (the librdkafka (kcat) row runs confluent-kafka)'
            await createTopic(k, t('lat'), acks)
            const l =
              client === 'java'
                ? await javaProduce(k, t('lat'), LATENCY_RECORDS, SMALL, acks, RATE)
                : client === 'franz'
                  ? await franzLatency(k, t('lat'), acks)
                  : await pyLatency(k, t('lat'), acks)
            r.p50 = l.p50
            r.p99 = l.p99
            return `p50 ${ms(l.p50)} p99 ${ms(l.p99)} ms`
          }
          const [size, n] = SIZES[w]!
          if (kind === 'p') {
            await createTopic(k, t(w), acks)
            if (client === 'franz') {
              const p = await franzProduce(k, t(w), n(), size, acks)
              r.rps[workload as 'p100'] = n() / p.first_s
              return `${rps(n() / p.first_s)}, client CPU ${p.cpu_s.toFixed(2)} s`
            }
            const x =
              client === 'java'
                ? (await javaProduce(k, t(w), n(), size, acks, 0)).rps
                : client === 'rdkafka'
                  ? await kcatProduce(k, t(w), n(), size, acks)
                  : await cProduce(k, t(w), n(), size, acks)
            r.rps[workload as 'p100'] = x
            return rps(x)
          }
          if (r.rps[`p${w}` as 'p100'] === undefined) return 'skipped (nothing produced)'
          if (client === 'rdkafka-c') {
            const c = await cConsume(k, t(w), n())
            r.rps[workload as 'c100'] = c.first
            r.fromStart[workload as 'c100'] = c.start
            return `${rps(c.first)} from the first record, ${rps(c.start)} from process start`
          }
          if (client === 'franz') {
            const c = await franzConsume(k, t(w), n())
            r.rps[workload as 'c100'] = c.first
            r.fromStart[workload as 'c100'] = c.start
            return `${rps(c.first)} from the first record, ${rps(c.start)} from process start, client CPU ${c.cpu.toFixed(2)} s`
          }
          const x = client === 'java' ? await javaConsume(k, t(w), n()) : await kcatConsume(k, t(w), n())
          r.rps[workload as 'c100'] = x
          return rps(x)
        }),
      )
    }
  }
  return cases
}

/**
 * `--drop-caches`: `sync`, then `echo 1 > /proc/sys/vm/drop_caches`, before every produce step. On
 * this VM the page cache grows into memory that costs a fault on the host when first written:
 * `dd` of 256 MiB files in a row ran at 3.8-4.8 GB/s for the first ~600 MB, then at 390-430 MB/s
 * for the next 3.5 GB, and at 3.2-5.1 GB/s throughout with the cache dropped every 512 MB. Rounds
 * of bench:peers then slowed down as they went (each writes ~1 GB; a 3-node RF 3 cluster writes
 * three times what one node does, so it paid three times as much). Dropping the clean cache before
 * each produce run gives every system the same start. It evicts what earlier steps wrote, so each
 * case consumes right after its own produce (`WORKLOAD_GROUPS`): every consume reads a topic just
 * written, from memory, whichever case ran before it.
 */
function dropPageCache(): void {
  execFileSync('sync')
  writeFileSync('/proc/sys/vm/drop_caches', '1')
}

/** Starts a server and registers its stop, so that every server stops at the end, also on failure. */
async function started<T extends { stop(): Promise<void> }>(s: T): Promise<T> {
  const stop = () => s.stop()
  running.add(stop)
  return {
    ...s,
    stop: async () => {
      running.delete(stop)
      await s.stop()
    },
  }
}

async function kafka(): Promise<System> {
  const dir = tempDir('kafka')
  const b = await started(await startKafka({ port: 0, dataDir: dir, quiet: true, heapMb: 1024 }))
  const k: KafkaLike = {
    bootstrap: b.bootstrap,
    replicationFactor: 1,
    topicConfig: (acks: string) => (acks === 'all' ? 'flush.messages=1' : ''),
    fsync: (acks: string) =>
      acks === 'all' ? 'per append, before the ack (flush.messages=1)' : 'none (page cache; Kafka default)',
    rss: () => peakRssTree(b.pid),
    cpu: () => cpuSecondsTree(b.pid),
    stop: async () => {
      await b.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return { cases: kafkaLikeCases(`Kafka ${kafkaVersion()}`, k), rss: k.rss, stop: k.stop }
}

const WEIR_FSYNC = (acks: string) =>
  acks === 'all'
    ? 'before the ack (flush.on.ack, group commit)'
    : 'not awaited (flush.on.ack: readable once fsynced)'

async function weir(): Promise<System> {
  const dir = tempDir('weir')
  const k = await started(
    await (async (): Promise<KafkaLike> => {
      // The controller listens on PORT+1, which freePorts did not check: retry on a clash.
      let port = 0
      let c: Child | undefined
      for (let attempt = 0; c === undefined; attempt++) {
        ;[port] = (await freePorts(1)) as [number]
        const child = new Child(NODE, [WEIR, 'start', '--data-dir', dir, '--listen', `127.0.0.1:${port}`])
        const deadline = Date.now() + 60_000
        while (!/ready in \d+ ms/.test(child.output)) {
          if (child.child.exitCode !== null && attempt < 3 && /EADDRINUSE/.test(child.output)) break
          if (child.child.exitCode !== null || Date.now() > deadline) {
            await child.stop()
            rmSync(dir, { recursive: true, force: true })
            throw new Error(`weir did not start:\n${child.output}`)
          }
          await new Promise((r) => setTimeout(r, 50))
        }
        if (/ready in \d+ ms/.test(child.output)) c = child
      }
      return {
        bootstrap: `127.0.0.1:${port}`,
        replicationFactor: 1,
        topicConfig: () => '',
        fsync: WEIR_FSYNC,
        rss: () => peakRssTree(c.pid),
        cpu: () => cpuSecondsTree(c.pid),
        stop: async () => {
          await c.stop()
          rmSync(dir, { recursive: true, force: true })
        },
      }
    })(),
  )
  return { cases: kafkaLikeCases('Weir', k), rss: k.rss, stop: k.stop }
}

async function weir3(): Promise<System> {
  const cluster = await WeirCluster.start({ nodes: 3, prefix: 'weir-peers-weir3-' })
  const k = await started<KafkaLike>({
    bootstrap: cluster.bootstrap,
    replicationFactor: 3,
    topicConfig: () => '',
    fsync: (acks: string) =>
      acks === 'all' ? 'leader fsync + 3 in-sync replicas before the ack' : WEIR_FSYNC(acks),
    rss: () => cluster.nodes.reduce((sum, n) => sum + peakRssTree(n.process.pid), 0),
    cpu: () => cluster.nodes.reduce((sum, n) => sum + cpuSecondsTree(n.process.pid), 0),
    stop: async () => {
      await cluster.stop()
    },
  })
  return { cases: kafkaLikeCases('Weir x3 (RF 3)', k), rss: k.rss, stop: k.stop }
}

// ---------------------------------------------------------------------------------------------
// Redis Streams, NATS JetStream, RabbitMQ Streams: bench/peers/client (Go)
// ---------------------------------------------------------------------------------------------

interface GoResult {
  n: number
  bytes: number
  seconds: number
  p50?: number
  p99?: number
}

async function goClient(
  system: string,
  addr: string,
  mode: string,
  stream: string,
  n = 0,
  size = 0,
  rate = 0,
): Promise<GoResult> {
  const { out } = await run(PEERS_CLIENT, [
    '-system',
    system,
    '-mode',
    mode,
    '-addr',
    addr,
    '-stream',
    stream,
    '-n',
    String(n),
    '-size',
    String(size),
    '-rate',
    String(rate),
  ])
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as GoResult
}

function peerCase(
  system: string,
  goSystem: string,
  addr: string,
  fsync: string,
  create: boolean,
  cpu: () => number,
): Case {
  const client =
    goSystem === 'redis'
      ? 'Go, raw RESP pipeline'
      : goSystem === 'nats'
        ? 'Go, nats.go'
        : 'Go, rabbitmq-stream-go-client'
  const r = row(system, client, '-', fsync)
  return makeCase(r, system, cpu, async (workload) => {
    const [kind, w] = [workload[0], workload.slice(1)]
    if (workload === 'lat') {
      if (create) await goClient(goSystem, addr, 'create', `lat-r${round}`)
      const l = await goClient(goSystem, addr, 'produce', `lat-r${round}`, LATENCY_RECORDS, SMALL, RATE)
      if (l.p50 !== undefined) r.p50 = l.p50
      if (l.p99 !== undefined) r.p99 = l.p99
      return `p50 ${ms(l.p50)} p99 ${ms(l.p99)} ms`
    }
    const [size, n] = SIZES[w]!
    const stream = `s${w}-r${round}`
    if (kind === 'p') {
      if (create) await goClient(goSystem, addr, 'create', stream)
      const p = await goClient(goSystem, addr, 'produce', stream, n(), size)
      if (p.n !== n()) throw new Error(`${system} acked ${p.n} of ${n()}`)
      r.rps[workload as 'p100'] = n() / p.seconds
      return `${Math.round(n() / p.seconds)} rec/s`
    }
    if (r.rps[`p${w}` as 'p100'] === undefined) return 'skipped (nothing produced)'
    const c = await goClient(goSystem, addr, 'consume', stream, n(), size)
    if (c.n < n()) throw new Error(`${system} consumed ${c.n} of ${n()}`)
    r.rps[workload as 'c100'] = n() / c.seconds
    return `${Math.round(n() / c.seconds)} rec/s`
  })
}

function version(cmd: string, args: string[], re: RegExp): string {
  try {
    return (
      re.exec(execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }))?.[1] ?? '?'
    )
  } catch {
    return '?'
  }
}

async function redis(): Promise<System> {
  const dir = tempDir('redis')
  const [port] = await freePorts(1)
  const v = version('redis-server', ['--version'], /v=(\S+)/)
  const { c, stop } = await started(
    await (async () => {
      const c = new Child('redis-server', [
        '--bind',
        '127.0.0.1',
        '--port',
        String(port),
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
        '--save',
        '',
        '--daemonize',
        'no',
      ])
      await waitPort(port!, 'redis-server', c)
      return {
        c,
        stop: async () => {
          await c.stop()
          rmSync(dir, { recursive: true, force: true })
        },
      }
    })(),
  )
  return {
    cases: [
      peerCase(
        `Redis ${v} Streams`,
        'redis',
        `127.0.0.1:${port}`,
        'AOF everysec (up to 1 s after the ack)',
        false,
        () => cpuSecondsTree(c.pid),
      ),
    ],
    rss: () => peakRssTree(c.pid),
    stop,
  }
}

async function nats(): Promise<System> {
  const dir = tempDir('nats')
  const [port] = await freePorts(1)
  const v = version('nats-server', ['--version'], /\bv(\d\S*)/)
  const { c, stop } = await started(
    await (async () => {
      const c = new Child('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir])
      await waitPort(port!, 'nats-server', c)
      return {
        c,
        stop: async () => {
          await c.stop()
          rmSync(dir, { recursive: true, force: true })
        },
      }
    })(),
  )
  return {
    cases: [
      peerCase(
        `NATS ${v} JetStream`,
        'nats',
        `127.0.0.1:${port}`,
        'none per ack (file store, sync_interval default)',
        true,
        () => cpuSecondsTree(c.pid),
      ),
    ],
    rss: () => peakRssTree(c.pid),
    stop,
  }
}

async function rabbit(): Promise<System> {
  const dir = tempDir('rabbit')
  const [amqp, stream, dist, epmdPort] = await freePorts(4)
  const v = version('dpkg-query', ['-W', 'rabbitmq-server'], /\t([\d.]+)/)
  const { c, stop } = await started(
    await (async () => {
      writeFileSync(
        join(dir, 'rabbitmq.conf'),
        [
          `listeners.tcp.1 = 127.0.0.1:${amqp}`,
          `stream.listeners.tcp.1 = 127.0.0.1:${stream}`,
          'stream.advertised_host = 127.0.0.1',
          `stream.advertised_port = ${stream}`,
          '',
        ].join('\n'),
      )
      writeFileSync(join(dir, 'enabled_plugins'), '[rabbitmq_stream].\n')
      mkdirSync(join(dir, 'home'))
      // Our own epmd on loopback and a port of its own, so that nothing outlives the run.
      const epmd = new Child('epmd', ['-address', '127.0.0.1', '-port', String(epmdPort)])
      await waitPort(epmdPort!, 'epmd', epmd)
      const env = {
        ...process.env,
        HOME: join(dir, 'home'),
        ERL_EPMD_PORT: String(epmdPort),
        ERL_EPMD_ADDRESS: '127.0.0.1',
        RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
        RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
        RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
        RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
        RABBITMQ_LOG_BASE: join(dir, 'log'),
        RABBITMQ_LOGS: '-',
        RABBITMQ_PID_FILE: join(dir, 'rabbit.pid'),
        RABBITMQ_PLUGINS_EXPAND_DIR: join(dir, 'plugins-expand'),
        RABBITMQ_NODENAME: `weirpeers${stream}@localhost`,
        RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
        RABBITMQ_NODE_PORT: String(amqp),
        RABBITMQ_DIST_PORT: String(dist),
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
      }
      const c = new Child('/usr/lib/rabbitmq/bin/rabbitmq-server', [], env)
      try {
        await waitPort(stream!, 'rabbitmq-server', c, 120_000)
      } catch (e) {
        await c.stop()
        await epmd.stop()
        throw e
      }
      return {
        c,
        stop: async () => {
          // The script forwards SIGTERM to the Erlang VM, which shuts down cleanly.
          await c.stop()
          await epmd.stop()
          rmSync(dir, { recursive: true, force: true })
        },
      }
    })(),
  )
  return {
    cases: [
      peerCase(
        `RabbitMQ ${v} Streams`,
        'rabbit',
        `127.0.0.1:${stream}`,
        'none per ack (segment file)',
        true,
        () => cpuSecondsTree(c.pid),
      ),
    ],
    rss: () => peakRssTree(c.pid),
    stop,
  }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

/** A short reason: the last line the failed command printed (its own error), or the message's first. */
function failure(e: unknown): string {
  const lines = (e as Error).message.split('\n').filter((l) => l.trim() !== '')
  return (lines.length > 1 ? lines.at(-1)! : (lines[0] ?? '?')).slice(0, 100)
}

function progress(line: string): void {
  process.stderr.write(`  ${line}\n`)
}

const kilo = (x: number | undefined) => (x === undefined ? '-' : `${Math.round(x / 1000)}k`)
const mbps = (x: number | undefined, size: number) => (x === undefined ? '-' : ((x * size) / MB).toFixed(0))
const secs = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(2))
const ms = (x: number | undefined) => (x === undefined ? '-' : x < 10 ? x.toFixed(2) : x.toFixed(1))

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** Replaces each figure of a row with its median over the rounds (the same figure for one round). */
function medians(r: Row): void {
  for (const [key, xs] of Object.entries(r.samples)) {
    if (xs.length === 0) continue
    const m = median(xs)
    if (key === 'p50') r.p50 = m
    else if (key === 'p99') r.p99 = m
    else if (key.startsWith('cpu:')) r.cpu[key.slice(4) as 'p100'] = m
    else if (key.startsWith('start:')) r.fromStart[key.slice(6) as 'c100'] = m
    else r.rps[key as 'p100'] = m
  }
}

function markdown(table: string[][]): string {
  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) => `| ${r.map((x, i) => x.padEnd(widths[i]!)).join(' | ')} |`
  return [
    line(table[0]!),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...table.slice(1).map(line),
  ].join('\n')
}

/** A consume rate; rdkafka-perf's and franz's from the first record, then (in brackets) from the process start. */
const consumed = (r: Row, w: 'c100' | 'c1k') =>
  r.fromStart[w] === undefined ? kilo(r.rps[w]) : `${kilo(r.rps[w])} (${kilo(r.fromStart[w])})`

function resultsTable(): string {
  const head = [
    'system',
    'client',
    'acks',
    `P 100 B rec/s`,
    'MB/s',
    'CPU s',
    'C 100 B rec/s',
    'MB/s',
    'CPU s',
    'P 1 KiB rec/s',
    'MB/s',
    'C 1 KiB rec/s',
    'MB/s',
    `@${RATE / 1000}k/s p50 / p99 ms`,
    'RSS MB',
    'fsync',
  ]
  const body = rows.map((r) => [
    r.system,
    r.client,
    r.acks,
    kilo(r.rps.p100),
    mbps(r.rps.p100, SMALL),
    secs(r.cpu.p100),
    consumed(r, 'c100'),
    mbps(r.rps.c100, SMALL),
    secs(r.cpu.c100),
    kilo(r.rps.p1k),
    mbps(r.rps.p1k, BIG),
    consumed(r, 'c1k'),
    mbps(r.rps.c1k, BIG),
    `${ms(r.p50)} / ${ms(r.p99)}`,
    r.rssBytes === undefined ? '-' : (r.rssBytes / 1024 / 1024).toFixed(0),
    r.fsync + (r.notes.length > 0 ? ` (${r.notes.join('; ')})` : ''),
  ])
  return markdown([head, ...body])
}

/**
 * Weir's figure over the peer's (throughput: >1 is Weir faster; p99, RSS and server CPU seconds for
 * the same records: peer over Weir, >1 is Weir better).
 */
function ratiosTable(): string {
  const weirRows = rows.filter((r) => r.system === 'Weir')
  if (weirRows.length === 0) return ''
  const best = (rs: Row[], f: (r: Row) => number | undefined, lower = false) => {
    const xs = rs.map(f).filter((x): x is number => x !== undefined && Number.isFinite(x))
    if (xs.length === 0) return undefined
    return lower ? Math.min(...xs) : Math.max(...xs)
  }
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || b === 0 ? '-' : `${(a / b).toFixed(2)}x`
  const head = [
    'Weir vs',
    'match',
    'P 100 B',
    'C 100 B',
    'P 1 KiB',
    'C 1 KiB',
    'p99 (peer/Weir)',
    'RSS (peer/Weir)',
    'server CPU P / C 100 B (peer/Weir)',
  ]
  const body: string[][] = []
  for (const peer of rows.filter((r) => r.system.startsWith('Kafka'))) {
    const w = weirRows.find((r) => r.client === peer.client && r.acks === peer.acks)
    if (w === undefined) continue
    body.push([
      peer.system,
      `${peer.client}, acks=${peer.acks}`,
      ratio(w.rps.p100, peer.rps.p100),
      ratio(w.rps.c100, peer.rps.c100),
      ratio(w.rps.p1k, peer.rps.p1k),
      ratio(w.rps.c1k, peer.rps.c1k),
      ratio(peer.p99, w.p99),
      ratio(peer.rssBytes, w.rssBytes),
      `${ratio(peer.cpu.p100, w.cpu.p100)} / ${ratio(peer.cpu.c100, w.cpu.c100)}`,
    ])
  }
  // Against the others: Weir at acks=1 (their acks are not fsyncs either), or at acks=all if only that ran.
  const acks1Only = weirRows.filter((r) => r.acks === '1')
  const acks1 = acks1Only.length > 0 ? acks1Only : weirRows
  for (const peer of rows.filter((r) => r.acks === '-')) {
    body.push([
      peer.system,
      `Weir's best client, acks=${acks1[0]?.acks}`,
      ratio(
        best(acks1, (r) => r.rps.p100),
        peer.rps.p100,
      ),
      ratio(
        best(acks1, (r) => r.rps.c100),
        peer.rps.c100,
      ),
      ratio(
        best(acks1, (r) => r.rps.p1k),
        peer.rps.p1k,
      ),
      ratio(
        best(acks1, (r) => r.rps.c1k),
        peer.rps.c1k,
      ),
      ratio(
        peer.p99,
        best(acks1, (r) => r.p99, true),
      ),
      ratio(peer.rssBytes, acks1[0]?.rssBytes),
      `${ratio(
        peer.cpu.p100,
        best(acks1, (r) => r.cpu.p100, true),
      )} / ${ratio(
        peer.cpu.c100,
        best(acks1, (r) => r.cpu.c100, true),
      )}`,
    ])
  }
  return markdown([head, ...body])
}

const uptime = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')

async function main(): Promise<void> {
  const installed = execFileSync(join(import.meta.dirname, 'install.sh'), {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  })
  PEERS_CLIENT = /^PEERS_CLIENT=(.+)$/m.exec(installed)?.[1] ?? ''
  RDKAFKA_PERF = /^RDKAFKA_PERF=(.+)$/m.exec(installed)?.[1] ?? ''
  if (PEERS_CLIENT === '' || RDKAFKA_PERF === '')
    throw new Error(`install.sh named no binaries:\n${installed}`)
  // Weir as a user runs it in production: compiled (dist/, ~9 MB less RSS than type stripping:
  // docs/performance.md, "Start-up and memory"), unless --from-source.
  let weirFrom = ''
  if (SYSTEMS.some((s) => s.startsWith('weir'))) {
    if (opts['from-source']) {
      process.env.WEIR_FROM_SOURCE = '1'
      weirFrom = '; Weir from its TypeScript sources'
    } else {
      execFileSync('npm', ['run', '-s', 'build'], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] })
      weirFrom = '; Weir built (dist/)'
    }
  }
  const loadBefore = uptime()
  const t0 = performance.now()
  const header =
    `weir peers bench: ${RECORDS} x 100 B and ${BIG_RECORDS} x 1 KiB, one producer then one consumer; ` +
    `latency: ${LATENCY_RECORDS} x 100 B at ${RATE}/s; ${cpus().length} cpus (${cpus()[0]?.model ?? '?'}), ` +
    `node ${process.version}${weirFrom}; ${ROUNDS > 1 ? `medians of ${ROUNDS} rounds; ` : ''}load average at start ${loadBefore}`
  console.log(header)
  const systems: Record<string, () => Promise<System>> = { kafka, weir, weir3, redis, nats, rabbit }
  for (const s of SYSTEMS) {
    if (systems[s] === undefined)
      throw new Error(`unknown system ${s} (known: ${Object.keys(systems).join(', ')})`)
  }
  const stopAll = async () => {
    for (const stop of [...running]) await stop().catch(() => {})
  }
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      void stopAll().then(() => {
        for (const f of recordFiles.values()) rmSync(f, { force: true })
        process.exit(130)
      })
    })
  }
  // A produce and the consume of what it wrote run back to back on a case ("one producer then one
  // consumer"), so that every consume reads a topic just written, as the others' do: with the
  // consumes in a phase of their own, `--drop-caches` before each later produce evicted the earlier
  // cases' topics, and all but the last case's consume read the disk.
  const steps = WORKLOAD_GROUPS.map((g) => g.filter((w) => WORKLOADS.has(w))).filter((g) => g.length > 0)
  /** Runs each group of steps on every case in turn, the starting case rotating, so load drift spreads. */
  const interleave = async (cases: Case[]) => {
    for (const [i, group] of steps.entries()) {
      for (let j = 0; j < cases.length; j++) {
        for (const w of group) {
          if (opts['drop-caches'] && (w.startsWith('p') || w === 'lat')) dropPageCache()
          await cases[(i + j) % cases.length]!.step(w)
        }
      }
    }
  }
  const rssOf = new Map<Row, number>()
  const finish = async (s: System) => {
    const rss = s.rss()
    for (const c of s.cases) rssOf.set(c.row, rss)
    await s.stop()
  }
  try {
    if (opts.order === 'sequential') {
      for (const name of SYSTEMS) {
        progress(`${name}: start (load ${uptime()})`)
        const s = await systems[name]!()
        for (round = 1; round <= ROUNDS; round++) await interleave(s.cases)
        await finish(s)
      }
    } else {
      const all: System[] = []
      for (const name of SYSTEMS) {
        progress(`${name}: start (load ${uptime()})`)
        all.push(await systems[name]!())
      }
      for (round = 1; round <= ROUNDS; round++) {
        if (ROUNDS > 1) progress(`round ${round} of ${ROUNDS} (load ${uptime()})`)
        await interleave(all.flatMap((s) => s.cases))
      }
      for (const s of all) await finish(s)
    }
  } finally {
    await stopAll()
    for (const f of recordFiles.values()) rmSync(f, { force: true })
  }
  for (const [r, rss] of rssOf) r.rssBytes = rss
  for (const r of rows) medians(r)
  const minutes = ((performance.now() - t0) / 60000).toFixed(1)
  console.log(`\n${resultsTable()}\n`)
  if (CLIENTS.includes('rdkafka-c') || CLIENTS.includes('franz'))
    console.log(
      'librdkafka (C, rdkafka-perf) and franz-go: consume rec/s from the first record received (in brackets: from the process start, as kcat is timed); produce from the first send to the last delivery report (franz-go: the end of its Flush)\n',
    )
  const ratios = ratiosTable()
  if (ratios !== '') console.log(`${ratios}\n`)
  console.log(`load average at start ${loadBefore}, at end ${uptime()}; ${minutes} min`)
  if (opts.json !== undefined)
    writeFileSync(opts.json, JSON.stringify({ header, rows, loadBefore, loadAfter: uptime() }, null, 2))
}

await main()
