/**
 * The web console on a large cluster: one node with --partitions (default 10,000) in --topics
 * (default 200) topics, Weir and Apache Kafka in the same run, each served by `weir console`
 * (the same console, the cluster the only difference). Prints the page's bytes, the first
 * contentful paint and a cold load, and per view the time from a click (the hash change) until
 * it is drawn in a real headless Chromium (median of --rounds), and per API call its median time.
 *
 *   npm run bench:console -- [--partitions 10000] [--topics 200] [--systems weir,kafka] [--rounds 5]
 */
/// <reference lib="dom" />
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { gzipSync } from 'node:zlib'
import { ClusterClient, Producer } from '../src/client/index.ts'
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_JS } from '../src/console/page.ts'
import { nodeTransport, systemClock } from '../src/io/index.ts'
import type { TopicName } from '../src/model/index.ts'
import { apis } from '../src/protocol/index.ts'
import { launchBrowser } from '../test/support/browser.ts'
import { startWeirConsole } from '../test/support/weir-console.ts'
import { singleNodeConfig, tempDir, WeirProcess, waitFor } from '../test/support/weir-process.ts'
import { kafkaVersion, startKafka } from '../tools/kafka/kafka.ts'

const { values: opts } = parseArgs({
  options: {
    partitions: { type: 'string', default: '10000' },
    topics: { type: 'string', default: '200' },
    systems: { type: 'string', default: 'weir,kafka' },
    rounds: { type: 'string', default: '9' },
  },
})
const TOPICS = Number(opts.topics)
const PER_TOPIC = Math.ceil(Number(opts.partitions) / TOPICS)
const ROUNDS = Number(opts.rounds)
const dir = tempDir('weir-bench-console-')
const topicName = (t: number) => `bench-${String(t).padStart(4, '0')}`

interface Running {
  readonly bootstrap: string
  stop(): Promise<void>
}

async function weir(): Promise<Running> {
  const { port, config } = await singleNodeConfig(dir.path)
  const node = new WeirProcess(['--config', config])
  await node.start(300_000)
  return { bootstrap: `127.0.0.1:${port}`, stop: async () => void (await node.stop()) }
}

async function kafka(): Promise<Running> {
  const broker = await startKafka({
    port: 0,
    dataDir: join(dir.path, 'kafka-data'),
    quiet: true,
    heapMb: 1024,
    startTimeoutMs: 300_000,
    config: { 'offsets.topic.replication.factor': '1' },
  })
  return { bootstrap: broker.bootstrap, stop: () => broker.stop(300_000) }
}

/** The topics (batched CreateTopics), until every partition has a leader; a few records and a group. */
async function populate(bootstrap: string): Promise<void> {
  const client = new ClusterClient({
    bootstrap: [bootstrap],
    clock: systemClock,
    transport: nodeTransport,
    requestTimeoutMs: 300_000,
  })
  try {
    const perRequest = Math.max(1, Math.floor(5000 / PER_TOPIC))
    for (let t = 0; t < TOPICS; t += perRequest) {
      const { response } = await client.request(apis.CreateTopics, {
        topics: Array.from({ length: Math.min(perRequest, TOPICS - t) }, (_, i) => ({
          name: topicName(t + i) as TopicName,
          numPartitions: PER_TOPIC,
          replicationFactor: 1,
          assignments: [],
          configs: [],
        })),
        timeoutMs: 300_000,
        validateOnly: false,
      })
      for (const r of response.topics)
        if (r.errorCode !== 0) throw new Error(`CreateTopics ${r.name}: ${r.errorCode} ${r.errorMessage}`)
    }
    await waitFor(
      'every partition led',
      async () => {
        const md = await client.refresh({ all: true })
        const led = [...md.topics.values()]
          .filter((t) => t.name.startsWith('bench-'))
          .reduce((n, t) => n + t.partitions.filter((p) => p.leader >= 0).length, 0)
        return led === TOPICS * PER_TOPIC ? true : undefined
      },
      600_000,
    )
    // Weir opens a new partition's log after its metadata shows it: measured only once every log
    // exists on both, so that neither broker is still busy creating them.
    await waitFor(
      'every partition in the log directory',
      async () => {
        const md = await client.refresh()
        const { response } = await client.request(
          apis.DescribeLogDirs,
          { topics: null },
          { to: [...md.brokers.keys()][0]! },
        )
        const logged = response.results
          .flatMap((r) => r.topics)
          .filter((t) => t.name.startsWith('bench-'))
          .reduce((n, t) => n + t.partitions.length, 0)
        return logged === TOPICS * PER_TOPIC ? true : undefined
      },
      600_000,
    )
    const producer = new Producer(client, { acks: -1, lingerMs: 0 })
    await producer.prepare(topicName(0))
    for (let i = 0; i < 50; i++)
      await producer.send(
        topicName(0),
        { key: Buffer.from(`k${i}`), value: Buffer.from(JSON.stringify({ i })) },
        0,
      )
    await producer.close()
  } finally {
    client.close()
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const VIEWS: Array<[string, string]> = [
  ['cluster', ''],
  ['topics (page of 100)', '#/topics'],
  [`topic (${PER_TOPIC} partitions)`, `#/topics/${topicName(0)}`],
  ['records (50)', `#/topics/${topicName(0)}/0?offset=0`],
  ['groups', '#/groups'],
]
const CALLS: Array<[string, string]> = [
  ['GET /cluster', '/cluster'],
  ['GET /topics', '/topics?limit=100'],
  ['GET /topics/NAME', `/topics/${topicName(0)}`],
  ['GET /partitions', '/partitions?state=offline'],
  ['GET records', `/topics/${topicName(0)}/partitions/0/records?offset=0&limit=50`],
]

async function measure(system: string, start: () => Promise<Running>) {
  const running = await start()
  const figures = new Map<string, number>()
  try {
    const t0 = performance.now()
    await populate(running.bootstrap)
    console.error(
      `${system}: ${TOPICS * PER_TOPIC} partitions ready in ${Math.round(performance.now() - t0)} ms`,
    )
    const { child, base } = await startWeirConsole(['-b', running.bootstrap])
    const browser = await launchBrowser()
    try {
      for (const [name, path] of CALLS) {
        const times: number[] = []
        for (let i = 0; i < ROUNDS * 2; i++) {
          const s = performance.now()
          const r = await fetch(`${base}/console/api${path}`)
          if (!r.ok) throw new Error(`${name}: ${r.status} ${await r.text()}`)
          await r.arrayBuffer()
          times.push(performance.now() - s)
        }
        figures.set(`api ${name} (ms)`, median(times))
      }
      // A cold load, as a user opening the console: a new page until the cluster view is drawn.
      const fcps: number[] = []
      const loads: number[] = []
      for (let i = 0; i < ROUNDS; i++) {
        const page = await browser.newPage()
        const s = performance.now()
        await page.goto(`${base}/console/`)
        await page.waitForFunction(() =>
          document.getElementById('status')?.textContent?.startsWith('updated'),
        )
        loads.push(performance.now() - s)
        fcps.push(
          await page.evaluate(
            () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
          ),
        )
        await page.close()
      }
      figures.set('cold load to the cluster view drawn (ms)', median(loads))
      // Moving between views within the page, as a user clicks: from the hash change until drawn.
      const page = await browser.newPage()
      await page.goto(`${base}/console/`)
      await page.waitForFunction(() => document.getElementById('status')?.textContent?.startsWith('updated'))
      const times = new Map<string, number[]>(VIEWS.map(([name]) => [name, []]))
      // Round 0 warms Chromium and the console up and is not counted.
      for (let i = 0; i <= ROUNDS; i++)
        for (const [name, hash] of VIEWS) {
          const t = await page.evaluate(
            (h) =>
              new Promise<number>((resolve) => {
                const status = document.getElementById('status')!
                status.textContent = ''
                const s = performance.now()
                location.hash = h === '' ? '#/' : h
                const poll = () =>
                  status.textContent?.startsWith('updated')
                    ? resolve(performance.now() - s)
                    : requestAnimationFrame(poll)
                requestAnimationFrame(poll)
              }),
            hash,
          )
          if (i > 0) times.get(name)!.push(t)
        }
      await page.close()
      for (const [name, t] of times) figures.set(`view ${name} drawn (ms)`, median(t))
      // A page drawn before Chromium records its paint entry gives none: such rounds are left out.
      figures.set('first contentful paint (ms)', median(fcps.filter(Number.isFinite)))
    } finally {
      await browser.close()
      child.kill('SIGTERM')
    }
  } finally {
    await running.stop()
  }
  return figures
}

const systems = opts.systems.split(',')
const results = new Map<string, Map<string, number>>()
for (const s of systems) results.set(s, await measure(s, s === 'kafka' ? kafka : weir))
dir.remove()

const chromiumVersion = await launchBrowser().then(async (b) => {
  const v = b.version()
  await b.close()
  return v
})
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
const raw = CONSOLE_HTML.length + CONSOLE_JS.length + CONSOLE_CSS.length
const gz = [CONSOLE_HTML, CONSOLE_JS, CONSOLE_CSS].reduce((n, x) => n + gzipSync(x).length, 0)
console.log(
  `console bench at ${commit}, ${new Date().toISOString().slice(0, 10)}: one node, ${TOPICS * PER_TOPIC} partitions in ${TOPICS} topics; weir console; Chromium ${chromiumVersion}; Kafka ${kafkaVersion()}`,
)
console.log(`page: ${raw} bytes (HTML + script + stylesheet), ${gz} gzipped; no other request\n`)
const names = [...results.values().next().value!.keys()]
const header = ['figure', ...systems, ...(systems.length === 2 ? [`${systems[0]}/${systems[1]}`] : [])]
console.log(`| ${header.join(' | ')} |`)
console.log(`|${header.map(() => '---').join('|')}|`)
for (const n of names) {
  const vals = systems.map((s) => results.get(s)!.get(n)!)
  const cells = vals.map((v) => v.toFixed(1))
  if (vals.length === 2) cells.push(`${((vals[0]! / vals[1]!) * 100).toFixed(0)}%`)
  console.log(`| ${n} | ${cells.join(' | ')} |`)
}
