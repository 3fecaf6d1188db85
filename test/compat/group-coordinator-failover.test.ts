/**
 * A consumer group on three Weir nodes with a replicated `__consumer_offsets` (Kafka's defaults:
 * replication factor 3, commits acknowledged by every in-sync replica): kafkajs commits offsets,
 * the group's coordinator is stopped, and the group is found on the new leader of its
 * `__consumer_offsets` partition with every committed offset. The topic is created on the first
 * FindCoordinator through whichever node is the active controller.
 */
// compat-cluster: skip it starts its own three-node cluster
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import kafkajs from 'kafkajs'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { WeirCluster } from '../support/cluster.ts'
import { waitFor } from '../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs
const GROUP = 'failover-group'
const TOPIC = 'failover-data'
let cluster: WeirCluster

before(async () => {
  cluster = await WeirCluster.start({
    nodes: 3,
    prefix: 'weir-group-failover-',
    config: {
      'broker.session.timeout.ms': 3000,
      'broker.heartbeat.interval.ms': 500,
      'offsets.topic.num.partitions': 3,
    },
  })
})

after(async () => {
  await cluster.kill()
})

async function findCoordinator(port: number): Promise<{ errorCode: number; nodeId: number }> {
  const c = await KafkaConnection.open(
    { host: '127.0.0.1', port },
    {
      clientId: 'failover-test',
      clock: systemClock,
      transport: nodeTransport,
      requestTimeoutMs: 30_000,
      inFlightRequestsMax: 1,
      responseBytesMax: 1 << 20,
      connectTimeoutMs: 2_000,
    },
  )
  try {
    const res = await c.request(apis.FindCoordinator, 3, { key: GROUP, keyType: 0 })
    return { errorCode: res.errorCode, nodeId: res.nodeId }
  } finally {
    c.close()
  }
}

test("a group's coordinator is stopped: the new leader of its offsets partition has every committed offset", {
  timeout: 240_000,
}, async () => {
  const kafka = new Kafka({
    brokers: cluster.bootstrap.split(','),
    clientId: 'failover',
    logLevel: logLevel.NOTHING,
  })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({
    topics: [{ topic: TOPIC, numPartitions: 3, replicationFactor: 3 }],
    waitForLeaders: true,
  })
  // The first FindCoordinator creates __consumer_offsets (RF 3) through the active controller.
  const first = await waitFor(
    'a coordinator',
    async () => {
      const r = await findCoordinator(cluster.node(1).port)
      return r.errorCode === 0 ? r : undefined
    },
    60_000,
  )
  const offsets = [
    { partition: 0, offset: '11' },
    { partition: 1, offset: '22' },
    { partition: 2, offset: '33' },
  ]
  await waitFor('offsets committed', async () => {
    await admin.setOffsets({ groupId: GROUP, topic: TOPIC, partitions: offsets })
    return true
  })
  const committed = async () =>
    (await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] }))[0]!.partitions
      .map((p) => ({ partition: p.partition, offset: p.offset }))
      .sort((a, b) => a.partition - b.partition)
  assert.deepEqual(await committed(), offsets)
  await admin.disconnect()

  // Stop the coordinator's node: its leaderships (and so the group) move to another broker.
  await cluster.node(first.nodeId).process.stop()
  const survivor = cluster.nodes.find((n) => n.id !== first.nodeId)!
  const second = await waitFor(
    'a new coordinator',
    async () => {
      const r = await findCoordinator(survivor.port)
      return r.errorCode === 0 && r.nodeId !== first.nodeId ? r : undefined
    },
    60_000,
  )
  assert.notEqual(second.nodeId, first.nodeId)
  const others = cluster.nodes.filter((n) => n.id !== first.nodeId).map((n) => n.address)
  const admin2 = new Kafka({ brokers: others, clientId: 'failover-2', logLevel: logLevel.NOTHING }).admin()
  await admin2.connect()
  const after = await waitFor(
    'the committed offsets from the new coordinator',
    async () => {
      const got = (await admin2.fetchOffsets({ groupId: GROUP, topics: [TOPIC] }))[0]!.partitions
        .map((p) => ({ partition: p.partition, offset: p.offset }))
        .sort((a, b) => a.partition - b.partition)
      return got.every((p) => p.offset !== '-1') ? got : undefined
    },
    60_000,
  )
  assert.deepEqual(after, offsets, 'no committed offset is lost')
  await admin2.disconnect()
  await cluster.node(first.nodeId).process.start()
})
