// The group handlers through Dispatcher.dispatch (no sockets), over a GroupCoordinator on a
// PartitionLog on a simulated disk: each version's shape (single or batched keys and members, group-
// or partition-level errors, null protocol names) encodes and decodes as Kafka's clients expect.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  type CoordinatorLocation,
  coordinatorError,
  DEFAULT_GROUP_CONFIG,
  GroupCoordinator,
  LocalOffsetsLog,
} from '../coordinator/index.ts'
import { ManualClock, SeededRandom, SimDisk } from '../io/index.ts'
import type { BrokerId, GroupId, TopicName } from '../model/index.ts'
import { type Api, apis, decodeResponse, ErrorCode, encodeRequest } from '../protocol/index.ts'
import { DEFAULT_LOG_CONFIG, PartitionLog } from '../storage/index.ts'
import { Dispatcher } from './dispatcher.ts'
import { makeDeleteGroupsHandler } from './handlers/delete-groups.ts'
import { makeDescribeGroupsHandler } from './handlers/describe-groups.ts'
import { makeFindCoordinatorHandler } from './handlers/find-coordinator.ts'
import { makeHeartbeatHandler } from './handlers/heartbeat.ts'
import { makeJoinGroupHandler } from './handlers/join-group.ts'
import { makeLeaveGroupHandler } from './handlers/leave-group.ts'
import { makeListGroupsHandler } from './handlers/list-groups.ts'
import { makeOffsetCommitHandler } from './handlers/offset-commit.ts'
import { makeOffsetDeleteHandler } from './handlers/offset-delete.ts'
import { makeOffsetFetchHandler } from './handlers/offset-fetch.ts'
import { makeSyncGroupHandler } from './handlers/sync-group.ts'
import { makeTxnOffsetCommitHandler } from './handlers/txn-offset-commit.ts'
import { HandlerRegistry } from './registry.ts'

const CONN = { connectionId: 1, clientAddress: '127.0.0.1:50000', listenerName: 'PLAINTEXT' }
const TOPIC = 'orders' as TopicName

interface Node {
  readonly dispatcher: Dispatcher
  readonly coordinator: GroupCoordinator
  readonly clock: ManualClock
}

async function startNode(): Promise<Node> {
  const disk = new SimDisk()
  await disk.mkdir('/data')
  await disk.syncDir('/')
  const clock = new ManualClock({ nowMs: 1_700_000_000_000 })
  const log = await PartitionLog.open('/data/__consumer_offsets-0', DEFAULT_LOG_CONFIG, { disk, clock })
  const c = new GroupCoordinator({
    config: { ...DEFAULT_GROUP_CONFIG, initialRebalanceDelayMs: 0 },
    partitionCount: 1,
    retentionCheckIntervalMs: 600_000,
    log: new LocalOffsetsLog(() => log),
    clock,
    random: new SeededRandom(1),
  })
  await c.onElection(0, 0)
  const partitionExists = (topic: TopicName, partition: number) => topic === TOPIC && partition < 3
  const findCoordinators = async (keyType: number, keys: readonly string[]): Promise<CoordinatorLocation[]> =>
    keys.map((k) =>
      keyType !== 0 || k === 'elsewhere'
        ? coordinatorError(ErrorCode.CoordinatorNotAvailable, 'not here')
        : {
            errorCode: ErrorCode.None,
            errorMessage: null,
            nodeId: 1 as BrokerId,
            host: 'localhost',
            port: 9092,
          },
    )
  const registry = new HandlerRegistry()
  registry.register(
    makeFindCoordinatorHandler({ findCoordinators }),
    makeJoinGroupHandler(c),
    makeSyncGroupHandler(c),
    makeHeartbeatHandler(c),
    makeLeaveGroupHandler(c),
    makeOffsetCommitHandler({ commitOffsets: (i) => c.commitOffsets(i), partitionExists }),
    makeOffsetFetchHandler({
      fetchOffsets: (g, t, requireStable) =>
        requireStable ? c.fetchStableOffsets(g, t) : c.fetchOffsets(g, t),
    }),
    makeTxnOffsetCommitHandler({
      commitTransactionalOffsets: (i) => c.commitTransactionalOffsets(i),
      partitionExists,
    }),
    makeDescribeGroupsHandler(c),
    makeListGroupsHandler(c),
    makeDeleteGroupsHandler(c),
    makeOffsetDeleteHandler({ deleteOffsets: (i) => c.deleteOffsets(i), partitionExists }),
  )
  return { dispatcher: new Dispatcher(registry), coordinator: c, clock }
}

let correlation = 0

async function call<ReqIn, Res>(
  node: Node,
  api: Api<unknown, ReqIn, Res, never>,
  version: number,
  body: ReqIn,
) {
  const frame = Buffer.concat(
    encodeRequest(
      api,
      { requestApiVersion: version, correlationId: ++correlation, clientId: 'test-client' },
      body,
    ),
  )
  const r = await node.dispatcher.dispatch(frame.subarray(4), CONN)
  assert.equal(r.kind, 'response', r.kind === 'close' ? r.reason : '')
  if (r.kind !== 'response') throw new Error('unreachable')
  return decodeResponse(api, version, Buffer.concat(r.frame).subarray(4)).body
}

/** A call whose answer waits for the coordinator's timers (the initial rebalance delay). */
async function callAdvancing<ReqIn, Res>(
  node: Node,
  api: Api<unknown, ReqIn, Res, never>,
  version: number,
  body: ReqIn,
) {
  let done = false
  const answer = call(node, api, version, body).finally(() => {
    done = true
  })
  for (let i = 0; i < 50 && !done; i++) {
    await new Promise<void>((r) => setImmediate(r))
    node.clock.advance(100)
  }
  return answer
}

const G = 'group' as GroupId
const protocols = [
  {
    name: 'range',
    metadata: Buffer.from([0, 0, 0, 0, 0, 1, 0, 6, 111, 114, 100, 101, 114, 115, 0, 0, 0, 0]),
  },
]

describe('group handlers (injected frames)', () => {
  test('FindCoordinator: one key with its error fields by version, or a batch (v4+)', async () => {
    const node = await startNode()
    const v0 = await call(node, apis.FindCoordinator, 0, { key: 'g' })
    assert.equal(v0.errorCode, ErrorCode.None)
    assert.equal(v0.port, 9092)
    const v1 = await call(node, apis.FindCoordinator, 1, { key: 't', keyType: 1 })
    assert.equal(v1.errorCode, ErrorCode.CoordinatorNotAvailable)
    // v1-3 carry the error's own text, as Kafka's prepareOldResponse ("NONE" on success).
    assert.equal(v1.errorMessage, 'The coordinator is not available.')
    assert.equal((await call(node, apis.FindCoordinator, 3, { key: 'g' })).errorMessage, 'NONE')
    const bad = await call(node, apis.FindCoordinator, 3, { key: 'g', keyType: 2 })
    assert.equal(bad.errorCode, ErrorCode.InvalidRequest, 'share groups need v6')
    const v4 = await call(node, apis.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ['a', 'elsewhere'] })
    assert.deepEqual(
      v4.coordinators.map((c) => [c.key, c.errorCode, c.nodeId]),
      [
        ['a', ErrorCode.None, 1],
        ['elsewhere', ErrorCode.CoordinatorNotAvailable, -1],
      ],
    )
    node.coordinator.close()
  })

  test('JoinGroup v0 joins at once; v4 asks for the member id; v6 says a null protocol as ""', async () => {
    const node = await startNode()
    const join0 = callAdvancing(node, apis.JoinGroup, 0, {
      groupId: G,
      sessionTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'consumer',
      protocols,
    })
    const r0 = await join0
    assert.equal(r0.errorCode, ErrorCode.None)
    assert.equal(r0.generationId, 1)
    assert.match(r0.memberId, /^test-client-/)
    const described = await call(node, apis.DescribeGroups, 3, {
      groups: [G],
      includeAuthorizedOperations: true,
    })
    assert.equal(described.groups[0]!.members[0]!.clientHost, '/127.0.0.1')
    assert.equal(described.groups[0]!.authorizedOperations, 3400)
    // A group that does not exist: Dead up to v5, GROUP_ID_NOT_FOUND with a message from v6 (KIP-1043).
    const missing = { groups: ['nobody' as GroupId], includeAuthorizedOperations: true }
    const dead = (await call(node, apis.DescribeGroups, 5, missing)).groups[0]!
    assert.deepEqual(
      [dead.errorCode, dead.groupState, dead.authorizedOperations],
      [ErrorCode.None, 'Dead', 3400],
    )
    const notFound = (await call(node, apis.DescribeGroups, 6, missing)).groups[0]!
    assert.deepEqual(
      [notFound.errorCode, notFound.errorMessage, notFound.groupState, notFound.authorizedOperations],
      [ErrorCode.GroupIdNotFound, 'Group nobody not found.', 'Dead', -2147483648],
    )
    const r4 = await call(node, apis.JoinGroup, 4, {
      groupId: 'other' as GroupId,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'consumer',
      protocols,
    })
    assert.equal(r4.errorCode, ErrorCode.MemberIdRequired)
    assert.notEqual(r4.memberId, '')
    const r6 = await call(node, apis.JoinGroup, 6, {
      groupId: G,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'connect',
      protocols,
    })
    assert.equal(r6.errorCode, ErrorCode.InconsistentGroupProtocol)
    assert.equal(r6.protocolName, '')
    const r7 = await call(node, apis.JoinGroup, 7, {
      groupId: G,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'connect',
      protocols,
    })
    assert.equal(r7.protocolName, null)
    node.coordinator.close()
  })

  test('LeaveGroup: v0-2 carry one member and one error; v3+ a batch', async () => {
    const node = await startNode()
    const r0 = await call(node, apis.LeaveGroup, 0, { groupId: G, memberId: 'm' })
    assert.equal(r0.errorCode, ErrorCode.UnknownMemberId)
    const joined = await callAdvancing(node, apis.JoinGroup, 3, {
      groupId: G,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'consumer',
      protocols,
    })
    const r3 = await call(node, apis.LeaveGroup, 3, {
      groupId: G,
      members: [
        { memberId: joined.memberId, groupInstanceId: null },
        { memberId: 'nobody', groupInstanceId: null },
      ],
    })
    assert.equal(r3.errorCode, ErrorCode.None)
    assert.deepEqual(
      r3.members.map((m) => m.errorCode),
      [ErrorCode.None, ErrorCode.UnknownMemberId],
    )
    const hb = await call(node, apis.Heartbeat, 0, { groupId: G, generationId: 1, memberId: joined.memberId })
    assert.equal(hb.errorCode, ErrorCode.UnknownMemberId)
    node.coordinator.close()
  })

  test('OffsetCommit and OffsetFetch across versions: v2 commits, leader epochs from v5, groups from v8', async () => {
    const node = await startNode()
    // The oldest version Kafka 4.0 serves, as a simple consumer (no generation, no member).
    const c2 = await call(node, apis.OffsetCommit, 2, {
      groupId: G,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      retentionTimeMs: -1n,
      topics: [
        { name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: 5n, committedMetadata: 'm' }] },
        {
          name: 'ghost' as TopicName,
          partitions: [{ partitionIndex: 0, committedOffset: 1n, committedMetadata: null }],
        },
      ],
    })
    assert.deepEqual(
      c2.topics.map((t) => [t.name, t.partitions[0]!.errorCode]),
      [
        [TOPIC, ErrorCode.None],
        ['ghost', ErrorCode.UnknownTopicOrPartition],
      ],
    )
    const c6 = await call(node, apis.OffsetCommit, 6, {
      groupId: G,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: TOPIC,
          partitions: [
            { partitionIndex: 1, committedOffset: 9n, committedLeaderEpoch: 4, committedMetadata: null },
          ],
        },
      ],
    })
    assert.equal(c6.topics[0]!.partitions[0]!.errorCode, ErrorCode.None)
    const f1 = await call(node, apis.OffsetFetch, 1, {
      groupId: G,
      topics: [{ name: TOPIC, partitionIndexes: [0, 1, 2] }],
    })
    assert.deepEqual(
      f1.topics[0]!.partitions.map((p) => [p.partitionIndex, p.committedOffset, p.metadata]),
      [
        [0, 5n, 'm'],
        [1, 9n, ''],
        [2, -1n, ''],
      ],
    )
    const f5 = await call(node, apis.OffsetFetch, 5, { groupId: G, topics: null })
    assert.equal(f5.errorCode, ErrorCode.None)
    assert.deepEqual(
      f5.topics[0]!.partitions.map((p) => [p.partitionIndex, p.committedLeaderEpoch]),
      [
        [0, -1],
        [1, 4],
      ],
    )
    const f8 = await call(node, apis.OffsetFetch, 8, {
      groups: [
        { groupId: G, topics: null },
        { groupId: 'none' as GroupId, topics: [{ name: TOPIC, partitionIndexes: [0] }] },
      ],
      requireStable: true,
    })
    assert.deepEqual(
      f8.groups.map((g) => [g.groupId, g.topics.flatMap((t) => t.partitions.map((p) => p.committedOffset))]),
      [
        [G, [5n, 9n]],
        ['none', [-1n]],
      ],
    )
    node.coordinator.onResignation(0)
    const lost1 = await call(node, apis.OffsetFetch, 1, {
      groupId: G,
      topics: [{ name: TOPIC, partitionIndexes: [0] }],
    })
    assert.equal(
      lost1.topics[0]!.partitions[0]!.errorCode,
      ErrorCode.NotCoordinator,
      'v0-1: at partition level',
    )
    const lost2 = await call(node, apis.OffsetFetch, 2, { groupId: G, topics: null })
    assert.equal(lost2.errorCode, ErrorCode.NotCoordinator)
    node.coordinator.close()
  })

  test('TxnOffsetCommit: pending (UNSTABLE_OFFSET_COMMIT with requireStable, unseen without) until the COMMIT marker', async () => {
    const node = await startNode()
    const txn = {
      transactionalId: 'tx' as never,
      groupId: G,
      producerId: 7n as never,
      producerEpoch: 2,
    }
    const t3 = await call(node, apis.TxnOffsetCommit, 3, {
      ...txn,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [
        {
          name: TOPIC,
          partitions: [
            { partitionIndex: 0, committedOffset: 12n, committedLeaderEpoch: 1, committedMetadata: 'x' },
            { partitionIndex: 7, committedOffset: 1n, committedMetadata: null },
          ],
        },
      ],
    })
    assert.deepEqual(
      t3.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode]),
      [
        [0, ErrorCode.None],
        [7, ErrorCode.UnknownTopicOrPartition],
      ],
    )
    const stable = (version: number) =>
      call(
        node,
        apis.OffsetFetch,
        version,
        version >= 8
          ? {
              groups: [{ groupId: G, topics: [{ name: TOPIC, partitionIndexes: [0, 1] }] }],
              requireStable: true,
            }
          : { groupId: G, topics: [{ name: TOPIC, partitionIndexes: [0, 1] }], requireStable: true },
      )
    const f7 = await stable(7)
    assert.equal(f7.errorCode, ErrorCode.None)
    assert.deepEqual(
      f7.topics[0]!.partitions.map((p) => [p.committedOffset, p.errorCode]),
      [
        [-1n, ErrorCode.UnstableOffsetCommit],
        [-1n, ErrorCode.None],
      ],
    )
    const f8 = await stable(8)
    assert.equal(f8.groups[0]!.errorCode, ErrorCode.None, 'per partition, not for the group')
    assert.equal(f8.groups[0]!.topics[0]!.partitions[0]!.errorCode, ErrorCode.UnstableOffsetCommit)
    const plain = await call(node, apis.OffsetFetch, 6, { groupId: G, topics: null })
    assert.deepEqual(plain.topics, [], 'not visible before the marker')
    // A member's commit with a generation the group does not have (KIP-447, v3+).
    const fenced = await call(node, apis.TxnOffsetCommit, 3, {
      ...txn,
      generationId: 4,
      memberId: 'm',
      groupInstanceId: null,
      topics: [
        { name: TOPIC, partitions: [{ partitionIndex: 1, committedOffset: 1n, committedMetadata: null }] },
      ],
    })
    assert.equal(fenced.topics[0]!.partitions[0]!.errorCode, ErrorCode.UnknownMemberId)
    await node.coordinator.completeTransaction(0, 7n, true)
    const after = await stable(7)
    assert.deepEqual(
      after.topics[0]!.partitions.map((p) => [
        p.committedOffset,
        p.committedLeaderEpoch,
        p.metadata,
        p.errorCode,
      ]),
      [
        [12n, 1, 'x', ErrorCode.None],
        [-1n, -1, '', ErrorCode.None],
      ],
    )
    // A partition about to load here: COORDINATOR_LOAD_IN_PROGRESS, which v0-1 clients get as
    // COORDINATOR_NOT_AVAILABLE (they predate KAFKA-7296).
    const loading = new GroupCoordinator({
      config: DEFAULT_GROUP_CONFIG,
      partitionCount: 1,
      retentionCheckIntervalMs: 600_000,
      log: new LocalOffsetsLog(() => undefined),
      clock: node.clock,
      random: new SeededRandom(1),
      leadsPartition: () => true,
    })
    const registry = new HandlerRegistry()
    registry.register(
      makeTxnOffsetCommitHandler({
        commitTransactionalOffsets: (i) => loading.commitTransactionalOffsets(i),
        partitionExists: () => true,
      }),
    )
    const loadingNode = { ...node, dispatcher: new Dispatcher(registry), coordinator: loading }
    const body = {
      ...txn,
      topics: [
        { name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: 1n, committedMetadata: null }] },
      ],
    }
    for (const [version, errorCode] of [
      [0, ErrorCode.CoordinatorNotAvailable],
      [1, ErrorCode.CoordinatorNotAvailable],
      [2, ErrorCode.CoordinatorLoadInProgress],
    ] as const) {
      const r = await call(loadingNode, apis.TxnOffsetCommit, version, body)
      assert.equal(r.topics[0]!.partitions[0]!.errorCode, errorCode, `v${version}`)
    }
    loading.close()
    node.coordinator.onResignation(0)
    const v0 = await call(node, apis.TxnOffsetCommit, 0, {
      ...txn,
      topics: [
        { name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: 1n, committedMetadata: null }] },
      ],
    })
    assert.equal(v0.topics[0]!.partitions[0]!.errorCode, ErrorCode.NotCoordinator)
    node.coordinator.close()
  })

  test('ListGroups filters by state from v4; DeleteGroups and OffsetDelete answer per group and partition', async () => {
    const node = await startNode()
    await call(node, apis.OffsetCommit, 2, {
      groupId: G,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      retentionTimeMs: -1n,
      topics: [
        { name: TOPIC, partitions: [{ partitionIndex: 0, committedOffset: 1n, committedMetadata: '' }] },
      ],
    })
    const l0 = await call(node, apis.ListGroups, 0, {})
    assert.deepEqual(
      l0.groups.map((g) => [g.groupId, g.protocolType]),
      [[G, '']],
    )
    const l4 = await call(node, apis.ListGroups, 4, { statesFilter: ['Stable'] })
    assert.deepEqual(l4.groups, [])
    const l5 = await call(node, apis.ListGroups, 5, { statesFilter: ['empty'], typesFilter: ['classic'] })
    assert.deepEqual(
      l5.groups.map((g) => [g.groupId, g.groupState, g.groupType]),
      [[G, 'Empty', 'classic']],
    )
    const od = await call(node, apis.OffsetDelete, 0, {
      groupId: G,
      topics: [
        { name: TOPIC, partitions: [{ partitionIndex: 0 }] },
        { name: 'ghost' as TopicName, partitions: [{ partitionIndex: 0 }] },
      ],
    })
    assert.equal(od.errorCode, ErrorCode.None)
    assert.deepEqual(
      od.topics.map((t) => t.partitions[0]!.errorCode),
      [ErrorCode.None, ErrorCode.UnknownTopicOrPartition],
    )
    const dg = await call(node, apis.DeleteGroups, 0, { groupsNames: [G, 'missing' as GroupId] })
    assert.deepEqual(
      dg.results.map((r) => [r.groupId, r.errorCode]),
      [
        [G, ErrorCode.None],
        ['missing', ErrorCode.GroupIdNotFound],
      ],
    )
    const sync = await call(node, apis.SyncGroup, 0, {
      groupId: G,
      generationId: 1,
      memberId: 'm',
      assignments: [],
    })
    assert.equal(sync.errorCode, ErrorCode.UnknownMemberId)
    node.coordinator.close()
  })
})
