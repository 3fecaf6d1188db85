/**
 * Differential: transaction version 2 and KIP-890's verification, the same raw requests to
 * Kafka 4.0 and to Weir (both with their defaults: `transaction.partition.verification.enable`
 * true, a fresh cluster finalizing transaction.version 2): the ApiVersions features, a Produce v12
 * transactional batch to a partition no AddPartitionsToTxn added (the leader adds it to the
 * transaction), a v11 batch to another such partition (the leader's verification refuses it),
 * EndTxn v5's epoch bump, and AddPartitionsToTxn v4 verifyOnly from a client principal (it needs
 * CLUSTER_ACTION). The producer ids differ between the sides: those fields are ignored.
 */
import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import type { KafkaConnection } from '../../src/client/index.ts'
import type { ProducerId, TopicName, TransactionalId } from '../../src/model/index.ts'
import { apis, ErrorCode, encodeBatch } from '../../src/protocol/index.ts'
import { Pair, type Side, scenario, sleep } from './harness.ts'

let pair: Pair
let alice: { kafka: KafkaConnection; weir: KafkaConnection }

const TOPIC = 'txn-v2' as TopicName
const TXN_ID = 'differential-txn-v2' as TransactionalId
const T0 = BigInt(Math.floor(Date.now() / 1000) * 1000 - 600_000)
const producers = new Map<Side, { producerId: ProducerId; producerEpoch: number }>()

before(async () => {
  pair = await Pair.start(
    'transactions-v2',
    {
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'allow.everyone.if.no.acl.found': 'false',
      // ANONYMOUS: the PLAINTEXT listener these requests use, and each broker's own inter-broker
      // requests (the verifications, the markers).
      'super.users': 'User:ANONYMOUS',
    },
    { saslUsers: { alice: 'alice-secret' } },
  )
  alice = await pair.login('alice')
  await pair.each(apis.CreateTopics, pair.version(apis.CreateTopics), {
    topics: [{ name: TOPIC, numPartitions: 2, replicationFactor: 1 }],
    timeoutMs: 30_000,
  })
  await pair.waitForTopic(TOPIC, 2)
  for (const side of ['kafka', 'weir'] as const) {
    const c = pair.connection(side)
    for (let found = false; !found; await sleep(found ? 0 : 100)) {
      const r = await c.request(apis.FindCoordinator, 4, { keyType: 1, coordinatorKeys: [TXN_ID] })
      found = r.coordinators[0]?.errorCode === ErrorCode.None
    }
    for (;;) {
      const r = await c.request(apis.InitProducerId, 5, {
        transactionalId: TXN_ID,
        transactionTimeoutMs: 60_000,
        producerId: -1n as ProducerId,
        producerEpoch: -1,
      })
      if (r.errorCode === ErrorCode.None) {
        producers.set(side, { producerId: r.producerId, producerEpoch: r.producerEpoch })
        break
      }
      await sleep(100)
    }
  }
})

after(async () => {
  await pair?.stop()
})

function txnBatch(side: Side, value: string): Buffer {
  const p = producers.get(side)!
  return encodeBatch({
    records: [{ key: Buffer.from('k'), value: Buffer.from(value), timestamp: T0 }],
    producerId: p.producerId,
    producerEpoch: p.producerEpoch,
    baseSequence: 0,
    transactional: true,
  })
}

scenario(
  'transaction version 2 and KIP-890 verification',
  () => pair,
  async () => {
    // Only the transaction.version feature: the other features each side lists are its own. Before
    // v4 a range from 0 is left out of supportedFeatures (KAFKA-17011).
    for (const version of [3, 4]) {
      const features = await pair.each(apis.ApiVersions, version, {
        clientSoftwareName: 'weir-differential',
        clientSoftwareVersion: '1',
      })
      const txnFeature = (r: typeof features.kafka) => ({
        supported: r.supportedFeatures.filter((f) => f.name === 'transaction.version'),
        finalized: r.finalizedFeatures.filter((f) => f.name === 'transaction.version'),
      })
      assert.deepEqual(txnFeature(features.weir), txnFeature(features.kafka), `ApiVersions v${version}`)
      assert.equal(txnFeature(features.kafka).finalized[0]?.maxVersionLevel, 2)
    }

    const produce = (step: string, version: number, partition: number, value: string) =>
      pair.both(
        step,
        apis.Produce,
        version,
        (side) => ({
          transactionalId: TXN_ID,
          acks: -1,
          timeoutMs: 10_000,
          topicData: [{ name: TOPIC, partitionData: [{ index: partition, records: txnBatch(side, value) }] }],
        }),
        // NOT_ENOUGH_REPLICAS: the coordinator could not answer yet (retriable, as a client retries).
        {
          until: (r) => r.responses[0]?.partitionResponses[0]?.errorCode !== ErrorCode.NotEnoughReplicas,
        },
      )
    // v12: the leader adds partition 0 to the transaction (AddPartitionsToTxn from the broker).
    await produce('txn-v2/produce-v12-unadded', 12, 0, 'implicit')
    await pair.both(
      'txn-v2/describe-ongoing',
      apis.DescribeTransactions,
      0,
      { transactionalIds: [TXN_ID] },
      {
        ignore: ['*.producerId', '*.transactionStartTimeMs'],
      },
    )
    // v11: verification only, and partition 1 is not in the transaction.
    await produce('txn-v2/produce-v11-unadded', 11, 1, 'refused')
    const ended = await pair.both(
      'txn-v2/end-txn-v5',
      apis.EndTxn,
      5,
      (side) => ({ transactionalId: TXN_ID, ...producers.get(side)!, committed: true }),
      { ignore: ['producerId'] },
    )
    for (const side of ['kafka', 'weir'] as const) {
      const before = producers.get(side)!
      assert.equal(ended[side].producerId, before.producerId, `${side}: the same producer id`)
      assert.equal(ended[side].producerEpoch, before.producerEpoch + 1, `${side}: the epoch bumped`)
    }
    // A client principal may not send the brokers' form of AddPartitionsToTxn.
    const verifyOnly = (side: Side) =>
      alice[side].request(apis.AddPartitionsToTxn, 4, {
        transactions: [
          {
            transactionalId: TXN_ID,
            ...producers.get(side)!,
            verifyOnly: true,
            topics: [{ name: TOPIC, partitions: [0] }],
          },
        ],
      })
    const kafka = await verifyOnly('kafka')
    const weir = await verifyOnly('weir')
    pair.differ.compare('txn-v2/add-partitions-verify-only-client', 'AddPartitionsToTxn', 4, kafka, weir, [
      'resultsByTransaction.*.producerId',
    ])
  },
)
