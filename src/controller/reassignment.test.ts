import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import {
  type AlterPartitionReassignmentsRequestData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type PendingRecord, pendingRecord } from './decision.ts'
import {
  alterPartitionReassignments,
  completeReassignments,
  listPartitionReassignments,
} from './reassignment.ts'
import { commit } from './testing.ts'

const b = (n: number) => n as BrokerId
const topicId = Buffer.alloc(16, 7).toString('base64url') as Uuid
const t = 'r' as TopicName

/** Four live brokers; r-0 on [1,2] led by 1, ISR [1,2]. */
function cluster(): MetadataImage {
  const records: PendingRecord[] = []
  for (const id of [1, 2, 3, 4]) {
    records.push(
      pendingRecord(T.RegisterBroker, 0, {
        brokerId: b(id),
        brokerEpoch: BigInt(id),
        incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
        fenced: false,
      }),
    )
  }
  records.push(pendingRecord(T.Topic, 0, { name: t, topicId }))
  records.push(
    pendingRecord(T.Partition, 0, {
      topicId,
      partitionId: 0,
      replicas: [b(1), b(2)],
      isr: [1, 2],
      leader: b(1),
      leaderEpoch: 0,
      partitionEpoch: 0,
    }),
  )
  return commit(EMPTY_IMAGE, records)
}

const part = (image: MetadataImage) => image.topicsById.get(topicId)!.partitions.get(0)!

function alter(
  image: MetadataImage,
  partitions: Array<{ partitionIndex: number; replicas: number[] | null }>,
  name: string = t,
) {
  const req: AlterPartitionReassignmentsRequestData.AlterPartitionReassignmentsRequest = {
    timeoutMs: 30_000,
    topics: [
      {
        name: name as TopicName,
        partitions: partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          replicas: p.replicas === null ? null : p.replicas.map(b),
        })),
      },
    ],
  }
  return alterPartitionReassignments(image, req)
}

const errors = (d: ReturnType<typeof alter>) =>
  d.response.responses!.flatMap((r) => r.partitions!.map((p) => p.errorCode))

test('a reassignment writes target ∪ current with adding and removing, and keeps the leader', () => {
  const image = cluster()
  const d = alter(image, [{ partitionIndex: 0, replicas: [3, 4] }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  const after = commit(image, d.records)
  const p = part(after)
  assert.deepEqual(p.replicas, [3, 4, 1, 2])
  assert.deepEqual(p.addingReplicas, [3, 4])
  assert.deepEqual(p.removingReplicas, [1, 2])
  assert.deepEqual(p.isr, [1, 2])
  assert.equal(p.leader, 1)
  const listed = listPartitionReassignments(after, { timeoutMs: 0, topics: null })
  assert.deepEqual(listed.topics, [
    {
      name: t,
      partitions: [
        { partitionIndex: 0, replicas: [3, 4, 1, 2], addingReplicas: [3, 4], removingReplicas: [1, 2] },
      ],
    },
  ])
  // Not complete until every adding replica is in the ISR.
  assert.deepEqual(completeReassignments(after), [])
  const oneCaughtUp = commit(after, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3].map(b) }),
  ])
  assert.deepEqual(completeReassignments(oneCaughtUp), [])
  const allCaughtUp = commit(oneCaughtUp, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3, 4].map(b) }),
  ])
  const done = commit(allCaughtUp, completeReassignments(allCaughtUp))
  const q = part(done)
  assert.deepEqual(q.replicas, [3, 4])
  assert.deepEqual(q.isr, [3, 4])
  assert.deepEqual(q.addingReplicas, [])
  assert.deepEqual(q.removingReplicas, [])
  assert.equal(q.leader, 3, 'the removed leader hands over to the first target replica in the ISR')
  assert.equal(q.leaderEpoch, part(image).leaderEpoch + 1)
  assert.deepEqual(listPartitionReassignments(done, { timeoutMs: 0, topics: null }).topics, [])
})

test('a reassignment whose target is already in the ISR completes at once', () => {
  const image = cluster()
  const d = alter(image, [{ partitionIndex: 0, replicas: [2] }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  const p = part(commit(image, d.records))
  assert.deepEqual(p.replicas, [2])
  assert.deepEqual(p.isr, [2])
  assert.equal(p.leader, 2)
  assert.deepEqual(p.addingReplicas, [])
})

test('the same replicas is no change and nothing is written', () => {
  const d = alter(cluster(), [{ partitionIndex: 0, replicas: [1, 2] }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  assert.equal(d.records.length, 0)
})

test('a cancel reverts to the original replicas; a cancel of none is NO_REASSIGNMENT_IN_PROGRESS', () => {
  const image = cluster()
  assert.deepEqual(errors(alter(image, [{ partitionIndex: 0, replicas: null }])), [
    ErrorCode.NoReassignmentInProgress,
  ])
  const started = commit(image, alter(image, [{ partitionIndex: 0, replicas: [1, 3] }]).records)
  const caught = commit(started, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2].map(b) }),
  ])
  const d = alter(caught, [{ partitionIndex: 0, replicas: null }])
  assert.deepEqual(errors(d), [ErrorCode.None])
  const p = part(commit(caught, d.records))
  assert.deepEqual(p.replicas, [1, 2])
  assert.deepEqual(p.isr, [1, 2])
  assert.deepEqual(p.addingReplicas, [])
  assert.deepEqual(p.removingReplicas, [])
  assert.equal(p.leader, 1)
})

test('a new reassignment replaces an ongoing one from the original replicas', () => {
  const image = cluster()
  const first = commit(image, alter(image, [{ partitionIndex: 0, replicas: [3] }]).records)
  const d = alter(first, [{ partitionIndex: 0, replicas: [1, 4] }])
  const p = part(commit(first, d.records))
  assert.deepEqual(p.replicas, [1, 4, 2])
  assert.deepEqual(p.addingReplicas, [4])
  assert.deepEqual(p.removingReplicas, [2])
})

test('bad targets: unknown topic or partition, empty, duplicate or unregistered replicas', () => {
  const image = cluster()
  assert.deepEqual(errors(alter(image, [{ partitionIndex: 0, replicas: [1] }], 'nope')), [
    ErrorCode.UnknownTopicOrPartition,
  ])
  const d = alter(image, [
    { partitionIndex: 5, replicas: [1] },
    { partitionIndex: 0, replicas: [] },
    { partitionIndex: 0, replicas: [3, 3] },
    { partitionIndex: 0, replicas: [3, 9] },
  ])
  assert.deepEqual(errors(d), [
    ErrorCode.UnknownTopicOrPartition,
    ErrorCode.InvalidReplicaAssignment,
    ErrorCode.InvalidReplicaAssignment,
    ErrorCode.InvalidReplicaAssignment,
  ])
  assert.match(
    d.response.responses![0]!.partitions![3]!.errorMessage!,
    /broker 9, but no such broker is registered/,
  )
  assert.equal(d.records.length, 0)
})

test('a reassignment waits while the adding replica is out of the ISR, and a dead target leader is skipped', () => {
  let image = cluster()
  image = commit(image, alter(image, [{ partitionIndex: 0, replicas: [3, 2] }]).records)
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [1, 2, 3].map(b) }),
  ])
  // Broker 3 is alive and in the ISR: it leads. With 3 dead, 2 (in target and ISR) leads instead.
  const alive3 = completeReassignments(image, (id) => id !== b(1))
  assert.equal(part(commit(image, alive3)).leader, 3)
  const dead3 = completeReassignments(image, (id) => id !== b(1) && id !== b(3))
  assert.equal(part(commit(image, dead3)).leader, 2)
})
