/**
 * A real `weir start` with `http.listeners`: health checks and Prometheus metrics over real HTTP,
 * the metrics following what a client does (requests counted by API, a created topic's partitions
 * counted), both expositions (text 0.0.4 and OpenMetrics) in turn, and the refusals (404, 405).
 */
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync } from 'node:fs'
import { request } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import kafkajs from 'kafkajs'
import { startCluster } from '../../src/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import { apis, ErrorCode } from '../../src/protocol/index.ts'
import { openConnection } from '../support/connection.ts'
import { makeTestCerts } from '../support/tls-certs.ts'
import { freePorts, tempDir, WeirProcess, writeProperties } from '../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs
const dir = tempDir('weir-http-')
let node: WeirProcess
let kafkaPort: number
let httpPort: number

before(async () => {
  const [client, controller, http] = (await freePorts(3)) as [number, number, number]
  kafkaPort = client
  httpPort = http
  const config = writeProperties(dir.path, 'weir.properties', {
    listeners: `PLAINTEXT://127.0.0.1:${client},CONTROLLER://127.0.0.1:${controller}`,
    'controller.quorum.voters': `1@127.0.0.1:${controller}`,
    'http.listeners': `http://127.0.0.1:${http}`,
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 1,
  })
  node = new WeirProcess(['--config', config, '--data-dir', join(dir.path, 'data')])
  await node.start()
})

after(async () => {
  await node?.stop()
  dir.remove()
})

function get(
  path: string,
  options: { method?: string; accept?: string; port?: number } = {},
): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.port ?? httpPort,
        path,
        method: options.method ?? 'GET',
        headers: options.accept === undefined ? {} : { accept: options.accept },
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (d: string) => {
          body += d
        })
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }),
        )
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** The value of a sample line `name{labels} value` (labels as written, or none). */
function sample(body: string, name: string, labels = ''): number | undefined {
  const prefix = labels === '' ? `${name} ` : `${name}{${labels}} `
  const line = body.split('\n').find((l) => l.startsWith(prefix))
  return line === undefined ? undefined : Number(line.slice(prefix.length))
}

test('health: live and ready once the node serves', async () => {
  assert.deepEqual(await get('/v1/health/live'), {
    status: 200,
    type: 'application/json',
    body: '{"status":"live"}\n',
  })
  const ready = await get('/v1/health/ready')
  assert.equal(ready.status, 200)
  assert.equal(ready.body, '{"status":"ready"}\n')
})

test('metrics follow what clients do, in both expositions', async () => {
  const conn = await openConnection({ host: '127.0.0.1', port: kafkaPort }, 'http-test')
  try {
    const before = await get('/metrics')
    assert.equal(before.status, 200)
    assert.match(before.type, /^text\/plain; version=0\.0\.4/)
    assert.equal(sample(before.body, 'kafka_controller_kafkacontroller_activecontrollercount'), 1)
    assert.equal(sample(before.body, 'kafka_server_raftmetrics_current_leader'), 1)
    assert.equal(sample(before.body, 'weir_node_ready'), 1)
    assert.ok((sample(before.body, 'nodejs_heap_size_used_bytes') ?? 0) > 0, "Node's own metrics")
    const metadataBefore =
      sample(before.body, 'kafka_network_requestmetrics_requests_total', 'request="Metadata"') ?? 0
    const created = await conn.request(apis.CreateTopics, 7, {
      topics: [
        {
          name: 'metered' as TopicName,
          numPartitions: 5,
          replicationFactor: 1,
          assignments: [],
          configs: [],
        },
      ],
      timeoutMs: 30_000,
      validateOnly: false,
    })
    assert.equal(created.topics[0]?.errorCode, ErrorCode.None)
    for (let i = 0; i < 3; i++) {
      await conn.request(apis.Metadata, 12, { topics: null, allowAutoTopicCreation: false })
    }
    const m = (await get('/metrics')).body
    assert.equal(
      sample(m, 'kafka_network_requestmetrics_requests_total', 'request="Metadata"'),
      metadataBefore + 3,
    )
    assert.equal(sample(m, 'kafka_network_requestmetrics_totaltimems_count', 'request="CreateTopics"'), 1)
    assert.equal(sample(m, 'kafka_server_replicamanager_leadercount'), 5)
    assert.equal(sample(m, 'kafka_server_replicamanager_partitioncount'), 5)
    assert.equal(sample(m, 'kafka_server_replicamanager_underreplicatedpartitions'), 0)
    assert.equal(sample(m, 'kafka_controller_kafkacontroller_offlinepartitionscount'), 0)
    assert.equal(sample(m, 'kafka_controller_kafkacontroller_globaltopiccount'), 1)
    // The topic's records were proposed and committed by this quorum leader just now.
    const commitMax = sample(m, 'kafka_server_raftmetrics_commit_latency_max') ?? Number.NaN
    const commitAvg = sample(m, 'kafka_server_raftmetrics_commit_latency_avg') ?? Number.NaN
    assert.ok(commitMax >= commitAvg && commitAvg >= 0, `commit latency ${commitAvg} / ${commitMax}`)
    const open = await get('/metrics', { accept: 'application/openmetrics-text; version=1.0.0' })
    assert.match(open.type, /^application\/openmetrics-text/)
    assert.ok(open.body.endsWith('# EOF\n'))
    assert.match(open.body, /^# TYPE kafka_network_requestmetrics_requests counter$/m)
    assert.ok(sample(open.body, 'kafka_network_requestmetrics_requests_total', 'request="Metadata"'))
    // The text exposition after an OpenMetrics one still names counters with _total.
    const again = (await get('/metrics')).body
    assert.match(again, /^# TYPE kafka_network_requestmetrics_requests_total counter$/m)
  } finally {
    conn.close()
  }
})

test("the data path's counts: messages and bytes in and out, log size, a group's lag, flushes", async () => {
  const kafka = new Kafka({
    clientId: 'http-test',
    brokers: [`127.0.0.1:${kafkaPort}`],
    logLevel: logLevel.NOTHING,
  })
  const admin = kafka.admin()
  await admin.connect()
  const producer = kafka.producer()
  await producer.connect()
  const conn = await openConnection({ host: '127.0.0.1', port: kafkaPort }, 'http-test-data')
  try {
    await admin.createTopics({
      topics: [
        { topic: 'counted', numPartitions: 1, configEntries: [{ name: 'flush.messages', value: '1' }] },
      ],
      waitForLeaders: true,
    })
    const before = (await get('/metrics')).body
    const count = (body: string, name: string) => sample(body, name) ?? 0
    const messages = Array.from({ length: 10 }, (_, i) => ({ value: `value-${i}` }))
    for (const m of messages) await producer.send({ topic: 'counted', acks: -1, messages: [m] })
    const sent = (await get('/metrics')).body
    assert.equal(
      count(sent, 'kafka_server_brokertopicmetrics_messagesin_total') -
        count(before, 'kafka_server_brokertopicmetrics_messagesin_total'),
      10,
      'one per record sent',
    )
    await admin.setOffsets({
      groupId: 'lagging',
      topic: 'counted',
      partitions: [{ partition: 0, offset: '4' }],
    })
    const fetched = await conn.request(apis.Fetch, 12, {
      replicaId: -1 as BrokerId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        {
          topic: 'counted' as TopicName,
          partitions: [
            {
              partition: 0,
              currentLeaderEpoch: -1,
              fetchOffset: 0n,
              lastFetchedEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: 1 << 20,
            },
          ],
        },
      ],
      forgottenTopicsData: [],
      rackId: '',
    })
    const records = fetched.responses[0]!.partitions[0]!.records!
    const m = (await get('/metrics')).body
    const delta = (name: string) => count(m, name) - count(before, name)
    assert.ok(delta('kafka_server_brokertopicmetrics_messagesin_total') > 10, "the group's offset commit too")
    assert.ok(delta('kafka_server_brokertopicmetrics_bytesin_total') > 10 * 'value-0'.length)
    assert.equal(delta('kafka_server_brokertopicmetrics_bytesout_total'), records.length)
    assert.equal(delta('kafka_server_brokertopicmetrics_replicationbytesout_total'), 0, 'no follower here')
    assert.equal(sample(m, 'kafka_log_log_size', 'topic="counted",partition="0"'), records.length)
    assert.ok((sample(m, 'weir_log_size_bytes') ?? 0) >= records.length)
    assert.equal(
      sample(m, 'kafka_consumergroup_lag', 'consumergroup="lagging",topic="counted",partition="0"'),
      6,
    )
    assert.equal(sample(m, 'kafka_consumergroup_lag_sum', 'consumergroup="lagging"'), 6)
    // flush.messages=1: every append is flushed.
    assert.ok(delta('kafka_log_logflushstats_logflushrateandtimems_count') >= 10)
  } finally {
    conn.close()
    await producer.disconnect()
    await admin.disconnect()
  }
})

test('unknown paths are 404, other methods 405', async () => {
  assert.equal((await get('/nope')).status, 404)
  assert.equal((await get('/metrics/../etc/passwd')).status, 404)
  const post = await get('/metrics', { method: 'POST' })
  assert.equal(post.status, 405)
  assert.equal((await get('/v1/health/ready', { method: 'DELETE' })).status, 405)
  const head = await get('/v1/health/live', { method: 'HEAD' })
  assert.equal(head.status, 200)
  assert.equal(head.body, '')
})

test('startCluster serves HTTP on every node unless told not to', async () => {
  const cluster = await startCluster({ nodes: 1 })
  try {
    const port = cluster.nodes[0]!.httpPort
    assert.ok(port !== null)
    assert.equal((await get('/v1/health/ready', { port })).status, 200)
    const m = (await get('/metrics', { port })).body
    assert.equal(sample(m, 'kafka_controller_kafkacontroller_activecontrollercount'), 1)
  } finally {
    await cluster.stop()
  }
  const off = await startCluster({ nodes: 1, config: { 'http.listeners': '' } })
  try {
    assert.equal(off.nodes[0]!.httpPort, null)
  } finally {
    await off.stop()
  }
})

test("https: the broker's keystore; client certificates when ssl.client.auth asks; refused without a keystore", async () => {
  mkdirSync(join(dir.path, 'certs'))
  const certs = makeTestCerts(join(dir.path, 'certs'))
  const [client, controller, https] = (await freePorts(3)) as [number, number, number]
  const config = writeProperties(dir.path, 'https.properties', {
    listeners: `PLAINTEXT://127.0.0.1:${client},CONTROLLER://127.0.0.1:${controller}`,
    'controller.quorum.voters': `1@127.0.0.1:${controller}`,
    'http.listeners': `https://127.0.0.1:${https}`,
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': certs.serverPemStore,
    'ssl.truststore.type': 'PEM',
    'ssl.truststore.location': certs.caPem,
    'listener.name.http.ssl.client.auth': 'required',
  })
  const secured = new WeirProcess(['--config', config, '--data-dir', join(dir.path, 'https-data')])
  await secured.start()
  try {
    const ca = readFileSync(certs.caPem)
    const ask = (withCert: boolean) =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: https,
            path: '/v1/health/ready',
            ca,
            servername: 'localhost',
            ...(withCert
              ? { cert: readFileSync(certs.clientCertPem), key: readFileSync(certs.clientKeyPem) }
              : {}),
          },
          (res) => {
            res.resume()
            resolve(res.statusCode ?? 0)
          },
        )
        req.on('error', reject)
        req.end()
      })
    assert.equal(
      await ask(true),
      200,
      'served over TLS, the client certificate checked against the truststore',
    )
    await assert.rejects(ask(false), 'no client certificate: the handshake fails (ssl.client.auth=required)')
  } finally {
    await secured.stop()
  }
  const bare = writeProperties(dir.path, 'bare.properties', {
    listeners: `PLAINTEXT://127.0.0.1:${client},CONTROLLER://127.0.0.1:${controller}`,
    'controller.quorum.voters': `1@127.0.0.1:${controller}`,
    'http.listeners': `https://127.0.0.1:${https}`,
  })
  const refused = new WeirProcess(['--config', bare, '--data-dir', join(dir.path, 'bare-data')])
  await assert.rejects(refused.start(), /invalid configuration: .*ssl\.keystore/)
})
