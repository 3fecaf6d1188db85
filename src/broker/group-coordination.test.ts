import assert from 'node:assert/strict'
import { test } from 'node:test'
import { resolveBrokerConfig } from '../config/index.ts'
import { GROUP_METADATA_TOPIC_NAME, partitionForGroup } from '../coordinator/index.ts'
import { ManualClock, SeededRandom } from '../io/index.ts'
import { applyRecords, EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, Uuid } from '../model/index.ts'
import {
  decodeMetadataRecord,
  ErrorCode,
  encodeMetadataRecord,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import type { ReplicaManager } from '../replication/index.ts'
import { GroupCoordination, PENDING_COORDINATOR_WAIT_MS } from './group-coordination.ts'

function record(type: unknown, data: unknown) {
  return decodeMetadataRecord(encodeMetadataRecord(type as never, 0, data as never))
}

const OFFSETS_ID = Buffer.alloc(16, 7).toString('base64url') as Uuid

/** Brokers 1 (this node) and 2 registered. */
const brokers = [1, 2].map((id) =>
  record(T.RegisterBroker, {
    brokerId: id as BrokerId,
    brokerEpoch: 1n,
    incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
    endPoints: [{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9090 + id, securityProtocol: 0 }],
    fenced: false,
  }),
)

/** Brokers 1 (this node) and 2; `__consumer_offsets` with partition 0 led by 1, partition 1 by 2. */
const image = applyRecords(EMPTY_IMAGE, [
  ...brokers,
  record(T.Topic, { name: GROUP_METADATA_TOPIC_NAME, topicId: OFFSETS_ID }),
  ...[1, 2].map((leader, partitionId) =>
    record(T.Partition, {
      topicId: OFFSETS_ID,
      partitionId,
      replicas: [leader as BrokerId],
      isr: [leader as BrokerId],
      leader: leader as BrokerId,
      leaderEpoch: 0,
      partitionEpoch: 0,
    }),
  ),
])

/** The same brokers, no `__consumer_offsets` yet. */
const imageWithout = applyRecords(EMPTY_IMAGE, brokers)

/** A group id whose `__consumer_offsets` partition (of 2) is `partition`. */
function groupOn(partition: number): string {
  for (let i = 0; ; i++) if (partitionForGroup(`g${i}`, 2) === partition) return `g${i}`
}

function coordination(options: { image: () => MetadataImage; createInternalTopic?: () => Promise<never> }) {
  const clock = new ManualClock()
  const groups = new GroupCoordination({
    effective: resolveBrokerConfig({
      staticBroker: new Map([
        ['node.id', '1'],
        ['offsets.topic.num.partitions', '2'],
        ['offsets.topic.replication.factor', '1'],
      ]),
    }),
    clock,
    random: new SeededRandom(1),
    // Empty partitions that this broker leads: loading finds nothing to replay.
    replicas: {
      getPartition: () => ({ isLeader: true, logStartOffset: 0n, highWatermark: 0n, leaderEpoch: 0 }),
      settled: async () => {},
      onReconciled: () => {},
    } as unknown as ReplicaManager,
    image: options.image,
    createInternalTopic:
      options.createInternalTopic ??
      (() => {
        throw new Error('the topic exists')
      }),
    log: () => {},
  })
  return { clock, groups }
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

test('FindCoordinator names this broker only once its coordinator was told of the partition', async () => {
  const { clock, groups } = coordination({ image: () => image })
  const here = groupOn(0)
  const there = groupOn(1)
  // The image names broker 1 for `here`, but its replica manager is still opening the partition
  // (no election yet): the answer waits for it, and after PENDING_COORDINATOR_WAIT_MS is
  // COORDINATOR_NOT_AVAILABLE (the client asks again), never NOT_COORDINATOR on its next request.
  // Broker 2 answers for its own partitions.
  const before = groups.findCoordinators(0, [here, there], 'PLAINTEXT')
  clock.advance(PENDING_COORDINATOR_WAIT_MS)
  assert.deepEqual(
    (await before).map((l) => [l.errorCode, l.nodeId]),
    [
      [ErrorCode.CoordinatorNotAvailable, -1],
      [ErrorCode.None, 2],
    ],
  )
  // Told while the request waits (the leadership sync after a publication): answered at once.
  let answered = false
  const during = groups.findCoordinators(0, [here], 'PLAINTEXT').then((l) => {
    answered = true
    return l
  })
  await settle()
  assert.equal(answered, false, 'waiting for the coordinator')
  groups.onPublish()
  await settle()
  assert.equal(answered, true, 'answered without the clock moving')
  assert.deepEqual(
    (await during).map((l) => [l.errorCode, l.nodeId, l.port]),
    [[ErrorCode.None, 1, 9091]],
  )
  groups.close()
})

test('the FindCoordinator that creates __consumer_offsets answers once this broker coordinates the group', async () => {
  let current: MetadataImage = imageWithout
  let created = 0
  const { groups } = coordination({
    image: () => current,
    createInternalTopic: async () => {
      created++
      return { throttleTimeMs: 0, topics: [{ name: GROUP_METADATA_TOPIC_NAME, errorCode: 0 }] } as never
    },
  })
  const here = groupOn(0)
  const asked = groups.findCoordinators(0, [here], 'PLAINTEXT')
  await settle()
  assert.equal(created, 1)
  // The controller committed the topic; the broker applies it a moment later.
  current = image
  groups.onPublish()
  assert.deepEqual(
    (await asked).map((l) => [l.errorCode, l.nodeId, l.port]),
    [[ErrorCode.None, 1, 9091]],
    'no COORDINATOR_NOT_AVAILABLE round trip (librdkafka asks again only after ~1 s)',
  )
  groups.close()
})
