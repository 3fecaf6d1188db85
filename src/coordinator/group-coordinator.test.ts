import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ManualClock, SeededRandom, SimDisk } from '../io/index.ts'
import type { GroupId, TopicName } from '../model/index.ts'
import { ControlRecordType, decodeBatch, ErrorCode, encodeEndTxnMarkerBatch } from '../protocol/index.ts'
import { DEFAULT_LOG_CONFIG, PartitionLog } from '../storage/index.ts'
import {
  type CoordinatorRecord,
  decodeRecord,
  decodeRecordBatches,
  encodeRecordBatch,
  encodeRecordKey,
  encodeRecordValue,
} from './coordinator-records.ts'
import { GroupState } from './group.ts'
import { GroupCoordinator } from './group-coordinator.ts'
import { DEFAULT_GROUP_CONFIG, type JoinInput } from './group-state-machine.ts'
import { javaStringHashCode, partitionForGroup } from './java-hash.ts'
import { LocalOffsetsLog, type OffsetsLog } from './offsets-log.ts'

const T = 'orders' as TopicName
const START_MS = 1_700_000_000_000

describe('java-hash', () => {
  test('String.hashCode and the partition of a group are Java and Kafka’s', () => {
    // Values printed by Java 17 for the same strings.
    const cases: [string, number, number][] = [
      ['my-group', -1906497762, 12],
      ['', 0, 0],
      ['test-group', 627841412, 12],
      ['console-consumer-12345', 158455506, 6],
      ['été-😀', -1803456526, 26],
      ['polygenelubricants', -2147483648, 0],
      ['DESIGNING WORKHOUSES', -2147483648, 0],
    ]
    for (const [s, hash, partition] of cases) {
      assert.equal(javaStringHashCode(s), hash, s)
      assert.equal(partitionForGroup(s, 50), partition, s)
    }
  })
})

describe('coordinator records', () => {
  const offset: CoordinatorRecord = {
    kind: 'offset',
    groupId: 'g' as GroupId,
    topic: T,
    partition: 3,
    value: {
      offset: 42n,
      leaderEpoch: 5,
      metadata: 'm',
      commitTimestampMs: START_MS,
      expireTimestampMs: null,
    },
  }
  const group: CoordinatorRecord = {
    kind: 'group',
    groupId: 'g' as GroupId,
    value: {
      protocolType: 'consumer',
      generationId: 7,
      protocolName: 'range',
      leaderId: 'm-1',
      currentStateTimestampMs: START_MS,
      members: [
        {
          memberId: 'm-1',
          groupInstanceId: 'i-1',
          clientId: 'c',
          clientHost: '/127.0.0.1',
          rebalanceTimeoutMs: 30_000,
          sessionTimeoutMs: 10_000,
          subscription: Buffer.from([0, 1]),
          assignment: Buffer.from([2, 3]),
        },
      ],
    },
  }

  test('keys carry Kafka’s record type as their version: 1 for offsets, 2 for groups', () => {
    assert.equal(encodeRecordKey(offset).readInt16BE(0), 1)
    assert.equal(encodeRecordKey(group).readInt16BE(0), 2)
    assert.equal(encodeRecordValue(offset)!.readInt16BE(0), 3)
    assert.equal(encodeRecordValue(group)!.readInt16BE(0), 3)
    const expiring = {
      ...offset,
      value: { ...offset.value!, expireTimestampMs: START_MS + 1 },
    } as CoordinatorRecord
    assert.equal(encodeRecordValue(expiring)!.readInt16BE(0), 1, 'an expire timestamp needs v1')
    // OffsetCommitKey v1: int16 version, string group, string topic, int32 partition.
    assert.deepEqual(
      encodeRecordKey(offset),
      Buffer.from([0, 1, 0, 1, 0x67, 0, 6, ...Buffer.from('orders'), 0, 0, 0, 3]),
    )
  })

  test('records decode to what was encoded; tombstones have no value; other types are foreign', () => {
    for (const r of [offset, group]) {
      assert.deepEqual(decodeRecord(encodeRecordKey(r), encodeRecordValue(r)), r)
      const tomb = { ...r, value: null } as CoordinatorRecord
      assert.equal(encodeRecordValue(tomb), null)
      assert.deepEqual(decodeRecord(encodeRecordKey(tomb), null), tomb)
    }
    assert.deepEqual(decodeRecord(Buffer.from([0, 3, 0, 0]), null), { kind: 'foreign', keyVersion: 3 })
  })

  test('a batch decodes back with offsets, one record per entry', () => {
    const batch = encodeRecordBatch([offset, group, { ...offset, value: null }], START_MS)
    const header = decodeBatch(batch).header
    assert.equal(header.producerId, -1n)
    assert.equal(header.maxTimestamp, BigInt(START_MS))
    const { records, nextOffset } = decodeRecordBatches(batch)
    assert.equal(nextOffset, 3n)
    assert.deepEqual(
      records.map((r) => [r.offset, r.record.kind]),
      [
        [0n, 'offset'],
        [1n, 'group'],
        [2n, 'offset'],
      ],
    )
  })
})

/** One `__consumer_offsets` partition (partition 0 of 1) on a simulated disk. */
async function openLog(disk: SimDisk, clock: ManualClock): Promise<PartitionLog> {
  if (!(await disk.exists('/data'))) {
    await disk.mkdir('/data')
    await disk.syncDir('/')
  }
  return PartitionLog.open('/data/__consumer_offsets-0', DEFAULT_LOG_CONFIG, { disk, clock })
}

function coordinator(
  log: OffsetsLog,
  clock: ManualClock,
  partitionCount = 1,
  leadsPartition?: (partition: number) => boolean,
): GroupCoordinator {
  return new GroupCoordinator({
    config: { ...DEFAULT_GROUP_CONFIG, initialRebalanceDelayMs: 100, offsetsRetentionMs: 3_600_000 },
    partitionCount,
    retentionCheckIntervalMs: 600_000,
    log,
    clock,
    random: new SeededRandom(3),
    ...(leadsPartition === undefined ? {} : { leadsPartition }),
  })
}

function joinInput(over: Partial<JoinInput> = {}): JoinInput {
  return {
    groupId: 'g' as GroupId,
    memberId: '',
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('sub') }],
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 20_000,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    apiVersion: 5,
    reason: null,
    ...over,
  }
}

/** Lets promise chains (disk writes) run; the ManualClock moves only when told. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => queueMicrotask(r))
  await new Promise<void>((r) => setImmediate(r))
}

/** Joins the way a client does (v5: MEMBER_ID_REQUIRED first), through the initial delay. */
async function joinAndSync(
  c: GroupCoordinator,
  clock: ManualClock,
  over: Partial<JoinInput> = {},
): Promise<{ memberId: string; generationId: number }> {
  let input = joinInput(over)
  if (input.groupInstanceId === null) {
    const first = await c.joinGroup(input)
    assert.equal(first.errorCode, ErrorCode.MemberIdRequired)
    input = { ...input, memberId: first.memberId }
  }
  const joined = c.joinGroup(input)
  await settle()
  clock.advance(100)
  const r = await joined
  assert.equal(r.errorCode, ErrorCode.None)
  const sync = await c.syncGroup({
    groupId: input.groupId,
    generationId: r.generationId,
    memberId: r.memberId,
    groupInstanceId: input.groupInstanceId,
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: [{ memberId: r.memberId, assignment: Buffer.from('all') }],
    apiVersion: 5,
  })
  assert.equal(sync.errorCode, ErrorCode.None)
  return { memberId: r.memberId, generationId: r.generationId }
}

describe('GroupCoordinator on a PartitionLog', () => {
  test('serves only partitions it leads, once loaded', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const offsetsLog = new LocalOffsetsLog((p) => (p === 0 ? log : undefined))
    const groups = [...Array(20).keys()].map((i) => `group-${i}` as GroupId)
    const writer = coordinator(offsetsLog, clock, 2)
    const mine = groups.find((g) => writer.partitionFor(g) === 0)!
    const other = groups.find((g) => writer.partitionFor(g) === 1)!
    await writer.onElection(0, 0)
    await writer.commitOffsets({
      groupId: mine,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1,
      apiVersion: 8,
      topics: [
        {
          name: T,
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 1n,
              committedLeaderEpoch: -1,
              commitTimestamp: -1n,
              committedMetadata: '',
            },
          ],
        },
      ],
    })
    writer.close()

    const c = coordinator(offsetsLog, clock, 2)
    assert.equal(c.statusOf(mine), ErrorCode.NotCoordinator)
    const loading = c.onElection(0, 1)
    assert.equal(c.statusOf(mine), ErrorCode.CoordinatorLoadInProgress)
    assert.equal(
      (await c.joinGroup(joinInput({ groupId: mine }))).errorCode,
      ErrorCode.CoordinatorLoadInProgress,
    )
    assert.equal(c.fetchOffsets(mine, null).errorCode, ErrorCode.CoordinatorLoadInProgress)
    assert.equal(c.listGroups([], []).errorCode, ErrorCode.CoordinatorLoadInProgress)
    await loading
    assert.equal(c.statusOf(mine), ErrorCode.None)
    assert.equal(c.fetchOffsets(mine, null).topics.length, 1)
    assert.equal(c.statusOf(other), ErrorCode.NotCoordinator)
    assert.equal(
      c.heartbeat({ groupId: other, memberId: 'm', generationId: 1, groupInstanceId: null }),
      ErrorCode.NotCoordinator,
    )
    assert.equal(c.describeGroups([other], false)[0]!.errorCode, ErrorCode.NotCoordinator)
    c.close()
  })

  test('a partition the metadata already names it leader of, not yet elected here: LOAD_IN_PROGRESS, not NOT_COORDINATOR', async () => {
    // In a cluster another broker's FindCoordinator can send a client here before this broker's
    // replica manager elected the partition into the coordinator; librdkafka's committed() fails
    // on NOT_COORDINATOR but retries COORDINATOR_LOAD_IN_PROGRESS.
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const c = coordinator(new LocalOffsetsLog((p) => (p === 0 ? log : undefined)), clock, 2, (p) => p === 0)
    const groups = [...Array(20).keys()].map((i) => `group-${i}` as GroupId)
    const mine = groups.find((g) => c.partitionFor(g) === 0)!
    const other = groups.find((g) => c.partitionFor(g) === 1)!
    assert.equal(c.statusOf(mine), ErrorCode.CoordinatorLoadInProgress)
    assert.equal(c.fetchOffsets(mine, null).errorCode, ErrorCode.CoordinatorLoadInProgress)
    assert.equal(
      (await c.joinGroup(joinInput({ groupId: mine }))).errorCode,
      ErrorCode.CoordinatorLoadInProgress,
    )
    assert.equal(c.statusOf(other), ErrorCode.NotCoordinator, 'led elsewhere: NOT_COORDINATOR')
    assert.equal(c.fetchOffsets(other, null).errorCode, ErrorCode.NotCoordinator)
    await c.onElection(0, 0)
    assert.equal(c.statusOf(mine), ErrorCode.None)
    c.close()
  })

  test('groups and offsets are records in the log and come back after a restart', async () => {
    const disk = new SimDisk()
    const clock = new ManualClock({ nowMs: START_MS })
    let log = await openLog(disk, clock)
    let c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 0)
    const g = 'g' as GroupId
    const { memberId, generationId } = await joinAndSync(c, clock, { groupInstanceId: 'static-1' })
    const committed = await c.commitOffsets({
      groupId: g,
      generationId,
      memberId,
      groupInstanceId: 'static-1',
      retentionTimeMs: -1,
      apiVersion: 8,
      topics: [
        {
          name: T,
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 10n,
              committedLeaderEpoch: 2,
              commitTimestamp: -1n,
              committedMetadata: 'x',
            },
            {
              partitionIndex: 1,
              committedOffset: 20n,
              committedLeaderEpoch: -1,
              commitTimestamp: -1n,
              committedMetadata: null,
            },
          ],
        },
      ],
    })
    assert.deepEqual(
      committed.flatMap((t) => t.partitions!.map((p) => p.errorCode)),
      [ErrorCode.None, ErrorCode.None],
    )
    // The log holds what Kafka would write: group metadata (key v2) and offsets (key v1).
    const read = await log.read(0n, 1 << 20)
    assert.ok(read.errorCode === 0)
    const kinds = decodeRecordBatches(read.records).records.map((r) => r.record.kind)
    assert.deepEqual(kinds, ['group', 'offset', 'offset'])

    // A broker restart: the log is reopened from disk and the partition loaded again.
    c.close()
    await log.close()
    log = await openLog(disk, clock)
    c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 1)
    const fetched = c.fetchOffsets(g, null)
    assert.deepEqual(
      fetched.topics.flatMap((t) =>
        t.partitions!.map((p) => [p.partitionIndex, p.committedOffset, p.committedLeaderEpoch, p.metadata]),
      ),
      [
        [0, 10n, 2, 'x'],
        [1, 20n, -1, ''],
      ],
    )
    const described = c.describeGroups([g], false)[0]!
    assert.equal(described.groupState, GroupState.Stable)
    assert.equal(described.members?.[0]?.memberId, memberId)
    // The static member restarts too: same generation, no rebalance, its assignment back.
    const rejoined = await c.joinGroup(joinInput({ groupInstanceId: 'static-1' }))
    assert.equal(rejoined.errorCode, ErrorCode.None)
    assert.equal(rejoined.generationId, generationId)
    const sync = await c.syncGroup({
      groupId: g,
      generationId,
      memberId: rejoined.memberId,
      groupInstanceId: 'static-1',
      protocolType: null,
      protocolName: null,
      assignments: [],
      apiVersion: 3,
    })
    assert.equal(sync.assignment.toString(), 'all')
    assert.equal(c.describeGroups([g], false)[0]!.groupState, GroupState.Stable)
    c.close()
    await log.close()
  })

  test('transactional offsets: a transactional batch in the log, pending across a restart, committed by a COMMIT marker read on load', async () => {
    const disk = new SimDisk()
    const clock = new ManualClock({ nowMs: START_MS })
    let log = await openLog(disk, clock)
    let c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 0)
    const g = 'g' as GroupId
    const txnCommit = (producerId: bigint, partition: number, offset: bigint) =>
      c.commitTransactionalOffsets({
        groupId: g,
        producerId,
        producerEpoch: 3,
        generationId: -1,
        memberId: '',
        groupInstanceId: null,
        topics: [
          {
            name: T,
            partitions: [
              {
                partitionIndex: partition,
                committedOffset: offset,
                committedLeaderEpoch: -1,
                commitTimestamp: -1n,
                committedMetadata: null,
              },
            ],
          },
        ],
      })
    const errors = (r: Awaited<ReturnType<typeof txnCommit>>) =>
      r.flatMap((t) => t.partitions!.map((p) => p.errorCode))
    assert.deepEqual(errors(await txnCommit(100n, 0, 10n)), [ErrorCode.None])
    assert.deepEqual(errors(await txnCommit(200n, 1, 20n)), [ErrorCode.None])
    const read = await log.read(0n, 1 << 20)
    assert.ok(read.errorCode === 0)
    const header = decodeBatch(read.records).header
    assert.deepEqual(
      [header.producerId, header.producerEpoch, header.baseSequence, (header.attributes >> 4) & 1],
      [100n, 3, 0, 1],
      'the producer id and epoch, sequence 0, the transactional bit',
    )
    const stable = async () =>
      (await c.fetchStableOffsets(g, [{ name: T, partitionIndexes: [0, 1] }])).topics[0]!.partitions!.map(
        (p) => [p.committedOffset, p.errorCode],
      )
    assert.deepEqual(await stable(), [
      [-1n, ErrorCode.UnstableOffsetCommit],
      [-1n, ErrorCode.UnstableOffsetCommit],
    ])
    // Producer 100 commits: its marker is appended, as WriteTxnMarkers does, then applied.
    const marker = (producerId: bigint, type: 0 | 1) =>
      log.append(
        encodeEndTxnMarkerBatch({
          marker: { type, coordinatorEpoch: 0 },
          producerId,
          producerEpoch: 3,
          timestamp: BigInt(START_MS),
        }),
        { origin: 'coordinator', flush: true },
      )
    assert.equal((await marker(100n, ControlRecordType.commit)).errorCode, ErrorCode.None)
    await c.completeTransaction(0, 100n, true)
    await c.completeTransaction(0, 100n, true)
    assert.deepEqual(await stable(), [
      [10n, ErrorCode.None],
      [-1n, ErrorCode.UnstableOffsetCommit],
    ])

    // A restart: producer 200's transaction is still open.
    c.close()
    await log.close()
    log = await openLog(disk, clock)
    c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 1)
    assert.deepEqual(await stable(), [
      [10n, ErrorCode.None],
      [-1n, ErrorCode.UnstableOffsetCommit],
    ])
    assert.equal((await marker(200n, ControlRecordType.abort)).errorCode, ErrorCode.None)
    // Its marker arrives while the partition loads again: applied after the load.
    c.onResignation(0)
    const loading = c.onElection(0, 2)
    const completed = c.completeTransaction(0, 200n, false)
    await loading
    await completed
    assert.deepEqual(await stable(), [
      [10n, ErrorCode.None],
      [-1n, ErrorCode.None],
    ])
    c.close()
    await log.close()
    log = await openLog(disk, clock)
    c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 3)
    assert.deepEqual(
      await stable(),
      [
        [10n, ErrorCode.None],
        [-1n, ErrorCode.None],
      ],
      'the ABORT marker read on load',
    )
    c.close()
    await log.close()
  })

  test('a crash loses nothing that was acknowledged (appends wait for the fsync)', async () => {
    const disk = new SimDisk()
    const clock = new ManualClock({ nowMs: START_MS })
    let log = await openLog(disk, clock)
    let c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 0)
    const g = 's' as GroupId
    for (let i = 0; i < 5; i++) {
      await c.commitOffsets({
        groupId: g,
        generationId: -1,
        memberId: '',
        groupInstanceId: null,
        retentionTimeMs: -1,
        apiVersion: 2,
        topics: [
          {
            name: T,
            partitions: [
              {
                partitionIndex: 0,
                committedOffset: BigInt(i),
                committedLeaderEpoch: -1,
                commitTimestamp: -1n,
                committedMetadata: '',
              },
            ],
          },
        ],
      })
    }
    c.close()
    disk.crash()
    log = await openLog(disk, clock)
    c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 1)
    assert.equal(
      c.fetchOffsets(g, [{ name: T, partitionIndexes: [0] }]).topics[0]!.partitions![0]!.committedOffset,
      4n,
    )
    c.close()
  })

  test('DeleteGroups and OffsetDelete write tombstones that loading honours', async () => {
    const disk = new SimDisk()
    const clock = new ManualClock({ nowMs: START_MS })
    let log = await openLog(disk, clock)
    let c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 0)
    const commit = (groupId: string, partitionIndex: number) =>
      c.commitOffsets({
        groupId: groupId as GroupId,
        generationId: -1,
        memberId: '',
        groupInstanceId: null,
        retentionTimeMs: -1,
        apiVersion: 8,
        topics: [
          {
            name: T,
            partitions: [
              {
                partitionIndex,
                committedOffset: 1n,
                committedLeaderEpoch: -1,
                commitTimestamp: -1n,
                committedMetadata: '',
              },
            ],
          },
        ],
      })
    await commit('a', 0)
    await commit('b', 0)
    await commit('b', 1)
    assert.deepEqual(await c.deleteGroups(['a' as GroupId, 'zz' as GroupId]), [
      { groupId: 'a', errorCode: ErrorCode.None },
      { groupId: 'zz', errorCode: ErrorCode.GroupIdNotFound },
    ])
    const od = await c.deleteOffsets({
      groupId: 'b' as GroupId,
      topics: [{ name: T, partitions: [{ partitionIndex: 1 }] }],
    })
    assert.equal(od.errorCode, ErrorCode.None)
    c.close()
    await log.close()
    log = await openLog(disk, clock)
    c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 1)
    assert.deepEqual(
      c.listGroups([], []).groups.map((g) => g.groupId),
      ['b'],
    )
    assert.deepEqual(
      c.fetchOffsets('b' as GroupId, null).topics.flatMap((t) => t.partitions!.map((p) => p.partitionIndex)),
      [0],
    )
    c.close()
  })

  test('the retention sweep runs on its timer and expires offsets of a simple group', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 0)
    await c.commitOffsets({
      groupId: 's' as GroupId,
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1,
      apiVersion: 8,
      topics: [
        {
          name: T,
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 1n,
              committedLeaderEpoch: -1,
              commitTimestamp: -1n,
              committedMetadata: '',
            },
          ],
        },
      ],
    })
    clock.advance(3_600_000) // the sweeps at 10, 20, ... minutes; the last at 60 minutes expires it
    await settle()
    assert.deepEqual(c.fetchOffsets('s' as GroupId, null).topics, [])
    clock.advance(600_000) // the next sweep deletes the empty group with no offsets
    await settle()
    assert.deepEqual(c.listGroups([], []).groups, [])
    c.close()
  })

  test('resigning answers waiting JoinGroups NOT_COORDINATOR; a failing log makes loading retry', async () => {
    const clock = new ManualClock({ nowMs: START_MS })
    const log = await openLog(new SimDisk(), clock)
    const c = coordinator(new LocalOffsetsLog(() => log), clock)
    await c.onElection(0, 0)
    const first = await c.joinGroup(joinInput())
    const waiting = c.joinGroup(joinInput({ memberId: first.memberId }))
    await settle()
    c.onResignation(0)
    assert.equal((await waiting).errorCode, ErrorCode.NotCoordinator)
    assert.equal(c.statusOf('g' as GroupId), ErrorCode.NotCoordinator)

    let failures = 2
    const flaky: OffsetsLog = {
      append: (p, b) => new LocalOffsetsLog(() => log).append(p, b),
      bounds: () => ({ logStartOffset: 0n, highWatermark: 1n }),
      read: async (p, o, m) => {
        if (failures-- > 0) return { errorCode: ErrorCode.KafkaStorageError }
        return new LocalOffsetsLog(() => log).read(p, o, m)
      },
    }
    const d = coordinator(flaky, clock)
    const loaded = d.onElection(0, 5)
    await settle()
    assert.equal(d.statusOf('g' as GroupId), ErrorCode.CoordinatorLoadInProgress)
    clock.advance(1000)
    await settle()
    clock.advance(1000)
    await loaded
    assert.equal(d.statusOf('g' as GroupId), ErrorCode.None)
    d.close()
    c.close()
  })
})
