/**
 * A broker serves clients only once its metadata has caught up (Kafka's BrokerServer waits for the
 * initial catch-up before enableRequestProcessing), with real processes and raw connections:
 *
 * - kill -9 the leader of a 3-node cluster, let the others elect a new leader, restart it; from the
 *   first moment its client port accepts, Metadata requests in a loop to it: never a missing topic,
 *   never itself as the leader in an epoch the cluster has left behind (before the fix, the
 *   restarted node answered from the image it was still replaying);
 * - a broker-only node restarted while the controller quorum is down: its client port accepts and
 *   holds the connections (nothing refused, nothing answered), its log says what it waits for, it
 *   stops cleanly while holding them, and serves once the quorum is back.
 */
import assert from 'node:assert/strict'
import { Socket } from 'node:net'
import { after, test } from 'node:test'
import { ConnectionError, KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { WeirCluster } from '../support/cluster.ts'
import { waitFor } from '../support/weir-process.ts'

const clusters: WeirCluster[] = []
after(async () => {
  for (const c of clusters) await c.kill()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const connectionOptions = {
  clientId: 'catchup-test',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 60_000,
  inFlightRequestsMax: 4,
  responseBytesMax: 1 << 24,
  connectTimeoutMs: 1_000,
}

const open = (port: number) => KafkaConnection.open({ host: '127.0.0.1', port }, connectionOptions)

interface Seen {
  readonly errorCode: number
  readonly leader: number
  readonly epoch: number
}

async function partitionOf(c: KafkaConnection, topic: string): Promise<Seen> {
  const res = await c.request(apis.Metadata, 12, {
    topics: [{ name: topic as TopicName }],
    allowAutoTopicCreation: false,
  })
  const t = res.topics[0]
  const p = t?.partitions[0]
  return { errorCode: t?.errorCode ?? -1, leader: p?.leaderId ?? -1, epoch: p?.leaderEpoch ?? -1 }
}

test('a restarted broker answers Metadata only once caught up: no missing topic, no stale leadership', {
  timeout: 240_000,
}, async () => {
  const c = await WeirCluster.start({
    nodes: 3,
    prefix: 'weir-catchup-',
    config: { 'broker.session.timeout.ms': 2000, 'broker.heartbeat.interval.ms': 500 },
  })
  clusters.push(c)
  const TOPIC = 'watched'
  const other = await open(c.node(2).port)
  try {
    // Some metadata to replay: topics before and after the watched one.
    const topics = [
      ...Array.from({ length: 20 }, (_, i) => `before-${i}`),
      TOPIC,
      ...Array.from({ length: 20 }, (_, i) => `after-${i}`),
    ]
    for (const name of topics) {
      const res = await other.request(apis.CreateTopics, 7, {
        topics: [
          {
            name: name as TopicName,
            numPartitions: -1,
            replicationFactor: -1,
            assignments: [{ partitionIndex: 0, brokerIds: [1, 2, 3] as BrokerId[] }],
            configs: [],
          },
        ],
        timeoutMs: 30_000,
        validateOnly: false,
      })
      assert.equal(res.topics[0]?.errorCode, 0, name)
    }
    const before = await waitFor('node 1 leading the watched topic', async () => {
      const p = await partitionOf(other, TOPIC)
      return p.leader === 1 ? p : undefined
    })

    const node = c.node(1)
    await node.process.kill()
    // Restarted at once: its session has not expired yet, its registration waits for that.
    const restarted = node.process.start(60_000)
    let ready = false
    void restarted.then(
      () => {
        ready = true
      },
      () => {},
    )
    // From the first moment the port accepts (ApiVersions is the first request on it).
    let conn: KafkaConnection | null = null
    while (conn === null) {
      try {
        conn = await open(node.port)
      } catch (e) {
        if (!(e instanceof ConnectionError)) throw e
        await sleep(5)
      }
    }
    const seen: Seen[] = []
    try {
      let afterReady = 0
      while (afterReady < 20) {
        seen.push(await partitionOf(conn, TOPIC))
        if (ready) afterReady++
        await sleep(10)
      }
    } finally {
      conn.close()
    }
    await restarted
    const missing = seen.filter((s) => s.errorCode !== 0)
    assert.deepEqual(missing, [], `the topic was missing: ${JSON.stringify(seen)}`)
    // Its new incarnation leads only in an epoch after the one it led in when killed.
    const stale = seen.filter((s) => s.epoch < before.epoch || (s.leader === 1 && s.epoch <= before.epoch))
    assert.deepEqual(
      stale,
      [],
      `a stale leadership (node 1 led in epoch ${before.epoch} when killed): ${JSON.stringify(seen)}`,
    )
    const backwards = seen.findIndex((s, i) => i > 0 && s.epoch < seen[i - 1]!.epoch)
    assert.equal(backwards, -1, `the leader epoch went back: ${JSON.stringify(seen)}`)
    assert.ok(seen.length >= 20)
  } catch (e) {
    console.error(c.outputTail())
    throw e
  } finally {
    other.close()
  }
})

test('a broker whose controller quorum is down holds its client connections, says so, and stops cleanly', {
  timeout: 180_000,
}, async () => {
  // Node 1 is the only controller; nodes 2 and 3 are brokers only.
  const c = await WeirCluster.start({ nodes: 3, controllers: 1, prefix: 'weir-catchup-held-' })
  clusters.push(c)
  const broker = c.node(3)
  try {
    await broker.process.stop()
    await c.node(1).process.kill()
    const restarted = broker.process.start(120_000)
    restarted.catch(() => {})

    // The port accepts; a request on it is neither refused nor answered.
    const socket = await waitFor(
      'the broker port accepting',
      () =>
        new Promise<Socket | undefined>((resolve) => {
          const s = new Socket()
          s.once('connect', () => resolve(s))
          s.once('error', () => resolve(undefined))
          s.connect(broker.port, '127.0.0.1')
        }),
    )
    let answered = false
    let closed = false
    socket.on('data', () => {
      answered = true
    })
    socket.on('close', () => {
      closed = true
    })
    // ApiVersions v0: size, api key 18, version 0, correlation id 1, client id "t".
    const body = Buffer.from([0, 18, 0, 0, 0, 0, 0, 1, 0, 1, 0x74])
    const size = Buffer.alloc(4)
    size.writeInt32BE(body.length)
    socket.write(Buffer.concat([size, body]))
    await waitFor(
      'the held-connections log line',
      () => (broker.process.output.includes('client listeners hold') ? true : undefined),
      60_000,
    )
    assert.equal(answered, false, 'a held connection was answered')
    assert.equal(closed, false, 'a held connection was closed')
    assert.match(broker.process.output, /waiting for registration with the controller/)

    // Stopping while held works.
    assert.equal(await broker.process.stop(), 0)
    socket.destroy()

    // With the quorum back, the broker serves.
    await c.node(1).process.start(60_000)
    await broker.process.start(60_000)
    const conn = await open(broker.port)
    try {
      assert.equal((await partitionOf(conn, 'none')).errorCode, 3) // UNKNOWN_TOPIC_OR_PARTITION
    } finally {
      conn.close()
    }
  } catch (e) {
    console.error(c.outputTail())
    throw e
  }
})
