/**
 * Weir's own ClusterClient, long-lived, across kill -9 of a partition leader that restarts at once
 * (three real processes). The leader is node 1, the first broker the client knows, so the client's
 * next metadata requests reach the restarted node while it is still replaying its metadata: that
 * node answers from an image that is behind (the topic missing, or itself as the leader in an older
 * leader epoch). The client must not take such an answer over what it knows (KIP-320: a partition's
 * leader epoch never goes back; a topic it knows does not vanish on one lagging broker's word), and
 * must ask another broker instead. Before that fix, the client went back to the restarted node after
 * every failure and produced to the stale leader it named. The rounds move the leadership back to
 * node 1 (a preferred election) before each kill.
 *
 * And a hung broker (SIGSTOP: the kernel still accepts connections, nothing answers), also the first
 * the client knows: a metadata refresh does not fail on it while the others answer, and the client
 * stops going to it first (before, each refresh paid a request timeout there).
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { ClusterClient, KafkaError } from '../../src/client/index.ts'
import { nodeTransport, systemClock, type Transport } from '../../src/io/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import { apis, ErrorCode, encodeBatch } from '../../src/protocol/index.ts'
import { WeirCluster } from '../support/cluster.ts'
import { waitFor } from '../support/weir-process.ts'

const ROUNDS = Number(process.env.CLIENT_RESTART_ROUNDS ?? 2)
const TOPIC = 'moving'

const clusters: WeirCluster[] = []
after(async () => {
  for (const c of clusters) await c.kill()
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** One record with acks=all to the leader the client's metadata names; throws on any failure. */
async function produceOnce(client: ClusterClient, value: string): Promise<void> {
  const connection = await client.broker(await client.leaderOf(TOPIC, 0))
  const version = connection.versionFor(apis.Produce)
  if (version === undefined) throw new KafkaError(ErrorCode.UnsupportedVersion)
  const res = await connection.request(apis.Produce, version, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 1000,
    topicData: [
      {
        name: TOPIC as TopicName,
        partitionData: [
          {
            index: 0,
            records: encodeBatch({
              records: [{ key: null, value: Buffer.from(value), timestamp: BigInt(Date.now()) }],
            }),
          },
        ],
      },
    ],
  })
  const code = res.responses[0]?.partitionResponses[0]?.errorCode ?? ErrorCode.UnknownServerError
  if (code !== 0) throw new KafkaError(code)
}

test(`a long-lived client across ${ROUNDS} kill -9 and restarts of the leader it asks first`, {
  timeout: 60_000 + ROUNDS * 90_000,
}, async () => {
  const c = await WeirCluster.start({
    nodes: 3,
    prefix: 'weir-client-restart-',
    config: {
      'min.insync.replicas': 2,
      'offsets.topic.replication.factor': 3,
      'broker.session.timeout.ms': 2000,
      'broker.heartbeat.interval.ms': 500,
    },
  })
  clusters.push(c)
  const client = new ClusterClient({
    bootstrap: c.nodes.map((n) => n.address),
    clientId: 'client-restart-test',
    clock: systemClock,
    transport: nodeTransport,
    requestTimeoutMs: 1000,
    retryTimeoutMs: 60_000,
    retryBackoffMs: 20,
  })
  try {
    const { response } = await client.request(apis.CreateTopics, {
      topics: [
        {
          name: TOPIC as TopicName,
          numPartitions: -1,
          replicationFactor: -1,
          assignments: [{ partitionIndex: 0, brokerIds: [1, 2, 3] as BrokerId[] }],
          configs: [],
        },
      ],
      timeoutMs: 30_000,
      validateOnly: false,
    })
    assert.equal(response.topics[0]?.errorCode, 0)
    for (let round = 1; round <= ROUNDS; round++) {
      // Node 1 leads with all three in sync (a preferred election after the first round).
      await waitFor(
        'node 1 leading with 3 in sync',
        async () => {
          const p = (await client.topic(TOPIC, { refresh: true })).partitions[0]!
          if (p.leader === 1 && p.isr.length === 3) return true
          if (p.leader !== 1 && p.isr.includes(1))
            await client
              .request(apis.ElectLeaders, {
                electionType: 0,
                topicPartitions: [{ topic: TOPIC as TopicName, partitions: [0] }],
                timeoutMs: 10_000,
              })
              .catch(() => {})
          return undefined
        },
        60_000,
      )
      await client.retrying(() => produceOnce(client, `before-${round}`))
      const epochBefore = (await client.topic(TOPIC)).partitions[0]!.leaderEpoch

      // Watch what the client believes, every 20 ms, from the kill until node 1 is back in sync.
      const seen: Array<{ leader: number; epoch: number } | string> = []
      let watching = true
      const watcher = (async () => {
        while (watching) {
          try {
            const p = (await client.topic(TOPIC, { refresh: true })).partitions[0]!
            seen.push({ leader: p.leader, epoch: p.leaderEpoch })
          } catch (e) {
            seen.push(e instanceof KafkaError ? e.errorName : 'connection')
          }
          await sleep(20)
        }
      })()

      const node = c.node(1)
      await node.process.kill()
      const restarted = node.process.start(60_000)
      let attempts = 0
      await client.retrying(async () => {
        attempts++
        await produceOnce(client, `after-${round}`)
      })
      await restarted
      await waitFor(
        'node 1 back in the ISR',
        async () => ((await client.topic(TOPIC)).partitions[0]!.isr.includes(1) ? true : undefined),
        60_000,
      )
      watching = false
      await watcher

      const epochs = seen.filter((s) => typeof s !== 'string').map((s) => s.epoch)
      const backwards = epochs.findIndex((e, i) => i > 0 && e < epochs[i - 1]!)
      assert.equal(
        backwards,
        -1,
        `round ${round}: the leader epoch went back (from ${epochBefore}): ${JSON.stringify(seen)}`,
      )
      assert.ok(
        !seen.includes('UNKNOWN_TOPIC_OR_PARTITION'),
        `round ${round}: the topic vanished: ${JSON.stringify(seen)}`,
      )
      assert.ok(epochs.at(-1)! > epochBefore, `round ${round}: ${JSON.stringify(seen)}`)
      assert.ok(attempts >= 1)
    }
  } catch (e) {
    console.error(c.outputTail())
    throw e
  } finally {
    client.close()
  }
})

test('a hung broker, the first the client knows: refreshes go on through the others, without going back to it', {
  timeout: 120_000,
}, async () => {
  const c = await WeirCluster.start({ nodes: 3, prefix: 'weir-client-hung-' })
  clusters.push(c)
  const connects = new Map<number, number>()
  const counting: Transport = {
    connect(address, options) {
      connects.set(address.port, (connects.get(address.port) ?? 0) + 1)
      return nodeTransport.connect(address, options)
    },
  }
  const client = new ClusterClient({
    bootstrap: c.nodes.map((n) => n.address),
    clientId: 'client-hung-test',
    clock: systemClock,
    transport: counting,
    requestTimeoutMs: 1000,
  })
  const hung = c.node(1)
  try {
    await client.refresh({ all: true })
    assert.ok(hung.process.signal('SIGSTOP'))
    const failures: string[] = []
    for (let i = 0; i < 8; i++)
      await client.refresh({ all: true }).catch((e: unknown) => failures.push(String(e)))
    assert.deepEqual(failures, [], 'a refresh failed while two brokers were up')
    // The pooled connection found node 1 hung once; no new connection went to it after that.
    assert.equal(connects.get(hung.port), 1, JSON.stringify([...connects]))
  } finally {
    hung.process.signal('SIGCONT')
    client.close()
  }
})
