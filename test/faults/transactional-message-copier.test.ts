/**
 * Kafka's TransactionalMessageCopier (org.apache.kafka.tools, run as Kafka's system tests run it)
 * copying an input topic to an output topic in transactions of 20 records with its random aborts
 * (`--enable-random-aborts`, which rewinds the consumer to the last committed offsets), the offsets
 * committed in each transaction with the consumer's group metadata (`--use-group-metadata`), over
 * three Weir nodes (RF 3, min.insync.replicas 2) while one of them is killed (-9) mid-copy and
 * restarted. The copier must finish (it exits once it copied up to the end offset it saw at
 * launch), and the output read read_committed must hold every input value exactly once, the group's
 * committed offset the input's end.
 *
 * `WEIR_COMPAT_TARGET=kafka` runs it against one Apache Kafka 4.0.0 node (harness/brokers.ts).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import kafkajs from 'kafkajs'
import { REPO, waitFor } from '../support/weir-process.ts'
import { startBrokers } from './harness/brokers.ts'

const { Kafka, logLevel } = kafkajs

const RECORDS = 3000

test('TransactionalMessageCopier with random aborts, a broker killed (-9) mid-copy: every input record once in the read_committed output', {
  timeout: 150_000,
}, async () => {
  const brokers = await startBrokers('weir-copier-')
  const kafka = new Kafka({
    clientId: 'weir-copier',
    brokers: brokers.bootstrap.split(','),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { retries: 20, initialRetryTime: 200, maxRetryTime: 2_000 },
  })
  const consumer = kafka.consumer({ groupId: 'copier-check', readUncommitted: false })
  let output = ''
  try {
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({
      topics: [
        { topic: 'copy-in', numPartitions: 1 },
        { topic: 'copy-out', numPartitions: 3 },
      ].map((t) => ({
        ...t,
        replicationFactor: brokers.replicas,
        configEntries: [{ name: 'min.insync.replicas', value: String(Math.min(2, brokers.replicas)) }],
      })),
      waitForLeaders: true,
    })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    for (let b = 0; b < RECORDS; b += 500) {
      await producer.send({
        topic: 'copy-in',
        messages: Array.from({ length: 500 }, (_, k) => ({ key: `k-${b + k}`, value: `v-${b + k}` })),
      })
    }
    await producer.disconnect()

    const copier = spawn(
      join(REPO, 'tools/kafka/tool.sh'),
      [
        'org.apache.kafka.tools.TransactionalMessageCopier',
        '--broker-list',
        brokers.bootstrap,
        '--transactional-id',
        'copier-tx',
        '--consumer-group',
        'copier-group',
        '--input-topic',
        'copy-in',
        '--input-partition',
        '0',
        '--output-topic',
        'copy-out',
        '--transaction-size',
        '20',
        '--enable-random-aborts',
        '--use-group-metadata',
      ],
      { env: { ...process.env, KAFKA_VERSION: '4.0.0' }, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    copier.stdout.on('data', (d: Buffer) => {
      output += d.toString()
    })
    copier.stderr.on('data', (d: Buffer) => {
      output += d.toString()
    })
    const exited = new Promise<number | null>((done) => copier.once('exit', (code) => done(code)))
    // Mid-copy: once the copier copied a hundred records (it prints its progress as JSON lines).
    await waitFor(
      'the first transactions',
      () => /"totalProcessed":[1-9]\d\d,/.test(output) || undefined,
      60_000,
    )
    assert.doesNotMatch(output, /ShutdownComplete/, 'the broker is killed mid-copy')
    await brokers.kill()
    await new Promise((done) => setTimeout(done, 1500))
    await brokers.restart()
    let timer: NodeJS.Timeout | undefined
    const code = await Promise.race([
      exited,
      new Promise((done) => {
        timer = setTimeout(() => done('timeout'), 90_000)
      }),
    ])
    clearTimeout(timer)
    if (code === 'timeout') copier.kill('SIGKILL')
    assert.equal(code, 0, `the copier did not finish:\n${output.slice(-4000)}`)

    const values: string[] = []
    const admin2 = kafka.admin()
    await admin2.connect()
    const committed = await admin2.fetchOffsets({ groupId: 'copier-group', topics: ['copy-in'] })
    await admin2.disconnect()
    assert.deepEqual(
      committed.map((t) => t.partitions.map((p) => [p.partition, p.offset])),
      [[[0, String(RECORDS)]]],
    )
    await consumer.connect()
    await consumer.subscribe({ topic: 'copy-out', fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value!.toString())
      },
    })
    await waitFor('every copied record', () => (values.length >= RECORDS ? true : undefined), 30_000).catch(
      () => undefined,
    )
    // A duplicate would show after the last record too.
    await new Promise((done) => setTimeout(done, 1000))
    const want = Array.from({ length: RECORDS }, (_, i) => `v-${i}`).sort()
    assert.deepEqual([...values].sort(), want, `copier:\n${output.slice(-2000)}`)
  } catch (e) {
    console.error(`copier:\n${output.slice(-4000)}\n${brokers.tail()}`)
    throw e
  } finally {
    await consumer.disconnect().catch(() => undefined)
    await brokers.close()
  }
})
