/**
 * What a broker tells clients never runs ahead of what it serves: the moment Metadata names a broker
 * the leader of a partition (a topic just created, or a leader just elected after a kill), every
 * API that names that partition is answered by it as the leader, never NOT_LEADER_OR_FOLLOWER or
 * UNKNOWN_TOPIC_OR_PARTITION. Real nodes in this process (`startCluster`), real sockets, raw
 * requests sent as soon as Metadata shows the leader.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { KafkaConnection } from '../../src/client/index.ts'
import { type EmbeddedCluster, startCluster } from '../../src/index.ts'
import type { BrokerId, GroupId, TopicName } from '../../src/model/index.ts'
import { apis, ErrorCode, errorInfo } from '../../src/protocol/index.ts'
import { encodeBatch } from '../../src/protocol/records/index.ts'
import { openConnection } from '../support/connection.ts'

const PARTITIONS = 4

function name(code: number): string {
  return errorInfo(code)?.name ?? String(code)
}

function batch(value: string): Buffer {
  return encodeBatch({ records: [{ value: Buffer.from(value), timestamp: BigInt(Date.now()) }] })
}

/** The leader Metadata names for each partition of `topic` on `conn` (-1 where none yet). */
async function leaders(
  conn: KafkaConnection,
  topic: string,
): Promise<Map<number, { leader: number; epoch: number }>> {
  const res = await conn.request(apis.Metadata, 12, {
    topics: [{ name: topic as TopicName }],
    allowAutoTopicCreation: false,
  })
  const out = new Map<number, { leader: number; epoch: number }>()
  const t = res.topics[0]
  if (t === undefined || t.errorCode !== ErrorCode.None) return out
  for (const p of t.partitions) out.set(p.partitionIndex, { leader: p.leaderId, epoch: p.leaderEpoch })
  return out
}

/**
 * Every partition API once, to `conn` (one connection per API, so they are all in flight at once),
 * for partitions `indexes` of `topic`: each answer's error names, by API.
 */
async function everyPartitionApi(
  conns: readonly KafkaConnection[],
  topic: string,
  indexes: readonly number[],
  epochs: ReadonlyMap<number, number>,
): Promise<Record<string, string[]>> {
  const name_ = topic as TopicName
  const [c0, c1, c2, c3, c4, c5] = conns as [
    KafkaConnection,
    KafkaConnection,
    KafkaConnection,
    KafkaConnection,
    KafkaConnection,
    KafkaConnection,
  ]
  const epoch = (i: number) => epochs.get(i) ?? -1
  const [produce, fetch, listOffsets, offsetForLeaderEpoch, deleteRecords, describeProducers] =
    await Promise.all([
      c0.request(apis.Produce, 9, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 10_000,
        topicData: [
          { name: name_, partitionData: indexes.map((index) => ({ index, records: batch(`r${index}`) })) },
        ],
      }),
      c1.request(apis.Fetch, 4, {
        replicaId: -1 as BrokerId,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        topics: [
          {
            topic: name_,
            partitions: indexes.map((partition) => ({
              partition,
              fetchOffset: 0n,
              partitionMaxBytes: 1 << 20,
            })),
          },
        ],
      }),
      c2.request(apis.ListOffsets, 7, {
        replicaId: -1 as BrokerId,
        topics: [
          {
            name: name_,
            partitions: indexes.map((partitionIndex) => ({
              partitionIndex,
              currentLeaderEpoch: epoch(partitionIndex),
              timestamp: -1n,
            })),
          },
        ],
      }),
      c3.request(apis.OffsetForLeaderEpoch, 4, {
        replicaId: -1 as BrokerId,
        topics: [
          {
            topic: name_,
            partitions: indexes.map((partition) => ({
              partition,
              currentLeaderEpoch: epoch(partition),
              leaderEpoch: Math.max(0, epoch(partition)),
            })),
          },
        ],
      }),
      c4.request(apis.DeleteRecords, 2, {
        topics: [
          { name: name_, partitions: indexes.map((partitionIndex) => ({ partitionIndex, offset: 0n })) },
        ],
        timeoutMs: 10_000,
      }),
      c5.request(apis.DescribeProducers, 0, { topics: [{ name: name_, partitionIndexes: [...indexes] }] }),
    ])
  return {
    Produce: produce.responses.flatMap((t) => t.partitionResponses.map((p) => name(p.errorCode))),
    Fetch: fetch.responses.flatMap((t) => t.partitions.map((p) => name(p.errorCode))),
    ListOffsets: listOffsets.topics.flatMap((t) => t.partitions.map((p) => name(p.errorCode))),
    OffsetForLeaderEpoch: offsetForLeaderEpoch.topics.flatMap((t) =>
      t.partitions.map((p) => name(p.errorCode)),
    ),
    DeleteRecords: deleteRecords.topics.flatMap((t) => t.partitions.map((p) => name(p.errorCode))),
    DescribeProducers: describeProducers.topics.flatMap((t) => t.partitions.map((p) => name(p.errorCode))),
  }
}

function assertAllNone(answers: Record<string, string[]>, what: string, count: number): void {
  for (const [api, errors] of Object.entries(answers)) {
    assert.equal(errors.length, count, `${what}: ${api} answered every partition`)
    assert.deepEqual(
      errors.filter((e) => e !== 'NONE'),
      [],
      `${what}: ${api} answered as the leader: ${errors.join(',')}`,
    )
  }
}

async function connections(cluster: EmbeddedCluster, node: number, n: number): Promise<KafkaConnection[]> {
  const { host, port } = cluster.nodes[node]!
  return Promise.all(Array.from({ length: n }, (_, i) => openConnection({ host, port }, `serving-${i}`)))
}

/** Creates `topic` with PARTITIONS partitions, partition `i` on replicas `replicasOf(i)` (the first leads). */
async function createTopic(
  conn: KafkaConnection,
  topic: string,
  replicasOf: (i: number) => number[],
): Promise<void> {
  const created = await conn.request(apis.CreateTopics, 5, {
    topics: [
      {
        name: topic as TopicName,
        numPartitions: -1,
        replicationFactor: -1,
        assignments: Array.from({ length: PARTITIONS }, (_, partitionIndex) => ({
          partitionIndex,
          brokerIds: replicasOf(partitionIndex) as BrokerId[],
        })),
        configs: [],
      },
    ],
    timeoutMs: 10_000,
    validateOnly: false,
  })
  assert.equal(created.topics[0]?.errorCode, ErrorCode.None, `created ${topic}`)
}

/**
 * Creates `topic` with partition `i` led by `replicasOf(i)[0]` and sends every partition API to each
 * leader the moment Metadata (asked of that leader) names it.
 */
async function createAndHitAtOnce(
  cluster: EmbeddedCluster,
  topic: string,
  replicasOf: (i: number) => number[],
): Promise<void> {
  const admin = await connections(cluster, 0, 1)
  const byLeader = new Map<number, KafkaConnection[]>()
  for (let i = 0; i < PARTITIONS; i++) {
    const leader = replicasOf(i)[0]!
    if (!byLeader.has(leader)) byLeader.set(leader, await connections(cluster, leader - 1, 7))
  }
  try {
    await createTopic(admin[0]!, topic, replicasOf)
    await Promise.all(
      [...byLeader].map(async ([leader, conns]) => {
        const mine = Array.from({ length: PARTITIONS }, (_, i) => i).filter(
          (i) => replicasOf(i)[0] === leader,
        )
        // Metadata from the leader itself, polled without a pause until it names the leader.
        let seen = new Map<number, { leader: number; epoch: number }>()
        const by = performance.now() + 10_000
        while (!mine.every((i) => seen.get(i)?.leader === leader)) {
          assert.ok(
            performance.now() < by,
            `node ${leader} names itself leader of ${topic} ${mine.join(',')}`,
          )
          seen = await leaders(conns[6]!, topic)
        }
        const epochs = new Map(mine.map((i) => [i, seen.get(i)!.epoch]))
        assertAllNone(
          await everyPartitionApi(conns, topic, mine, epochs),
          `${topic} on node ${leader}`,
          mine.length,
        )
      }),
    )
  } finally {
    for (const c of [...admin, ...[...byLeader.values()].flat()]) c.close()
  }
}

/**
 * The first FindCoordinators of the cluster (they create `__consumer_offsets`), then at once an
 * OffsetCommit of `topic`-0 and an OffsetFetch to the coordinator it names: both answered by it.
 */
async function groupApisAtOnce(cluster: EmbeddedCluster, topic: string): Promise<void> {
  const all = await Promise.all(cluster.nodes.map((_, i) => connections(cluster, i, 1)))
  try {
    for (let round = 0; round < 3; round++) {
      const groupId = `fresh-group-${round}` as GroupId
      // The first one may answer COORDINATOR_NOT_AVAILABLE while the topic is created (Kafka too):
      // asked again at once, as a client does after its backoff.
      let at: { errorCode: number; nodeId: number } = { errorCode: -1, nodeId: -1 }
      const by = performance.now() + 10_000
      while (at.errorCode !== ErrorCode.None) {
        assert.ok(performance.now() < by, `FindCoordinator ${groupId}: ${name(at.errorCode)}`)
        const found = await all[0]![0]!.request(apis.FindCoordinator, 4, {
          keyType: 0,
          coordinatorKeys: [groupId],
        })
        at = found.coordinators[0]!
        if (at.errorCode !== ErrorCode.None) assert.equal(at.errorCode, ErrorCode.CoordinatorNotAvailable)
      }
      const c = all[at.nodeId - 1]![0]!
      // The node named may not have applied the records node 1 answered from (metadata reaches
      // brokers one by one, in Kafka too): once its own image names it, it must answer at once,
      // loaded or not.
      for (;;) {
        assert.ok(performance.now() < by, `FindCoordinator ${groupId} on node ${at.nodeId}`)
        const own = await c.request(apis.FindCoordinator, 4, { keyType: 0, coordinatorKeys: [groupId] })
        const mine = own.coordinators[0]!
        if (mine.errorCode === ErrorCode.None && mine.nodeId === at.nodeId) break
      }
      const commit = await c.request(apis.OffsetCommit, 8, {
        groupId,
        generationIdOrMemberEpoch: -1,
        memberId: '',
        groupInstanceId: null,
        topics: [
          {
            name: topic as TopicName,
            partitions: [{ partitionIndex: 0, committedOffset: 1n, committedMetadata: null }],
          },
        ],
      })
      assert.deepEqual(
        commit.topics.flatMap((t) => t.partitions.map((p) => name(p.errorCode))),
        ['NONE'],
        `OffsetCommit ${groupId} on node ${at.nodeId}`,
      )
      const fetched = await c.request(apis.OffsetFetch, 8, {
        groups: [{ groupId, topics: [{ name: topic as TopicName, partitionIndexes: [0] }] }],
        requireStable: false,
      })
      const g = fetched.groups[0]!
      assert.equal(name(g.errorCode), 'NONE', `OffsetFetch ${groupId}`)
      assert.equal(g.topics[0]?.partitions[0]?.committedOffset, 1n, `OffsetFetch ${groupId} reads the commit`)
    }
  } finally {
    for (const c of all.flat()) c.close()
  }
}

describe('one node', () => {
  let cluster: EmbeddedCluster | null = null
  after(async () => {
    await cluster?.stop()
  })

  test('every partition API answers a topic the moment Metadata shows it', async () => {
    cluster = await startCluster({ nodes: 1 })
    for (let round = 0; round < 5; round++) {
      await createAndHitAtOnce(cluster, `fresh-${round}`, () => [1])
    }
  })

  test('the group and offset APIs answer on a new __consumer_offsets', async () => {
    await groupApisAtOnce(cluster!, 'fresh-0')
  })
})

describe('three nodes', () => {
  let cluster: EmbeddedCluster | null = null
  after(async () => {
    await cluster?.stop()
  })

  test('every partition API answers a topic the moment its leader shows it, on each leader', async () => {
    cluster = await startCluster({ nodes: 3 })
    const c = cluster
    for (let round = 0; round < 3; round++) {
      await createAndHitAtOnce(c, `fresh3-${round}`, (i) => [
        ((i + round) % 3) + 1,
        ((i + round + 1) % 3) + 1,
        ((i + round + 2) % 3) + 1,
      ])
    }
  })

  test('the group and offset APIs answer on a new __consumer_offsets', async () => {
    await groupApisAtOnce(cluster!, 'fresh3-0')
  })

  test('after a leader is killed, the new leader takes Produce the moment Metadata names it', async () => {
    const c = cluster!
    const topic = 'failover'
    // Every partition led by node 1, followed by 2 and 3; node 1 is then killed.
    const admin = await connections(c, 1, 1)
    const survivors = new Map<number, KafkaConnection[]>([
      [2, await connections(c, 1, 7)],
      [3, await connections(c, 2, 7)],
    ])
    try {
      await createTopic(admin[0]!, topic, (i) => [1, 2 + (i % 2), 3 - (i % 2)])
      // Wait for a full ISR everywhere, so that either survivor may be elected.
      const fullIsr = performance.now() + 20_000
      for (;;) {
        const res = await survivors.get(2)![6]!.request(apis.Metadata, 12, {
          topics: [{ name: topic as TopicName }],
          allowAutoTopicCreation: false,
        })
        const ps = res.topics[0]?.partitions ?? []
        if (ps.length === PARTITIONS && ps.every((p) => p.leaderId === 1 && p.isrNodes.length === 3)) break
        assert.ok(performance.now() < fullIsr, 'a full ISR on every partition')
        await new Promise((r) => setTimeout(r, 20))
      }
      await c.kill(0)
      await Promise.all(
        [...survivors].map(async ([node, conns]) => {
          // Polled without a pause: the first Metadata naming this node the leader of some
          // partitions, then Produce and the other APIs for those partitions at once.
          const by = performance.now() + 20_000
          let mine: number[] = []
          let seen = new Map<number, { leader: number; epoch: number }>()
          while (mine.length === 0) {
            if (performance.now() > by) return // every partition went to the other survivor
            seen = await leaders(conns[6]!, topic)
            mine = [...seen].filter(([, s]) => s.leader === node).map(([i]) => i)
          }
          const epochs = new Map(mine.map((i) => [i, seen.get(i)!.epoch]))
          assertAllNone(
            await everyPartitionApi(conns, topic, mine, epochs),
            `${topic} on new leader ${node}`,
            mine.length,
          )
        }),
      )
    } finally {
      for (const x of [...admin, ...[...survivors.values()].flat()]) x.close()
    }
  })
})
