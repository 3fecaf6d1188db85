/**
 * Transactions with real, unmodified clients against one node (`CompatTarget`; prove it against
 * Apache Kafka 4.0.0 with `WEIR_COMPAT_TARGET=kafka`), records and offsets checked exactly:
 *
 * - the Java client (clients/java/TxnScenario.java, one JVM for every scenario): a committed and an
 *   aborted transaction over 2 topics x 3 partitions read back read_committed and read_uncommitted;
 *   a second producer with the same transactional.id fences the first (ProducerFencedException); a
 *   transaction left open past transaction.timeout.ms=3000 aborted by the coordinator (the last
 *   stable offset moves to the end); consume-transform-produce with sendOffsetsToTransaction and the
 *   group's committed offsets;
 * - kafkajs: producer.transaction() with sendOffsets, commit and abort, a read_committed consumer;
 * - confluent-kafka (clients/python/confluent_transactions.py): init, begin, produce,
 *   send_offsets_to_transaction, commit, abort, an isolation.level=read_committed consumer;
 * - Kafka's kafka-transactions: list and describe an open transaction, abort it by its start offset.
 *
 * Every client step is bounded, so that a broker without transactions fails with the client's
 * error (e.g. a timeout after COORDINATOR_NOT_AVAILABLE), not a hang.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import kafkajs from 'kafkajs'
import { CompatTarget } from '../support/compat-target.ts'
import { kafkaTool, runKafkaTool } from '../support/kafka-tools.ts'
import { REPO } from '../support/weir-process.ts'
import { runDriver } from './client-matrix.ts'

const { Kafka, logLevel } = kafkajs

const target = new CompatTarget('weir-txn-clients-', {
  'group.initial.rebalance.delay.ms': 0,
  // The coordinator looks for transactions past their timeout this often (Kafka's default 10 s).
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': 500,
})
before(() => target.start())
after(() => target.close())

const install = (what: string) =>
  execFileSync(join(REPO, 'tools/compat-install.sh'), [what], { encoding: 'utf8' }).trim().split('\n').at(-1)!

/** "topic/partition/offset/key=value" for each of `topics`' 3 partitions and `keys(tp)`. */
function rows(topics: string[], offset: (p: number) => number, key: string, value: string): string[] {
  return topics.flatMap((t) => [0, 1, 2].map((p) => `${t}/${p}/${offset(p)}/${key}${t}-${p}=${value}`))
}

test('the Java client: commit, abort, fencing, timeout, consume-transform-produce', {
  timeout: 150_000,
}, async () => {
  const classpath = install('java')
  const out = await runDriver<Record<string, unknown>>(
    'java',
    [
      '-Xmx256m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      `-Dlog4j2.configurationFile=${join(REPO, 'tools/kafka/log4j2-tools.properties')}`,
      '-cp',
      classpath,
      'TxnScenario',
      'all',
      'jtx',
    ],
    { BOOTSTRAP: target.bootstrap },
    140_000,
  )
  const ab = ['jtx-a', 'jtx-b']
  // Each partition: the committed record at 0, its COMMIT marker at 1, the aborted record at 2,
  // its ABORT marker at 3.
  assert.deepEqual(out.committedRead, rows(ab, () => 0, 'c-', 'committed').sort())
  assert.deepEqual(
    out.uncommittedRead,
    [...rows(ab, () => 0, 'c-', 'committed'), ...rows(ab, () => 2, 'x-', 'aborted')].sort(),
  )
  assert.deepEqual(
    out.endCommitted,
    Object.fromEntries(ab.flatMap((t) => [0, 1, 2].map((p) => [`${t}-${p}`, 4]))),
  )
  assert.equal(out.fenced, 'ProducerFencedException')
  // The first producer's open transaction was aborted by the second's InitProducerId.
  assert.deepEqual(out.fenceRead, ['jtx-fence/2/0/second-2=second'])
  const zeros = Object.fromEntries([0, 1, 2].map((p) => [`jtx-timeout-${p}`, 0]))
  assert.deepEqual(out.timeoutLsoBefore, zeros, 'the open transaction holds the last stable offset')
  const ended = Object.fromEntries([0, 1, 2].map((p) => [`jtx-timeout-${p}`, 2]))
  assert.deepEqual(out.timeoutEnd, ended, 'the record and the ABORT marker')
  assert.deepEqual(out.timeoutLso, ended, 'the last stable offset moved past the aborted transaction')
  assert.deepEqual(out.timeoutRead, [])
  assert.deepEqual(out.groupCommitted, Object.fromEntries([0, 1, 2].map((p) => [`jtx-in-${p}`, 3])))
  const ctp = out.ctpRead as string[]
  assert.deepEqual(
    ctp.map((r) => r.replace(/\/\d+\/in-/, '/in-')).sort(),
    Array.from({ length: 9 }, (_, i) => `jtx-out/${i % 3}/in-${i}=V${i}`).sort(),
  )
})

test('kafkajs: transaction() with sendOffsets, commit and abort; a read_committed consumer', {
  timeout: 90_000,
}, async () => {
  const kafka = new Kafka({
    clientId: 'weir-txn-kafkajs',
    brokers: target.addresses,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    requestTimeout: 10_000,
    retry: { retries: 3, maxRetryTime: 3_000 },
  })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'kjs-out', numPartitions: 3 }], waitForLeaders: true })
  const producer = kafka.producer({ transactionalId: 'kjs-tx', idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    const committed = await producer.transaction()
    await committed.send({
      topic: 'kjs-out',
      messages: [0, 1, 2].map((p) => ({ partition: p, key: `c-${p}`, value: 'committed' })),
    })
    await committed.sendOffsets({
      consumerGroupId: 'kjs-g',
      topics: [{ topic: 'kjs-out', partitions: [{ partition: 0, offset: '7' }] }],
    })
    await committed.commit()
    const aborted = await producer.transaction()
    await aborted.send({
      topic: 'kjs-out',
      messages: [0, 1, 2].map((p) => ({ partition: p, key: `x-${p}`, value: 'aborted' })),
    })
    await aborted.sendOffsets({
      consumerGroupId: 'kjs-g',
      topics: [{ topic: 'kjs-out', partitions: [{ partition: 0, offset: '9' }] }],
    })
    await aborted.abort()
  } finally {
    await producer.disconnect()
  }
  const offsets = await admin.fetchOffsets({ groupId: 'kjs-g', topics: ['kjs-out'] })
  assert.deepEqual(
    offsets[0]?.partitions.map((p) => [p.partition, p.offset]).sort(),
    [
      [0, '7'],
      [1, '-1'],
      [2, '-1'],
    ],
    'the committed transaction offset, not the aborted one',
  )
  const ends = await admin.fetchTopicOffsets('kjs-out')
  assert.deepEqual(
    ends.map((p) => [p.partition, p.high]).sort(),
    [0, 1, 2].map((p) => [p, '4']),
  )
  await admin.disconnect()

  const consumer = kafka.consumer({ groupId: 'kjs-reader', readUncommitted: false, maxWaitTimeInMs: 200 })
  await consumer.connect()
  const read: string[] = []
  try {
    await consumer.subscribe({ topics: ['kjs-out'], fromBeginning: true })
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read_committed: ${read.length} of 3 records`)), 30_000)
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          read.push(`${partition}/${message.offset}/${message.key}=${message.value}`)
          if (read.length >= 3) {
            clearTimeout(timer)
            resolve()
          }
        },
      })
    })
    await done
  } finally {
    await consumer.disconnect()
  }
  assert.deepEqual(
    read.sort(),
    [0, 1, 2].map((p) => `${p}/0/c-${p}=committed`),
  )
})

test('confluent-kafka: send_offsets_to_transaction, commit, abort, read_committed', {
  timeout: 90_000,
}, async () => {
  const python = install('confluent-kafka')
  const out = await runDriver<{ read: string[]; committed: Record<string, number> }>(
    python,
    [join(REPO, 'test/compat/clients/python/confluent_transactions.py'), 'all', 'ck'],
    { BOOTSTRAP: target.bootstrap },
    80_000,
  )
  assert.deepEqual(
    out.read.map((r) => r.replace(/\/\d+\/in-/, '/in-')).sort(),
    Array.from({ length: 6 }, (_, i) => `ck-out/${i % 3}/in-${i}=V${i}`).sort(),
  )
  assert.deepEqual(out.committed, { '0': 2, '1': 2, '2': 2 })
})

test("Kafka's kafka-transactions: list, describe, abort an open transaction by its start offset", {
  timeout: 90_000,
}, async () => {
  const kafka = new Kafka({
    clientId: 'weir-txn-tools',
    brokers: target.addresses,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    requestTimeout: 10_000,
    retry: { retries: 3, maxRetryTime: 3_000 },
  })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'tools-t', numPartitions: 1 }], waitForLeaders: true })
  await admin.disconnect()
  const producer = kafka.producer({ transactionalId: 'tools-tx', idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const open = await producer.transaction()
  await open.send({ topic: 'tools-t', messages: [{ key: 'k', value: 'hanging' }] })
  // The producer goes away with its transaction open (60 s transaction.timeout.ms).
  await producer.disconnect()

  const bootstrap = ['--bootstrap-server', target.bootstrap]
  const list = await kafkaTool('kafka-transactions', ...bootstrap, 'list')
  assert.match(list, /^tools-tx\s+\d+\s+\d+\s+Ongoing\s*$/m, list)
  const described = await kafkaTool(
    'kafka-transactions',
    ...bootstrap,
    'describe',
    '--transactional-id',
    'tools-tx',
  )
  assert.match(
    described,
    /^\d+\s+tools-tx\s+\d+\s+0\s+Ongoing\s+60000\s+\d+\s+\d+\s+tools-t-0\s*$/m,
    described,
  )
  const aborted = await runKafkaTool(
    'kafka-transactions',
    ...bootstrap,
    'abort',
    '--topic',
    'tools-t',
    '--partition',
    '0',
    '--start-offset',
    '0',
  )
  assert.equal(aborted.code, 0, `${aborted.stdout}\n${aborted.stderr}`)
  // The ABORT marker at 1: the last stable offset is the end, and read_committed sees nothing.
  const offsets = await kafkaTool('kafka-get-offsets', ...bootstrap, '--topic', 'tools-t', '--time', '-1')
  assert.match(offsets, /^tools-t:0:2$/m, offsets)
  for (let broker = 1; broker <= target.addresses.length; broker++) {
    const hanging = await kafkaTool(
      'kafka-transactions',
      ...bootstrap,
      'find-hanging',
      '--broker-id',
      `${broker}`,
    )
    assert.doesNotMatch(hanging, /tools-t/, hanging)
  }
})
