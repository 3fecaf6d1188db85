/**
 * What TLS and SASL cost on the data path, on Weir and on Apache Kafka with the same settings: one
 * node of each (in turn, never both up), each with a PLAINTEXT and a SASL_SSL listener (TLS 1.3 as
 * negotiated by default, a PKCS12 key store, SASL PLAIN), the same librdkafka program
 * (bench/peers/rdkafka-perf.c, acks=1) producing then consuming N x 100 B and M x 1 KiB records
 * over each listener in turn, a fresh one-partition topic per case. Prints rec/s and MB/s (values)
 * per case, and per system the SASL_SSL/PLAINTEXT ratio, with the load average beside. Not in CI.
 *
 *   npm run bench:security
 *   npm run bench:security -- --records 100000 --big-records 10000 --systems weir
 *   NODE_OPTIONS=--cpu-prof npm run bench:security -- --systems weir --protocols SASL_SSL  # profile
 */
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { PLAIN_JAAS, pythonOf } from '../test/support/security-clients.ts'
import { makeTestCerts } from '../test/support/tls-certs.ts'
import { freePorts, REPO, tempDir, WeirProcess, writeProperties } from '../test/support/weir-process.ts'
import { kafkaVersion, startKafka } from '../tools/kafka/kafka.ts'
import { run } from './run-command.ts'

const { values: opts } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    'big-records': { type: 'string', default: '100000' },
    systems: { type: 'string', default: 'weir,kafka' },
    protocols: { type: 'string', default: 'PLAINTEXT,SASL_SSL' },
  },
})
const USER = { username: 'bench', password: 'bench-pw-48ae' }
const MB = 1_000_000
const WORKLOADS = [
  { name: '100 B', n: Number(opts.records), size: 100 },
  { name: '1 KiB', n: Number(opts['big-records']), size: 1024 },
] as const
const PROTOCOLS = ['PLAINTEXT', 'SASL_SSL'] as const
type Protocol = (typeof PROTOCOLS)[number]

interface Node {
  readonly bootstrap: Record<Protocol, string>
  stop(): Promise<void>
}

const dir = tempDir('weir-bench-security-')
const certs = makeTestCerts(dir.path, 'bench-store-pw-77c1')
const PY = pythonOf()
const RDKAFKA_PERF =
  /^RDKAFKA_PERF=(.+)$/m.exec(
    execFileSync(join(REPO, 'bench/peers/install.sh'), {
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
    }),
  )?.[1] ?? ''
if (RDKAFKA_PERF === '') throw new Error('bench/peers/install.sh named no rdkafka-perf')

/** The client settings of each listener, as RDKAFKA_PERF_CONFIG (k=v,...). */
const CLIENT: Record<Protocol, string> = {
  PLAINTEXT: '',
  SASL_SSL: [
    'security.protocol=SASL_SSL',
    'sasl.mechanisms=PLAIN',
    `sasl.username=${USER.username}`,
    `sasl.password=${USER.password}`,
    `ssl.ca.location=${certs.caPem}`,
  ].join(','),
}

/** The broker settings both systems get for the SASL_SSL listener. */
const SECURED = {
  'listener.name.sasl_ssl.ssl.keystore.type': 'PKCS12',
  'listener.name.sasl_ssl.ssl.keystore.location': certs.serverP12,
  'listener.name.sasl_ssl.ssl.keystore.password': certs.password,
  'listener.name.sasl_ssl.sasl.enabled.mechanisms': 'PLAIN',
  'listener.name.sasl_ssl.plain.sasl.jaas.config': PLAIN_JAAS({ [USER.username]: USER.password }),
}

async function weir(): Promise<Node> {
  const [plain, controller, secured] = (await freePorts(3)) as [number, number, number]
  const config = writeProperties(dir.path, 'weir.properties', {
    listeners: `PLAINTEXT://127.0.0.1:${plain},CONTROLLER://127.0.0.1:${controller},SASL_SSL://127.0.0.1:${secured}`,
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL',
    'controller.quorum.voters': `1@127.0.0.1:${controller}`,
    'inter.broker.listener.name': 'PLAINTEXT',
    ...SECURED,
  })
  const node = new WeirProcess(['--config', config, '--data-dir', join(dir.path, 'weir-data')])
  await node.start()
  return {
    bootstrap: { PLAINTEXT: `127.0.0.1:${plain}`, SASL_SSL: `127.0.0.1:${secured}` },
    stop: async () => {
      await node.stop() // SIGTERM: a clean exit, which also writes a --cpu-prof profile
    },
  }
}

async function kafka(): Promise<Node> {
  const [plain, controller, secured] = (await freePorts(3)) as [number, number, number]
  const broker = await startKafka({
    port: plain,
    controllerPort: controller,
    dataDir: join(dir.path, 'kafka-data'),
    quiet: true,
    heapMb: 1024,
    config: {
      listeners: `PLAINTEXT://127.0.0.1:${plain},CONTROLLER://127.0.0.1:${controller},SASL_SSL://127.0.0.1:${secured}`,
      'advertised.listeners': `PLAINTEXT://127.0.0.1:${plain},SASL_SSL://127.0.0.1:${secured}`,
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL',
      ...SECURED,
    },
  })
  return {
    bootstrap: { PLAINTEXT: broker.bootstrap, SASL_SSL: `127.0.0.1:${secured}` },
    stop: () => broker.stop(),
  }
}

interface Result {
  system: string
  workload: string
  protocol: Protocol
  produce: number
  consume: number
  size: number
}

/**
 * Records/s of rdkafka-perf's run, timed from its first send or first record received. It runs
 * under /usr/bin/time so the client's own CPU seconds print beside its wall time: a client that is
 * not busy all along is waiting for the broker.
 */
async function perf(node: Node, protocol: Protocol, args: string[], n: number): Promise<number> {
  const env = {
    ...process.env,
    ...(CLIENT[protocol] === '' ? {} : { RDKAFKA_PERF_CONFIG: CLIENT[protocol] }),
  }
  const timeFile = join(dir.path, 'client-time.txt')
  const cmd = [RDKAFKA_PERF, args[0]!, node.bootstrap[protocol], ...args.slice(1)]
  const out = await run('/usr/bin/time', ['-o', timeFile, '-f', '%U %S %e', ...cmd], env)
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as { n: number; first_s: number }
  if (r.n !== n) throw new Error(`rdkafka-perf ${args[0]} counted ${r.n} of ${n}`)
  const [user, sys, wall] = readFileSync(timeFile, 'utf8').trim().split(' ').map(Number)
  console.log(
    `  ${args[0]} ${protocol}: ${r.first_s.toFixed(3)} s timed; client CPU ${(user! + sys!).toFixed(2)} s in ${wall} s`,
  )
  return n / r.first_s
}

async function measure(system: string, node: Node, results: Result[]): Promise<void> {
  for (const w of WORKLOADS) {
    for (const protocol of PROTOCOLS.filter((p) => opts.protocols.split(',').includes(p))) {
      const topic = `sec-${protocol.toLowerCase()}-${w.size}`
      await run(PY, [
        join(REPO, 'bench/broker-client.py'),
        'create',
        node.bootstrap.PLAINTEXT,
        topic,
        '1',
        '1',
        '',
      ])
      const produce = await perf(node, protocol, ['produce', topic, String(w.n), String(w.size), '1'], w.n)
      const consume = await perf(node, protocol, ['consume', topic, String(w.n)], w.n)
      results.push({ system, workload: w.name, protocol, produce, consume, size: w.size })
      console.error(
        `${system} ${w.name} ${protocol}: produce ${Math.round(produce)} rec/s, consume ${Math.round(consume)} rec/s`,
      )
    }
  }
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

async function main(): Promise<void> {
  execFileSync('npm', ['run', '-s', 'build'], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] })
  const loadBefore = load()
  const results: Result[] = []
  const systems: [string, () => Promise<Node>][] = [
    ['Weir', weir],
    [`Kafka ${kafkaVersion()}`, kafka],
  ]
  const wanted = opts.systems.split(',')
  try {
    for (const [name, start] of systems.filter(([n]) => wanted.includes(n.split(' ')[0]!.toLowerCase()))) {
      const node = await start()
      try {
        await measure(name, node, results)
      } finally {
        await node.stop()
      }
    }
  } finally {
    dir.remove()
  }
  const fmt = (x: number) => Math.round(x).toLocaleString('en-US')
  const mbs = (rps: number, size: number) => ((rps * size) / MB).toFixed(1)
  console.log('| system | records | listener | produce rec/s | MB/s | consume rec/s | MB/s |')
  console.log('|---|---|---|---|---|---|---|')
  for (const r of results) {
    const n = WORKLOADS.find((w) => w.name === r.workload)!.n
    console.log(
      `| ${r.system} | ${fmt(n)} x ${r.workload} | ${r.protocol} | ${fmt(r.produce)} | ${mbs(r.produce, r.size)} | ${fmt(r.consume)} | ${mbs(r.consume, r.size)} |`,
    )
  }
  console.log('\n| system | records | SASL_SSL/PLAINTEXT produce | consume |')
  console.log('|---|---|---|---|')
  for (const system of new Set(results.map((r) => r.system))) {
    for (const w of WORKLOADS) {
      if (!PROTOCOLS.every((p) => results.some((r) => r.system === system && r.protocol === p))) continue
      const of = (p: Protocol) =>
        results.find((r) => r.system === system && r.workload === w.name && r.protocol === p)!
      const pct = (k: 'produce' | 'consume') =>
        `${((100 * of('SASL_SSL')[k]) / of('PLAINTEXT')[k]).toFixed(0)}%`
      console.log(`| ${system} | ${w.name} | ${pct('produce')} | ${pct('consume')} |`)
    }
  }
  console.log(`\nload average at start ${loadBefore}, at end ${load()}`)
}

await main()
