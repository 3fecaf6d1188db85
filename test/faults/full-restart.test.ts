/**
 * A whole 3-node cluster (real processes, each broker and controller) stopped with SIGTERM, then
 * started again, ROUNDS times over the same data directories: every round the nodes must elect a
 * quorum leader and all three become ready (a node stuck as a candidate or prospective never
 * registers its broker, so its ready line never comes), and every record acknowledged with
 * acks=all before any stop must be read back, with new produces going through. Odd rounds stop the
 * nodes one after another, the quorum leader first each time (it resigns, a survivor takes over and
 * resigns in turn, and the last node stops alone), even rounds all at once.
 *
 *   FULL_RESTART_ROUNDS=25 node --test test/faults/full-restart.test.ts
 *   FULL_RESTART_SESSION_MS=9000 ...   # Kafka's default broker session (2000 here)
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import {
  ClusterClient,
  decodeRecords,
  EARLIEST,
  Fetcher,
  KafkaConnection,
  KafkaError,
  LATEST,
  listOffsets,
  Producer,
} from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { TopicName } from '../../src/model/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { type ClusterNode, WeirCluster } from '../support/cluster.ts'
import { waitFor } from '../support/weir-process.ts'

const ROUNDS = Number(process.env.FULL_RESTART_ROUNDS ?? 2)
/** `broker.session.timeout.ms` (Kafka's default 9000: the last node stopped re-registers only after it lapses). */
const SESSION_MS = Number(process.env.FULL_RESTART_SESSION_MS ?? 2000)
const TOPIC = 'kept'
const PER_ROUND = 50

let cluster: WeirCluster | null = null
after(async () => {
  await cluster?.kill()
})

function newClient(c: WeirCluster): ClusterClient {
  return new ClusterClient({
    bootstrap: c.nodes.map((n) => n.address),
    clientId: 'full-restart-test',
    clock: systemClock,
    transport: nodeTransport,
    requestTimeoutMs: 5000,
    retryTimeoutMs: 60_000,
  })
}

/** Each node's view of the quorum: leader id and epoch (DescribeQuorum to its client port). */
async function quorumViews(c: WeirCluster): Promise<Array<{ leaderId: number; epoch: number }>> {
  return Promise.all(c.nodes.map((n) => quorumView(n)))
}

async function quorumView(n: ClusterNode): Promise<{ leaderId: number; epoch: number }> {
  const conn = await KafkaConnection.open(
    { host: '127.0.0.1', port: n.port },
    {
      clientId: 'full-restart-test',
      clock: systemClock,
      transport: nodeTransport,
      requestTimeoutMs: 5000,
      inFlightRequestsMax: 1,
      responseBytesMax: 1 << 20,
      connectTimeoutMs: 2000,
    },
  )
  try {
    const res = await conn.request(apis.DescribeQuorum, 1, {
      topics: [{ topicName: '__cluster_metadata' as TopicName, partitions: [{ partitionIndex: 0 }] }],
    })
    const p = res.topics[0]?.partitions[0]
    if (p === undefined || p.errorCode !== 0) throw new KafkaError(p?.errorCode ?? res.errorCode)
    return { leaderId: p.leaderId, epoch: p.leaderEpoch }
  } finally {
    conn.close()
  }
}

/**
 * SIGTERM one node at a time, each time the quorum leader as the running nodes name it (so the
 * leader resigns, a survivor takes over and resigns in turn), the last one alone.
 */
async function stopLeadersFirst(c: WeirCluster): Promise<Array<number | null>> {
  const running = [...c.nodes]
  const codes: Array<number | null> = []
  while (running.length > 0) {
    let next = running[0]!
    if (running.length > 1) {
      const leaderId = await waitFor(
        'a quorum leader among the running nodes',
        async () => {
          const v = await quorumView(running[0]!)
          return running.some((n) => n.id === v.leaderId) ? v.leaderId : undefined
        },
        15_000,
      ).catch(() => null)
      next = running.find((n) => n.id === leaderId) ?? next
    }
    running.splice(running.indexOf(next), 1)
    codes.push(await next.process.stop())
  }
  return codes
}

/** Produces PER_ROUND records with acks=all; returns the values acknowledged. */
async function produce(client: ClusterClient, round: number): Promise<string[]> {
  const producer = new Producer(client, { acks: -1, lingerMs: 2, deliveryTimeoutMs: 60_000 })
  await client.retrying(() => producer.prepare(TOPIC))
  const acked: string[] = []
  const failed: Error[] = []
  for (let i = 0; i < PER_ROUND; i++) {
    const value = `round${round}-r${i}`
    producer.append(TOPIC, { value: Buffer.from(value) }, (e) =>
      e === null ? acked.push(value) : failed.push(e),
    )
  }
  await producer.flush()
  assert.deepEqual(failed, [], `round ${round}: produce failed`)
  return acked
}

/** Every value in the partition, from the earliest offset to the latest. */
async function readAll(client: ClusterClient): Promise<Set<string>> {
  const [start] = await listOffsets(client, [{ topic: TOPIC, partition: 0, timestamp: EARLIEST }])
  const [end] = await listOffsets(client, [{ topic: TOPIC, partition: 0, timestamp: LATEST }])
  const fetcher = new Fetcher(client)
  fetcher.assign([start!])
  const read = new Set<string>()
  while (fetcher.positions()[0]!.offset < end!.offset)
    for (const f of await fetcher.fetch())
      for (const r of decodeRecords(f.records, f.fetchOffset)) read.add(r.value!.toString())
  return read
}

test(`full-cluster SIGTERM then start, ${ROUNDS} rounds: a leader, every node ready, nothing acknowledged lost`, {
  timeout: 60_000 + ROUNDS * 120_000,
}, async () => {
  cluster = await WeirCluster.start({
    nodes: 3,
    prefix: 'weir-full-restart-',
    config: {
      'default.replication.factor': 3,
      'min.insync.replicas': 2,
      'offsets.topic.replication.factor': 3,
      'broker.session.timeout.ms': SESSION_MS,
      'broker.heartbeat.interval.ms': Math.max(100, Math.floor(SESSION_MS / 4)),
    },
  })
  const c = cluster
  const acked: string[] = []
  let client = newClient(c)
  try {
    const { response } = await client.request(apis.CreateTopics, {
      topics: [
        { name: TOPIC as TopicName, numPartitions: 1, replicationFactor: 3, assignments: [], configs: [] },
      ],
      timeoutMs: 30_000,
      validateOnly: false,
    })
    assert.equal(response.topics[0]?.errorCode, 0)
    acked.push(...(await produce(client, 0)))
    for (let round = 1; round <= ROUNDS; round++) {
      client.close()
      const sequential = round % 2 === 1
      if (sequential) assert.deepEqual(await stopLeadersFirst(c), [0, 0, 0], c.outputTail(5000))
      else
        assert.deepEqual(
          await Promise.all(c.nodes.map((n) => n.process.stop())),
          [0, 0, 0],
          c.outputTail(5000),
        )
      try {
        await Promise.all(c.nodes.map((n) => n.process.start(60_000)))
      } catch (e) {
        throw new Error(
          `round ${round} (${sequential ? 'one by one' : 'all at once'}): ${(e as Error).message.slice(0, 300)}\n${c.outputTail(5000)}`,
        )
      }
      const views = await waitFor(
        'every node to name the same quorum leader',
        async () => {
          const v = await quorumViews(c)
          return v.every((x) => x.leaderId >= 0 && x.leaderId === v[0]!.leaderId && x.epoch === v[0]!.epoch)
            ? v
            : undefined
        },
        30_000,
      )
      assert.ok(views[0]!.leaderId >= 1)
      client = newClient(c)
      const read = await readAll(client)
      const lost = acked.filter((v) => !read.has(v))
      assert.deepEqual(lost, [], `round ${round}: acknowledged records lost`)
      acked.push(...(await produce(client, round)))
    }
    const read = await readAll(client)
    assert.deepEqual(
      acked.filter((v) => !read.has(v)),
      [],
    )
    assert.equal(acked.length, (ROUNDS + 1) * PER_ROUND)
  } finally {
    client.close()
  }
})
