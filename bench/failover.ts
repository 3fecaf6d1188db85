/**
 * Failover benchmark: a 3-node Weir cluster (real processes, test/support/cluster.ts), a topic with
 * replication factor 3 and min.insync.replicas 2, a producer with acks=all; the partition leader is
 * killed with SIGKILL ROUNDS times. Per kill: the time from the kill to the first successful
 * produce (acks=all, so a new leader with 2 in-sync replicas took it), and the time from the killed
 * node's restart to its return to the ISR. Prints median, p90 and max. Never fails on a time.
 *
 *   npm run bench:failover
 *   ROUNDS=5 CASES=restart node bench/failover.ts
 *   SESSION_MS=9000 CASES=down node bench/failover.ts     # Kafka's default session timeout
 *   FETCH_BACKOFF_MS=100 node bench/failover.ts            # replica.fetch.backoff.ms (default 1000)
 *
 * Two cases:
 * - `restart`: the killed node restarts at once; its new incarnation registering makes the
 *   controller move its leaderships (it need not wait for the session to expire).
 * - `down`: the killed node stays down until the round's produce succeeded, so the controller only
 *   learns of it when its session expires: `broker.session.timeout.ms` (SESSION_MS, default 2000
 *   here; Kafka's default is 9000) with `broker.heartbeat.interval.ms` (HEARTBEAT_MS, default 500;
 *   Kafka's 2000).
 *
 * The producer is Weir's own client (src/client), driven by hand so that what is measured is the
 * cluster, not a client's backoff: one Produce (acks=-1, one record) at a time to the partition's
 * leader as the metadata names it; after any failure (a closed connection, NOT_LEADER_OR_FOLLOWER,
 * NOT_ENOUGH_REPLICAS, a 1 s timeout) it refreshes the metadata and retries after RETRY_MS (20). A
 * Kafka client with its default settings adds its own retry.backoff.ms (100 ms, exponential up to
 * 1 s) and metadata refresh on top of this. One client for the whole run (FRESH_CLIENT=1: a new
 * client after every failure instead, as this bench did while the client could be kept on a
 * restarted broker's stale metadata; see src/client/README.md).
 */
import { performance } from 'node:perf_hooks'
import { ClusterClient, KafkaError } from '../src/client/index.ts'
import { nodeTransport, systemClock } from '../src/io/index.ts'
import type { TopicName } from '../src/model/index.ts'
import { apis, ErrorCode, encodeBatch } from '../src/protocol/index.ts'
import { WeirCluster } from '../test/support/cluster.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 20)
const CASES = (process.env.CASES ?? 'restart,down').split(',').filter((c) => c !== '')
const SESSION_MS = Number(process.env.SESSION_MS ?? 2000)
const HEARTBEAT_MS = Number(process.env.HEARTBEAT_MS ?? 500)
const RETRY_MS = Number(process.env.RETRY_MS ?? 20)
const FRESH_CLIENT = process.env.FRESH_CLIENT === '1'
const TOPIC = 'failover'

const VERBOSE = process.env.VERBOSE === '1'
const t0 = performance.now()
const progress = (what: string) => {
  if (VERBOSE) console.error(`[${((performance.now() - t0) / 1000).toFixed(2)} s] ${what}`)
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!
}

function summary(xs: readonly number[]): string {
  if (xs.length === 0) return '-'
  const f = (x: number) => `${(x / 1000).toFixed(2)} s`
  return `median ${f(percentile(xs, 50))}, p90 ${f(percentile(xs, 90))}, max ${f(Math.max(...xs))} (n=${xs.length})`
}

/** `p`, or a rejection after `ms` (a watchdog: nothing here may wait forever). */
function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/** One Produce of one record with acks=all to the leader the metadata names; throws on any failure. */
async function produceOnce(client: ClusterClient, seq: number): Promise<void> {
  const leader = await client.leaderOf(TOPIC, 0)
  const connection = await client.broker(leader)
  const version = connection.versionFor(apis.Produce)
  if (version === undefined) throw new KafkaError(ErrorCode.UnsupportedVersion)
  const records = encodeBatch({
    records: [{ key: null, value: Buffer.from(`r${seq}`), timestamp: BigInt(Date.now()) }],
  })
  const res = await connection.request(
    apis.Produce,
    version,
    {
      transactionalId: null,
      acks: -1,
      timeoutMs: 1000,
      topicData: [{ name: TOPIC as TopicName, partitionData: [{ index: 0, records }] }],
    },
    { timeoutMs: 1000 },
  )
  const code = res.responses[0]?.partitionResponses[0]?.errorCode ?? ErrorCode.UnknownServerError
  if (code !== 0) throw new KafkaError(code)
}

/** After a failure: refresh the metadata (or, with FRESH_CLIENT, start a new client). */
async function recover(holder: { client: ClusterClient; bootstrap: string[] }): Promise<void> {
  if (FRESH_CLIENT) {
    holder.client.close()
    holder.client = newClient(holder.bootstrap)
    return
  }
  await bounded(holder.client.refresh(), 5000, 'metadata refresh').catch(() => {})
}

/** Produces until one succeeds; resolves with the time of that success (performance.now()). */
async function produceUntilOk(
  holder: { client: ClusterClient; bootstrap: string[] },
  seq: number,
  timeoutMs = 60_000,
): Promise<number> {
  const deadline = performance.now() + timeoutMs
  let last: unknown = null
  for (;;) {
    try {
      await bounded(produceOnce(holder.client, seq), 1500, 'produce')
      return performance.now()
    } catch (e) {
      last = e
      if (performance.now() > deadline) throw new Error(`no produce for ${timeoutMs} ms: ${String(last)}`)
      await sleep(RETRY_MS)
      await recover(holder)
    }
  }
}

/** Polls `ok` until it holds; throws, with the last partition state, after `timeoutMs`. */
async function waitState(
  holder: { client: ClusterClient; bootstrap: string[] },
  what: string,
  ok: (s: { leader: number; isr: readonly number[] }) => boolean,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs
  let last: unknown = null
  for (;;) {
    const s = await bounded(partitionState(holder.client), 1500, 'metadata').catch(async (e: unknown) => {
      last = e
      if (FRESH_CLIENT) await recover(holder)
      return null
    })
    if (s !== null && ok(s)) return
    if (s !== null) last = s
    if (performance.now() > deadline)
      throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`)
    await sleep(20)
  }
}

async function partitionState(client: ClusterClient): Promise<{ leader: number; isr: readonly number[] }> {
  const t = await client.topic(TOPIC, { refresh: true })
  const p = t.partitions[0]!
  return { leader: p.leader, isr: p.isr }
}

let current: WeirCluster | null = null

function newClient(bootstrap: string[]): ClusterClient {
  return new ClusterClient({
    bootstrap,
    clientId: 'weir-failover-bench',
    clock: systemClock,
    transport: nodeTransport,
    requestTimeoutMs: 1000,
    retryTimeoutMs: 60_000,
    retryBackoffMs: RETRY_MS,
  })
}

async function runCase(name: string): Promise<{ failover: number[]; rejoin: number[] }> {
  const cluster = await WeirCluster.start({
    nodes: 3,
    prefix: 'weir-failover-',
    config: {
      'default.replication.factor': 3,
      'min.insync.replicas': 2,
      'offsets.topic.replication.factor': 3,
      'broker.session.timeout.ms': SESSION_MS,
      'broker.heartbeat.interval.ms': HEARTBEAT_MS,
      ...(process.env.FETCH_BACKOFF_MS === undefined
        ? {}
        : { 'replica.fetch.backoff.ms': Number(process.env.FETCH_BACKOFF_MS) }),
    },
  })
  current = cluster
  progress(`${name}: cluster up`)
  const bootstrap = cluster.nodes.map((n) => n.address)
  const holder = { bootstrap, client: newClient(bootstrap) }
  const mon = { bootstrap: holder.bootstrap, client: newClient(holder.bootstrap) }
  const client = mon.client
  const failover: number[] = []
  const rejoin: number[] = []
  try {
    const { response } = await client.request(apis.CreateTopics, {
      topics: [
        { name: TOPIC as TopicName, numPartitions: 1, replicationFactor: 3, assignments: [], configs: [] },
      ],
      timeoutMs: 30_000,
      validateOnly: false,
    })
    const code = response.topics[0]?.errorCode ?? 0
    if (code !== 0) throw new KafkaError(code)
    progress('topic created')
    let seq = 0
    for (let round = 1; round <= ROUNDS; round++) {
      // Every replica in sync and a produce through, before the kill.
      await waitState(mon, 'a leader and 3 in sync', (s) => s.leader > 0 && s.isr.length === 3)
      progress(`round ${round}: in sync`)
      await produceUntilOk(holder, seq++)
      const { leader } = await bounded(partitionState(mon.client), 5000, 'metadata')
      progress(`round ${round}: killing ${leader}`)
      const node = cluster.node(leader)
      const killedAt = performance.now()
      await node.process.kill()
      let restartedAt = 0
      const restarting =
        name === 'restart'
          ? (async () => {
              restartedAt = performance.now()
              await node.process.start(60_000)
            })()
          : null
      const okAt = await produceUntilOk(holder, seq++)
      failover.push(okAt - killedAt)
      progress(`round ${round}: produced`)
      if (restarting === null) {
        restartedAt = performance.now()
        await node.process.start(60_000)
      } else {
        await restarting
      }
      await waitState(mon, `node ${leader} back in the ISR`, (s) => s.isr.includes(leader))
      rejoin.push(performance.now() - restartedAt)
      console.log(
        `${name} round ${round}: killed node ${leader}; first produce after ${(failover.at(-1)! / 1000).toFixed(3)} s; back in the ISR ${(rejoin.at(-1)! / 1000).toFixed(3)} s after its restart`,
      )
    }
  } catch (e) {
    console.error(cluster.outputTail(6000))
    throw e
  } finally {
    mon.client.close()
    holder.client.close()
    await cluster.kill()
  }
  return { failover, rejoin }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const n of current?.nodes ?? []) n.process.killNow()
    process.exit(1)
  })
}

const results: Array<[string, { failover: number[]; rejoin: number[] }]> = []
for (const c of CASES) results.push([c, await runCase(c)])
console.log(
  `\nsession ${SESSION_MS} ms, heartbeat ${HEARTBEAT_MS} ms (Kafka's defaults: 9000 / 2000), retry every ${RETRY_MS} ms`,
)
for (const [c, r] of results) {
  console.log(`${c}: kill -> first acks=all produce: ${summary(r.failover)}`)
  console.log(`${c}: restart -> back in the ISR:      ${summary(r.rejoin)}`)
}
