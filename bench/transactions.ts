/**
 * What transactions cost on the data path, on Weir and on Apache Kafka with the same settings: one
 * node of each (in turn, never both up), the same clients producing N x 100 B records to a fresh
 * one-partition topic per case, idempotent (acks=all) beside transactional (a commit every 100
 * records), then consuming the transactional topic at read_uncommitted beside read_committed:
 *
 * - librdkafka: bench/peers/rdkafka-perf.c (`produce ... all [TXN_RECORDS]`, `consume` with
 *   `isolation.level` set);
 * - the Java client: bench/java/ProducePerf.java against the Kafka jars tools/kafka/install.sh
 *   fetches (compiled into .cache/bench/).
 *
 * Prints rec/s per case and, per system and client, transactional/idempotent produce and
 * read_committed/read_uncommitted consume, with the load average beside. Not in CI.
 *
 *   npm run bench:transactions
 *   npm run bench:transactions -- --records 100000 --systems weir --clients rdkafka
 */
import { execFileSync, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { freePorts, REPO, tempDir, WeirProcess, writeProperties } from '../test/support/weir-process.ts'
import { installKafka, kafkaVersion, startKafka } from '../tools/kafka/kafka.ts'
import { run } from './run-command.ts'

const { values: opts } = parseArgs({
  options: {
    records: { type: 'string', default: '200000' },
    'txn-records': { type: 'string', default: '100' },
    size: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '1' },
    systems: { type: 'string', default: 'weir,kafka' },
    clients: { type: 'string', default: 'rdkafka,java' },
  },
})
const N = Number(opts.records)
const TXN = Number(opts['txn-records'])
const SIZE = Number(opts.size)
const ROUNDS = Number(opts.rounds)
const CLIENTS = opts.clients.split(',') as ('rdkafka' | 'java')[]

/** Both systems: one partition per topic, and the internal topics of a single node. */
const SETTINGS = {
  'num.partitions': '1',
  'transaction.state.log.replication.factor': '1',
  'transaction.state.log.min.isr': '1',
  'offsets.topic.replication.factor': '1',
}

interface Node {
  readonly bootstrap: string
  stop(): Promise<void>
}

const dir = tempDir('weir-bench-transactions-')
const RDKAFKA_PERF =
  /^RDKAFKA_PERF=(.+)$/m.exec(
    execFileSync(join(REPO, 'bench/peers/install.sh'), {
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
    }),
  )?.[1] ?? ''
if (RDKAFKA_PERF === '') throw new Error('bench/peers/install.sh named no rdkafka-perf')

/** ProducePerf.java compiled against the Kafka client jars, into a directory named by its digest. */
function javaClasspath(): string {
  const libs = installKafka()
  const source = join(REPO, 'bench/java/ProducePerf.java')
  const digest = createHash('sha256').update(readFileSync(source)).update(libs).digest('hex').slice(0, 16)
  const out = join(REPO, '.cache/bench', `produce-perf-${digest}`)
  if (!existsSync(out)) {
    const tmp = `${out}.tmp-${process.pid}`
    mkdirSync(tmp, { recursive: true })
    execFileSync('javac', ['-Xlint:all', '-Werror', '-d', tmp, '-cp', `${libs}/*`, source], {
      stdio: 'inherit',
    })
    rmSync(out, { recursive: true, force: true })
    renameSync(tmp, out)
  }
  return `${out}:${libs}/*`
}

async function weir(): Promise<Node> {
  const [port, controller] = (await freePorts(2)) as [number, number]
  const config = writeProperties(dir.path, 'weir.properties', {
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controller}`,
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'controller.quorum.voters': `1@127.0.0.1:${controller}`,
    ...SETTINGS,
  })
  const node = new WeirProcess(['--config', config, '--data-dir', join(dir.path, 'weir-data')])
  await node.start()
  return {
    bootstrap: `127.0.0.1:${port}`,
    stop: async () => {
      await node.stop()
    },
  }
}

async function kafka(): Promise<Node> {
  const [port, controller] = (await freePorts(2)) as [number, number]
  const broker = await startKafka({
    port,
    controllerPort: controller,
    dataDir: join(dir.path, 'kafka-data'),
    quiet: true,
    heapMb: 1024,
    config: SETTINGS,
  })
  return { bootstrap: broker.bootstrap, stop: () => broker.stop() }
}

/** Records/s of one client run, timed by the client from its first send or first record. */
function rate(out: string, n: number, what: string): number {
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as { n: number; first_s: number }
  if (r.n !== n) throw new Error(`${what} counted ${r.n} of ${n}`)
  return n / r.first_s
}

async function rdkafka(node: Node, args: string[], config: string): Promise<number> {
  const out = await run(RDKAFKA_PERF, [args[0]!, node.bootstrap, ...args.slice(1)], {
    ...process.env,
    RDKAFKA_PERF_CONFIG: config,
  })
  return rate(out, N, `rdkafka-perf ${args[0]}`)
}

let classpath: string | null = null
async function javaProduce(node: Node, topic: string, txn: number): Promise<number> {
  classpath ??= javaClasspath()
  const out = await run('java', [
    '-Xmx512m',
    '-cp',
    classpath,
    'ProducePerf',
    node.bootstrap,
    topic,
    String(N),
    String(SIZE),
    String(txn),
  ])
  return rate(out, N, 'ProducePerf')
}

interface Result {
  system: string
  client: string
  case: 'idempotent' | 'transactional' | 'read_uncommitted' | 'read_committed'
  rps: number
}

async function measure(system: string, node: Node, round: number, results: Result[]): Promise<void> {
  const push = (client: string, c: Result['case'], rps: number) => {
    results.push({ system, client, case: c, rps })
    console.error(`${system} ${client} ${c}: ${Math.round(rps)} rec/s`)
  }
  for (const client of CLIENTS) {
    const topic = (c: string) => `txn-${client}-${c}-${round}`
    if (client === 'rdkafka') {
      const produce = (c: string, txn: number) =>
        rdkafka(
          node,
          ['produce', topic(c), String(N), String(SIZE), 'all', ...(txn > 0 ? [String(TXN)] : [])],
          'enable.idempotence=true',
        )
      push(client, 'idempotent', await produce('idem', 0))
      push(client, 'transactional', await produce('txn', TXN))
      for (const level of ['read_uncommitted', 'read_committed'] as const) {
        push(
          client,
          level,
          await rdkafka(node, ['consume', topic('txn'), String(N)], `isolation.level=${level}`),
        )
      }
    } else {
      push(client, 'idempotent', await javaProduce(node, topic('idem'), 0))
      push(client, 'transactional', await javaProduce(node, topic('txn'), TXN))
    }
  }
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

async function main(): Promise<void> {
  execFileSync('npm', ['run', '-s', 'build'], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] })
  const loadBefore = load()
  const results: Result[] = []
  const systems: [string, () => Promise<Node>][] = [
    ['Weir', weir],
    [`Kafka ${kafkaVersion()}`, kafka],
  ]
  const wanted = systems.filter(([n]) => opts.systems.split(',').includes(n.split(' ')[0]!.toLowerCase()))
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Rounds alternate which system goes first, so a drifting load spreads over both.
      for (const [name, start] of round % 2 === 0 ? wanted : [...wanted].reverse()) {
        const node = await start()
        try {
          await measure(name, node, round, results)
        } finally {
          await node.stop()
          rmSync(join(dir.path, name.startsWith('Weir') ? 'weir-data' : 'kafka-data'), {
            recursive: true,
            force: true,
          })
        }
      }
    }
  } finally {
    dir.remove()
  }
  const of = (system: string, client: string, c: Result['case']) =>
    median(
      results.filter((r) => r.system === system && r.client === client && r.case === c).map((r) => r.rps),
    )
  const fmt = (x: number) => Math.round(x).toLocaleString('en-US')
  console.log(
    `\n${fmt(N)} x ${SIZE} B, one partition, acks=all; transactions of ${TXN} records; medians of ${ROUNDS} round(s)\n`,
  )
  console.log(
    '| system | client | idempotent rec/s | transactional rec/s | txn/idem | read_uncommitted rec/s | read_committed rec/s | rc/ru |',
  )
  console.log('|---|---|---|---|---|---|---|---|')
  for (const [system] of wanted) {
    for (const client of CLIENTS) {
      const idem = of(system, client, 'idempotent')
      const txn = of(system, client, 'transactional')
      const ru = of(system, client, 'read_uncommitted')
      const rc = of(system, client, 'read_committed')
      const pct = (a: number, b: number) => (Number.isNaN(a) ? '-' : `${((100 * a) / b).toFixed(0)}%`)
      const n = (x: number) => (Number.isNaN(x) ? '-' : fmt(x))
      console.log(
        `| ${system} | ${client} | ${n(idem)} | ${n(txn)} | ${pct(txn, idem)} | ${n(ru)} | ${n(rc)} | ${pct(rc, ru)} |`,
      )
    }
  }
  console.log(`\nload average at start ${loadBefore}, at end ${load()}`)
}

await main()
