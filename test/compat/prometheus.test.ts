// compat-cluster: skip it starts its own 3-node cluster
/**
 * A real Prometheus (Debian's `prometheus`, tools/test-deps.sh installs it) scraping the HTTP
 * listeners of a 3-node `startCluster` every second, read back through its HTTP API with PromQL:
 * every target up, exactly one active controller, the Produce request and messages-in rates while
 * kafkajs produces and messages in equal to the records it sent, a stopped group's lag growing by
 * what is produced after it stopped, and under-replicated partitions rising when a broker is killed
 * and back to 0, through ISR expansions, once it rejoins.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import kafkajs from 'kafkajs'
import { type EmbeddedCluster, startCluster } from '../../src/index.ts'
import { freePorts, tempDir, waitFor } from '../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs

const dir = tempDir('weir-prometheus-')
let cluster: EmbeddedCluster
let prometheus: ChildProcess
let promPort: number
let promLog = ''

before(async () => {
  cluster = await startCluster({ nodes: 3 })
  ;[promPort] = (await freePorts(1)) as [number]
  const targets = cluster.nodes.map((n) => `'127.0.0.1:${n.httpPort}'`).join(', ')
  const config = join(dir.path, 'prometheus.yml')
  writeFileSync(
    config,
    `global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: weir\n    static_configs:\n      - targets: [${targets}]\n`,
  )
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir.path, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  prometheus.stderr?.on('data', (d: Buffer) => {
    if (promLog.length < 65_536) promLog += d.toString()
  })
  await until('every target scraped', async () => (await query('up')).length === 3, 30_000)
})

after(async () => {
  prometheus?.kill('SIGTERM')
  await cluster?.stop()
  dir.remove()
})

/** An instant PromQL query's samples: labels and value. */
async function query(promql: string): Promise<Array<{ metric: Record<string, string>; value: number }>> {
  let res: Response
  try {
    res = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(promql)}`)
  } catch {
    return [] // not listening yet
  }
  const body = (await res.json()) as {
    status: string
    data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }
    error?: string
  }
  assert.equal(body.status, 'success', `${promql}: ${body.error ?? ''}\n${promLog}`)
  return (body.data?.result ?? []).map((r) => ({ metric: r.metric, value: Number(r.value[1]) }))
}

/** Waits until `cond` holds (waitFor takes any defined value as done). */
function until(what: string, cond: () => Promise<boolean>, timeoutMs: number): Promise<true> {
  return waitFor(what, async () => ((await cond()) ? true : undefined), timeoutMs)
}

/** The single value of a query that sums to one sample, or undefined while it has none. */
async function scalar(promql: string): Promise<number | undefined> {
  const r = await query(promql)
  return r[0]?.value
}

test('every node is scraped and exactly one is the active controller', async () => {
  assert.deepEqual(
    (await query('up')).map((r) => r.value),
    [1, 1, 1],
  )
  await until(
    'one active controller',
    async () => (await scalar('sum(kafka_controller_kafkacontroller_activecontrollercount)')) === 1,
    15_000,
  )
  const leaders = await query('kafka_server_raftmetrics_current_leader')
  assert.equal(new Set(leaders.map((r) => r.value)).size, 1, 'every node names the same quorum leader')
})

test('the Produce request rate while a producer sends', async () => {
  const kafka = new Kafka({ clientId: 'prom-test', brokers: cluster.bootstrap, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'watched', numPartitions: 6, replicationFactor: 3 }] })
  await admin.disconnect()
  const producer = kafka.producer()
  await producer.connect()
  let sending = true
  let sent = 0
  const load = (async () => {
    while (sending) {
      await producer.send({ topic: 'watched', acks: 1, messages: [{ value: `v${sent}` }] })
      sent++
    }
  })()
  try {
    await until(
      'a Produce rate',
      async () =>
        ((await scalar('sum(rate(kafka_network_requestmetrics_requests_total{request="Produce"}[5s]))')) ??
          0) > 0,
      30_000,
    )
    await until(
      'a messages-in rate',
      async () =>
        ((await scalar('sum(rate(kafka_server_brokertopicmetrics_messagesin_total[5s]))')) ?? 0) > 0,
      30_000,
    )
    assert.equal(await scalar('sum(kafka_server_replicamanager_underreplicatedpartitions)'), 0)
    await until(
      'the 6 leaders counted',
      async () => (await scalar('sum(kafka_server_replicamanager_leadercount)')) === 6,
      15_000,
    )
  } finally {
    sending = false
    await load.catch(() => {})
    await producer.disconnect()
  }
  assert.ok(sent > 0)
  // Each record is counted once, by its partition's leader; nothing else was written yet.
  await until(
    'messages in equal the records sent',
    async () => (await scalar('sum(kafka_server_brokertopicmetrics_messagesin_total)')) === sent,
    15_000,
  )
  assert.ok(((await scalar('sum(kafka_server_brokertopicmetrics_replicationbytesin_total)')) ?? 0) > 0)
})

test("a stopped group's lag grows with what is produced after it stopped", async () => {
  const kafka = new Kafka({ clientId: 'prom-lag', brokers: cluster.bootstrap, logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({ groupId: 'stopped', maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topic: 'watched', fromBeginning: true })
  const total = (await scalar('sum(kafka_server_brokertopicmetrics_messagesin_total)')) ?? 0
  let read = 0
  await consumer.run({
    eachMessage: async () => {
      read++
    },
  })
  await waitFor('the group read everything', async () => (read >= total ? true : undefined), 60_000)
  await consumer.disconnect() // commits its offsets
  const lag = 'sum(kafka_consumergroup_lag_sum{consumergroup="stopped"})'
  await until('no lag once stopped', async () => (await scalar(lag)) === 0, 15_000)
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({
    topic: 'watched',
    acks: -1,
    messages: Array.from({ length: 50 }, (_, i) => ({ value: `late-${i}` })),
  })
  await producer.disconnect()
  await until('the lag is what came after', async () => (await scalar(lag)) === 50, 15_000)
  const byPartition = await query('kafka_consumergroup_lag{consumergroup="stopped",topic="watched"}')
  assert.equal(
    byPartition.reduce((a, r) => a + r.value, 0),
    50,
  )
})

test('under-replicated partitions rise when a broker is killed and go back to 0 when it rejoins', async () => {
  const underReplicated = 'sum(kafka_server_replicamanager_underreplicatedpartitions)'
  assert.equal(await scalar(underReplicated), 0)
  await cluster.kill(2)
  // Fenced at the end of its session (2 s under startCluster): it leaves every ISR, so each partition
  // (the 6 of `watched` and those of __consumer_offsets), led by a live broker, has 2 of its 3
  // replicas in sync.
  await until(
    'under-replicated after the kill',
    async () => {
      const n = (await scalar(underReplicated)) ?? 0
      return n >= 6 && n === (await scalar('sum(kafka_server_replicamanager_leadercount)'))
    },
    30_000,
  )
  assert.equal(await scalar('sum(up)'), 2)
  assert.equal(await scalar('sum(kafka_controller_kafkacontroller_activecontrollercount)'), 1)
  await cluster.restart(2)
  await until('back in sync after the rejoin', async () => (await scalar(underReplicated)) === 0, 60_000)
  await until(
    'each ISR expanded',
    async () => ((await scalar('sum(kafka_server_replicamanager_isrexpands_total)')) ?? 0) >= 6,
    15_000,
  )
  assert.equal(await scalar('sum(up)'), 3)
})
