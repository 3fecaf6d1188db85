/**
 * @platformatic/kafka's transactions (Producer `transactionalId`, `beginTransaction()`, the
 * Transaction's send, commit and abort) against CompatTarget (prove it against Apache Kafka 4.0.0
 * with `WEIR_COMPAT_TARGET=kafka`): a committed and an aborted transaction over three partitions,
 * read back by a read_committed consumer (the committed records only) and a read_uncommitted one
 * (both). Its consume-transform-produce (addConsumer, addOffset) is not here: against Kafka 4.0.0
 * its group consumer's stream copied some records twice and others never, so it proves nothing
 * about a broker yet.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Admin, Consumer, FetchIsolationLevels, type Message, Producer } from '@platformatic/kafka'
import { CompatTarget } from '../support/compat-target.ts'

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
  const seen = new Set<string>()
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
        // By offset: the stream delivers a record again when the member's assignment is redone
        // (seen with Kafka too); a record written twice has two offsets and still counts twice.
        if (seen.has(`${m.partition}/${m.offset}`)) continue
        seen.add(`${m.partition}/${m.offset}`)
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
