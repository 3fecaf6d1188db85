/**
 * @platformatic/kafka's transactions (Producer `transactionalId`, `beginTransaction()`, the
 * Transaction's send, addConsumer and addOffset, commit and abort) against CompatTarget (prove it
 * against Apache Kafka 4.0.0 with `WEIR_COMPAT_TARGET=kafka`): a committed and an aborted
 * transaction over three partitions, read back by a read_committed consumer (the committed records
 * only) and a read_uncommitted one (both); then consume-transform-produce, a group consumer's
 * records copied in a transaction that commits their offsets, the group's offsets checked.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Admin, Consumer, FetchIsolationLevels, type Message, Producer } from '@platformatic/kafka'
import { CompatTarget } from '../support/compat-target.ts'
import { waitFor } from '../support/weir-process.ts'

const target = new CompatTarget('weir-platformatic-txn-', { 'group.initial.rebalance.delay.ms': 0 })
before(() => target.start())
after(() => target.close())

const base = () => ({ bootstrapBrokers: target.addresses, retries: 5, clientId: 'weir-platformatic-txn' })

/** "partition/key=value" of `count` records of `topic` from the start, for a fresh group. */
async function read(topic: string, isolationLevel: number, count: number): Promise<string[]> {
  const consumer = new Consumer({
    ...base(),
    groupId: `pt-reader-${topic}-${isolationLevel}`,
    isolationLevel,
  })
  const out: string[] = []
  try {
    const stream = await consumer.consume({
      topics: [topic],
      mode: 'earliest',
      autocommit: false,
      maxWaitTime: 200,
    })
    const deadline = setTimeout(() => stream.destroy(new Error(`${out.length} of ${count} records`)), 30_000)
    try {
      for await (const m of stream as AsyncIterable<Message>) {
        out.push(`${m.partition}/${m.key}=${m.value}`)
        if (out.length >= count) break
      }
    } finally {
      clearTimeout(deadline)
    }
    await stream.close()
  } finally {
    await consumer.close(true)
  }
  return out.sort()
}

test('@platformatic/kafka: commit, abort, read_committed and read_uncommitted consumers', {
  timeout: 90_000,
}, async () => {
  const admin = new Admin(base())
  await admin.createTopics({ topics: ['pt-out'], partitions: 3 })
  await admin.close()
  const producer = new Producer({ ...base(), transactionalId: 'pt-tx', idempotent: true, acks: -1 })
  try {
    const messages = (k: string, v: string) =>
      [0, 1, 2].map((p) => ({
        topic: 'pt-out',
        partition: p,
        key: Buffer.from(`${k}-${p}`),
        value: Buffer.from(v),
      }))
    const committed = await producer.beginTransaction()
    await committed.send({ messages: messages('c', 'committed') })
    await committed.commit()
    const aborted = await producer.beginTransaction()
    await aborted.send({ messages: messages('x', 'aborted') })
    await aborted.abort()
  } finally {
    await producer.close()
  }
  const c = [0, 1, 2].map((p) => `${p}/c-${p}=committed`)
  const x = [0, 1, 2].map((p) => `${p}/x-${p}=aborted`)
  assert.deepEqual(await read('pt-out', FetchIsolationLevels.READ_COMMITTED, 3), c)
  assert.deepEqual(await read('pt-out', FetchIsolationLevels.READ_UNCOMMITTED, 6), [...c, ...x].sort())
})

test('@platformatic/kafka: consume-transform-produce, the offsets committed in the transaction', {
  timeout: 90_000,
}, async () => {
  const admin = new Admin(base())
  await admin.createTopics({ topics: ['pt-ctp-in', 'pt-ctp-out'], partitions: 3 })
  const seed = new Producer(base())
  await seed.send({
    messages: Array.from({ length: 9 }, (_, i) => ({
      topic: 'pt-ctp-in',
      partition: i % 3,
      key: Buffer.from(`in-${i}`),
      value: Buffer.from(`v${i}`),
    })),
  })
  await seed.close()
  const consumer = new Consumer({
    ...base(),
    groupId: 'pt-ctp',
    isolationLevel: FetchIsolationLevels.READ_COMMITTED,
  })
  const producer = new Producer({ ...base(), transactionalId: 'pt-ctp-tx', idempotent: true, acks: -1 })
  try {
    const stream = await consumer.consume({
      topics: ['pt-ctp-in'],
      mode: 'earliest',
      autocommit: false,
      maxWaitTime: 200,
    })
    const txn = await producer.beginTransaction()
    await txn.addConsumer(consumer)
    let n = 0
    for await (const m of stream as AsyncIterable<Message>) {
      await txn.send({
        messages: [{ topic: 'pt-ctp-out', key: m.key, value: Buffer.from(String(m.value).toUpperCase()) }],
      })
      await txn.addOffset(m)
      if (++n === 9) break
    }
    await txn.commit()
    await stream.close()
  } finally {
    await consumer.close(true)
    await producer.close()
  }
  // The group's offsets, once the COMMIT marker reached __consumer_offsets (OffsetFetch answers
  // the offsets before the transaction meanwhile).
  const offsets = async () =>
    (await admin.listConsumerGroupOffsets({ groups: ['pt-ctp'] }))[0]!.topics
      .flatMap((t) => t.partitions.map((p) => `${t.name}/${p.partitionIndex}=${p.committedOffset}`))
      .sort()
  const want = [0, 1, 2].map((p) => `pt-ctp-in/${p}=3`)
  await waitFor('the committed offsets', async () =>
    JSON.stringify(await offsets()) === JSON.stringify(want) ? true : undefined,
  ).catch(() => undefined)
  assert.deepEqual(await offsets(), want)
  await admin.close()
  const copied = await read('pt-ctp-out', FetchIsolationLevels.READ_COMMITTED, 9)
  assert.deepEqual(
    copied.map((r) => r.replace(/^\d+\//, '')).sort(),
    Array.from({ length: 9 }, (_, i) => `in-${i}=V${i}`).sort(),
  )
})
