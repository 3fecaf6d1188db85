/**
 * Follower replication across real Weir processes: five combined nodes (so the controller quorum
 * survives two losses), a topic on brokers 1-3 with RF 3 and min.insync.replicas 2, an idempotent
 * producer with acks=all. Every replica's segment holds the same bytes; kill -9 the leader: a new
 * leader from the ISR, produce resumes, every acknowledged record is read back once and in order;
 * the killed node restarts, catches up and rejoins the ISR; with two replicas down acks=all is
 * refused with NOT_ENOUGH_REPLICAS and nothing acknowledged is lost.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { ConnectionError, KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { BrokerId, ProducerId, TopicName } from '../../src/model/index.ts'
import { apis, decodeBatch, ErrorCode, encodeBatch } from '../../src/protocol/index.ts'
import { WeirCluster } from '../support/cluster.ts'
import { waitFor } from '../support/weir-process.ts'

const TOPIC = 'replicated' as TopicName
let cluster: WeirCluster | null = null
after(async () => {
  await cluster?.kill()
})

/** On failure, the tail of every node's output (what the cluster did). */
function dumpOutputs(): void {
  for (const n of cluster?.nodes ?? []) {
    const lines = n.process.output.split('\n')
    process.stderr.write(`--- node ${n.id}\n${lines.slice(-60).join('\n')}\n`)
  }
}

const connectionOptions = {
  clientId: 'replication-test',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 15_000,
  inFlightRequestsMax: 4,
  responseBytesMax: 1 << 26,
  connectTimeoutMs: 2_000,
}

async function call<T>(port: number, fn: (c: KafkaConnection) => Promise<T>): Promise<T> {
  const c = await KafkaConnection.open({ host: '127.0.0.1', port }, connectionOptions)
  try {
    return await fn(c)
  } finally {
    c.close()
  }
}

const alive = new Set<number>([1, 2, 3, 4, 5])
const portOf = (id: number) => cluster!.node(id).port

interface PartitionState {
  leader: number
  leaderEpoch: number
  isr: number[]
}

/** The partition as a live node's metadata says. */
async function partitionState(): Promise<PartitionState | undefined> {
  for (const id of alive) {
    try {
      const res = await call(portOf(id), (c) => c.request(apis.Metadata, 12, { topics: [{ name: TOPIC }] }))
      const p = res.topics[0]?.partitions[0]
      if (p === undefined || p.errorCode !== 0) continue
      return { leader: p.leaderId, leaderEpoch: p.leaderEpoch, isr: [...p.isrNodes].sort() }
    } catch {}
  }
  return undefined
}

async function waitForState(what: string, ok: (s: PartitionState) => boolean, timeoutMs = 60_000) {
  return waitFor(
    what,
    async () => {
      const s = await partitionState()
      return s !== undefined && ok(s) ? s : undefined
    },
    timeoutMs,
  )
}

/** The idempotent producer's identity and next sequence. */
const producer = { id: -1n, epoch: 0, sequence: 0 }
const acknowledged: string[] = []

function batchOf(values: readonly string[], baseSequence: number): Buffer {
  return encodeBatch({
    records: values.map((v) => ({ value: Buffer.from(v), timestamp: BigInt(Date.now()) })),
    producerId: producer.id,
    producerEpoch: producer.epoch,
    baseSequence,
  })
}

/** One Produce with acks=all to the current leader: its error code (or -1 for a lost connection). */
async function produceOnce(batch: Buffer): Promise<number> {
  const s = await partitionState()
  if (s === undefined || s.leader < 0 || !alive.has(s.leader)) return ErrorCode.NotLeaderOrFollower
  try {
    const res = await call(portOf(s.leader), (c) =>
      c.request(apis.Produce, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 5_000,
        topicData: [{ name: TOPIC, partitionData: [{ index: 0, records: batch }] }],
      }),
    )
    return res.responses[0]?.partitionResponses[0]?.errorCode ?? -1
  } catch (e) {
    if (e instanceof ConnectionError) return -1
    throw e
  }
}

/** Sends `values` as one batch, retrying the same batch (same sequence) until acknowledged. */
async function produce(values: readonly string[]): Promise<void> {
  const batch = batchOf(values, producer.sequence)
  let last = 0
  await waitFor(
    `produce of ${values[0]} (last error ${last})`,
    async () => {
      last = await produceOnce(batch)
      return last === ErrorCode.None ? true : undefined
    },
    60_000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; last error ${last}`)
  })
  producer.sequence += values.length
  acknowledged.push(...values)
}

/** Every record value from offset 0 up to the high watermark, read from the leader as a consumer. */
async function readAll(): Promise<string[]> {
  const s = await waitForState('a live leader', (x) => alive.has(x.leader))
  const out: string[] = []
  let offset = 0n
  for (;;) {
    const res = await call(portOf(s.leader), (c) =>
      c.request(apis.Fetch, 12, {
        replicaId: -1 as BrokerId,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 24,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [
          {
            topic: TOPIC,
            partitions: [
              {
                partition: 0,
                currentLeaderEpoch: -1,
                fetchOffset: offset,
                lastFetchedEpoch: -1,
                logStartOffset: -1n,
                partitionMaxBytes: 1 << 24,
              },
            ],
          },
        ],
        forgottenTopicsData: [],
        rackId: '',
      }),
    )
    const p = res.responses[0]?.partitions[0]
    assert.equal(p?.errorCode, 0)
    const records = p.records ?? Buffer.alloc(0)
    if (records.length === 0) return out
    for (let at = 0; at < records.length; ) {
      const b = decodeBatch(records, at)
      for (const r of b.records) out.push(r.value?.toString() ?? '')
      offset = b.header.baseOffset + BigInt(b.header.lastOffsetDelta) + 1n
      at += 12 + b.header.batchLength
    }
    if (offset >= p.highWatermark) return out
  }
}

/** The partition's segment bytes on a node (every .log file, in order). */
function logBytes(id: number): Buffer {
  const dir = join(cluster!.dir, `node-${id}`, `${TOPIC}-0`)
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort()
  return Buffer.concat(files.map((f) => readFileSync(join(dir, f))))
}

async function sameBytesOn(ids: readonly number[]): Promise<Buffer> {
  return waitFor(
    `the same log bytes on nodes ${ids.join(',')}`,
    () => {
      const all = ids.map(logBytes)
      return all.every((b) => b.equals(all[0]!)) && all[0]!.length > 0 ? all[0] : undefined
    },
    60_000,
  )
}

const values = (from: number, n: number) => Array.from({ length: n }, (_, i) => `v-${from + i}`)

test('RF 3: followers copy the leader byte for byte; failover loses nothing; min ISR refuses', {
  timeout: 600_000,
}, async () => {
  try {
    await scenario()
  } catch (e) {
    dumpOutputs()
    throw e
  }
})

async function scenario(): Promise<void> {
  cluster = await WeirCluster.start({
    nodes: 5,
    prefix: 'weir-replication-',
    config: { 'broker.session.timeout.ms': 6000, 'broker.heartbeat.interval.ms': 1000 },
  })
  const created = await waitFor('topic creation', async () => {
    const res = await call(portOf(1), (c) =>
      c.request(apis.CreateTopics, 7, {
        topics: [
          {
            name: TOPIC,
            numPartitions: -1,
            replicationFactor: -1,
            assignments: [{ partitionIndex: 0, brokerIds: [1, 2, 3] as BrokerId[] }],
            configs: [{ name: 'min.insync.replicas', value: '2' }],
          },
        ],
        timeoutMs: 10_000,
      }),
    )
    const e = res.topics[0]?.errorCode
    return e === 0 || e === ErrorCode.TopicAlreadyExists ? e : undefined
  })
  assert.equal(created, 0)
  await waitForState('a leader with ISR 1,2,3', (s) => s.leader > 0 && s.isr.join() === '1,2,3')

  const init = await call(portOf(1), (c) =>
    c.request(apis.InitProducerId, 4, {
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: -1n as ProducerId,
      producerEpoch: -1,
    }),
  )
  assert.equal(init.errorCode, 0)
  producer.id = init.producerId
  producer.epoch = init.producerEpoch

  for (let i = 0; i < 20; i++) await produce(values(i * 10, 10))
  const replicated = await sameBytesOn([1, 2, 3])
  assert.ok(replicated.length > 0)
  assert.deepEqual(await readAll(), acknowledged)

  // kill -9 the leader: a new one from the ISR; produce resumes.
  const before = await waitForState('a leader', (s) => s.leader > 0)
  const killed = before.leader
  await cluster.node(killed).process.kill()
  alive.delete(killed)
  const after1 = await waitForState(
    'a new leader from the ISR',
    (s) => s.leader !== killed && s.leader > 0 && s.leaderEpoch > before.leaderEpoch,
  )
  assert.ok(before.isr.includes(after1.leader))
  for (let i = 20; i < 40; i++) await produce(values(i * 10, 10))
  assert.deepEqual(await readAll(), acknowledged, 'every acknowledged record once, in order')

  // The killed node restarts, truncates any divergent tail, catches up and rejoins the ISR.
  await cluster.node(killed).process.start(60_000)
  alive.add(killed)
  await waitForState('the restarted node back in the ISR', (s) => s.isr.join() === '1,2,3', 90_000)
  await sameBytesOn([1, 2, 3])
  assert.deepEqual(await readAll(), acknowledged)

  // Two of three replicas down: the ISR shrinks to the leader, and acks=all is refused.
  const now = await waitForState('a leader', (s) => s.leader > 0)
  const followers = [1, 2, 3].filter((id) => id !== now.leader)
  for (const id of followers) {
    await cluster.node(id).process.kill()
    alive.delete(id)
  }
  await waitForState('an ISR of the leader alone', (s) => s.isr.join() === String(now.leader), 60_000)
  const refused = batchOf(['refused'], producer.sequence)
  assert.equal(await produceOnce(refused), ErrorCode.NotEnoughReplicas)
  assert.deepEqual(await readAll(), acknowledged, 'nothing acknowledged is lost')
}
