/**
 * The transaction coordinator over the wire, against a real `weir start`: FindCoordinator for a
 * transactional id (creating `__transaction_state`), InitProducerId twice (the second fences the
 * first: the epoch bumped), AddPartitionsToTxn, EndTxn, and DescribeTransactions and
 * ListTransactions showing each state. The markers the commit sends go to this broker itself; the
 * state is PrepareCommit until they are written, CompleteCommit after.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { partitionForGroup } from '../../src/coordinator/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { GroupId, ProducerId, type TopicName, TransactionalId } from '../../src/model/index.ts'
import { apis, ErrorCode } from '../../src/protocol/index.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'

const dir = tempDir('weir-txn-wire-')
let weir: WeirProcess | null = null
let conn: KafkaConnection | null = null
after(async () => {
  conn?.close()
  await weir?.stop()
  dir.remove()
})

const TOPIC = 'orders' as TopicName
const TXN = TransactionalId('wire-txn')

before(async () => {
  const [port, controllerPort] = await freePorts(2)
  const config = writeProperties(dir.path, 'server.properties', {
    'node.id': 1,
    'process.roles': 'broker,controller',
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'controller.listener.names': 'CONTROLLER',
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    'log.dirs': `${dir.path}/data`,
    'metadata.log.dir': `${dir.path}/metadata`,
    'offsets.topic.replication.factor': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 3,
  })
  weir = new WeirProcess(['--config', config])
  await weir.start(60_000)
  conn = await KafkaConnection.open(
    { host: '127.0.0.1', port: port! },
    {
      clientId: 'txn-wire-test',
      clock: systemClock,
      transport: nodeTransport,
      requestTimeoutMs: 15_000,
      inFlightRequestsMax: 1,
      responseBytesMax: 1 << 20,
      connectTimeoutMs: 5_000,
    },
  )
  const created = await conn.request(apis.CreateTopics, 7, {
    topics: [{ name: TOPIC, numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 10_000,
    validateOnly: false,
  })
  assert.equal(created.topics[0]?.errorCode, ErrorCode.None)
})

const describe = async () => {
  const r = await conn!.request(apis.DescribeTransactions, 0, { transactionalIds: [TXN] })
  return r.transactionStates[0]!
}

test('a transactional producer over the wire: coordinator, fencing, a commit, and the states listed', {
  timeout: 60_000,
}, async () => {
  const c = conn!
  const found = await waitFor('the transaction coordinator', async () => {
    const r = await c.request(apis.FindCoordinator, 4, { keyType: 1, coordinatorKeys: [TXN] })
    const k = r.coordinators[0]!
    return k.errorCode === ErrorCode.None ? k : undefined
  })
  assert.equal(found.nodeId, 1)
  const init = () =>
    waitFor('InitProducerId', async () => {
      const r = await c.request(apis.InitProducerId, 4, {
        transactionalId: TXN,
        transactionTimeoutMs: 60_000,
        producerId: ProducerId(-1n),
        producerEpoch: -1,
      })
      return r.errorCode === ErrorCode.CoordinatorLoadInProgress ? undefined : r
    })
  const first = await init()
  assert.equal(first.errorCode, ErrorCode.None)
  assert.equal(first.producerEpoch, 0)
  const second = await init()
  assert.equal(second.errorCode, ErrorCode.None)
  assert.equal(second.producerId, first.producerId)
  assert.equal(second.producerEpoch, 1)
  assert.equal((await describe()).transactionState, 'Empty')

  const add = (epoch: number) =>
    c.request(apis.AddPartitionsToTxn, 3, {
      v3AndBelowTransactionalId: TXN,
      v3AndBelowProducerId: first.producerId,
      v3AndBelowProducerEpoch: epoch,
      v3AndBelowTopics: [{ name: TOPIC, partitions: [0, 1] }],
    })
  // A topic that does not exist fails the request; the others are not attempted.
  const unknown = await c.request(apis.AddPartitionsToTxn, 3, {
    v3AndBelowTransactionalId: TXN,
    v3AndBelowProducerId: first.producerId,
    v3AndBelowProducerEpoch: 1,
    v3AndBelowTopics: [
      { name: TOPIC, partitions: [0] },
      { name: 'no-such-topic' as TopicName, partitions: [0] },
    ],
  })
  assert.deepEqual(
    unknown.resultsByTopicV3AndBelow.map((t) => [t.name, t.resultsByPartition[0]?.partitionErrorCode]),
    [
      [TOPIC, ErrorCode.OperationNotAttempted],
      ['no-such-topic', ErrorCode.UnknownTopicOrPartition],
    ],
  )
  assert.equal((await describe()).transactionState, 'Empty')
  const stale = await add(0)
  assert.equal(
    stale.resultsByTopicV3AndBelow[0]?.resultsByPartition[0]?.partitionErrorCode,
    ErrorCode.ProducerFenced,
  )
  const added = await add(1)
  assert.deepEqual(
    added.resultsByTopicV3AndBelow[0]?.resultsByPartition.map((p) => p.partitionErrorCode),
    [ErrorCode.None, ErrorCode.None],
  )
  const offsets = await c.request(apis.AddOffsetsToTxn, 3, {
    transactionalId: TXN,
    producerId: first.producerId,
    producerEpoch: 1,
    groupId: GroupId('wire-group'),
  })
  assert.equal(offsets.errorCode, ErrorCode.None)
  const ongoing = await describe()
  assert.equal(ongoing.transactionState, 'Ongoing')
  // AddOffsetsToTxn adds the group's __consumer_offsets partition (offsets.topic.num.partitions 50).
  assert.deepEqual(ongoing.topics, [
    { topic: '__consumer_offsets', partitions: [partitionForGroup('wire-group', 50)] },
    { topic: TOPIC, partitions: [0, 1] },
  ])
  const listed = await c.request(apis.ListTransactions, 1, {
    stateFilters: ['Ongoing'],
    producerIdFilters: [first.producerId],
    durationFilter: -1n,
  })
  assert.deepEqual(
    listed.transactionStates.map((t) => [t.transactionalId, t.transactionState]),
    [[TXN, 'Ongoing']],
  )

  const end = await c.request(apis.EndTxn, 4, {
    transactionalId: TXN,
    producerId: first.producerId,
    producerEpoch: 1,
    committed: true,
  })
  assert.equal(end.errorCode, ErrorCode.None)
  // Answered after the prepare record; the markers follow, so the state is one of the two.
  const after = await describe()
  assert.ok(['PrepareCommit', 'CompleteCommit'].includes(after.transactionState), after.transactionState)
  const byState = await c.request(apis.ListTransactions, 1, {
    stateFilters: ['PrepareCommit', 'CompleteCommit'],
    producerIdFilters: [],
    durationFilter: -1n,
  })
  assert.deepEqual(
    byState.transactionStates.map((t) => t.transactionalId),
    [TXN],
  )
  // An id the coordinator does not know: only the error is set, the rest are the schema's defaults
  // (Kafka's answer).
  const notFound = await c.request(apis.DescribeTransactions, 0, {
    transactionalIds: [TransactionalId('never-used')],
  })
  assert.deepEqual(
    { ...notFound.transactionStates[0], _unknownTaggedFields: undefined },
    {
      _unknownTaggedFields: undefined,
      errorCode: ErrorCode.TransactionalIdNotFound,
      transactionalId: 'never-used',
      transactionState: '',
      transactionTimeoutMs: 0,
      transactionStartTimeMs: 0n,
      producerId: 0n,
      producerEpoch: 0,
      topics: [],
    },
  )
})
