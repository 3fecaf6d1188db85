/**
 * Broker benchmark with librdkafka clients against a real `weir start` process on 127.0.0.1:
 * 1,000,000 records of 100 bytes per case (1 and 4 partitions, acks=1 and acks=all), produced then
 * consumed. Prints one table of medians over the rounds with their min-max spread. Never fails on a
 * time.
 *
 *   npm run bench:broker
 *   BENCH_ROUNDS=1 BENCH_CASES=1p-acks1 BENCH_RECORDS=200000 node bench/broker.ts
 *   BENCH_CPU_PROF=/tmp/prof node bench/broker.ts      # profiles instead: produce, then fetch
 *
 * With BENCH_CPU_PROF the broker runs with `--cpu-prof` (every 200 us): one process under produce
 * load (kcat, then confluent-kafka, 1 partition, acks=1), then the same log reopened by a second
 * process that only serves fetches (kcat and confluent-kafka consumers, twice); each profile's top
 * self-time frames are printed by bench/cpu-profile-top.ts.
 *
 * Per case, on a fresh broker (so its peak RSS, VmHWM, is the case's own):
 * - `kcat P`: kcat (Debian's, librdkafka 2.0) produces the records from a pre-generated file
 *   (linger.ms=5, batch.size=1 MB, large queues): records/s and MB/s of values, process start to
 *   exit (the exit waits for every delivery report).
 * - `py P`: confluent-kafka (librdkafka 2.16) produces as fast as it can with the same settings;
 *   records/s and the delivery latency p50/p99 (librdkafka's per-message latency, produce() call to
 *   delivery report) under that load.
 * - `@rate`: confluent-kafka at a fixed rate (BENCH_RATE, 20,000 records/s) for BENCH_LATENCY_RECORDS
 *   records: latency p50/p99 when the broker is not saturated.
 * - `kcat C` and `py C`: the topics written by `kcat P` and `py P` consumed from the beginning
 *   (kcat -C -e; confluent-kafka assign() + consume(100000)), fetch.max.bytes 50 MB.
 * The fsync policy is the broker's default: acks=all waits for the fsync (flush.on.ack=true);
 * acks=1 answers after the append (the page cache), as Kafka does.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePorts, NODE, REPO, WEIR } from '../test/support/weir-process.ts'
import { kcatProduceArgs } from './kcat-producer.ts'

const records = Number(process.env.BENCH_RECORDS ?? 1_000_000)
const recordBytes = Number(process.env.BENCH_RECORD_BYTES ?? 100)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const rate = Number(process.env.BENCH_RATE ?? 20_000)
const latencyRecords = Number(process.env.BENCH_LATENCY_RECORDS ?? 100_000)
const only = process.env.BENCH_CASES?.split(',').filter((s) => s !== '')
const cpuProfDir = process.env.BENCH_CPU_PROF
/** Sampling interval of the profiles, in microseconds (node's default is 1000). */
const cpuProfIntervalUs = Number(process.env.BENCH_CPU_PROF_INTERVAL_US ?? 200)
const PY = join(REPO, '.cache/compat/pyvenv/bin/python')
const CLIENT = join(import.meta.dirname, 'broker-client.py')
const MB = 1_000_000

interface Case {
  readonly name: string
  readonly partitions: number
  readonly acks: '1' | 'all'
}
const CASES: Case[] = [
  { name: '1p-acks1', partitions: 1, acks: '1' },
  { name: '1p-acksall', partitions: 1, acks: 'all' },
  { name: '4p-acks1', partitions: 4, acks: '1' },
  { name: '4p-acksall', partitions: 4, acks: 'all' },
].filter((c) => only === undefined || only.includes(c.name)) as Case[]

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

function spread(xs: readonly number[], digits = 0, scale = 1): string {
  if (xs.length === 0) return '-'
  const f = (x: number) => (x / scale).toFixed(digits)
  return xs.length === 1 ? f(xs[0]!) : `${f(median(xs))} (${f(Math.min(...xs))}-${f(Math.max(...xs))})`
}

/** Runs a command to its end; resolves with its stdout and the wall time from spawn to exit. */
function run(cmd: string, args: readonly string[]): Promise<{ out: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => {
      countedBytes += d.length
      if (out.length < 65536) out += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.once('exit', (code) => {
      const ms = performance.now() - start
      if (code === 0) resolve({ out, ms })
      else reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${err}`))
    })
  })
}
let countedBytes = 0

class Broker {
  readonly dir: string
  readonly bootstrap: string
  readonly #child: ChildProcess
  readonly #exited: Promise<void>

  private constructor(dir: string, bootstrap: string, child: ChildProcess) {
    this.dir = dir
    this.bootstrap = bootstrap
    this.#child = child
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()))
  }

  static async start(options: { dir?: string; profile?: string } = {}): Promise<Broker> {
    const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'weir-bench-broker-'))
    const [port] = await freePorts(1)
    const bootstrap = `127.0.0.1:${port}`
    const nodeArgs =
      options.profile !== undefined
        ? ['--cpu-prof', `--cpu-prof-dir=${options.profile}`, `--cpu-prof-interval=${cpuProfIntervalUs}`]
        : []
    const child = spawn(NODE, [...nodeArgs, WEIR, 'start', '--data-dir', dir, '--listen', bootstrap], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    const b = new Broker(dir, bootstrap, child)
    await new Promise<void>((resolve, reject) => {
      const onData = (d: Buffer) => {
        output += d.toString()
        if (/ready in \d+ ms/.test(output)) resolve()
      }
      child.stdout?.on('data', onData)
      child.stderr?.on('data', onData)
      child.once('exit', (code) => reject(new Error(`weir exited with ${code}:\n${output}`)))
    })
    return b
  }

  /** Peak resident set (VmHWM) in bytes. */
  peakRssBytes(): number {
    const status = readFileSync(`/proc/${this.#child.pid}/status`, 'utf8')
    const m = /VmHWM:\s+(\d+) kB/.exec(status)
    return m === null ? Number.NaN : Number(m[1]) * 1024
  }

  async stop(remove = true): Promise<void> {
    this.#child.kill('SIGTERM')
    await this.#exited
    if (remove) rmSync(this.dir, { recursive: true, force: true })
  }
}

async function py(...args: Array<string | number>): Promise<Record<string, number>> {
  const { out } = await run(PY, [CLIENT, ...args.map(String)])
  const last = out.trim().split('\n').at(-1) ?? '{}'
  return JSON.parse(last) as Record<string, number>
}

const RECORDS_FILE = join(tmpdir(), `weir-bench-records-${recordBytes}-${records}.txt`)
function writeRecordsFile(): void {
  const line = `${'r'.repeat(recordBytes)}\n`
  writeFileSync(RECORDS_FILE, line.repeat(records))
}

async function kcatConsume(b: Broker, topic: string): Promise<{ ms: number; n: number }> {
  countedBytes = 0
  const { ms } = await run('kcat', [
    '-C',
    '-b',
    b.bootstrap,
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
  ])
  return { ms, n: countedBytes }
}

interface Figures {
  kcatP: number[]
  pyP: number[]
  pyP50: number[]
  pyP99: number[]
  rateP50: number[]
  rateP99: number[]
  kcatC: number[]
  pyC: number[]
  rss: number[]
}

async function runCase(c: Case, f: Figures): Promise<void> {
  const b = await Broker.start()
  try {
    for (const t of ['kcat', 'py', 'rate']) await py('create', b.bootstrap, t, c.partitions)
    const kp = await run('kcat', kcatProduceArgs(b.bootstrap, 'kcat', c.acks, RECORDS_FILE))
    f.kcatP.push(records / (kp.ms / 1000))
    const pp = await py('produce', b.bootstrap, 'py', records, recordBytes, c.acks, 0)
    if (pp.errors! > 0) throw new Error(`${pp.errors} delivery errors`)
    f.pyP.push(records / pp.seconds!)
    f.pyP50.push(pp.p50!)
    f.pyP99.push(pp.p99!)
    const rp = await py('produce', b.bootstrap, 'rate', latencyRecords, recordBytes, c.acks, rate)
    f.rateP50.push(rp.p50!)
    f.rateP99.push(rp.p99!)
    const kc = await kcatConsume(b, 'kcat')
    if (kc.n !== records) throw new Error(`kcat consumed ${kc.n} records, not ${records}`)
    f.kcatC.push(records / (kc.ms / 1000))
    const pc = await py('consume', b.bootstrap, 'py', records, c.partitions)
    if (pc.n !== records) throw new Error(`python consumed ${pc.n} records, not ${records}`)
    f.pyC.push(records / pc.seconds!)
    f.rss.push(b.peakRssBytes())
  } finally {
    await b.stop()
  }
}

function table(results: Map<string, Figures>): void {
  const mbps = (rps: number[]) => rps.map((r) => (r * recordBytes) / MB)
  const rows = [
    [
      'case',
      'kcat P rec/s',
      'MB/s',
      'py P rec/s',
      'py P p50/p99 ms',
      `@${rate / 1000}k/s p50/p99 ms`,
      'kcat C rec/s',
      'MB/s',
      'py C rec/s',
      'RSS MB',
    ],
  ]
  for (const [name, f] of results) {
    rows.push([
      name,
      `${spread(f.kcatP, 0, 1000)}k`,
      spread(mbps(f.kcatP), 0),
      `${spread(f.pyP, 0, 1000)}k`,
      `${spread(f.pyP50, 1)} / ${spread(f.pyP99, 1)}`,
      `${spread(f.rateP50, 1)} / ${spread(f.rateP99, 1)}`,
      `${spread(f.kcatC, 0, 1000)}k`,
      spread(mbps(f.kcatC), 0),
      `${spread(f.pyC, 0, 1000)}k`,
      spread(f.rss, 0, 1024 * 1024),
    ])
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  const line = (r: string[]) => `| ${r.map((x, i) => x.padEnd(widths[i]!)).join(' | ')} |`
  console.log(line(rows[0]!))
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`)
  for (const r of rows.slice(1)) console.log(line(r))
}

/** Profiles a 1-partition acks=1 broker: one process under produce load, one under fetch load. */
async function profile(dir: string): Promise<void> {
  const produceDir = join(dir, 'produce')
  const fetchDir = join(dir, 'fetch')
  const b = await Broker.start({ profile: produceDir })
  for (const t of ['kcat', 'py']) await py('create', b.bootstrap, t, 1)
  await run('kcat', kcatProduceArgs(b.bootstrap, 'kcat', '1', RECORDS_FILE))
  await py('produce', b.bootstrap, 'py', records, recordBytes, '1', 0)
  await b.stop(false)
  // The same log, reopened by a profiled process that only serves fetches.
  const f = await Broker.start({ dir: b.dir, profile: fetchDir })
  for (let i = 0; i < 2; i++) {
    await kcatConsume(f, 'kcat')
    await py('consume', f.bootstrap, 'py', records, 1)
  }
  await f.stop()
  for (const d of [produceDir, fetchDir]) {
    console.log(`\n${d}`)
    console.log(
      execFileSync(NODE, [join(import.meta.dirname, 'cpu-profile-top.ts'), d], { encoding: 'utf8' }),
    )
  }
}

async function main(): Promise<void> {
  writeRecordsFile()
  console.log(
    `weir broker bench: ${records} records of ${recordBytes} B, ${cpus().length} cpus (${cpus()[0]?.model ?? '?'}), ` +
      `node ${execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim()}, kcat (librdkafka 2.0) and confluent-kafka (librdkafka 2.16); ` +
      'fsync: acks=all waits for it (flush.on.ack=true), acks=1 does not',
  )
  try {
    if (cpuProfDir !== undefined) {
      await profile(cpuProfDir)
      return
    }
    const results = new Map<string, Figures>()
    for (const c of CASES) {
      results.set(c.name, {
        kcatP: [],
        pyP: [],
        pyP50: [],
        pyP99: [],
        rateP50: [],
        rateP99: [],
        kcatC: [],
        pyC: [],
        rss: [],
      })
    }
    for (let r = 0; r < rounds; r++) {
      // Interleaved: every case once per round, the order rotating, so noise spreads over cases.
      for (let i = 0; i < CASES.length; i++) {
        const c = CASES[(i + r) % CASES.length]!
        await runCase(c, results.get(c.name)!)
        process.stderr.write('.')
      }
    }
    process.stderr.write('\n')
    table(results)
  } finally {
    rmSync(RECORDS_FILE, { force: true })
  }
}

await main()
