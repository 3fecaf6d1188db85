import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import { type BrokerRegistrationRequestData, ErrorCode, metadataRecordTypes as T } from '../protocol/index.ts'
import { brokerHeartbeat, registerBroker } from './brokers.ts'
import { type PendingRecord, pendingRecord } from './decision.ts'
import { commit } from './testing.ts'

const b = (n: number) => n as BrokerId
const topicId = Buffer.alloc(16, 9).toString('base64url') as Uuid
const incarnation = (n: number) => Buffer.alloc(16, n).toString('base64url') as Uuid

/** Brokers 1-3 live; partition 0 on [1,2,3] led by 1 in epoch 4 with ISR [1,2,3]; partition 1 led by 2. */
function cluster(): MetadataImage {
  const records: PendingRecord[] = []
  for (const id of [1, 2, 3]) {
    records.push(
      pendingRecord(T.RegisterBroker, 0, {
        brokerId: b(id),
        brokerEpoch: BigInt(10 * id),
        incarnationId: incarnation(id),
        fenced: false,
      }),
    )
  }
  records.push(pendingRecord(T.Topic, 0, { name: 't' as TopicName, topicId }))
  for (const [partitionId, leader] of [
    [0, 1],
    [1, 2],
  ] as const) {
    records.push(
      pendingRecord(T.Partition, 0, {
        topicId,
        partitionId,
        replicas: [b(1), b(2), b(3)],
        isr: [1, 2, 3],
        leader: b(leader),
        leaderEpoch: 4,
        partitionEpoch: 4,
      }),
    )
  }
  return commit(EMPTY_IMAGE, records)
}

function registration(id: number, inc: Uuid): BrokerRegistrationRequestData.BrokerRegistrationRequest {
  return {
    brokerId: b(id),
    clusterId: 'c',
    incarnationId: inc,
    listeners: [],
    features: [],
    rack: null,
    isMigratingZkBroker: false,
    logDirs: [],
    previousBrokerEpoch: -1n,
  } as never
}

const ctx = (image: MetadataImage) => ({
  image,
  clusterId: 'c',
  nextOffset: 100n,
  hasLiveSession: () => false,
  finalizedFeatures: new Map<string, number>(),
})

test('a new incarnation of a broker leaves its ISRs and leaderships, so it leads again only in a new epoch', () => {
  const image = cluster()
  const d = registerBroker(ctx(image), registration(1, incarnation(11)))
  assert.equal(d.response.errorCode, ErrorCode.None)
  const after = commit(image, d.records)
  const p0 = after.topicsById.get(topicId)!.partitions.get(0)!
  const p1 = after.topicsById.get(topicId)!.partitions.get(1)!
  assert.notEqual(p0.leader, 1, 'its leadership moved')
  assert.ok(p0.leaderEpoch > 4, 'in a new leader epoch')
  assert.deepEqual([...p0.isr].sort(), [2, 3])
  assert.equal(p1.leader, 2, 'a partition it did not lead keeps its leader')
  assert.deepEqual([...p1.isr].sort(), [2, 3], 'it left the ISR it was in')
  assert.equal(after.brokers.get(b(1))!.fenced, true)
})

test('the same incarnation registering again (a retried registration) moves nothing', () => {
  const image = cluster()
  const d = registerBroker(ctx(image), registration(1, incarnation(1)))
  assert.equal(d.response.errorCode, ErrorCode.None)
  assert.deepEqual(
    d.records.map((r) => r.type),
    [T.RegisterBroker],
  )
})

test('a heartbeat reporting an offline log dir moves the leaderships another live ISR member can take', () => {
  // Partition 0 led by 1 (ISR 1,2,3); partition 1 led by 2; a single-replica partition 2 led by 1.
  const image = commit(cluster(), [
    pendingRecord(T.Partition, 0, {
      topicId,
      partitionId: 2,
      replicas: [b(1)],
      isr: [1],
      leader: b(1),
      leaderEpoch: 0,
      partitionEpoch: 0,
    }),
  ])
  const heartbeat = (offlineLogDirs: Uuid[]) =>
    brokerHeartbeat(
      { image, committedOffset: 100n },
      {
        brokerId: b(1),
        brokerEpoch: 10n,
        currentMetadataOffset: 100n,
        wantFence: false,
        wantShutDown: false,
        offlineLogDirs,
      },
    )
  assert.deepEqual(heartbeat([]).records, [], 'no offline dir, nothing moves')
  const d = heartbeat([incarnation(7)])
  assert.equal(d.response.errorCode, ErrorCode.None)
  assert.equal(d.response.isFenced, false, 'the broker stays up for its other dirs')
  const after = commit(image, d.records)
  const p0 = after.topicsById.get(topicId)!.partitions.get(0)!
  assert.notEqual(p0.leader, 1)
  assert.ok(p0.leaderEpoch > 4, 'a new leader epoch')
  assert.deepEqual([...p0.isr].sort(), [2, 3])
  assert.equal(after.topicsById.get(topicId)!.partitions.get(1)!.leader, 2, 'not led by 1: untouched')
  assert.equal(
    after.topicsById.get(topicId)!.partitions.get(2)!.leader,
    1,
    'no other replica: keeps its leader',
  )
})
