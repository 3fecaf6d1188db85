import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, TopicName, Uuid } from '../model/index.ts'
import { metadataRecordTypes as T } from '../protocol/index.ts'
import { brokerHeartbeat, fenceBroker } from './brokers.ts'
import { type PendingRecord, pendingRecord } from './decision.ts'
import { commit } from './testing.ts'

const b = (n: number) => n as BrokerId
const topicId = Buffer.alloc(16, 9).toString('base64url') as Uuid

/** Three live brokers; partition 0 led by 1 with ISR [1,2,3]; partition 1 only on broker 1. */
function cluster(): MetadataImage {
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
  records.push(pendingRecord(T.Topic, 0, { name: 't' as TopicName, topicId }))
  records.push(
    pendingRecord(T.Partition, 0, {
      topicId,
      partitionId: 0,
      replicas: [b(1), b(2), b(3)],
      isr: [1, 2, 3],
      leader: b(1),
      leaderEpoch: 0,
      partitionEpoch: 0,
    }),
  )
  records.push(
    pendingRecord(T.Partition, 0, {
      topicId,
      partitionId: 1,
      replicas: [b(1)],
      isr: [1],
      leader: b(1),
      leaderEpoch: 0,
      partitionEpoch: 0,
    }),
  )
  return commit(EMPTY_IMAGE, records)
}

const part = (image: MetadataImage, p: number) => image.topicsById.get(topicId)!.partitions.get(p)!

test('fencing a leader moves leadership to the next live ISR member; a sole replica waits leaderless', () => {
  const after = commit(cluster(), fenceBroker(cluster(), b(1)))
  assert.equal(after.brokers.get(b(1))?.fenced, true)
  assert.deepEqual([part(after, 0).leader, part(after, 0).isr, part(after, 0).leaderEpoch], [2, [2, 3], 1])
  // The last ISR member stays in the ISR, so no unclean leader can be chosen.
  assert.deepEqual([part(after, 1).leader, part(after, 1).isr], [-1, [1]])
})

test('controlled shutdown fences and hands leaderships over; unfencing after restart takes them back', () => {
  const image = cluster()
  const shutDown = (
    img: MetadataImage,
    ctx: { committed: bigint; lowest: bigint | null; csOffset?: bigint },
  ) =>
    brokerHeartbeat(
      {
        image: img,
        committedOffset: ctx.committed,
        lowestActiveOffset: (excluding) => {
          assert.equal(excluding, 1)
          return ctx.lowest
        },
        controlledShutdownOffset: () => ctx.csOffset,
      },
      {
        brokerId: b(1),
        brokerEpoch: 1n,
        currentMetadataOffset: 100n,
        wantFence: false,
        wantShutDown: true,
        offlineLogDirs: [],
      },
    )
  const down = shutDown(image, { committed: 100n, lowest: 100n })
  assert.equal(down.response.shouldShutDown, false, 'not before the moves are committed and applied')
  assert.equal(down.response.isFenced, true)
  const stopped = commit(image, down.records)
  assert.equal(stopped.brokers.get(b(1))?.fenced, true)
  assert.equal(stopped.brokers.get(b(1))?.inControlledShutdown, true)
  assert.equal(part(stopped, 0).leader, 2)
  assert.deepEqual(part(stopped, 0).isr, [2, 3])
  assert.equal(part(stopped, 1).leader, -1)
  // Asked again: yes only once the moves (up to offset 105) are committed and every other active
  // broker reported having applied them; nothing more to write meanwhile.
  const cases: Array<[bigint, bigint | null, boolean]> = [
    [104n, null, false],
    [105n, 104n, false],
    [105n, 105n, true],
    [105n, null, true],
  ]
  for (const [committed, lowest, granted] of cases) {
    const again = shutDown(stopped, { committed, lowest, csOffset: 105n })
    assert.deepEqual(again.records, [])
    assert.equal(again.response.shouldShutDown, granted, `committed ${committed}, lowest active ${lowest}`)
  }
  // A controller that did not write the moves itself (a failover since) has nothing to wait for.
  assert.equal(shutDown(stopped, { committed: 0n, lowest: 0n }).response.shouldShutDown, true)
  // Restart: a new registration (fenced), then a caught-up heartbeat unfences it and it leads partition 1 again.
  const reregistered = commit(stopped, [
    pendingRecord(T.RegisterBroker, 0, {
      brokerId: b(1),
      brokerEpoch: 200n,
      incarnationId: Buffer.alloc(16, 7).toString('base64url') as Uuid,
      fenced: true,
    }),
  ])
  const up = brokerHeartbeat(
    { image: reregistered, committedOffset: 300n },
    {
      brokerId: b(1),
      brokerEpoch: 200n,
      currentMetadataOffset: 300n,
      wantFence: false,
      wantShutDown: false,
      offlineLogDirs: [],
    },
  )
  assert.equal(up.response.isFenced, false)
  const back = commit(reregistered, up.records)
  assert.equal(part(back, 1).leader, 1)
  assert.equal(part(back, 0).leader, 2, 'a partition with a live leader keeps it')
})

test('ElectLeaders: preferred gives the partition back to its first replica; unclean only where none leads', async () => {
  const { electLeaders, ElectionType } = await import('./elections.ts')
  const { ErrorCode } = await import('../protocol/index.ts')
  // Broker 1 fenced then back: partition 0 is led by 2, partition 1 is leaderless.
  let image = commit(cluster(), fenceBroker(cluster(), b(1)))
  image = commit(image, [
    pendingRecord(T.BrokerRegistrationChange, 0, { brokerId: b(1), brokerEpoch: 1n, fenced: -1 }),
  ])
  // Broker 1 is back but not yet in partition 0's ISR: the preferred leader is not available.
  const notYet = electLeaders(
    image,
    {
      electionType: ElectionType.Preferred,
      topicPartitions: [{ topic: 't' as TopicName, partitions: [0] }],
      timeoutMs: 1000,
    },
    2,
  )
  assert.equal(
    notYet.response.replicaElectionResults?.[0]?.partitionResult?.[0]?.errorCode,
    ErrorCode.PreferredLeaderNotAvailable,
  )
  image = commit(image, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [b(2), b(3), b(1)] }),
  ])
  const preferred = electLeaders(
    image,
    { electionType: ElectionType.Preferred, topicPartitions: null, timeoutMs: 1000 },
    2,
  )
  const after = commit(image, preferred.records)
  assert.equal(part(after, 0).leader, 1)
  // The preferred election also gave leaderless partition 1 back to its only (live, in-ISR) replica.
  assert.equal(part(after, 1).leader, 1)
  // Unclean: partition 0's only ISR member (3) dies; replica 1 is alive but outside the ISR.
  let lost = commit(after, [
    pendingRecord(T.PartitionChange, 0, { topicId, partitionId: 0, isr: [b(3)], leader: b(3) }),
  ])
  lost = commit(lost, fenceBroker(lost, b(3)))
  assert.deepEqual([part(lost, 0).leader, part(lost, 0).isr], [-1, [3]])
  const unclean = electLeaders(
    lost,
    {
      electionType: ElectionType.Unclean,
      topicPartitions: [{ topic: 't' as TopicName, partitions: [0, 1] }],
      timeoutMs: 1000,
    },
    2,
  )
  assert.deepEqual(
    unclean.response.replicaElectionResults?.[0]?.partitionResult?.map((r) => r.errorCode),
    [ErrorCode.None, ErrorCode.ElectionNotNeeded],
  )
  const recovered = part(commit(lost, unclean.records), 0)
  assert.deepEqual([recovered.leader, recovered.isr, recovered.leaderRecoveryState], [1, [1], 1])
})
