/**
 * What the metrics cost the data path: kcat produce throughput against a real `weir start` with
 * the HTTP listener off (no metrics kept) and on (every request counted and timed, every record
 * counted, a scraper reading /metrics every second, as a Prometheus with scrape_interval 1s would),
 * alternating off and on for each round on fresh brokers (the order swapped every round, so a drift
 * of the machine's load falls on both). Each broker is warmed first, alike both ways: WARM_RECORDS
 * records produced and, with the listener on, one scrape; a broker runs for days, and what its
 * first Produce requests and its first scrape cost (compiling their code, ~30 ms of CPU for the
 * first scrape against ~3 ms for the next) is start-up, not the data path's steady cost. Prints
 * records/s (median and min-max over the rounds) and the on/off ratio, both of the medians and the
 * median of each round's pair, and the broker's CPU time per 100,000 records (the cost itself,
 * which the machine's noise moves less than a rate). Never fails on a time.
 *
 *   npm run bench:metrics
 *   BENCH_ROUNDS=5 BENCH_RECORDS=2000000 node bench/metrics.ts
 *
 * Cases, 100-byte records to one partition, acks=1:
 * - `batched`: the settings of every other bench (linger.ms=5, batch.size=1 MB): few large requests.
 * - `small-batches`: librdkafka's defaults for batching (linger.ms=0, batch.size=16 KiB, at most 5
 *   requests in flight): many small Produce requests, where a per-request cost shows most.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openConnection } from '../test/support/connection.ts'
import { freePorts, NODE, WEIR } from '../test/support/weir-process.ts'
import { kcatProduceArgs } from './kcat-producer.ts'

const records = Number(process.env.BENCH_RECORDS ?? 1_000_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const RECORD_BYTES = 100
const SCRAPE_MS = 1000
const WARM_RECORDS = 200_000

const ALL_CASES = [
  { name: 'batched', extra: [] as string[] },
  {
    name: 'small-batches',
    extra: ['-X', 'linger.ms=0', '-X', 'batch.size=16384', '-X', 'max.in.flight.requests.per.connection=5'],
  },
]

const CASES = ALL_CASES.filter(
  (c) => process.env.BENCH_CASES === undefined || process.env.BENCH_CASES.split(',').includes(c.name),
)

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

function run(cmd: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 65536) err += d.toString()
    })
    child.once('exit', (code) =>
      code === 0
        ? resolve(performance.now() - start)
        : reject(new Error(`${cmd} exited with ${code}:\n${err}`)),
    )
  })
}

interface Broker {
  readonly bootstrap: string
  readonly child: ChildProcess
  readonly dir: string
  readonly httpPort: number | null
}

async function startBroker(http: boolean): Promise<Broker> {
  const dir = mkdtempSync(join(tmpdir(), 'weir-bench-metrics-'))
  const [port, httpPort] = (await freePorts(2)) as [number, number]
  const bootstrap = `127.0.0.1:${port}`
  const args = [WEIR, 'start', '--data-dir', dir, '--listen', bootstrap, '--quiet']
  if (http) args.push('--set', `http.listeners=http://127.0.0.1:${httpPort}`)
  const child = spawn(NODE, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`weir not ready in 60 s:\n${output}`)), 60_000)
    const probe = setInterval(async () => {
      try {
        const c = await openConnection({ host: '127.0.0.1', port }, 'bench-metrics-probe')
        c.close()
        clearInterval(probe)
        clearTimeout(timer)
        resolve()
      } catch {}
    }, 200)
    const onData = (d: Buffer) => {
      if (output.length < 65536) output += d.toString()
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => {
      clearInterval(probe)
      clearTimeout(timer)
      reject(new Error(`weir exited with ${code}:\n${output}`))
    })
  })
  return { bootstrap, child, dir, httpPort: http ? httpPort : null }
}

async function stopBroker(b: Broker): Promise<void> {
  const exited = new Promise<void>((resolve) => b.child.once('exit', () => resolve()))
  b.child.kill('SIGTERM')
  await exited
  rmSync(b.dir, { recursive: true, force: true })
}

/** The broker's CPU time so far (user + system, ms), from /proc: less noisy than a rate on a shared machine. */
function cpuMs(b: Broker): number {
  const stat = readFileSync(`/proc/${b.child.pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // Fields 14 and 15 of the line (utime, stime), in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * Produces `records` with kcat; returns records/s and the broker's CPU ms per 100,000 records
 * meanwhile. With an HTTP port, scrapes it meanwhile.
 */
async function produce(
  b: Broker,
  extra: readonly string[],
  file: string,
  warmFile: string,
): Promise<{ rate: number; cpu: number; scrapes: number }> {
  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${b.httpPort}/metrics`)
    await res.text()
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`)
  }
  await run('kcat', [...kcatProduceArgs(b.bootstrap, 'metered', '1', warmFile), ...extra])
  if (b.httpPort !== null) await scrape()
  let scrapes = 0
  let scraping = b.httpPort !== null
  const scraper = (async () => {
    while (scraping) {
      await scrape()
      scrapes++
      await new Promise((r) => setTimeout(r, SCRAPE_MS))
    }
  })()
  try {
    const cpuBefore = cpuMs(b)
    const ms = await run('kcat', [...kcatProduceArgs(b.bootstrap, 'metered', '1', file), ...extra])
    return { rate: records / (ms / 1000), cpu: ((cpuMs(b) - cpuBefore) * 100_000) / records, scrapes }
  } finally {
    scraping = false
    await scraper
  }
}

async function main(): Promise<void> {
  const file = join(tmpdir(), `weir-bench-records-${RECORD_BYTES}-${records}.txt`)
  writeFileSync(file, `${'r'.repeat(RECORD_BYTES)}\n`.repeat(records))
  const warmFile = join(tmpdir(), `weir-bench-records-${RECORD_BYTES}-${WARM_RECORDS}.txt`)
  writeFileSync(warmFile, `${'w'.repeat(RECORD_BYTES)}\n`.repeat(WARM_RECORDS))
  console.log(
    `bench:metrics: ${records} records of ${RECORD_BYTES} B, 1 partition, acks=1, ${rounds} rounds, each broker warmed by ${WARM_RECORDS} records`,
  )
  const rows: string[] = []
  for (const c of CASES) {
    const off: number[] = []
    const on: number[] = []
    const cpuOff: number[] = []
    const cpuOn: number[] = []
    let scrapes = 0
    for (let r = 0; r < rounds; r++) {
      for (const http of r % 2 === 0 ? [false, true] : [true, false]) {
        const b = await startBroker(http)
        try {
          const p = await produce(b, c.extra, file, warmFile)
          ;(http ? on : off).push(p.rate)
          ;(http ? cpuOn : cpuOff).push(p.cpu)
          scrapes += p.scrapes
        } finally {
          await stopBroker(b)
        }
      }
    }
    const f = (xs: number[]) =>
      `${Math.round(median(xs)).toLocaleString('en-US')} (${Math.round(Math.min(...xs)).toLocaleString('en-US')}-${Math.round(Math.max(...xs)).toLocaleString('en-US')})`
    // Each round's pair ran back to back: the median of their ratios leaves out most of the
    // machine's drift between rounds, which the ratio of the two medians keeps.
    const paired = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]!)) * 100
    rows.push(
      `| ${c.name} | ${f(off)} | ${f(on)} | ${((median(on) / median(off)) * 100).toFixed(1)}% | ${paired(on, off).toFixed(1)}% | ${median(cpuOff).toFixed(1)} | ${median(cpuOn).toFixed(1)} | ${((median(cpuOn) / median(cpuOff)) * 100).toFixed(1)}% | ${paired(cpuOn, cpuOff).toFixed(1)}% | ${scrapes} |`,
    )
  }
  console.log(
    '| case | HTTP off, records/s | HTTP on (scraped every 1 s), records/s | on / off | on / off, paired | broker CPU ms per 100k records, off | on | on / off | on / off, paired | scrapes |',
  )
  console.log('|---|---|---|---|---|---|---|---|---|---|')
  for (const r of rows) console.log(r)
  rmSync(file, { force: true })
  rmSync(warmFile, { force: true })
}

await main()
