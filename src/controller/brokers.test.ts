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
      pendingRecord(T.RegisterBroker, 3, {
        brokerId: b(id),
        brokerEpoch: BigInt(10 * id),
        incarnationId: incarnation(id),
        fenced: false,
        // Broker 1 has two data dirs (ids 71, 72); the others registered none (an older broker).
        logDirs: id === 1 ? [incarnation(71), incarnation(72)] : [],
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

/** Broker 1's heartbeat (epoch 10, caught up) reporting `offlineLogDirs`. */
const heartbeatOfBroker1 = (image: MetadataImage, offlineLogDirs: Uuid[]) =>
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
  const heartbeat = (offlineLogDirs: Uuid[]) => heartbeatOfBroker1(image, offlineLogDirs)
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

test('a heartbeat reporting every registered log dir offline takes the broker out of every ISR, and its leaderships', () => {
  const image = cluster()
  const heartbeat = (offlineLogDirs: Uuid[]) => heartbeatOfBroker1(image, offlineLogDirs)
  const partitions = (records: readonly PendingRecord[]) =>
    commit(image, records).topicsById.get(topicId)!.partitions
  // One of two dirs offline: only leaderships move; broker 1 stays in partition 1's ISR.
  const some = partitions(heartbeat([incarnation(71)]).records)
  assert.notEqual(some.get(0)!.leader, 1)
  assert.deepEqual([...some.get(1)!.isr].sort(), [1, 2, 3])
  // Both offline: no replica of broker 1 can take a write, so it leaves every ISR as well.
  const d = heartbeat([incarnation(72), incarnation(71)])
  assert.equal(d.response.isFenced, false, 'the broker stays registered and unfenced')
  const all = partitions(d.records)
  assert.notEqual(all.get(0)!.leader, 1)
  assert.deepEqual([...all.get(0)!.isr].sort(), [2, 3])
  assert.equal(all.get(1)!.leader, 2)
  assert.deepEqual(
    [...all.get(1)!.isr].sort(),
    [2, 3],
    'a follower leaves the ISR, so acks=all does not wait for it',
  )
})

test("registration records the broker's log dirs (RegisterBrokerRecord v3, KIP-858)", () => {
  const req = { ...registration(4, incarnation(4)), logDirs: [incarnation(81)] }
  const d = registerBroker(ctx(cluster()), req)
  const after = commit(cluster(), d.records)
  assert.deepEqual(after.brokers.get(b(4))!.logDirs, [incarnation(81)])
})
