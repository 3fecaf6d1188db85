/**
 * Many partitions on one node, Weir beside Apache Kafka in the same run (one system up at a time):
 * `--partitions` partitions in `--topics` topics (one replica), and for each system
 *
 *   - create: CreateTopics in requests of at most 5,000 partitions, until Metadata shows every
 *     partition with a leader and DescribeLogDirs lists every partition's log;
 *   - first record: one record to every partition from librdkafka (confluent-kafka, acks=all, each
 *     record sent to its partition explicitly), until every delivery is reported;
 *   - metadata: a full Metadata v12 (every topic) over a raw socket: time to the whole answer, and
 *     its bytes;
 *   - RSS and open descriptors of the broker process after the writes;
 *   - clean stop (SIGTERM to exit) and restart to ready, then kill -9 and restart to ready, where
 *     ready is the broker answering, Metadata listing every partition with a leader and a Produce to
 *     every partition (one request) succeeding everywhere.
 *
 * then, on the same node, `--connections` idle connections (each past ApiVersions): the RSS each adds;
 * and `--groups` groups each committing one offset (no members, as an admin commit): the time, the
 * RSS each adds, and after kill -9 the restart until OffsetFetch answers every group's offset
 * (the coordinator has loaded `__consumer_offsets`). `--partitions 0` skips the partition steps.
 *
 * A step that fails or runs past `--step-timeout` seconds is printed with its error and ends that
 * system's run. Not in CI.
 *
 *   npm run bench:scale                                   # 100,000 partitions in 1,000 topics
 *   npm run bench:scale -- --partitions 10000 --topics 100 --systems weir,kafka
 *   npm run bench:scale -- --partitions 0 --connections 10000 --groups 10000
 */
import { execFileSync, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { KafkaConnection } from '../src/client/index.ts'
import type { TopicName } from '../src/model/index.ts'
import { apis, encodeBatch, encodeRequest } from '../src/protocol/index.ts'
import { openConnection } from '../test/support/connection.ts'
import { pythonOf } from '../test/support/security-clients.ts'
import { freePorts, singleNodeConfig, tempDir, WeirProcess } from '../test/support/weir-process.ts'
import { type KafkaBroker, kafkaVersion, startKafka } from '../tools/kafka/kafka.ts'

const { values: opts } = parseArgs({
  options: {
    partitions: { type: 'string', default: '100000' },
    topics: { type: 'string', default: '1000' },
    systems: { type: 'string', default: 'weir,kafka' },
    'step-timeout': { type: 'string', default: '900' },
    'kafka-heap-mb': { type: 'string', default: '1024' },
    connections: { type: 'string', default: '10000' },
    groups: { type: 'string', default: '10000' },
  },
})
const TOPICS = Number(opts.partitions) > 0 ? Number(opts.topics) : 0
const PER_TOPIC = TOPICS > 0 ? Math.ceil(Number(opts.partitions) / TOPICS) : 0
const CONNECTIONS = Number(opts.connections)
const GROUPS = Number(opts.groups)
const GROUPS_TOPIC = 'scale-groups' as TopicName
const PARTITIONS = TOPICS * PER_TOPIC
const STEP_TIMEOUT_MS = Number(opts['step-timeout']) * 1000
const topicName = (t: number) => `scale-${String(t).padStart(4, '0')}` as TopicName
const dir = tempDir('weir-bench-scale-')
const PY = pythonOf()

interface Broker {
  readonly port: number
  pid(): number
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>
  kill(): Promise<void>
  /** Start again on the same directory, resolving once it answers. */
  restart(): Promise<void>
}

async function weir(): Promise<Broker> {
  const { port, config } = await singleNodeConfig(dir.path)
  let node = new WeirProcess(['--config', config])
  await node.start(STEP_TIMEOUT_MS)
  return {
    port,
    pid: () => node.pid!,
    stop: async () => {
      await node.stop()
    },
    kill: () => node.kill(),
    restart: async () => {
      node = new WeirProcess(['--config', config])
      await node.start(STEP_TIMEOUT_MS)
    },
  }
}

async function kafka(): Promise<Broker> {
  const [port, controllerPort] = (await freePorts(2)) as [number, number]
  const options = {
    port,
    controllerPort,
    dataDir: join(dir.path, 'kafka-data'),
    quiet: true,
    heapMb: Number(opts['kafka-heap-mb']),
    startTimeoutMs: STEP_TIMEOUT_MS,
    config: { 'offsets.topic.replication.factor': '1' },
  }
  let broker: KafkaBroker = await startKafka(options)
  return {
    port,
    pid: () => broker.pid!,
    stop: () => broker.stop(STEP_TIMEOUT_MS),
    kill: async () => {
      const exited = new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          try {
            process.kill(broker.pid!, 0)
          } catch {
            clearInterval(poll)
            resolve()
          }
        }, 50)
      })
      process.kill(broker.pid!, 'SIGKILL')
      await exited
    },
    restart: async () => {
      broker = await startKafka({ ...options, fresh: false })
    },
  }
}

const connectTo = (port: number) =>
  openConnection({ host: '127.0.0.1', port }, 'bench-scale', STEP_TIMEOUT_MS, 1 << 28)

async function withConnection<T>(port: number, fn: (c: KafkaConnection) => Promise<T>): Promise<T> {
  const c = await connectTo(port)
  try {
    return await fn(c)
  } finally {
    c.close()
  }
}

/** Partitions that Metadata lists with a leader. */
async function ledPartitions(port: number): Promise<number> {
  return withConnection(port, async (c) => {
    const m = await c.request(apis.Metadata, 12, {
      topics: null,
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    })
    let led = 0
    for (const t of m.topics)
      if (t.name?.startsWith('scale-'))
        for (const p of t.partitions) if (p.errorCode === 0 && p.leaderId >= 0) led++
    return led
  })
}

/** Polls `check` until it holds, or throws after the step timeout. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + STEP_TIMEOUT_MS
  for (;;) {
    if (await check().catch(() => false)) return
    if (Date.now() > deadline) throw new Error(`${what}: not within ${STEP_TIMEOUT_MS / 1000} s`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

async function createTopics(port: number): Promise<void> {
  const perRequest = Math.max(1, Math.floor(5000 / PER_TOPIC))
  await withConnection(port, async (c) => {
    for (let t = 0; t < TOPICS; t += perRequest) {
      const res = await c.request(apis.CreateTopics, 7, {
        topics: Array.from({ length: Math.min(perRequest, TOPICS - t) }, (_, i) => ({
          name: topicName(t + i),
          numPartitions: PER_TOPIC,
          replicationFactor: 1,
        })),
        timeoutMs: STEP_TIMEOUT_MS,
      })
      for (const r of res.topics)
        if (r.errorCode !== 0)
          throw new Error(`CreateTopics ${r.name}: error ${r.errorCode} ${r.errorMessage ?? ''}`)
    }
  })
  await until('every partition led', async () => (await ledPartitions(port)) === PARTITIONS)
  await until('every partition in the log dir', async () => (await loggedPartitions(port)) === PARTITIONS)
}

/**
 * Partitions that DescribeLogDirs lists: those whose log the broker created. Kafka's broker creates
 * a new partition's log before its metadata cache shows the partition; Weir's Metadata shows it at
 * once and opens the log after (a produce meanwhile waits for it), so create counts to here.
 */
async function loggedPartitions(port: number): Promise<number> {
  return withConnection(port, async (c) => {
    const res = await c.request(apis.DescribeLogDirs, 4, { topics: null })
    let n = 0
    for (const r of res.results)
      for (const t of r.topics)
        if (t.name.startsWith('scale-')) n += t.partitions.filter((p) => !p.isFutureKey).length
    return n
  })
}

/** One record to every partition from librdkafka, until every delivery is reported. */
async function firstRecords(port: number): Promise<void> {
  const script = `
import sys
from confluent_kafka import Producer
topics, per_topic = int(sys.argv[2]), int(sys.argv[3])
failed = []
def report(err, msg):
    if err is not None: failed.append(err)
p = Producer({'bootstrap.servers': sys.argv[1], 'acks': 'all', 'linger.ms': 5,
              'queue.buffering.max.messages': 2000000, 'message.timeout.ms': ${STEP_TIMEOUT_MS}})
for t in range(topics):
    name = 'scale-%04d' % t
    for q in range(per_topic):
        while True:
            try:
                p.produce(name, value=b'first record', partition=q, on_delivery=report)
                break
            except BufferError:
                p.poll(0.05)
    p.poll(0)
left = p.flush(${STEP_TIMEOUT_MS / 1000})
if left or failed:
    print('undelivered %d, failed %d: %s' % (left, len(failed), failed[:3]), file=sys.stderr)
    sys.exit(1)
`
  await new Promise<void>((resolve, reject) => {
    const child = spawn(PY, ['-c', script, `127.0.0.1:${port}`, String(TOPICS), String(PER_TOPIC)], {
      stdio: ['ignore', 'inherit', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.once('exit', (code) => {
      if (code === 0) return resolve()
      // The script's own verdict is its last line; librdkafka's logs (`%level|...`) come before it.
      const lines = err.trim().split('\n')
      const verdict = lines.filter((l) => !l.startsWith('%')).at(-1) ?? lines.at(-1) ?? ''
      const logs = lines.filter((l) => l.startsWith('%')).length
      reject(new Error(`librdkafka producer (exit ${code}, ${logs} log lines): ${verdict}`))
    })
  })
}

/** A full Metadata v12 over a raw socket: the time to the last byte of the answer, and its size. */
function fullMetadata(port: number): Promise<{ ms: number; bytes: number }> {
  const frame = encodeRequest(
    apis.Metadata,
    { requestApiVersion: 12, correlationId: 1, clientId: 'bench-scale' },
    { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false },
  )
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port })
    let got = 0
    let size = -1
    let head = Buffer.alloc(0)
    let started = 0
    s.once('connect', () => {
      started = performance.now()
      s.write(Buffer.concat(frame))
    })
    s.on('data', (d: Buffer) => {
      if (size < 0) {
        head = Buffer.concat([head, d])
        if (head.length < 4) return
        size = head.readInt32BE(0)
        got = head.length - 4
      } else got += d.length
      if (got >= size) {
        const ms = performance.now() - started
        s.destroy()
        resolve({ ms, bytes: size + 4 })
      }
    })
    s.once('error', reject)
  })
}

/** A Produce to every partition in one request: how many took the record. */
async function produceEverywhere(port: number): Promise<number> {
  return withConnection(port, async (c) => {
    const res = await c.request(apis.Produce, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: Array.from({ length: TOPICS }, (_, t) => ({
        name: topicName(t),
        partitionData: Array.from({ length: PER_TOPIC }, (_, p) => ({
          index: p,
          records: encodeBatch({ records: [{ value: Buffer.from('ready check') }] }),
        })),
      })),
    })
    let ok = 0
    for (const t of res.responses) for (const p of t.partitionResponses) if (p.errorCode === 0) ok++
    return ok
  })
}

async function ready(port: number): Promise<void> {
  await until('every partition led', async () => (await ledPartitions(port)) === PARTITIONS)
  await until('every partition writable', async () => (await produceEverywhere(port)) === PARTITIONS)
}

function rssMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Math.round(Number(kb) / 1024)
}

function descriptors(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await fn()
  return Math.round(performance.now() - started)
}

type Figures = Record<string, string>

/** `n` idle connections, each past ApiVersions (a Kafka connection, not only a socket): held until `close`. */
async function idleConnections(port: number, n: number): Promise<{ close(): void }> {
  const held: KafkaConnection[] = []
  const close = () => {
    for (const c of held) c.close()
  }
  try {
    for (let i = 0; i < n; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(100, n - i) }, async () => {
          const c = await connectTo(port)
          held.push(c)
          await c.request(apis.ApiVersions, 3, {
            clientSoftwareName: 'bench-scale',
            clientSoftwareVersion: '1',
          })
          return c
        }),
      )
      void batch
    }
  } catch (e) {
    close()
    throw e
  }
  return { close }
}

/** The offsets topic is there and this node coordinates `group`. */
async function coordinatorReady(port: number, group: string): Promise<void> {
  await until('the group coordinator', () =>
    withConnection(port, async (c) => {
      const res = await c.request(apis.FindCoordinator, 4, { keyType: 0, coordinatorKeys: [group] })
      return res.coordinators.every((x) => x.errorCode === 0)
    }),
  )
}

const groupName = (g: number) => `scale-group-${g}`

/** One committed offset for each of `GROUPS` groups (offset g for group g), 8 connections at once. */
async function commitGroups(port: number): Promise<void> {
  await withConnection(port, async (c) => {
    const res = await c.request(apis.CreateTopics, 7, {
      topics: [{ name: GROUPS_TOPIC, numPartitions: 1, replicationFactor: 1 }],
      timeoutMs: STEP_TIMEOUT_MS,
    })
    if (res.topics[0]?.errorCode !== 0)
      throw new Error(`CreateTopics ${GROUPS_TOPIC}: ${res.topics[0]?.errorCode}`)
  })
  await coordinatorReady(port, groupName(0))
  let next = 0
  await Promise.all(
    Array.from({ length: 8 }, () =>
      withConnection(port, async (c) => {
        for (let g = next++; g < GROUPS; g = next++) {
          const res = await c.request(apis.OffsetCommit, 8, {
            groupId: groupName(g) as never,
            generationIdOrMemberEpoch: -1,
            memberId: '',
            groupInstanceId: null,
            retentionTimeMs: -1n,
            topics: [
              {
                name: GROUPS_TOPIC,
                partitions: [
                  {
                    partitionIndex: 0,
                    committedOffset: BigInt(g),
                    committedLeaderEpoch: -1,
                    committedMetadata: '',
                  },
                ],
              },
            ],
          })
          const code = res.topics[0]?.partitions[0]?.errorCode
          if (code !== 0) throw new Error(`OffsetCommit ${groupName(g)}: error ${code}`)
        }
      }),
    ),
  )
}

/** Whether OffsetFetch answers every group's committed offset (every 100th group, and the last). */
async function groupsLoaded(port: number): Promise<boolean> {
  const sample = [...Array.from({ length: Math.ceil(GROUPS / 100) }, (_, i) => i * 100), GROUPS - 1]
  return withConnection(port, async (c) => {
    for (const g of sample) {
      const res = await c.request(apis.OffsetFetch, 8, {
        groups: [{ groupId: groupName(g) as never, topics: [{ name: GROUPS_TOPIC, partitionIndexes: [0] }] }],
        requireStable: false,
      })
      const group = res.groups[0]
      if (group?.errorCode !== 0) return false
      if (group.topics[0]?.partitions[0]?.committedOffset !== BigInt(g)) return false
    }
    return true
  })
}

async function measure(system: string, start: () => Promise<Broker>): Promise<Figures> {
  const out: Figures = {}
  let broker: Broker | null = null
  const step = async (name: string, fn: () => Promise<string>) => {
    const value = await fn()
    out[name] = value
    console.log(`  ${system} ${name}: ${value}`)
  }
  try {
    await step('start (ms)', async () => String(await timed(async () => (broker = await start()))))
    const b = broker!
    await step('empty RSS (MB)', async () => String(rssMb(b.pid())))
    if (PARTITIONS > 0) {
      await step('create (ms)', async () => String(await timed(() => createTopics(b.port))))
      await step('first record to each, librdkafka (ms)', async () =>
        String(await timed(() => firstRecords(b.port))),
      )
      await step('full Metadata (ms, bytes)', async () => {
        await fullMetadata(b.port)
        const m = await fullMetadata(b.port)
        return `${Math.round(m.ms)} ms, ${m.bytes} B`
      })
      await step('RSS (MB)', async () => String(rssMb(b.pid())))
      await step('open descriptors', async () => String(descriptors(b.pid())))
      await step('clean stop (ms)', async () => String(await timed(() => b.stop())))
      await step('restart to ready (ms)', async () =>
        String(
          await timed(async () => {
            await b.restart()
            await ready(b.port)
          }),
        ),
      )
      await step('RSS after restart (MB)', async () => String(rssMb(b.pid())))
      await b.kill()
      await step('kill -9, restart to ready (ms)', async () =>
        String(
          await timed(async () => {
            await b.restart()
            await ready(b.port)
          }),
        ),
      )
    }
    if (CONNECTIONS > 0) {
      const before = rssMb(b.pid())
      const held = await idleConnections(b.port, CONNECTIONS)
      await new Promise((r) => setTimeout(r, 2000))
      await step(`${CONNECTIONS} idle connections: RSS each (KB)`, async () =>
        (((rssMb(b.pid()) - before) * 1024) / CONNECTIONS).toFixed(1),
      )
      held.close()
    }
    if (GROUPS > 0) {
      const before = rssMb(b.pid())
      await step(`${GROUPS} groups: one offset commit each (ms)`, async () =>
        String(await timed(() => commitGroups(b.port))),
      )
      await step(`${GROUPS} groups: RSS each (KB)`, async () =>
        (((rssMb(b.pid()) - before) * 1024) / GROUPS).toFixed(1),
      )
      await b.kill()
      await step(`${GROUPS} groups: kill -9, restart until every group's offset is fetched (ms)`, async () =>
        String(
          await timed(async () => {
            await b.restart()
            await until('every group loaded', () => groupsLoaded(b.port))
          }),
        ),
      )
    }
  } catch (e) {
    const message = (e as Error).message.split('\n')[0] ?? ''
    out.failed = message
    console.log(`  ${system} failed: ${message}`)
  } finally {
    await (broker as Broker | null)?.stop().catch(() => undefined)
  }
  return out
}

const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
console.log(
  `bench:scale ${PARTITIONS} partitions in ${TOPICS} topics, one node each, commit ${commit}, ${new Date().toISOString()}, load ${loadavg()[0]?.toFixed(2)}`,
)
const results = new Map<string, Figures>()
try {
  for (const system of opts.systems.split(',')) {
    const label = system === 'kafka' ? `Kafka ${kafkaVersion()}` : 'Weir'
    console.log(label)
    results.set(label, await measure(label, system === 'kafka' ? kafka : weir))
  }
} finally {
  dir.remove()
}
const names = [...new Set([...results.values()].flatMap((f) => Object.keys(f)))]
console.log(`\n| figure | ${[...results.keys()].join(' | ')} |`)
console.log(`|---|${[...results.keys()].map(() => '---').join('|')}|`)
for (const n of names) console.log(`| ${n} | ${[...results.values()].map((f) => f[n] ?? '').join(' | ')} |`)
