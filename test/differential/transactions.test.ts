/**
 * Differential: the transaction APIs as a version-1 client sends them (InitProducerId,
 * AddPartitionsToTxn v3, AddOffsetsToTxn, TxnOffsetCommit, EndTxn v4, transactional Produce v11),
 * the same requests to Kafka 4.0 and to Weir: FindCoordinator of transactional ids, epoch bumps,
 * fencing, KIP-360 recovery, empty and repeated EndTxn, DescribeTransactions and ListTransactions
 * with their filters, a transaction the coordinator aborts on its timeout, and WriteTxnMarkers from a
 * principal without CLUSTER_ACTION (StandardAuthorizer; ANONYMOUS a super user). Producer ids are
 * aliased per side (the harness's masks), start times ignored.
 */
import { after, before } from 'node:test'
import type { GroupId, ProducerId, TopicName, TransactionalId } from '../../src/model/index.ts'
import { apis, encodeBatch, type ListTransactionsRequestData } from '../../src/protocol/index.ts'
import { Pair, type Side, scenario } from './harness.ts'

let pair: Pair

const TOPIC = 'txn-api' as TopicName
const GROUP = 'txn-api-group' as GroupId
const id = (name: string) => name as TransactionalId
const CONCURRENT_TRANSACTIONS = 51
const START_TIME = ['*transactionStartTimeMs']

before(async () => {
  pair = await Pair.start(
    'transactions',
    {
      'transaction.max.timeout.ms': '120000',
      // The timed-out transaction below is aborted within a second on both sides.
      'transaction.abort.timed.out.transaction.cleanup.interval.ms': '200',
      // The PLAINTEXT listener's ANONYMOUS may do anything; `client` (SASL) has no ACL.
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'super.users': 'User:ANONYMOUS',
    },
    { saslUsers: { client: 'client-secret' } },
  )
  await pair.each(apis.CreateTopics, pair.version(apis.CreateTopics), {
    topics: [{ name: TOPIC, numPartitions: 2, replicationFactor: 1 }],
    timeoutMs: 30_000,
  })
  await pair.waitForTopic(TOPIC, 2)
})

after(async () => {
  await pair?.stop()
})

/** What each side's coordinator gave a transactional id. */
type Producer = Record<Side, { producerId: ProducerId; producerEpoch: number }>

const init = async (
  step: string,
  transactionalId: TransactionalId,
  o: { timeoutMs?: number; from?: Producer; until?: boolean } = {},
): Promise<Producer> => {
  const res = await pair.both(
    step,
    apis.InitProducerId,
    pair.version(apis.InitProducerId),
    (side) => ({
      transactionalId,
      transactionTimeoutMs: o.timeoutMs ?? 60_000,
      producerId: o.from?.[side].producerId ?? (-1n as ProducerId),
      producerEpoch: o.from?.[side].producerEpoch ?? -1,
    }),
    // Until the id's __transaction_state partition is loaded both answer a retriable error.
    o.until === true ? { until: (r) => r.errorCode === 0, timeoutMs: 30_000 } : {},
  )
  return {
    kafka: { producerId: res.kafka.producerId, producerEpoch: res.kafka.producerEpoch },
    weir: { producerId: res.weir.producerId, producerEpoch: res.weir.producerEpoch },
  }
}

const addPartitions = (
  step: string,
  transactionalId: TransactionalId,
  p: Producer,
  topics: { name: TopicName; partitions: number[] }[],
  epochDelta = 0,
) =>
  pair.both(step, apis.AddPartitionsToTxn, 3, (side) => ({
    v3AndBelowTransactionalId: transactionalId,
    v3AndBelowProducerId: p[side].producerId,
    v3AndBelowProducerEpoch: p[side].producerEpoch + epochDelta,
    v3AndBelowTopics: topics,
  }))

const endTxn = (
  step: string,
  transactionalId: TransactionalId,
  p: Producer,
  committed: boolean,
  o: { epochDelta?: number; retry?: boolean } = {},
) =>
  pair.both(
    step,
    apis.EndTxn,
    4,
    (side) => ({
      transactionalId,
      producerId: p[side].producerId,
      producerEpoch: p[side].producerEpoch + (o.epochDelta ?? 0),
      committed,
    }),
    // While the previous EndTxn's markers are being written both answer CONCURRENT_TRANSACTIONS.
    o.retry === true ? { until: (r) => r.errorCode !== CONCURRENT_TRANSACTIONS } : {},
  )

const describe = (step: string, ids: TransactionalId[], until?: string) =>
  pair.both(
    step,
    apis.DescribeTransactions,
    0,
    { transactionalIds: ids },
    {
      ignore: START_TIME,
      ...(until === undefined
        ? {}
        : { until: (r) => r.transactionStates.every((s) => s.transactionState === until) }),
    },
  )

const produce = (step: string, transactionalId: TransactionalId, p: Producer) =>
  pair.both(step, apis.Produce, 11, (side) => ({
    transactionalId,
    acks: -1,
    timeoutMs: 10_000,
    topicData: [
      {
        name: TOPIC,
        partitionData: [
          {
            index: 0,
            records: encodeBatch({
              records: [{ key: Buffer.from('k'), value: Buffer.from('v'), timestamp: 1_700_000_000_000n }],
              producerId: p[side].producerId,
              producerEpoch: p[side].producerEpoch,
              baseSequence: 0,
              transactional: true,
            }),
          },
        ],
      },
    ],
  }))

scenario(
  'FindCoordinator of transactional ids',
  () => pair,
  async () => {
    const v = pair.version(apis.FindCoordinator)
    // The first ask creates __transaction_state; the answer compared is the one once it leads.
    await pair.both(
      'txn/find-coordinator',
      apis.FindCoordinator,
      v,
      { keyType: 1, coordinatorKeys: ['txn-a'] },
      { until: (r) => r.coordinators.every((c) => c.errorCode === 0), timeoutMs: 30_000 },
    )
    await pair.waitForTopic('__transaction_state', 1)
    await pair.both('txn/find-coordinator-batched', apis.FindCoordinator, v, {
      keyType: 1,
      coordinatorKeys: ['txn-a', 'txn-b', 'txn-c'],
    })
    await pair.both('txn/find-coordinator-empty-key', apis.FindCoordinator, v, {
      keyType: 1,
      coordinatorKeys: ['', 'txn-a'],
    })
    await pair.both('txn/find-coordinator-bad-key-type', apis.FindCoordinator, v, {
      keyType: 9,
      coordinatorKeys: ['txn-a'],
    })
    await pair.both('txn/find-coordinator-v3', apis.FindCoordinator, 3, { key: 'txn-a', keyType: 1 })
  },
)

scenario(
  'InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, Describe and List',
  () => pair,
  async () => {
    const A = id('txn-a')
    const first = await init('txn/init', A, { until: true })
    const p = await init('txn/init-again', A)
    await init('txn/init-timeout-over-max', A, { timeoutMs: 120_001 })
    await addPartitions('txn/add-partitions', A, p, [{ name: TOPIC, partitions: [0, 1] }])
    await addPartitions('txn/add-partitions-twice', A, p, [{ name: TOPIC, partitions: [0] }])
    await addPartitions('txn/add-partitions-unknown-topic', A, p, [
      { name: TOPIC, partitions: [1] },
      { name: 'txn-nowhere' as TopicName, partitions: [0] },
    ])
    await addPartitions('txn/add-partitions-old-epoch', A, p, [{ name: TOPIC, partitions: [0] }], -1)
    await addPartitions('txn/add-partitions-future-epoch', A, p, [{ name: TOPIC, partitions: [0] }], 1)
    await addPartitions('txn/add-partitions-unknown-id', id('txn-never'), p, [
      { name: TOPIC, partitions: [0] },
    ])
    await produce('txn/produce', A, p)
    await pair.both('txn/add-offsets', apis.AddOffsetsToTxn, pair.version(apis.AddOffsetsToTxn), (side) => ({
      transactionalId: A,
      producerId: p[side].producerId,
      producerEpoch: p[side].producerEpoch,
      groupId: GROUP,
    }))
    // A client asks for the group's coordinator before its TxnOffsetCommit (the first ask creates
    // __consumer_offsets).
    await pair.both(
      'txn/find-group-coordinator',
      apis.FindCoordinator,
      pair.version(apis.FindCoordinator),
      { keyType: 0, coordinatorKeys: [GROUP] },
      { until: (r) => r.coordinators.every((c) => c.errorCode === 0), timeoutMs: 30_000 },
    )
    await pair.waitForTopic('__consumer_offsets', 1)
    // Kafka answers COORDINATOR_LOAD_IN_PROGRESS a moment after FindCoordinator names it.
    const loaded = {
      until: (r: { topics: { partitions: { errorCode: number }[] }[] }) =>
        r.topics.every((t) => t.partitions.every((p) => p.errorCode !== 14)),
    }
    const commit = (step: string, generationId: number, memberId: string) =>
      pair.both(
        step,
        apis.TxnOffsetCommit,
        pair.version(apis.TxnOffsetCommit),
        (side) => ({
          transactionalId: A,
          groupId: GROUP,
          producerId: p[side].producerId,
          producerEpoch: p[side].producerEpoch,
          generationId,
          memberId,
          groupInstanceId: null,
          topics: [
            {
              name: TOPIC,
              partitions: [
                { partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: 'm' },
              ],
            },
          ],
        }),
        loaded,
      )
    await commit('txn/txn-offset-commit', -1, '')
    await commit('txn/txn-offset-commit-unknown-member', 3, 'nobody')
    await describe('txn/describe-ongoing', [A, id('txn-unknown')])
    const list = (
      step: string,
      v: number,
      body: (side: Side) => ListTransactionsRequestData.ListTransactionsRequestIn,
    ) => pair.both(step, apis.ListTransactions, v, body)
    const lv = pair.version(apis.ListTransactions)
    await list('txn/list', 0, () => ({ stateFilters: [], producerIdFilters: [] }))
    await list('txn/list-ongoing', 0, () => ({ stateFilters: ['Ongoing', 'Bogus'], producerIdFilters: [] }))
    await list('txn/list-producer-id', 0, (side) => ({
      stateFilters: [],
      producerIdFilters: [p[side].producerId],
    }))
    if (lv >= 1) {
      await list('txn/list-duration', 1, () => ({
        stateFilters: [],
        producerIdFilters: [],
        durationFilter: 3_600_000n,
      }))
      await list('txn/list-duration-none', 1, () => ({
        stateFilters: [],
        producerIdFilters: [],
        durationFilter: -1n,
      }))
    }
    await endTxn('txn/end-old-epoch', A, p, true, { epochDelta: -1 })
    await endTxn('txn/commit', A, p, true)
    await endTxn('txn/commit-again', A, p, true, { retry: true })
    await endTxn('txn/abort-after-commit', A, p, false, { retry: true })
    await describe('txn/describe-complete', [A], 'CompleteCommit')
    // KIP-360: the current producer id and epoch bump the epoch, a stale one is fenced.
    const bumped = await init('txn/init-kip360', A, { from: p })
    await init('txn/init-kip360-stale', A, { from: first })
    // An empty transaction: nothing added.
    await endTxn('txn/commit-empty', A, bumped, true)
    await endTxn('txn/abort-empty', A, bumped, false)
    // A new producer fences the old one, which is then refused.
    const fencer = await init('txn/init-fence', A)
    await addPartitions('txn/add-partitions-fenced', A, bumped, [{ name: TOPIC, partitions: [0] }])
    await endTxn('txn/commit-fenced', A, bumped, true)
    // An InitProducerId while a transaction is open aborts it, answering CONCURRENT_TRANSACTIONS
    // until the abort is complete.
    await addPartitions('txn/add-partitions-before-init', A, fencer, [{ name: TOPIC, partitions: [1] }])
    await init('txn/init-concurrent', A)
    await init('txn/init-after-concurrent', A, { until: true })
    await describe('txn/describe-after-concurrent', [A], 'Empty')
  },
)

scenario(
  'a transaction the coordinator aborts on its timeout',
  () => pair,
  async () => {
    const T = id('txn-timeout')
    const p = await init('txn-timeout/init', T, { timeoutMs: 1_000, until: true })
    await addPartitions('txn-timeout/add-partitions', T, p, [{ name: TOPIC, partitions: [1] }])
    await describe('txn-timeout/describe-after-timeout', [T], 'CompleteAbort')
    await addPartitions('txn-timeout/add-partitions-after', T, p, [{ name: TOPIC, partitions: [1] }])
    await endTxn('txn-timeout/commit-after', T, p, true)
    await endTxn('txn-timeout/abort-after', T, p, false)
    await init('txn-timeout/init-after', T, { from: p })
  },
)

scenario(
  'WriteTxnMarkers from a client principal without CLUSTER_ACTION',
  () => pair,
  async () => {
    const client = await pair.login('client')
    const res = await Promise.all(
      (['kafka', 'weir'] as const).map((side) =>
        client[side].request(apis.WriteTxnMarkers, 1, {
          markers: [
            {
              producerId: 1n as ProducerId,
              producerEpoch: 0,
              transactionResult: true,
              topics: [{ name: TOPIC, partitionIndexes: [0] }],
              coordinatorEpoch: 0,
            },
          ],
        }),
      ),
    )
    pair.differ.compare('txn/write-txn-markers-unauthorized', 'WriteTxnMarkers', 1, res[0], res[1])
  },
)
