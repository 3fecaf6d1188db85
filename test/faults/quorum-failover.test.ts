/**
 * Three real Weir processes (broker and controller each) on loopback: kill -9 the quorum leader;
 * the survivors elect a new one that commits within seconds; the killed node restarts, rejoins as a
 * follower, and has every committed change. Default raft timeouts (1 s election, 2 s fetch).
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { TopicName } from '../../src/model/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'

const dir = tempDir('weir-failover-')
const processes: WeirProcess[] = []
after(async () => {
  for (const p of processes) await p.kill()
  dir.remove()
})

const connectionOptions = {
  clientId: 'failover-test',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 10_000,
  inFlightRequestsMax: 4,
  responseBytesMax: 1 << 24,
  connectTimeoutMs: 2_000,
}

async function call<T>(port: number, fn: (c: KafkaConnection) => Promise<T>): Promise<T> {
  const c = await KafkaConnection.open({ host: '127.0.0.1', port }, connectionOptions)
  try {
    return await fn(c)
  } finally {
    c.close()
  }
}

async function quorumLeader(
  port: number,
): Promise<{ leaderId: number; epoch: number; hw: bigint; voters: Map<number, bigint> }> {
  const res = await call(port, (c) =>
    c.request(apis.DescribeQuorum, 1, {
      topics: [{ topicName: '__cluster_metadata' as TopicName, partitions: [{ partitionIndex: 0 }] }],
    }),
  )
  const p = res.topics[0]?.partitions[0]
  if (p === undefined || p.errorCode !== 0)
    throw new Error(`DescribeQuorum error ${res.errorCode}/${p?.errorCode}`)
  return {
    leaderId: p.leaderId,
    epoch: p.leaderEpoch,
    hw: p.highWatermark,
    voters: new Map(p.currentVoters.map((v) => [v.replicaId as number, v.logEndOffset])),
  }
}

async function createTopic(port: number, name: string): Promise<number> {
  const res = await call(port, (c) =>
    c.request(apis.CreateTopics, 7, {
      topics: [{ name: name as TopicName, numPartitions: 1, replicationFactor: 1 }],
      timeoutMs: 10_000,
    }),
  )
  return res.topics[0]?.errorCode ?? -1
}

async function topicNames(port: number): Promise<string[]> {
  const res = await call(port, (c) => c.request(apis.Metadata, 12, { topics: null }))
  return res.topics.map((t) => t.name ?? '').sort()
}

test('kill -9 the quorum leader: a new leader commits, the old one rejoins with everything', {
  timeout: 180_000,
}, async () => {
  const ports = await freePorts(6)
  const brokerPort = (i: number) => ports[i * 2]!
  const controllerPort = (i: number) => ports[i * 2 + 1]!
  const voters = [0, 1, 2].map((i) => `${i + 1}@127.0.0.1:${controllerPort(i)}`).join(',')
  for (const i of [0, 1, 2]) {
    const config = writeProperties(dir.path, `node-${i + 1}.properties`, {
      'node.id': i + 1,
      'process.roles': 'broker,controller',
      listeners: `PLAINTEXT://127.0.0.1:${brokerPort(i)},CONTROLLER://127.0.0.1:${controllerPort(i)}`,
      'controller.listener.names': 'CONTROLLER',
      'controller.quorum.voters': voters,
      'log.dirs': `${dir.path}/node-${i + 1}`,
      'cluster.id': 'failoverTestClusterId0',
    })
    processes.push(new WeirProcess(['--config', config]))
  }
  await Promise.all(processes.map((p) => p.start()))

  const first = await waitFor('a quorum leader', () => quorumLeader(brokerPort(0)))
  const before = ['before-0', 'before-1', 'before-2']
  for (const t of before) assert.equal(await createTopic(brokerPort(0), t), 0)

  const leaderIndex = first.leaderId - 1
  const survivor = [0, 1, 2].find((i) => i !== leaderIndex)!
  const killedAt = performance.now()
  await processes[leaderIndex]!.kill()

  const second = await waitFor('a new quorum leader', async () => {
    const q = await quorumLeader(brokerPort(survivor))
    return q.leaderId !== first.leaderId && q.epoch > first.epoch ? q : undefined
  })
  await waitFor('a commit under the new leader', async () =>
    (await createTopic(brokerPort(survivor), 'after-0')) === 0 ? true : undefined,
  )
  const failoverMs = performance.now() - killedAt
  console.log(
    `failover: leader ${first.leaderId} killed; leader ${second.leaderId} in epoch ${second.epoch} committed after ${Math.round(failoverMs)} ms`,
  )

  // The killed node restarts from its files, follows, and sees every committed topic.
  await processes[leaderIndex]!.start()
  const all = [...before, 'after-0'].sort()
  await waitFor('the restarted node to see every topic', async () => {
    const names = await topicNames(brokerPort(leaderIndex))
    return all.every((t) => names.includes(t)) ? names : undefined
  })
  const q = await waitFor('the restarted voter to catch up', async () => {
    const d = await quorumLeader(brokerPort(survivor))
    return d.voters.get(first.leaderId) === d.hw ? d : undefined
  })
  assert.notEqual(q.leaderId, first.leaderId, 'the restarted node rejoined as a follower')
  assert.equal(
    await createTopic(brokerPort(leaderIndex), 'before-0'),
    36,
    'TOPIC_ALREADY_EXISTS: the old commit survived',
  )

  for (const p of processes) assert.equal(await p.stop(), 0)
})
