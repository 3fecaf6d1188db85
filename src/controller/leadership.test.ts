import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ManualClock, SeededRandom } from '../io/index.ts'
import {
  type CommittedEntry,
  ConfigResourceType,
  EMPTY_IMAGE,
  type MetadataImage,
  MetadataLoader,
} from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import { ErrorCode, encodeMetadataRecord, metadataRecordTypes as T } from '../protocol/index.ts'
import type { RaftStatus } from '../quorum/index.ts'
import {
  EXCESSIVE_BATCH_MESSAGE,
  type PendingRecord,
  PolicyViolationError,
  pendingRecord,
  RECORDS_PER_BATCH_MAX,
} from './decision.ts'
import { rebalancePreferredLeaders, uncleanElections } from './leadership.ts'
import { QuorumController, type QuorumControllerOptions } from './quorum-controller.ts'
import { commit } from './testing.ts'

const b = (n: number) => n as BrokerId
const topicId = Buffer.alloc(16, 5).toString('base64url') as Uuid
const t = 'l' as TopicName
const node = { nodeId: 1, staticBroker: new Map<string, string>() }

/** Brokers 1-3 registered (live per `fenced`); partitions as given. */
function clusterRecords(
  partitions: Array<{ replicas: number[]; isr: number[]; leader: number }>,
  fenced: number[] = [],
): PendingRecord[] {
  const records: PendingRecord[] = []
  for (const id of [1, 2, 3]) {
    records.push(
      pendingRecord(T.RegisterBroker, 0, {
        brokerId: b(id),
        brokerEpoch: BigInt(id),
        incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
        fenced: fenced.includes(id),
      }),
    )
  }
  records.push(pendingRecord(T.Topic, 0, { name: t, topicId }))
  for (const [i, p] of partitions.entries()) {
    records.push(
      pendingRecord(T.Partition, 0, {
        topicId,
        partitionId: i,
        replicas: p.replicas.map(b),
        isr: p.isr,
        leader: b(p.leader),
        leaderEpoch: 0,
        partitionEpoch: 0,
      }),
    )
  }
  return records
}

const uncleanConfig = (resourceType: number, resourceName: string, value: string) =>
  pendingRecord(T.Config, 0, { resourceType, resourceName, name: 'unclean.leader.election.enable', value })

const part = (image: MetadataImage, p: number) => image.topicsById.get(topicId)!.partitions.get(p)!

test('a leaderless partition whose ISR is dead stays leaderless unless unclean election is enabled', () => {
  // l-0: replicas [1,2], ISR [1] (dead), 2 alive outside the ISR.
  const base = commit(EMPTY_IMAGE, clusterRecords([{ replicas: [1, 2], isr: [1], leader: -1 }], [1]))
  assert.deepEqual(uncleanElections(base, node), [], 'unclean.leader.election.enable defaults to false')
  for (const enabled of [
    uncleanConfig(ConfigResourceType.Topic, t, 'true'),
    uncleanConfig(ConfigResourceType.Broker, '', 'true'),
  ]) {
    const image = commit(base, [enabled])
    const p = part(commit(image, uncleanElections(image, node)), 0)
    assert.equal(p.leader, 2)
    assert.deepEqual(p.isr, [2])
    assert.equal(p.leaderRecoveryState, 1, 'RECOVERING after an unclean election')
  }
  // The topic's own config wins over the broker's.
  const topicOff = commit(base, [
    uncleanConfig(ConfigResourceType.Broker, '', 'true'),
    uncleanConfig(ConfigResourceType.Topic, t, 'false'),
  ])
  assert.deepEqual(uncleanElections(topicOff, node), [])
  // The static broker config counts too.
  assert.equal(
    uncleanElections(base, { nodeId: 1, staticBroker: new Map([['unclean.leader.election.enable', 'true']]) })
      .length,
    1,
  )
})

test('a live ISR member is elected cleanly even when unclean election is enabled', () => {
  const image = commit(
    EMPTY_IMAGE,
    clusterRecords([{ replicas: [1, 2, 3], isr: [1, 3], leader: -1 }], [1]).concat(
      uncleanConfig(ConfigResourceType.Topic, t, 'true'),
    ),
  )
  const p = part(commit(image, uncleanElections(image, node)), 0)
  assert.equal(p.leader, 3)
  assert.deepEqual(p.isr, [1, 3])
  assert.equal(p.leaderRecoveryState, 0)
})

test('the preferred-leader rebalance moves leadership back above the imbalance percentage', () => {
  // Broker 1 prefers l-0 and l-1 but leads neither; 2 is preferred for l-2 and leads it.
  const image = commit(
    EMPTY_IMAGE,
    clusterRecords([
      { replicas: [1, 2], isr: [1, 2], leader: 2 },
      { replicas: [1, 3], isr: [3], leader: 3 },
      { replicas: [2, 1], isr: [1, 2], leader: 2 },
    ]),
  )
  const after = commit(image, rebalancePreferredLeaders(image, 10))
  assert.equal(part(after, 0).leader, 1)
  assert.equal(part(after, 1).leader, 3, 'the preferred replica is not in the ISR: no move')
  assert.equal(part(after, 2).leader, 2)
  // Imbalance 2/2 = 100 %: a percentage of 100 tolerates it.
  assert.deepEqual(rebalancePreferredLeaders(image, 100), [])
  // A fenced preferred replica is not elected.
  const fenced = commit(EMPTY_IMAGE, clusterRecords([{ replicas: [1, 2], isr: [1, 2], leader: 2 }], [1]))
  assert.deepEqual(rebalancePreferredLeaders(fenced, 10), [])
})

/**
 * A one-voter quorum in memory: every proposal commits when `flush` is called. It refuses a
 * proposal larger than the raft core takes (RECORDS_PER_BATCH_MAX is its `proposeEntriesMax`) and
 * records the size of each, so tests see how the controller batches.
 */
class MemoryQuorum {
  readonly loader = new MetadataLoader()
  /** The record count of every proposal, in order. */
  readonly proposals: number[] = []
  #next = 0n
  #pending: CommittedEntry[] = []
  /** Commits `records` as the log before the controller's epoch, after its leader change. */
  preload(records: readonly PendingRecord[]): void {
    this.loader.applyCommitted([
      { kind: 'leaderChange', offset: this.#next++, epoch: 1, leaderId: b(1) },
      ...records.map((r) => ({
        kind: 'data' as const,
        offset: this.#next++,
        epoch: 1,
        data: encodeMetadataRecord(r.type, r.version, r.data),
      })),
    ])
  }
  propose(data: readonly Uint8Array[]) {
    assert.ok(data.length > 0 && data.length <= RECORDS_PER_BATCH_MAX, `a proposal of ${data.length} records`)
    this.proposals.push(data.length)
    const baseOffset = this.#next
    for (const d of data) this.#pending.push({ kind: 'data', offset: this.#next++, epoch: 1, data: d })
    return { kind: 'appended' as const, epoch: 1, baseOffset, lastOffset: this.#next - 1n }
  }
  status(): RaftStatus {
    return {
      nodeId: 1,
      isVoter: true,
      role: 'leader',
      epoch: 1,
      leaderId: 1,
      votedId: 1,
      highWatermark: this.#next,
      logStartOffset: 0n,
      logEndOffset: this.#next,
      lastEpoch: 1,
      appliedOffset: this.#next,
    } as RaftStatus
  }
  /** Commits what was proposed, repeatedly, until the controller proposes nothing more. */
  async flush(): Promise<void> {
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r))
      if (this.#pending.length === 0) return
      this.loader.applyCommitted(this.#pending.splice(0))
    }
  }
}

async function activeController(records: PendingRecord[], options: Partial<QuorumControllerOptions> = {}) {
  const quorum = new MemoryQuorum()
  const clock = new ManualClock()
  const controller = new QuorumController({
    quorum,
    clock,
    random: new SeededRandom(1),
    clusterId: 'c',
    settings: { defaultNumPartitions: 1, defaultReplicationFactor: 1, deleteTopicEnable: true },
    brokerSessionTimeoutMs: 1_000_000_000,
    validateTopicConfigs: () => null,
    configs: node,
    bootstrapFeatures: new Map(),
    ...options,
  })
  quorum.loader.subscribe((p) => controller.onPublish(p))
  quorum.preload(records)
  assert.ok(controller.isActive)
  return { quorum, clock, controller }
}

test('controller: a lapsed broker session is fenced when it expires, not at the next 1 s poll', async () => {
  // Every failover of a killed broker waits for this: a check that polled each second added up to
  // a second to it (the controller now checks at the earliest expiry, as Kafka's does).
  const { quorum, clock } = await activeController(
    clusterRecords([{ replicas: [1, 2, 3], isr: [1, 2, 3], leader: 2 }]),
    { brokerSessionTimeoutMs: 1500 },
  )
  await quorum.flush()
  clock.advance(1499)
  await quorum.flush()
  assert.equal(quorum.loader.image.brokers.get(b(2))?.fenced, false, 'within its session')
  clock.advance(2)
  await quorum.flush()
  assert.equal(quorum.loader.image.brokers.get(b(2))?.fenced, true, 'fenced 1 ms after the session')
  assert.notEqual(part(quorum.loader.image, 0).leader, 2, 'its leadership moved')
})

test('controller: enabling unclean election on the topic (IncrementalAlterConfigs) elects at once', async () => {
  const { quorum, controller } = await activeController(
    clusterRecords([{ replicas: [1, 2], isr: [1], leader: -1 }], [1]),
  )
  await quorum.flush()
  assert.equal(part(quorum.loader.image, 0).leader, -1)
  const done = controller.incrementalAlterConfigs({
    resources: [
      {
        resourceType: ConfigResourceType.Topic,
        resourceName: t,
        configs: [{ name: 'unclean.leader.election.enable', configOperation: 0, value: 'true' }],
      },
    ],
    validateOnly: false,
  })
  await quorum.flush()
  const res = await done
  assert.equal(res.responses?.[0]?.errorCode, ErrorCode.None)
  await quorum.flush()
  const p = part(quorum.loader.image, 0)
  assert.equal(p.leader, 2)
  assert.deepEqual(p.isr, [2])
  assert.equal(p.leaderRecoveryState, 1)
  controller.close()
})

test('controller: a reassignment completes once its adding replica joins the ISR', async () => {
  const { quorum, controller } = await activeController(
    clusterRecords([{ replicas: [1, 2], isr: [1, 2], leader: 1 }]),
  )
  const done = controller.alterPartitionReassignments({
    timeoutMs: 1000,
    topics: [{ name: t, partitions: [{ partitionIndex: 0, replicas: [b(2), b(3)] }] }],
  })
  await quorum.flush()
  assert.equal((await done).responses?.[0]?.partitions?.[0]?.errorCode, ErrorCode.None)
  assert.deepEqual(part(quorum.loader.image, 0).addingReplicas, [3])
  const listed = controller.listPartitionReassignments({ timeoutMs: 1000, topics: null })
  await quorum.flush()
  assert.equal((await listed).topics?.length, 1)
  // The follower on 3 caught up: the leader's AlterPartition puts it in the ISR.
  const before = part(quorum.loader.image, 0)
  const altered = controller.alterPartition(
    {
      brokerId: b(1),
      brokerEpoch: 1n,
      topics: [
        {
          topicId,
          partitions: [
            {
              partitionIndex: 0,
              leaderEpoch: before.leaderEpoch,
              newIsr: [],
              newIsrWithEpochs: [1, 2, 3].map((id) => ({ brokerId: b(id), brokerEpoch: BigInt(id) })),
              leaderRecoveryState: 0,
              partitionEpoch: before.partitionEpoch,
            },
          ],
        },
      ],
    },
    3,
  )
  await quorum.flush()
  assert.equal((await altered).topics?.[0]?.partitions?.[0]?.errorCode, ErrorCode.None)
  await quorum.flush()
  const p = part(quorum.loader.image, 0)
  assert.deepEqual(p.replicas, [2, 3])
  assert.deepEqual(p.isr, [2, 3])
  assert.equal(p.leader, 2)
  assert.deepEqual(p.addingReplicas, [])
  assert.deepEqual(p.removingReplicas, [])
  controller.close()
})

test('controller: the preferred-leader rebalance runs every leader.imbalance.check.interval on its Clock', async () => {
  const { quorum, clock, controller } = await activeController(
    clusterRecords([{ replicas: [1, 2], isr: [1, 2], leader: 2 }]),
    { leaderBalance: { enabled: true, intervalMs: 300_000, percentage: 10 } },
  )
  await quorum.flush()
  clock.advance(299_999)
  await quorum.flush()
  assert.equal(part(quorum.loader.image, 0).leader, 2)
  clock.advance(1)
  await quorum.flush()
  assert.equal(part(quorum.loader.image, 0).leader, 1)
  controller.close()
})

test('controller: with auto.leader.rebalance.enable false nothing moves', async () => {
  const { quorum, clock, controller } = await activeController(
    clusterRecords([{ replicas: [1, 2], isr: [1, 2], leader: 2 }]),
    { leaderBalance: { enabled: false, intervalMs: 1000, percentage: 10 } },
  )
  clock.advance(10_000)
  await quorum.flush()
  assert.equal(part(quorum.loader.image, 0).leader, 2)
  controller.close()
})

const bigTopicId = Buffer.alloc(16, 7).toString('base64url') as Uuid
/** More partitions than two batches hold: what one broker of a large cluster leads. */
const PARTITIONS = 25_000

/** Brokers 1-3, live; one topic whose PARTITIONS partitions are on [1, 2] and led by 1. */
function bigCluster(): PendingRecord[] {
  const records: PendingRecord[] = []
  for (const id of [1, 2, 3]) {
    records.push(
      pendingRecord(T.RegisterBroker, 0, {
        brokerId: b(id),
        brokerEpoch: BigInt(id),
        incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
        fenced: false,
      }),
    )
  }
  records.push(pendingRecord(T.Topic, 0, { name: 'big' as TopicName, topicId: bigTopicId }))
  for (let i = 0; i < PARTITIONS; i++) {
    records.push(
      pendingRecord(T.Partition, 0, {
        topicId: bigTopicId,
        partitionId: i,
        replicas: [b(1), b(2)],
        isr: [1, 2],
        leader: b(1),
        leaderEpoch: 0,
        partitionEpoch: 0,
      }),
    )
  }
  return records
}

function assertAllLedBy2(image: MetadataImage): void {
  const partitions = image.topicsById.get(bigTopicId)!.partitions
  assert.equal(partitions.size, PARTITIONS)
  for (const [i, p] of partitions) {
    assert.equal(p.leader, 2, `partition ${i} leader`)
    assert.deepEqual(p.isr, [2], `partition ${i} ISR`)
  }
}

test('controller: a controlled shutdown of a broker leading more partitions than a batch holds is proposed in batches', async () => {
  const { quorum, controller } = await activeController(bigCluster())
  const answer = controller.brokerHeartbeat({
    brokerId: b(1),
    brokerEpoch: 1n,
    currentMetadataOffset: 1_000_000n,
    wantFence: false,
    wantShutDown: true,
    offlineLogDirs: [],
  })
  await quorum.flush()
  const res = await answer
  assert.equal(res.errorCode, ErrorCode.None)
  assert.equal(res.isFenced, true)
  // In-controlled-shutdown, a move per partition, the fence: 25,002 records in three proposals.
  assert.deepEqual(quorum.proposals, [
    RECORDS_PER_BATCH_MAX,
    RECORDS_PER_BATCH_MAX,
    PARTITIONS + 2 - 2 * RECORDS_PER_BATCH_MAX,
  ])
  const image = quorum.loader.image
  assertAllLedBy2(image)
  assert.equal(image.brokers.get(b(1))?.fenced, true)
  assert.equal(image.brokers.get(b(1))?.inControlledShutdown, true)
  controller.close()
})

test('controller: fencing a lapsed broker that leads more partitions than a batch holds moves every leadership', async () => {
  const { quorum, clock, controller } = await activeController(bigCluster(), { brokerSessionTimeoutMs: 1000 })
  clock.advance(600)
  for (const id of [2, 3]) {
    const beat = controller.brokerHeartbeat({
      brokerId: b(id),
      brokerEpoch: BigInt(id),
      currentMetadataOffset: 1_000_000n,
      wantFence: false,
      wantShutDown: false,
      offlineLogDirs: [],
    })
    await quorum.flush()
    assert.equal((await beat).errorCode, ErrorCode.None)
  }
  clock.advance(500) // broker 1's session (last renewed at activation) lapsed; 2's and 3's did not
  await quorum.flush()
  const image = quorum.loader.image
  assert.equal(image.brokers.get(b(1))?.fenced, true)
  assert.equal(image.brokers.get(b(2))?.fenced, false)
  assertAllLedBy2(image)
  assert.ok(quorum.proposals.length >= 3)
  assert.ok(quorum.proposals.every((n) => n <= RECORDS_PER_BATCH_MAX))
  controller.close()
})

test('controller: a request needing more records than one atomic batch is refused as Kafka refuses it, and nothing is written', async () => {
  const { quorum, controller } = await activeController(bigCluster())
  const create = (name: TopicName, numPartitions: number) =>
    controller.createTopics({
      topics: [{ name, numPartitions, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    })
  // A TopicRecord and 10,000 PartitionRecords: one record too many.
  const refused = create('too-big' as TopicName, RECORDS_PER_BATCH_MAX)
  await quorum.flush()
  await assert.rejects(refused, (e: unknown) => {
    assert.ok(e instanceof PolicyViolationError)
    assert.equal(e.message, EXCESSIVE_BATCH_MESSAGE)
    return true
  })
  assert.deepEqual(quorum.proposals, [])
  assert.equal(quorum.loader.image.topicsByName.has('too-big' as TopicName), false)
  // More than 10,000 partitions in one request is refused before anything else is checked.
  const many = controller.createTopics({
    topics: [
      { name: 'a' as TopicName, numPartitions: 6000, replicationFactor: 1, assignments: [], configs: [] },
      { name: 'b' as TopicName, numPartitions: 6000, replicationFactor: 1, assignments: [], configs: [] },
    ],
    timeoutMs: 30_000,
    validateOnly: true,
  })
  await assert.rejects(many, {
    name: 'PolicyViolationError',
    message: 'Excessively large number of partitions per request.',
  })
  // Exactly one batch's worth is one atomic batch.
  const created = create('fits' as TopicName, RECORDS_PER_BATCH_MAX - 1)
  await quorum.flush()
  assert.equal((await created).topics?.[0]?.errorCode, ErrorCode.None)
  assert.deepEqual(quorum.proposals, [RECORDS_PER_BATCH_MAX])
  assert.equal(
    quorum.loader.image.topicsByName.get('fits' as TopicName)?.partitions.size,
    RECORDS_PER_BATCH_MAX - 1,
  )
  controller.close()
})
