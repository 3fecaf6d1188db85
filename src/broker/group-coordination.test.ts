import assert from 'node:assert/strict'
import { test } from 'node:test'
import { resolveBrokerConfig } from '../config/index.ts'
import { GROUP_METADATA_TOPIC_NAME, partitionForGroup } from '../coordinator/index.ts'
import { ManualClock, SeededRandom } from '../io/index.ts'
import { applyRecords, EMPTY_IMAGE } from '../metadata/index.ts'
import type { BrokerId, Uuid } from '../model/index.ts'
import {
  decodeMetadataRecord,
  ErrorCode,
  encodeMetadataRecord,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import type { ReplicaManager } from '../replication/index.ts'
import { GroupCoordination } from './group-coordination.ts'

function record(type: unknown, data: unknown) {
  return decodeMetadataRecord(encodeMetadataRecord(type as never, 0, data as never))
}

const OFFSETS_ID = Buffer.alloc(16, 7).toString('base64url') as Uuid

/** Brokers 1 (this node) and 2; `__consumer_offsets` with partition 0 led by 1, partition 1 by 2. */
const image = applyRecords(EMPTY_IMAGE, [
  ...[1, 2].map((id) =>
    record(T.RegisterBroker, {
      brokerId: id as BrokerId,
      brokerEpoch: 1n,
      incarnationId: Buffer.alloc(16, id).toString('base64url') as Uuid,
      endPoints: [{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9090 + id, securityProtocol: 0 }],
      fenced: false,
    }),
  ),
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

/** A group id whose `__consumer_offsets` partition (of 2) is `partition`. */
function groupOn(partition: number): string {
  for (let i = 0; ; i++) if (partitionForGroup(`g${i}`, 2) === partition) return `g${i}`
}

test('FindCoordinator names this broker only once its coordinator was told of the partition', async () => {
  const groups = new GroupCoordination({
    effective: resolveBrokerConfig({
      staticBroker: new Map([
        ['node.id', '1'],
        ['offsets.topic.num.partitions', '2'],
      ]),
    }),
    clock: new ManualClock(),
    random: new SeededRandom(1),
    // An empty partition that this broker leads: loading finds nothing to replay.
    replicas: {
      getPartition: () => ({ isLeader: true, logStartOffset: 0n, highWatermark: 0n }),
    } as unknown as ReplicaManager,
    image: () => image,
    createInternalTopic: () => {
      throw new Error('the topic exists')
    },
    log: () => {},
  })
  const here = groupOn(0)
  const there = groupOn(1)
  // The image names broker 1 for `here`, but its replica manager is still opening the partition
  // (no election yet): the client gets COORDINATOR_NOT_AVAILABLE and asks again, rather than
  // NOT_COORDINATOR on its next request. Broker 2 answers for its own partitions.
  const before = await groups.findCoordinators(0, [here, there], 'PLAINTEXT')
  assert.deepEqual(
    before.map((l) => [l.errorCode, l.nodeId]),
    [
      [ErrorCode.CoordinatorNotAvailable, -1],
      [ErrorCode.None, 2],
    ],
  )
  await groups.coordinator.onElection(0, 0)
  const after = await groups.findCoordinators(0, [here], 'PLAINTEXT')
  assert.deepEqual(
    after.map((l) => [l.errorCode, l.nodeId, l.port]),
    [[ErrorCode.None, 1, 9091]],
  )
  groups.close()
})
