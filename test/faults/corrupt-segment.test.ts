/**
 * A damaged segment on a follower, for real: three Weir nodes, one topic with RF 3 and
 * min.insync.replicas 2, records written with acks=all (so every replica has them). Kill -9 a
 * follower, flip bytes in the middle of one partition's segment file and cut another's in the middle
 * of a batch, restart it. Recovery detects both (CRC, short batch) and cuts the log there; the
 * follower fetches the rest again from the leader, rejoins the ISR, and in the end every replica's
 * files hold the same value at every offset: nothing damaged is served, nothing is lost.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import kafkajs from 'kafkajs'
import { waitFor } from '../support/weir-process.ts'
import { readReplicaFiles } from './harness/checker.ts'
import { FaultCluster } from './harness/cluster.ts'
import { partitionLeaders } from './harness/faults.ts'

const { Kafka, logLevel } = kafkajs
const TOPIC = 'corrupt'

let cluster: FaultCluster | null = null
after(async () => {
  await cluster?.destroy()
})

async function isr(c: FaultCluster, partition: number): Promise<number[]> {
  const kafka = new Kafka({ brokers: c.bootstrap, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  try {
    const md = await admin.fetchTopicMetadata({ topics: [TOPIC] })
    return md.topics[0]?.partitions.find((p) => p.partitionId === partition)?.isr ?? []
  } finally {
    await admin.disconnect()
  }
}

test('a follower whose segment was damaged (flipped bytes, a cut batch) cuts it at recovery and fetches the rest from the leader', {
  timeout: 240_000,
}, async () => {
  cluster = await FaultCluster.start({
    nodes: 3,
    network: 'loopback',
    config: {
      'offsets.topic.replication.factor': 3,
      'offsets.topic.num.partitions': 3,
      'min.insync.replicas': 2,
      'log.segment.bytes': 1 << 20,
      // The recovery point stays at 0 until the kill, so recovery scans the whole segment (a
      // checkpointed recovery point past the damage would skip it, as in Kafka).
      'log.flush.offset.checkpoint.interval.ms': 3_600_000,
    },
  })
  const c = cluster
  const kafka = new Kafka({ brokers: c.bootstrap, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: TOPIC, numPartitions: 2, replicationFactor: 3 }],
  })
  await admin.disconnect()
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const send = async (from: number, n: number) => {
    for (let i = from; i < from + n; i += 10)
      for (const partition of [0, 1])
        await producer.send({
          topic: TOPIC,
          acks: -1,
          messages: Array.from({ length: 10 }, (_, k) => ({
            partition,
            value: `p${partition}-v${i + k}-${'y'.repeat(64)}`,
          })),
        })
  }
  await send(0, 200)

  // A follower of both partitions (every node holds both: RF 3), in the ISR of both.
  const leaders = await partitionLeaders(c, TOPIC)
  const follower = [1, 2, 3].find((id) => id !== leaders.get(0) && id !== leaders.get(1))!
  assert.ok(follower !== undefined, `a node leading neither partition: leaders ${[...leaders]}`)
  for (const p of [0, 1])
    assert.ok((await isr(c, p)).includes(follower), `node ${follower} in the ISR of ${p}`)

  await c.kill(follower)
  const logDir = join(c.node(follower).dataDir, 'log')
  const segment = (p: number) => {
    const dir = join(logDir, `${TOPIC}-${p}`)
    return join(dir, readdirSync(dir).find((f) => f.endsWith('.log'))!)
  }
  // Partition 0: flip bytes in the middle (a record body: its batch's CRC no longer matches).
  const s0 = segment(0)
  const bytes = readFileSync(s0)
  const mid = Math.floor(bytes.length / 2)
  for (let i = 0; i < 8; i++) bytes[mid + i] = bytes[mid + i]! ^ 0xff
  writeFileSync(s0, bytes)
  // Partition 1: cut the file in the middle of a batch.
  const s1 = segment(1)
  truncateSync(s1, Math.floor(statSync(s1).size / 2) + 7)

  await c.restart(follower)
  const output = () => c.node(follower).process.output
  for (const p of [0, 1]) assert.match(output(), new RegExp(`${TOPIC}-${p}: recovery cut \\d+ bytes`))
  for (const p of [0, 1])
    await waitFor(
      `node ${follower} back in the ISR of ${p}`,
      async () => ((await isr(c, p)).includes(follower) ? true : undefined),
      60_000,
    )
  await send(200, 40)
  await producer.disconnect()
  // Let the follower fetch the last writes, then stop everything cleanly and read the files.
  await waitFor('the follower to hold every record', () => {
    const files = readReplicaFiles(logDir, TOPIC)
    return [0, 1].every((p) => (files.get(p)?.size ?? 0) >= 240) ? true : undefined
  })
  await c.stopAll()
  const replicas = [1, 2, 3].map((id) => readReplicaFiles(join(c.node(id).dataDir, 'log'), TOPIC))
  for (const p of [0, 1]) {
    const expected = Array.from({ length: 240 }, (_, i) => `p${p}-v${i}-${'y'.repeat(64)}`)
    for (const [i, r] of replicas.entries()) {
      const m = r.get(p)!
      const values = [...m.keys()].sort((a, b) => (a < b ? -1 : 1)).map((o) => m.get(o))
      assert.deepEqual(
        values,
        expected,
        `node ${i + 1} partition ${p}: every offset holds the value written there`,
      )
    }
  }
})
