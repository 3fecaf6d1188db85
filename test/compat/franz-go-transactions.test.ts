/**
 * franz-go's kgo.GroupTransactSession (clients/franz-go/compat/txn.go, built by
 * tools/compat-install.sh): consume-transform-produce exactly once. A group member reads an input
 * topic read_committed, copies each record upper-cased to an output topic and commits its input
 * offsets in the same transaction; its first transaction is aborted on purpose (the session rewinds
 * to the committed offsets and reads those records again). The output read read_committed must
 * hold every input record once, transformed, while read_uncommitted still shows the aborted copies;
 * the group's committed offsets are the input's end offsets. Prove it against Apache Kafka 4.0.0
 * with `WEIR_COMPAT_TARGET=kafka`.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import kafkajs from 'kafkajs'
import { CompatTarget } from '../support/compat-target.ts'
import { REPO, waitFor } from '../support/weir-process.ts'
import { runDriver } from './client-matrix.ts'

const { Kafka, logLevel } = kafkajs

const target = new CompatTarget('weir-franz-txn-', { 'group.initial.rebalance.delay.ms': 0 })
before(() => target.start())
after(() => target.close())

const PER_PARTITION = 100

/** Every value of `topic` from the start (until `count` arrived and 1 s more passed). */
async function readAll(
  kafka: kafkajs.Kafka,
  topic: string,
  committed: boolean,
  count: number,
): Promise<string[]> {
  const consumer = kafka.consumer({
    groupId: `fgt-reader-${committed}`,
    readUncommitted: !committed,
    maxWaitTimeInMs: 200,
  })
  const values: string[] = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value!.toString())
      },
    })
    await waitFor(
      `${count} records of ${topic}`,
      () => (values.length >= count ? true : undefined),
      30_000,
    ).catch(() => undefined)
    // A duplicate would arrive after the last record.
    await new Promise((done) => setTimeout(done, 1000))
  } finally {
    await consumer.disconnect()
  }
  return values
}

test('franz-go GroupTransactSession: consume-transform-produce, an abort rewound, every record once read_committed', {
  timeout: 120_000,
}, async () => {
  const binary = execFileSync(join(REPO, 'tools/compat-install.sh'), ['franz-go'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1)!
  const kafka = new Kafka({
    clientId: 'weir-franz-txn',
    brokers: target.addresses,
    logLevel: logLevel.NOTHING,
    retry: { retries: 5 },
  })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({
    topics: [
      { topic: 'fgt-in', numPartitions: 3 },
      { topic: 'fgt-out', numPartitions: 3 },
    ],
    waitForLeaders: true,
  })
  await admin.disconnect()
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const inputs = [0, 1, 2].flatMap((p) =>
    Array.from({ length: PER_PARTITION }, (_, i) => ({
      partition: p,
      key: `k-${p}-${i}`,
      value: `v-${p}-${i}`,
    })),
  )
  await producer.send({ topic: 'fgt-in', messages: inputs })
  await producer.disconnect()

  const out = await runDriver<{
    committedTxns: number
    abortedTxns: number
    steps: string[]
  }>(
    binary,
    ['transact', 'fgt-in', 'fgt-out', 'fgt-group', 'fgt-tx'],
    { BOOTSTRAP: target.bootstrap },
    90_000,
  )
  assert.equal(out.abortedTxns, 1, JSON.stringify(out))
  assert.ok(out.committedTxns >= 1, JSON.stringify(out))
  // The group's offsets, once the COMMIT marker reached __consumer_offsets (OffsetFetch answers
  // the offsets before the transaction meanwhile).
  const offsets = async () => {
    const [t] = await admin.fetchOffsets({ groupId: 'fgt-group', topics: ['fgt-in'] })
    return Object.fromEntries(t!.partitions.map((p) => [p.partition, p.offset]))
  }
  const ended = { 0: String(PER_PARTITION), 1: String(PER_PARTITION), 2: String(PER_PARTITION) }
  await admin.connect()
  await waitFor('the committed offsets', async () =>
    JSON.stringify(await offsets()) === JSON.stringify(ended) ? true : undefined,
  ).catch(() => undefined)
  assert.deepEqual(await offsets(), ended)
  await admin.disconnect()

  const want = inputs.map((r) => r.value.toUpperCase()).sort()
  const committed = await readAll(kafka, 'fgt-out', true, want.length)
  assert.deepEqual([...committed].sort(), want)
  const uncommitted = await readAll(kafka, 'fgt-out', false, want.length + 1)
  assert.ok(
    uncommitted.length > want.length,
    'the aborted transaction wrote records that read_committed hides',
  )
  assert.deepEqual([...new Set(uncommitted)].sort(), want)
})
