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
import type { TopicName } from '../../src/model/index.ts'
import { apis, encodeBatch } from '../../src/protocol/index.ts'
import { openConnection } from '../support/connection.ts'
import { fetchAll } from '../support/fetch-all.ts'
import {
  combinedNodeProperties,
  freePorts,
  tempDir,
  WeirProcess,
  waitFor,
  writeProperties,
} from '../support/weir-process.ts'

const TOPICS = 3
const PER_TOPIC = 4000
const topicName = (t: number) => `many-${t}` as TopicName
const dir = tempDir('weir-many-partitions-')
let weir: WeirProcess | null = null
after(async () => {
  await weir?.kill()
  dir.remove()
})

test('a node leading 12,000 partitions stops cleanly, starts again, and every partition has a leader, takes writes and keeps what it acknowledged', {
  timeout: 600_000,
}, async () => {
  const [port, controllerPort] = await freePorts(2)
  const config = writeProperties(
    dir.path,
    'server.properties',
    combinedNodeProperties(port!, controllerPort!, {
      'log.dirs': join(dir.path, 'data'),
      'metadata.log.dir': join(dir.path, 'metadata'),
      'cluster.id': 'manyPartitionsTestClust',
      'offsets.topic.replication.factor': 1,
    }),
  )
  weir = new WeirProcess(['--config', config])
  await weir.start()
  const open = () =>
    openConnection({ host: '127.0.0.1', port: port! }, 'many-partitions-test', 120_000, 1 << 27)
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

    const read = await fetchAll(
      c,
      Array.from({ length: TOPICS }, (_, t) => ({ name: topicName(t), partitions: PER_TOPIC })),
    )
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
