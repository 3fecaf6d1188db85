/**
 * Differential: transactions in the log, the same requests to Kafka 4.0 and to Weir. Transactional
 * batches of two producers (Produce v11 with KIP-890's verification off on both sides, so a
 * partition takes them without a transaction coordinator's AddPartitionsToTxn; from v12 Kafka's
 * broker asks the coordinator to add the partition itself), WriteTxnMarkers COMMIT for one and
 * ABORT for the other as a coordinator sends them, then read_committed and read_uncommitted Fetch,
 * ListOffsets and DescribeProducers, and a marker of a fenced coordinator epoch. The markers carry
 * each broker's clock (their timestamps, hence CRCs, differ): those fields are ignored.
 */
import { after, before } from 'node:test'
import type { BrokerId, ProducerId, TopicName, TransactionalId } from '../../src/model/index.ts'
import { apis, encodeBatch } from '../../src/protocol/index.ts'
import { Pair, scenario, TEST_PRODUCER_ID_MIN } from './harness.ts'

let pair: Pair

const TOPIC = 'txn-log' as TopicName
const COMMITTED = (TEST_PRODUCER_ID_MIN + 10n) as ProducerId
const ABORTED = (TEST_PRODUCER_ID_MIN + 11n) as ProducerId
const T0 = BigInt(Math.floor(Date.now() / 1000) * 1000 - 600_000)
/** The control batches' broker-clock fields (timestamps, the CRC over them, their bytes). */
const MARKER_CLOCK = ['*records*Timestamp*', '*records*crc*', '*records*timestamp*', '*records*bytes']

before(async () => {
  pair = await Pair.start('transactions-log', { 'transaction.partition.verification.enable': 'false' })
  await pair.each(apis.CreateTopics, pair.version(apis.CreateTopics), {
    topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1 }],
    timeoutMs: 30_000,
  })
  await pair.waitForTopic(TOPIC, 1)
})

after(async () => {
  await pair?.stop()
})

function txnBatch(producerId: bigint, n: number, prefix: string): Buffer {
  return encodeBatch({
    records: Array.from({ length: n }, (_, i) => ({
      key: Buffer.from(`${prefix}-k${i}`),
      value: Buffer.from(`${prefix}-v${i}`),
      timestamp: T0 + BigInt(i),
    })),
    producerId,
    producerEpoch: 0,
    baseSequence: 0,
    transactional: true,
  })
}

scenario(
  'transactions in the log',
  () => pair,
  async () => {
    const produce = (step: string, records: Buffer) =>
      pair.both(step, apis.Produce, 11, {
        transactionalId: 'differential-txn-log' as TransactionalId,
        acks: -1,
        timeoutMs: 10_000,
        topicData: [{ name: TOPIC, partitionData: [{ index: 0, records }] }],
      })
    const fetch = (step: string, isolationLevel: number, ignore: readonly string[] = []) =>
      pair.both(
        step,
        apis.Fetch,
        11,
        {
          replicaId: -1 as BrokerId,
          maxWaitMs: 0,
          minBytes: 1,
          maxBytes: 1 << 20,
          isolationLevel,
          sessionId: 0,
          sessionEpoch: -1,
          topics: [
            {
              topic: TOPIC,
              partitions: [
                {
                  partition: 0,
                  currentLeaderEpoch: -1,
                  fetchOffset: 0n,
                  lastFetchedEpoch: -1,
                  logStartOffset: -1n,
                  partitionMaxBytes: 1 << 20,
                },
              ],
            },
          ],
          forgottenTopicsData: [],
          rackId: '',
        },
        { ignore },
      )
    const latest = (step: string, isolationLevel: number) =>
      pair.both(step, apis.ListOffsets, 7, {
        replicaId: -1 as BrokerId,
        isolationLevel,
        topics: [
          { name: TOPIC, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] },
        ],
      })
    const markers = (
      step: string,
      m: { producerId: ProducerId; committed: boolean; coordinatorEpoch: number }[],
    ) =>
      pair.both(step, apis.WriteTxnMarkers, 1, {
        markers: m.map(({ producerId, committed, coordinatorEpoch }) => ({
          producerId,
          producerEpoch: 0,
          transactionResult: committed,
          topics: [{ name: TOPIC, partitionIndexes: [0] }],
          coordinatorEpoch,
        })),
      })

    await produce('txn-log/produce-committed', txnBatch(COMMITTED, 2, 'c'))
    await produce('txn-log/produce-aborted', txnBatch(ABORTED, 1, 'a'))
    await fetch('txn-log/fetch-committed-open', 1)
    await latest('txn-log/latest-committed-open', 1)
    await latest('txn-log/latest-uncommitted-open', 0)
    await pair.both('txn-log/describe-producers-open', apis.DescribeProducers, 0, {
      topics: [{ name: TOPIC, partitionIndexes: [0] }],
    })
    await markers('txn-log/markers', [
      { producerId: COMMITTED, committed: true, coordinatorEpoch: 5 },
      { producerId: ABORTED, committed: false, coordinatorEpoch: 5 },
    ])
    await fetch('txn-log/fetch-committed', 1, MARKER_CLOCK)
    await fetch('txn-log/fetch-uncommitted', 0, MARKER_CLOCK)
    await latest('txn-log/latest-committed', 1)
    await markers('txn-log/marker-fenced', [{ producerId: COMMITTED, committed: false, coordinatorEpoch: 4 }])
  },
)
