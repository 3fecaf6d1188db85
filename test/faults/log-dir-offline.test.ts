/**
 * A failed log dir in a real 3-node cluster: fill one node's data dir (a tmpfs) to ENOSPC while
 * an idempotent acks=all producer writes to every partition of an RF 3 topic. The node reports the
 * dir in its heartbeats, so the controller moves every leadership it held to another in-sync
 * replica and writes go on there; the node answers KAFKA_STORAGE_ERROR for the dir. Free the
 * space: without a restart its logs come back through recovery and its replicas rejoin every ISR.
 * Every acknowledged write reads back once, in order.
 *
 * Needs root (mount). Skipped elsewhere.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import kafkajs from 'kafkajs'
import { apis } from '../../src/protocol/index.ts'
import { openConnection } from '../support/connection.ts'
import { FaultCluster } from './harness/cluster.ts'
import { createTopic, readAll } from './harness/workload.ts'

const { Kafka, logLevel } = kafkajs
const isRoot = process.getuid?.() === 0
const TOPIC = 'dir-offline'
const PARTITIONS = 6

let cluster: FaultCluster | null = null
after(async () => {
  await cluster?.destroy()
})

test('a full log dir on one node: its leaderships move, writes go on, and it rejoins every ISR once space returns, without a restart', {
  skip: isRoot ? false : 'needs root to mount a tmpfs',
  timeout: 280_000,
}, async () => {
  cluster = await FaultCluster.start({
    nodes: 3,
    network: 'loopback',
    tmpfsBytes: 16 << 20,
    config: { 'log.segment.bytes': 1 << 20, 'offsets.topic.replication.factor': 3 },
  })
  const c = cluster
  await createTopic({
    brokers: c.bootstrap,
    topic: TOPIC,
    partitions: PARTITIONS,
    replicationFactor: 3,
    insyncReplicasMin: 2,
    seed: 1,
    groupId: 'unused',
  })
  const kafka = new Kafka({
    clientId: 'dir-offline-test',
    brokers: [...c.bootstrap],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
  })
  const admin = kafka.admin()
  await admin.connect()
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const acked = new Map<number, string[]>()
  let n = 0
  const round = async () => {
    await Promise.all(
      Array.from({ length: PARTITIONS }, async (_, p) => {
        const value = `v${n++}-${'x'.repeat(200)}`
        try {
          await producer.send({ topic: TOPIC, acks: -1, messages: [{ partition: p, value }] })
          acked.set(p, [...(acked.get(p) ?? []), value])
        } catch {
          // unknown outcome: may or may not be in the log
        }
      }),
    )
  }
  const partitions = async () =>
    (await admin.fetchTopicMetadata({ topics: [TOPIC] })).topics[0]!.partitions.map((p) => ({
      id: p.partitionId,
      leader: p.leader,
      isr: p.isr,
    }))
  try {
    for (let i = 0; i < 3; i++) await round()
    const before = await partitions()
    // The node leading the most partitions.
    const counts = new Map<number, number>()
    for (const p of before) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1)
    const x = [...counts].sort((a, b) => b[1] - a[1])[0]![0]
    const ledByX = before.filter((p) => p.leader === x).map((p) => p.id)
    assert.ok(ledByX.length > 0)

    c.fillDisk(x)
    // Writes go on; every leadership of x moves to another in-sync replica.
    let moved = false
    const movedBy = performance.now() + 45_000
    while (!moved && performance.now() < movedBy) {
      await round()
      moved = (await partitions()).every((p) => p.leader !== x && p.leader >= 0)
    }
    assert.ok(moved, `node ${x} still leads: ${JSON.stringify(await partitions())}`)
    const ackedWhileFull = new Map([...acked].map(([p, vs]) => [p, vs.length]))
    for (let i = 0; i < 3; i++) await round()
    for (const p of ledByX)
      assert.ok(
        (acked.get(p)?.length ?? 0) > (ackedWhileFull.get(p) ?? 0),
        `partition ${p} takes writes elsewhere`,
      )
    // Node x answers KAFKA_STORAGE_ERROR (56) for its dir.
    const node = c.node(x)
    const conn = await openConnection({ host: node.host, port: node.port }, 'dir-offline-test')
    try {
      const dirs = await conn.request(apis.DescribeLogDirs, 4, { topics: null })
      assert.deepEqual(
        dirs.results.map((r) => r.errorCode),
        [56],
        `node ${x}'s dir is offline: ${JSON.stringify(dirs.results.map((r) => [r.logDir, r.errorCode]))}`,
      )
    } finally {
      conn.close()
    }

    c.freeDisk(x)
    // Without a restart: node x's replicas come back and rejoin every ISR.
    let rejoined = false
    const rejoinedBy = performance.now() + 60_000
    while (!rejoined && performance.now() < rejoinedBy) {
      await round()
      rejoined = (await partitions()).every((p) => p.isr.includes(x))
    }
    assert.ok(rejoined, `node ${x} is back in every ISR: ${JSON.stringify(await partitions())}`)
    assert.ok(c.node(x).process.running, 'never restarted')
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
  const { records } = await readAll(c.bootstrap, TOPIC, 60_000)
  for (let p = 0; p < PARTITIONS; p++) {
    const want = acked.get(p) ?? []
    const wanted = new Set(want)
    const read = [...(records.get(p) ?? new Map<bigint, string[]>()).entries()]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .flatMap(([, vs]) => [...new Set(vs)])
      .filter((v) => wanted.has(v))
    assert.deepEqual(read, want, `partition ${p}: every acknowledged write, once, in order`)
  }
})
