/**
 * Cluster control over real replication, three combined Weir nodes in racks r1, r2, r3 with
 * `replica.selector.class` RackAwareReplicaSelector: kafka-reassign-partitions moves a partition to
 * another broker with its data intact; a consumer in rack r2 is pointed by the leader at the r2
 * follower (KIP-392), which serves it up to its high watermark; the automatic preferred-leader
 * rebalance gives a restarted broker its leaderships back once it is in sync again.
 */
// compat-cluster: skip it starts its own three-node cluster
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import kafkajs from 'kafkajs'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import { apis, decodeBatch, ErrorCode, LOG_OVERHEAD } from '../../src/protocol/index.ts'
import { WeirCluster } from '../support/cluster.ts'
import { describeTopic, kafkaTool } from '../support/kafka-tools.ts'
import { waitFor } from '../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs
let cluster: WeirCluster

const tool = kafkaTool
const describe = (topic: string, via = cluster.bootstrap) => describeTopic(via, topic)

async function produce(topic: string, count: number): Promise<void> {
  const kafka = new Kafka({
    brokers: cluster.bootstrap.split(','),
    clientId: 'ctl',
    logLevel: logLevel.NOTHING,
  })
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await producer.send({
    topic,
    acks: -1,
    messages: Array.from({ length: count }, (_, i) => ({ partition: 0, value: `v${i}` })),
  })
  await producer.disconnect()
}

async function connect(port: number): Promise<KafkaConnection> {
  return KafkaConnection.open(
    { host: '127.0.0.1', port },
    {
      clientId: 'rack-test',
      clock: systemClock,
      transport: nodeTransport,
      requestTimeoutMs: 30_000,
      inFlightRequestsMax: 1,
      responseBytesMax: 1 << 24,
      connectTimeoutMs: 2_000,
    },
  )
}

/** One consumer Fetch v11 (client metadata: rackId) of partition 0. */
async function fetch(port: number, topic: string, fetchOffset: bigint, rackId: string) {
  const c = await connect(port)
  try {
    const res = await c.request(apis.Fetch, 11, {
      replicaId: -1 as BrokerId,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        {
          topic: topic as TopicName,
          partitions: [
            {
              partition: 0,
              currentLeaderEpoch: -1,
              fetchOffset,
              logStartOffset: -1n,
              partitionMaxBytes: 1 << 20,
            },
          ],
        },
      ],
      forgottenTopicsData: [],
      rackId,
    })
    const p = res.responses[0]!.partitions[0]!
    let records = 0
    const buf = Buffer.from(p.records ?? Buffer.alloc(0))
    for (let at = 0; at + LOG_OVERHEAD <= buf.length; ) {
      records += decodeBatch(buf, at).records.length
      at += LOG_OVERHEAD + buf.readInt32BE(at + 8)
    }
    return {
      errorCode: p.errorCode,
      preferredReadReplica: p.preferredReadReplica,
      highWatermark: p.highWatermark,
      records,
    }
  } finally {
    c.close()
  }
}

before(async () => {
  cluster = await WeirCluster.start({
    nodes: 3,
    prefix: 'weir-replicated-control-',
    config: {
      'broker.session.timeout.ms': 3000,
      'broker.heartbeat.interval.ms': 500,
      'offsets.topic.replication.factor': 1,
      'replica.selector.class': 'org.apache.kafka.common.replica.RackAwareReplicaSelector',
      'leader.imbalance.check.interval.seconds': 2,
    },
    nodeConfig: (id) => ({ 'broker.rack': `r${id}` }),
  })
})

after(async () => {
  await cluster.kill()
})

test('kafka-reassign-partitions moves a partition to another broker with its data intact', async () => {
  await tool(
    'kafka-topics',
    '--bootstrap-server',
    cluster.bootstrap,
    '--create',
    '--topic',
    'moved',
    '--replica-assignment',
    '1',
  )
  await waitFor('moved-0 led', async () =>
    (await describe('moved')).get(0)?.leader === 1 ? true : undefined,
  )
  await produce('moved', 100)
  const plan = join(cluster.dir, 'moved.json')
  writeFileSync(
    plan,
    JSON.stringify({ version: 1, partitions: [{ topic: 'moved', partition: 0, replicas: [3] }] }),
  )
  const executed = await tool(
    'kafka-reassign-partitions',
    '--bootstrap-server',
    cluster.bootstrap,
    '--reassignment-json-file',
    plan,
    '--execute',
  )
  assert.match(executed, /Successfully started partition reassignment for moved-0/)
  await waitFor(
    'the move to complete',
    async () => {
      const out = await tool(
        'kafka-reassign-partitions',
        '--bootstrap-server',
        cluster.bootstrap,
        '--reassignment-json-file',
        plan,
        '--verify',
      )
      return /Reassignment of partition moved-0 is completed/.test(out) ? out : undefined
    },
    90_000,
  )
  const p = (await describe('moved')).get(0)!
  assert.deepEqual(p.replicas, [3])
  assert.deepEqual(p.isr, [3])
  assert.equal(p.leader, 3)
  const consumed = await tool(
    'kafka-console-consumer',
    '--bootstrap-server',
    cluster.node(3).address,
    '--topic',
    'moved',
    '--partition',
    '0',
    '--offset',
    'earliest',
    '--max-messages',
    '100',
    '--timeout-ms',
    '30000',
  )
  const lines = consumed.split('\n').filter((l) => l !== '')
  assert.deepEqual(
    lines,
    Array.from({ length: 100 }, (_, i) => `v${i}`),
  )
  // Broker 1 no longer hosts the partition: it answers NOT_LEADER_OR_FOLLOWER.
  await waitFor('broker 1 to drop moved-0', async () => {
    const r = await fetch(cluster.node(1).port, 'moved', 0n, '')
    return r.errorCode === ErrorCode.NotLeaderOrFollower ? r : undefined
  })
})

test('a consumer in rack r2 is pointed at the r2 follower, which serves it up to its high watermark', async () => {
  await tool(
    'kafka-topics',
    '--bootstrap-server',
    cluster.bootstrap,
    '--create',
    '--topic',
    'racked',
    '--replica-assignment',
    '1:2:3',
  )
  await waitFor('racked-0 led by 1', async () =>
    (await describe('racked')).get(0)?.leader === 1 ? true : undefined,
  )
  await produce('racked', 10)
  const fromLeader = await waitFor('a preferred read replica', async () => {
    const r = await fetch(cluster.node(1).port, 'racked', 0n, 'r2')
    return r.preferredReadReplica === 2 ? r : undefined
  })
  assert.equal(fromLeader.errorCode, ErrorCode.None)
  assert.equal(fromLeader.records, 0, 'no records with a preferred read replica')
  assert.equal(fromLeader.highWatermark, 10n)
  // The leader serves a consumer of its own rack, or of none.
  const own = await fetch(cluster.node(1).port, 'racked', 0n, 'r1')
  assert.equal(own.preferredReadReplica, -1)
  assert.equal(own.records, 10)
  assert.equal((await fetch(cluster.node(1).port, 'racked', 0n, '')).preferredReadReplica, -1)
  // The follower serves up to its high watermark.
  const fromFollower = await waitFor('the follower to serve every record', async () => {
    const r = await fetch(cluster.node(2).port, 'racked', 0n, 'r2')
    return r.errorCode === ErrorCode.None && r.records === 10 ? r : undefined
  })
  assert.equal(fromFollower.highWatermark, 10n)
  assert.equal(fromFollower.preferredReadReplica, -1)
  const beyond = await fetch(cluster.node(2).port, 'racked', 1000n, 'r2')
  assert.equal(beyond.errorCode, ErrorCode.OffsetOutOfRange)
})

test('the preferred-leader rebalance gives a restarted broker its leaderships back', async () => {
  await tool(
    'kafka-topics',
    '--bootstrap-server',
    cluster.bootstrap,
    '--create',
    '--topic',
    'balance',
    '--replica-assignment',
    '2:1:3',
  )
  await waitFor('balance-0 led by 2', async () =>
    (await describe('balance')).get(0)?.leader === 2 ? true : undefined,
  )
  await cluster.node(2).process.stop()
  const via = cluster.node(1).address
  await waitFor('leadership to move off broker 2', async () => {
    const d = (await describe('balance', via)).get(0)
    return d !== undefined && d.leader !== 2 && d.leader !== -1 ? d : undefined
  })
  await cluster.node(2).process.start()
  const back = await waitFor(
    'broker 2 to lead balance-0 again',
    async () => {
      const d = (await describe('balance', via)).get(0)
      return d?.leader === 2 ? d : undefined
    },
    60_000,
  )
  assert.deepEqual([...back.isr].sort(), [1, 2, 3])
})
