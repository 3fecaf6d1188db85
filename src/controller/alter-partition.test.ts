import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import { type AlterPartitionRequestData, ErrorCode, metadataRecordTypes as T } from '../protocol/index.ts'
import { alterPartition } from './alter-partition.ts'
import { fenceBroker } from './brokers.ts'
import { type PendingRecord, pendingRecord } from './decision.ts'
import { commit } from './testing.ts'

const b = (n: number) => n as BrokerId
const topicId = Buffer.alloc(16, 9).toString('base64url') as Uuid
const topicName = 't' as TopicName

/** Four live brokers (epoch = 10 * id); partition 0 on [1,2,3] led by 1 with ISR [1,2]. */
function cluster(): MetadataImage {
  const records: PendingRecord[] = []
  for (const id of [1, 2, 3, 4]) {
    records.push(
      pendingRecord(T.RegisterBroker, 0, {
        brokerId: b(id),
        brokerEpoch: BigInt(10 * id),
        incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
        fenced: false,
      }),
    )
  }
  records.push(pendingRecord(T.Topic, 0, { name: topicName, topicId }))
  records.push(
    pendingRecord(T.Partition, 0, {
      topicId,
      partitionId: 0,
      replicas: [b(1), b(2), b(3)],
      isr: [1, 2],
      leader: b(1),
      leaderEpoch: 0,
      partitionEpoch: 0,
    }),
  )
  return commit(EMPTY_IMAGE, records)
}

const part = (image: MetadataImage) => image.topicsById.get(topicId)!.partitions.get(0)!

function request(
  isr: ReadonlyArray<number | [number, bigint]>,
  over: Partial<AlterPartitionRequestData.PartitionData> & { brokerId?: number; brokerEpoch?: bigint } = {},
): AlterPartitionRequestData.AlterPartitionRequest {
  const states = isr.map((x) =>
    Array.isArray(x)
      ? { brokerId: b(x[0]), brokerEpoch: x[1] }
      : { brokerId: b(x), brokerEpoch: BigInt(10 * x) },
  )
  const { brokerId, brokerEpoch, ...partition } = over
  return {
    brokerId: b(brokerId ?? 1),
    brokerEpoch: brokerEpoch ?? 10n,
    topics: [
      {
        topicId,
        partitions: [
          {
            partitionIndex: 0,
            leaderEpoch: 0,
            newIsr: states.map((s) => s.brokerId),
            newIsrWithEpochs: states,
            leaderRecoveryState: 0,
            partitionEpoch: 0,
            ...partition,
          },
        ],
      },
    ],
  }
}

const partitionError = (image: MetadataImage, req: AlterPartitionRequestData.AlterPartitionRequest, v = 3) =>
  alterPartition(image, req, v).response.topics?.[0]?.partitions?.[0]?.errorCode

test('AlterPartition expands the ISR: one PartitionChangeRecord; the answer carries the new epochs', () => {
  const image = cluster()
  const d = alterPartition(image, request([1, 2, 3]), 3)
  assert.equal(d.response.errorCode, ErrorCode.None)
  const answer = d.response.topics?.[0]?.partitions?.[0]
  assert.deepEqual(
    [answer?.errorCode, answer?.leaderId, answer?.leaderEpoch, answer?.isr, answer?.partitionEpoch],
    [ErrorCode.None, 1, 0, [1, 2, 3], 1],
  )
  assert.equal(d.records.length, 1)
  const after = part(commit(image, d.records))
  assert.deepEqual([after.isr, after.leader, after.leaderEpoch, after.partitionEpoch], [[1, 2, 3], 1, 0, 1])
})

test('AlterPartition shrinks the ISR to the leader alone; an unchanged ISR writes nothing', () => {
  const image = cluster()
  const d = alterPartition(image, request([1]), 3)
  assert.deepEqual(part(commit(image, d.records)).isr, [1])
  const same = alterPartition(image, request([1, 2]), 3)
  assert.equal(same.records.length, 0)
  assert.equal(same.response.topics?.[0]?.partitions?.[0]?.partitionEpoch, 0)
})

test('AlterPartition refuses a stale broker epoch at the top level', () => {
  const d = alterPartition(cluster(), request([1, 2, 3], { brokerEpoch: 9n }), 3)
  assert.equal(d.response.errorCode, ErrorCode.StaleBrokerEpoch)
  assert.equal(d.records.length, 0)
})

test('AlterPartition per-partition errors, each in Kafka order', () => {
  const image = cluster()
  // Unknown topic (by id, as every version Kafka 4.0 serves names it).
  const unknown = request([1, 2])
  unknown.topics[0]!.topicId = Buffer.alloc(16, 3).toString('base64url') as Uuid
  assert.equal(partitionError(image, unknown, 3), ErrorCode.UnknownTopicId)
  assert.equal(partitionError(image, request([1, 2], { partitionIndex: 7 })), ErrorCode.UnknownTopicId)
  // Epochs ahead of this image: this controller is behind.
  assert.equal(partitionError(image, request([1, 2], { leaderEpoch: 1 })), ErrorCode.NotController)
  assert.equal(partitionError(image, request([1, 2], { partitionEpoch: 1 })), ErrorCode.NotController)
  // Not the leader.
  assert.equal(
    partitionError(image, request([1, 2], { brokerId: 2, brokerEpoch: 20n })),
    ErrorCode.InvalidRequest,
  )
  // Older epochs.
  const moved = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, leader: b(1) }),
  ])
  assert.equal(part(moved).leaderEpoch, 1)
  assert.equal(partitionError(moved, request([1, 2])), ErrorCode.FencedLeaderEpoch)
  const changed = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [b(1)] }),
  ])
  assert.equal(partitionError(changed, request([1, 2])), ErrorCode.InvalidUpdateVersion)
  // Bad ISRs.
  assert.equal(partitionError(image, request([])), ErrorCode.InvalidRequest)
  assert.equal(partitionError(image, request([1, 1])), ErrorCode.InvalidRequest)
  assert.equal(partitionError(image, request([1, 4])), ErrorCode.InvalidRequest, 'not a replica')
  assert.equal(partitionError(image, request([2, 3])), ErrorCode.InvalidRequest, 'without the leader')
  assert.equal(partitionError(image, request([1, 2], { leaderRecoveryState: 1 })), ErrorCode.InvalidRequest)
  // Ineligible members: a stale broker epoch, fenced, in controlled shutdown, unregistered.
  assert.equal(partitionError(image, request([1, [3, 29n]])), ErrorCode.IneligibleReplica)
  assert.equal(partitionError(image, request([1, [3, -1n]])), ErrorCode.None, '-1 skips the epoch check')
  const fenced = commit(image, [
    pendingRecord(T.BrokerRegistrationChange, 0, { brokerId: b(3), brokerEpoch: 30n, fenced: 1 }),
  ])
  assert.equal(partitionError(fenced, request([1, 2, 3])), ErrorCode.IneligibleReplica)
  const shuttingDown = commit(image, [
    pendingRecord(T.BrokerRegistrationChange, 1, {
      brokerId: b(3),
      brokerEpoch: 30n,
      inControlledShutdown: 1,
    }),
  ])
  assert.equal(partitionError(shuttingDown, request([1, 2, 3])), ErrorCode.IneligibleReplica)
  const gone = commit(image, [pendingRecord(T.UnregisterBroker, 0, { brokerId: b(3), brokerEpoch: 30n })])
  assert.equal(partitionError(gone, request([1, 2, 3])), ErrorCode.IneligibleReplica)
})

test('AlterPartition v0-2 reads newIsr; a recovering leader may only report itself, then recover', () => {
  let image = cluster()
  const v2 = request([1, 2, 3])
  v2.topics[0]!.partitions[0]!.newIsrWithEpochs = []
  assert.equal(partitionError(image, v2, 2), ErrorCode.None)
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [b(1)], leaderRecoveryState: 1 }),
  ])
  assert.equal(part(image).leaderRecoveryState, 1)
  assert.equal(
    partitionError(image, request([1, 2], { leaderRecoveryState: 1, partitionEpoch: 1 })),
    ErrorCode.InvalidRequest,
  )
  const recovered = alterPartition(image, request([1], { leaderRecoveryState: 0, partitionEpoch: 1 }), 3)
  assert.equal(part(commit(image, recovered.records)).leaderRecoveryState, 0)
})

test('fencing removes the broker from every ISR but never empties one (KIP-841)', () => {
  let image = cluster()
  image = commit(image, fenceBroker(image, b(2)))
  assert.deepEqual([part(image).leader, part(image).isr], [1, [1]])
  image = commit(image, fenceBroker(image, b(1)))
  assert.deepEqual([part(image).leader, part(image).isr], [-1, [1]])
})
