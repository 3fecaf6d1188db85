/**
 * @platformatic/kafka 2.12 consumer groups against a real `weir start`, on the newest versions it
 * sends (JoinGroup v9, SyncGroup v5, OffsetCommit v9, OffsetFetch v9 for several groups at once,
 * FindCoordinator v6, DescribeGroups v5, ListGroups v5): a classic group reads and commits, the
 * admin lists offsets of two groups in one request, alters and deletes offsets (OffsetDelete), and
 * deletes groups.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { CompatTarget } from '../support/compat-target.ts'

const weir = new CompatTarget('weir-platformatic-groups-', { 'group.initial.rebalance.delay.ms': 300 })
let bootstrap = ''
const TOPIC = 'pk'

before(async () => {
  await weir.start()
  bootstrap = weir.bootstrap
})

after(async () => {
  await weir.close()
})

test('a classic group reads and commits; the admin reads, alters and deletes offsets and groups', async () => {
  const base = { bootstrapBrokers: bootstrap.split(','), retries: 5 }
  const admin = new Admin({ ...base, clientId: 'weir-pk-admin' })
  const closing: Array<() => Promise<unknown>> = [() => admin.close()]
  try {
    // The broker's default replication factor: 1 on one node, 3 in the cluster pass.
    await admin.createTopics({ topics: [TOPIC], partitions: 3 })
    const producer = new Producer({
      ...base,
      clientId: 'weir-pk-producer',
      serializers: stringSerializers,
      // The topic's partitions become leaders one by one after CreateTopics answers (as in Kafka,
      // the answer does not wait for them), so this one Produce of the three partitions can get
      // NOT_LEADER_OR_FOLLOWER for some and succeed for others; the client then resends the whole
      // request. Without idempotence the partitions that succeeded get their records twice, and
      // the consumer reads its 9 values before reaching the last partition.
      idempotent: true,
    })
    await producer.send({
      messages: Array.from({ length: 9 }, (_, i) => ({
        topic: TOPIC,
        partition: i % 3,
        key: `k${i}`,
        value: `v${i}`,
      })),
    })
    await producer.close()

    const consumer = new Consumer({
      ...base,
      clientId: 'weir-pk-consumer',
      groupId: 'pk-group',
      deserializers: stringDeserializers,
      heartbeatInterval: 500,
      sessionTimeout: 10_000,
    })
    closing.push(() => consumer.close(true))
    const stream = await consumer.consume({
      topics: [TOPIC],
      mode: 'earliest',
      autocommit: false,
      maxWaitTime: 500,
    })
    const values: string[] = []
    for await (const message of stream) {
      values.push(message.value)
      await message.commit()
      if (values.length === 9) break
    }
    await stream.close()
    assert.deepEqual(values.sort(), Array.from({ length: 9 }, (_, i) => `v${i}`).sort())

    const groups = await admin.listGroups()
    assert.equal(groups.get('pk-group')?.state, 'Stable')
    const described = await admin.describeGroups({ groups: ['pk-group'] })
    assert.equal(described.get('pk-group')?.members.size, 1)
    await consumer.close()
    closing.pop()

    // A second group with offsets set by the admin (OffsetCommit without a generation).
    await admin.alterConsumerGroupOffsets({
      groupId: 'pk-admin-group',
      topics: [{ name: TOPIC, partitionOffsets: [{ partition: 1, offset: 2n }] }],
    })
    // OffsetFetch v8+: both groups in one request.
    const offsets = await admin.listConsumerGroupOffsets({ groups: ['pk-group', 'pk-admin-group'] })
    const byGroup = new Map(offsets.map((g) => [g.groupId, g]))
    const committed = byGroup
      .get('pk-group')!
      .topics.find((t) => t.name === TOPIC)!
      .partitions.map((p) => [p.partitionIndex, p.committedOffset])
      .sort((a, b) => Number(a[0]) - Number(b[0]))
    assert.deepEqual(committed, [
      [0, 3n],
      [1, 3n],
      [2, 3n],
    ])
    assert.equal(byGroup.get('pk-admin-group')!.topics[0]!.partitions[0]!.committedOffset, 2n)

    // OffsetDelete of one partition of the empty group, then DeleteGroups of both.
    await admin.deleteConsumerGroupOffsets({
      groupId: 'pk-group',
      topics: [{ name: TOPIC, partitionIndexes: [0] }],
    })
    const after = await admin.listConsumerGroupOffsets({ groups: ['pk-group'] })
    assert.deepEqual(
      after[0]!.topics.flatMap((t) => t.partitions.map((p) => p.partitionIndex)).sort(),
      [1, 2],
    )
    await admin.deleteGroups({ groups: ['pk-group', 'pk-admin-group'] })
    const left = await admin.listGroups()
    assert.equal(left.has('pk-group') || left.has('pk-admin-group'), false)
  } finally {
    for (const close of closing.reverse()) await close().catch(() => {})
  }
})
