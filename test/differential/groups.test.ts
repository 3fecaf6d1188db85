/**
 * Differential: a classic consumer group of one member, the same requests to Kafka 4.0 and to
 * Weir: FindCoordinator, JoinGroup, SyncGroup, OffsetCommit, OffsetFetch, Heartbeat, DescribeGroups,
 * ListGroups, LeaveGroup, OffsetDelete and DeleteGroups, with the old versions kafka-python uses.
 */
import { after, before } from 'node:test'
import type { GroupId, TopicName } from '../../src/model/index.ts'
import {
  apis,
  ConsumerProtocolAssignmentData,
  ConsumerProtocolSubscriptionData,
  encodeBatch,
  Writer,
} from '../../src/protocol/index.ts'
import { Pair, type Side, scenario } from './harness.ts'

let pair: Pair

const topic = (name: string) => name as TopicName
const group = (name: string) => name as GroupId
const GROUP = group('differential-group')
const TOPIC = topic('grouped')

before(async () => {
  pair = await Pair.start('groups')
  await pair.each(apis.CreateTopics, pair.version(apis.CreateTopics), {
    topics: [{ name: TOPIC, numPartitions: 2, replicationFactor: 1 }],
    timeoutMs: 30_000,
  })
  await pair.waitForTopic('grouped', 2)
})

after(async () => {
  await pair?.stop()
})

/** ConsumerProtocol subscription v0: a version, then the struct (the Java client's framing). */
function subscription(topics: string[]): Buffer {
  const w = new Writer()
  w.int16(0)
  ConsumerProtocolSubscriptionData.writeConsumerProtocolSubscription(w, { topics, userData: null }, 0)
  return w.toBuffer()
}

function assignment(partitions: number[]): Buffer {
  const w = new Writer()
  w.int16(0)
  ConsumerProtocolAssignmentData.writeConsumerProtocolAssignment(
    w,
    { assignedPartitions: [{ topic: TOPIC, partitions }], userData: null },
    0,
  )
  return w.toBuffer()
}

/** What each side's coordinator gave this test's member. */
const member: Record<Side, { memberId: string; generationId: number }> = {
  kafka: { memberId: '', generationId: -1 },
  weir: { memberId: '', generationId: -1 },
}

scenario(
  'FindCoordinator: creates the offsets topic, then names this node',
  () => pair,
  async () => {
    const v = pair.version(apis.FindCoordinator)
    const body = v >= 4 ? { keyType: 0, coordinatorKeys: [GROUP] } : { key: GROUP, keyType: 0 }
    // Both create __consumer_offsets on the first ask and answer COORDINATOR_NOT_AVAILABLE meanwhile.
    await pair.both('find-coordinator/until-ready', apis.FindCoordinator, v, body, {
      until: (res) => (v >= 4 ? res.coordinators[0]?.errorCode : res.errorCode) === 0,
      timeoutMs: 30_000,
    })
    await pair.waitForTopic('__consumer_offsets', 1)
    // The first transactional ask creates __transaction_state: Kafka answers COORDINATOR_NOT_AVAILABLE
    // meanwhile, Weir holds the answer until the topic has a leader (as for groups above), so the
    // step compares the answer both give once the coordinator is there.
    await pair.both(
      'find-coordinator/transaction',
      apis.FindCoordinator,
      v,
      { ...body, keyType: 1, ...(v >= 4 ? { coordinatorKeys: ['txn-id'] } : { key: 'txn-id' }) },
      {
        until: (res) => (v >= 4 ? res.coordinators[0]?.errorCode : res.errorCode) === 0,
        timeoutMs: 30_000,
      },
    )
    await pair.both('find-coordinator/bad-key-type', apis.FindCoordinator, v, { ...body, keyType: 7 })
    // kafka-python 2.0.2 asks with v1 (v0 is what Kafka 4.0 dropped).
    for (const old of [0, 1, 3].filter((x) => pair.serves(apis.FindCoordinator, x)))
      await pair.both(`find-coordinator/v${old}`, apis.FindCoordinator, old, { key: GROUP, keyType: 0 })
    await pair.both('find-coordinator/metadata', apis.Metadata, pair.version(apis.Metadata), {
      topics: [{ name: topic('__consumer_offsets') }],
      allowAutoTopicCreation: false,
    })
    // The offsets topic as each coordinator made it, and what a client may do with it.
    await pair.both('offsets-topic/configs', apis.DescribeConfigs, pair.version(apis.DescribeConfigs), {
      resources: [{ resourceType: 2, resourceName: '__consumer_offsets', configurationKeys: null }],
      includeSynonyms: false,
      includeDocumentation: false,
    })
    await pair.both('offsets-topic/produce', apis.Produce, pair.version(apis.Produce), {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: [
        {
          name: topic('__consumer_offsets'),
          partitionData: [
            { index: 0, records: encodeBatch({ records: [{ key: Buffer.from('k'), value: null }] }) },
          ],
        },
      ],
    })
  },
)

scenario(
  'JoinGroup and SyncGroup: one member becomes the leader of generation 1',
  () => pair,
  async () => {
    const v = pair.version(apis.JoinGroup)
    const join = (side: Side) => ({
      groupId: GROUP,
      sessionTimeoutMs: 30_000,
      rebalanceTimeoutMs: 60_000,
      memberId: member[side].memberId,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [
        { name: 'range', metadata: subscription(['grouped']) },
        { name: 'roundrobin', metadata: subscription(['grouped']) },
      ],
      reason: null,
    })
    // v4+: a first join without a member id is told its id (MEMBER_ID_REQUIRED), then joins with it.
    const first = await pair.both('join-group/member-id-required', apis.JoinGroup, v, join)
    for (const side of ['kafka', 'weir'] as const) member[side].memberId = first[side].memberId
    const joined = await pair.both('join-group/join', apis.JoinGroup, v, join)
    for (const side of ['kafka', 'weir'] as const) member[side].generationId = joined[side].generationId
    await pair.both('join-group/bad-protocol-type', apis.JoinGroup, v, (side) => ({
      ...join(side),
      groupId: group('other-group'),
      protocols: [],
    }))
    await pair.both('join-group/session-timeout-too-small', apis.JoinGroup, v, (side) => ({
      ...join(side),
      groupId: group('other-group'),
      memberId: '',
      sessionTimeoutMs: 10,
    }))
    await pair.both('join-group/unknown-member', apis.JoinGroup, v, (side) => ({
      ...join(side),
      memberId: 'not-a-member',
    }))
    const s = pair.version(apis.SyncGroup)
    const sync = (side: Side) => ({
      groupId: GROUP,
      generationId: member[side].generationId,
      memberId: member[side].memberId,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [{ memberId: member[side].memberId, assignment: assignment([0, 1]) }],
    })
    await pair.both('sync-group/leader', apis.SyncGroup, s, sync)
    await pair.both('sync-group/wrong-generation', apis.SyncGroup, s, (side) => ({
      ...sync(side),
      generationId: 9,
    }))
    await pair.both('sync-group/unknown-member', apis.SyncGroup, s, (side) => ({
      ...sync(side),
      memberId: 'not-a-member',
    }))
    await pair.both('sync-group/wrong-protocol', apis.SyncGroup, s, (side) => ({
      ...sync(side),
      protocolName: 'roundrobin',
    }))
  },
)

scenario(
  'OffsetCommit and OffsetFetch: by the member, by a simple consumer, unknown topics, v1',
  () => pair,
  async () => {
    const v = pair.version(apis.OffsetCommit)
    const commit = (
      step: string,
      make: (side: Side) => { generation: number; memberId: string; groupId?: GroupId },
      partitions: { topic: string; partition: number; offset: bigint }[],
      version = v,
    ) =>
      pair.both(`offset-commit/${step}`, apis.OffsetCommit, version, (side) => {
        const m = make(side)
        return {
          groupId: m.groupId ?? GROUP,
          generationIdOrMemberEpoch: m.generation,
          memberId: m.memberId,
          groupInstanceId: null,
          retentionTimeMs: -1n,
          topics: [...new Set(partitions.map((p) => p.topic))].map((name) => ({
            name: topic(name),
            partitions: partitions
              .filter((p) => p.topic === name)
              .map((p) => ({
                partitionIndex: p.partition,
                committedOffset: p.offset,
                committedLeaderEpoch: 0,
                committedMetadata: `meta-${p.partition}`,
              })),
          })),
        }
      })
    const asMember = (side: Side) => ({
      generation: member[side].generationId,
      memberId: member[side].memberId,
    })
    await commit('member', asMember, [
      { topic: 'grouped', partition: 0, offset: 5n },
      { topic: 'grouped', partition: 1, offset: 7n },
    ])
    await commit('unknown-topic', asMember, [{ topic: 'no-such-topic', partition: 0, offset: 1n }])
    await commit('unknown-partition', asMember, [{ topic: 'grouped', partition: 9, offset: 1n }])
    await commit('wrong-generation', (side) => ({ ...asMember(side), generation: 42 }), [
      { topic: 'grouped', partition: 0, offset: 6n },
    ])
    await commit('unknown-member', () => ({ generation: 1, memberId: 'not-a-member' }), [
      { topic: 'grouped', partition: 0, offset: 6n },
    ])
    await commit(
      'simple-consumer',
      () => ({ generation: -1, memberId: '', groupId: group('simple-group') }),
      [{ topic: 'grouped', partition: 1, offset: 3n }],
    )
    await commit('simple-consumer-on-live-group', () => ({ generation: -1, memberId: '' }), [
      { topic: 'grouped', partition: 1, offset: 3n },
    ])
    // kafka-python 2.0.2 commits with v2 (the oldest Kafka 4.0 still serves).
    if (pair.serves(apis.OffsetCommit, 2))
      await commit(
        'v2',
        () => ({ generation: -1, memberId: '', groupId: group('simple-group') }),
        [{ topic: 'grouped', partition: 0, offset: 2n }],
        2,
      )

    const f = pair.version(apis.OffsetFetch)
    const fetchOffsets = (
      step: string,
      groupId: GroupId,
      topics: { name: string; partitionIndexes: number[] }[] | null,
      version = f,
    ) =>
      pair.both(
        `offset-fetch/${step}`,
        apis.OffsetFetch,
        version,
        version >= 8
          ? {
              groups: [{ groupId, topics: topics?.map((t) => ({ ...t, name: topic(t.name) })) ?? null }],
              requireStable: true,
            }
          : {
              groupId,
              topics: topics?.map((t) => ({ ...t, name: topic(t.name) })) ?? null,
              requireStable: false,
            },
      )
    await fetchOffsets('member', GROUP, [{ name: 'grouped', partitionIndexes: [0, 1, 5] }])
    await fetchOffsets('all', GROUP, null)
    await fetchOffsets('simple', group('simple-group'), null)
    await fetchOffsets('unknown-group', group('no-such-group'), [{ name: 'grouped', partitionIndexes: [0] }])
    await fetchOffsets('unknown-topic', GROUP, [{ name: 'no-such-topic', partitionIndexes: [0] }])
    for (const old of [1, 2, 5, 7].filter((x) => pair.serves(apis.OffsetFetch, x)))
      await fetchOffsets(`v${old}`, GROUP, [{ name: 'grouped', partitionIndexes: [0, 1] }], old)
  },
)

scenario(
  'Heartbeat, DescribeGroups and ListGroups on a stable group',
  () => pair,
  async () => {
    const h = pair.version(apis.Heartbeat)
    const beat = (
      step: string,
      make: (side: Side) => { generationId: number; memberId: string; groupId?: GroupId },
    ) =>
      pair.both(`heartbeat/${step}`, apis.Heartbeat, h, (side) => {
        const m = make(side)
        return {
          groupId: m.groupId ?? GROUP,
          generationId: m.generationId,
          memberId: m.memberId,
          groupInstanceId: null,
        }
      })
    await beat('member', (side) => member[side])
    await beat('wrong-generation', (side) => ({ ...member[side], generationId: 5 }))
    await beat('unknown-member', () => ({ generationId: 1, memberId: 'not-a-member' }))
    await beat('unknown-group', (side) => ({ ...member[side], groupId: group('no-such-group') }))
    const d = pair.version(apis.DescribeGroups)
    await pair.both('describe-groups/stable', apis.DescribeGroups, d, {
      groups: [GROUP, group('simple-group'), group('no-such-group')],
      includeAuthorizedOperations: false,
    })
    // An unknown group is GROUP_ID_NOT_FOUND from v6 (KIP-1043), a Dead group before; authorized
    // operations only for the groups found.
    for (const v of [5, d].filter((x, i, all) => all.indexOf(x) === i && pair.serves(apis.DescribeGroups, x)))
      await pair.both(`describe-groups/authorized-v${v}`, apis.DescribeGroups, v, {
        groups: [GROUP, group('no-such-group')],
        includeAuthorizedOperations: true,
      })
    const l = pair.version(apis.ListGroups)
    await pair.both('list-groups/all', apis.ListGroups, l, { statesFilter: [], typesFilter: [] })
    if (l >= 4)
      await pair.both('list-groups/stable', apis.ListGroups, l, { statesFilter: ['Stable'], typesFilter: [] })
    if (l >= 5)
      await pair.both('list-groups/classic', apis.ListGroups, l, {
        statesFilter: [],
        typesFilter: ['classic'],
      })
    await pair.both('list-groups/v0', apis.ListGroups, 0, {})
  },
)

scenario(
  'LeaveGroup, then an empty group: describe, offsets kept, OffsetDelete, DeleteGroups',
  () => pair,
  async () => {
    const v = pair.version(apis.LeaveGroup)
    const leave = (side: Side) =>
      v >= 3
        ? {
            groupId: GROUP,
            members: [{ memberId: member[side].memberId, groupInstanceId: null, reason: 'done' }],
          }
        : { groupId: GROUP, memberId: member[side].memberId }
    const del = pair.version(apis.DeleteGroups)
    await pair.both('delete-groups/not-empty', apis.DeleteGroups, del, { groupsNames: [GROUP] })
    await pair.both('leave-group/member', apis.LeaveGroup, v, leave)
    await pair.both('leave-group/again', apis.LeaveGroup, v, leave)
    await pair.both('describe-groups/empty', apis.DescribeGroups, pair.version(apis.DescribeGroups), {
      groups: [GROUP],
      includeAuthorizedOperations: false,
    })
    await pair.both('offset-fetch/after-leave', apis.OffsetFetch, 7, {
      groupId: GROUP,
      topics: null,
      requireStable: false,
    })
    await pair.both('offset-delete', apis.OffsetDelete, pair.version(apis.OffsetDelete), {
      groupId: GROUP,
      topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0 }] }],
    })
    await pair.both('offset-delete/unknown-group', apis.OffsetDelete, pair.version(apis.OffsetDelete), {
      groupId: group('no-such-group'),
      topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0 }] }],
    })
    await pair.both('offset-fetch/after-offset-delete', apis.OffsetFetch, 7, {
      groupId: GROUP,
      topics: null,
      requireStable: false,
    })
    await pair.both('delete-groups/empty', apis.DeleteGroups, del, {
      groupsNames: [GROUP, group('simple-group'), group('no-such-group')],
    })
    await pair.both('list-groups/after-delete', apis.ListGroups, pair.version(apis.ListGroups), {
      statesFilter: [],
      typesFilter: [],
    })
  },
)
