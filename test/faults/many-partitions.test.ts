/**
 * A broker leading more partitions than one metadata proposal holds (10,000 records): one real
 * `weir start` node with 12,000 single-replica partitions. Its clean stop fences it (a controlled
 * shutdown takes every partition's leadership away: 12,000 partition changes) and its start
 * registers and unfences it again (12,000 elections), each proposed by the controller in batches.
 * After the restart every partition has a leader and takes writes, and every acknowledged record
 * reads back.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import { apis, decodeBatch, encodeBatch } from '../../src/protocol/index.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'

const TOPICS = 3
const PER_TOPIC = 4000
const topicName = (t: number) => `many-${t}` as TopicName
const dir = tempDir('weir-many-partitions-')
let weir: WeirProcess | null = null
after(async () => {
  await weir?.kill()
  dir.remove()
})

const connectionOptions = {
  clientId: 'many-partitions-test',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 120_000,
  inFlightRequestsMax: 1,
  responseBytesMax: 1 << 27,
  connectTimeoutMs: 5_000,
}

test('a node leading 12,000 partitions stops cleanly, starts again, and every partition has a leader, takes writes and keeps what it acknowledged', {
  timeout: 600_000,
}, async () => {
  const [port, controllerPort] = await freePorts(2)
  const config = writeProperties(dir.path, 'server.properties', {
    'node.id': 1,
    'process.roles': 'broker,controller',
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'controller.listener.names': 'CONTROLLER',
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    'log.dirs': join(dir.path, 'data'),
    'metadata.log.dir': join(dir.path, 'metadata'),
    'cluster.id': 'manyPartitionsTestClust',
    'offsets.topic.replication.factor': 1,
  })
  weir = new WeirProcess(['--config', config])
  await weir.start()
  const open = () => KafkaConnection.open({ host: '127.0.0.1', port: port! }, connectionOptions)
  let c = await open()

  /** Partitions Metadata lists with a leader. */
  const led = async (): Promise<number> => {
    const m = await c.request(apis.Metadata, 12, {
      topics: Array.from({ length: TOPICS }, (_, t) => ({ name: topicName(t) })),
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    })
    let n = 0
    for (const t of m.topics) for (const p of t.partitions) if (p.errorCode === 0 && p.leaderId >= 0) n++
    return n
  }
  const acked = new Map<string, string[]>()
  let round = 0
  /** One record to every partition, one request a topic: how many took it. */
  const produceAll = async (): Promise<number> => {
    round++
    let ok = 0
    for (let t = 0; t < TOPICS; t++) {
      const res = await c.request(apis.Produce, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 60_000,
        topicData: [
          {
            name: topicName(t),
            partitionData: Array.from({ length: PER_TOPIC }, (_, p) => ({
              index: p,
              records: encodeBatch({ records: [{ value: Buffer.from(`${t}-${p}-${round}`) }] }),
            })),
          },
        ],
      })
      for (const r of res.responses)
        for (const p of r.partitionResponses) {
          if (p.errorCode !== 0) continue
          ok++
          const key = `${r.name}-${p.index}`
          acked.set(key, [...(acked.get(key) ?? []), `${t}-${p.index}-${round}`])
        }
    }
    return ok
  }
  const everywhere = (what: string) =>
    waitFor(what, async () => ((await produceAll()) === TOPICS * PER_TOPIC ? true : undefined), 240_000)

  try {
    // Two requests: one of 12,000 partitions would pass the 10,000 records of an atomic batch.
    for (const topics of [[0, 1], [2]]) {
      const res = await c.request(apis.CreateTopics, 7, {
        topics: topics.map((t) => ({ name: topicName(t), numPartitions: PER_TOPIC, replicationFactor: 1 })),
        timeoutMs: 60_000,
      })
      assert.deepEqual(
        res.topics.map((t) => t.errorCode),
        topics.map(() => 0),
      )
    }
    await waitFor(
      'every partition led',
      async () => ((await led()) === TOPICS * PER_TOPIC ? true : undefined),
      120_000,
    )
    await everywhere('every partition to take a write')
    c.close()

    assert.equal(await weir.stop(), 0, weir.output.slice(-3000))
    assert.match(weir.output, /controlled shutdown: leaderships moved, broker fenced/)
    weir = new WeirProcess(['--config', config])
    await weir.start(240_000)
    c = await open()
    await waitFor(
      'every partition led again',
      async () => ((await led()) === TOPICS * PER_TOPIC ? true : undefined),
      240_000,
    )
    await everywhere('every partition to take a write after the restart')
    assert.doesNotMatch(weir.output, /bad record count|ERROR/)

    const read = await fetchAll(c)
    for (let t = 0; t < TOPICS; t++)
      for (let p = 0; p < PER_TOPIC; p++) {
        const key = `${topicName(t)}-${p}`
        assert.deepEqual(
          read.get(key) ?? [],
          acked.get(key) ?? [],
          `${key}: every acknowledged write, once, in order`,
        )
      }
  } finally {
    c.close()
  }
  assert.equal(await weir.stop(), 0)
})

/** Every record value of every partition up to its high watermark, by `topic-partition`. */
async function fetchAll(c: KafkaConnection): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  const next = new Map<string, bigint>()
  const ends = new Map<string, bigint>()
  for (;;) {
    const topics = Array.from({ length: TOPICS }, (_, t) => ({
      topic: topicName(t),
      partitions: Array.from({ length: PER_TOPIC }, (_, p) => p)
        .filter((p) => {
          const key = `${topicName(t)}-${p}`
          const end = ends.get(key)
          return end === undefined || (next.get(key) ?? 0n) < end
        })
        .map((p) => ({
          partition: p,
          currentLeaderEpoch: -1,
          fetchOffset: next.get(`${topicName(t)}-${p}`) ?? 0n,
          lastFetchedEpoch: -1,
          logStartOffset: -1n,
          partitionMaxBytes: 1 << 16,
        })),
    })).filter((t) => t.partitions.length > 0)
    if (topics.length === 0) return out
    const res = await c.request(apis.Fetch, 12, {
      replicaId: -1 as BrokerId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 26,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics,
      forgottenTopicsData: [],
      rackId: '',
    })
    for (const t of res.responses)
      for (const p of t.partitions) {
        const key = `${t.topic}-${p.partitionIndex}`
        assert.equal(p.errorCode, 0, `fetch ${key}`)
        ends.set(key, p.highWatermark)
        const records = p.records ?? Buffer.alloc(0)
        for (let at = 0; at < records.length; ) {
          const b = decodeBatch(records, at)
          for (const r of b.records) out.set(key, [...(out.get(key) ?? []), r.value?.toString() ?? ''])
          next.set(key, b.header.baseOffset + BigInt(b.header.lastOffsetDelta) + 1n)
          at += 12 + b.header.batchLength
        }
      }
  }
}
