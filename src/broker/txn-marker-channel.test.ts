import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { TxnMarker } from '../coordinator/index.ts'
import { nodeTransport, systemClock } from '../io/index.ts'
import {
  type BrokerRegistration,
  EMPTY_IMAGE,
  type MetadataImage,
  NO_LEADER,
  type PartitionRegistration,
} from '../metadata/index.ts'
import { BrokerId, TopicName, type Uuid } from '../model/index.ts'
import { apis, ErrorCode, encodeBatch, type WriteTxnMarkersRequestData } from '../protocol/index.ts'
import {
  Dispatcher,
  defineHandler,
  HandlerRegistry,
  Listener,
  makeApiVersionsHandler,
  makeTransactionHandlers,
} from '../server/index.ts'
import { WireTxnMarkerChannel } from './txn-marker-channel.ts'
import { appendVerified, TxnVerifier } from './txn-verifier.ts'

const NO_FEATURES = { supported: [], finalized: [], finalizedEpoch: -1n }

/**
 * A broker's listener serving WriteTxnMarkers v1 as a leader would answer it: each request
 * recorded, each partition answered `answer(topic, partition)`.
 */
class MarkerBroker {
  readonly received: WriteTxnMarkersRequestData.WriteTxnMarkersRequest[] = []
  answer: (topic: string, partition: number) => ErrorCode = () => ErrorCode.None
  readonly #listener: Listener
  port = 0

  constructor() {
    const registry = new HandlerRegistry()
    registry.register(
      makeApiVersionsHandler(registry, () => NO_FEATURES),
      defineHandler(apis.WriteTxnMarkers, {}, (req) => {
        this.received.push(req)
        return {
          markers: req.markers.map((m) => ({
            producerId: m.producerId,
            topics: m.topics.map((t) => ({
              name: t.name,
              partitions: t.partitionIndexes.map((partitionIndex) => ({
                partitionIndex,
                errorCode: this.answer(t.name, partitionIndex),
              })),
            })),
          })),
        }
      }),
    )
    this.#listener = new Listener({
      listenerName: 'REPLICATION',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(registry),
      clock: systemClock,
      limits: {
        requestBytesMax: 1024 * 1024,
        inFlightRequestsMax: 8,
        inFlightBytesMax: 1024 * 1024,
        connectionsIdleMsMax: 10_000,
        connectionsMax: 8,
      },
      log: () => {},
    })
  }

  async start(): Promise<void> {
    this.port = (await this.#listener.start()).port
  }

  stop(): Promise<void> {
    return this.#listener.stop(1000)
  }
}

function broker(id: number, port: number): BrokerRegistration {
  return {
    id: BrokerId(id),
    epoch: 1n,
    incarnationId: 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid,
    endpoints: [
      { name: 'PLAINTEXT', host: '127.0.0.1', port: 1, securityProtocol: 0 },
      { name: 'REPLICATION', host: '127.0.0.1', port, securityProtocol: 0 },
    ],
    features: [],
    rack: null,
    fenced: false,
    inControlledShutdown: false,
    logDirs: [],
  }
}

function partition(leader: BrokerId): PartitionRegistration {
  return {
    replicas: [],
    isr: [],
    removingReplicas: [],
    addingReplicas: [],
    elr: [],
    lastKnownElr: [],
    directories: [],
    leader,
    leaderRecoveryState: 0,
    leaderEpoch: 3,
    partitionEpoch: 3,
  }
}

describe('WireTxnMarkerChannel (real sockets)', () => {
  const one = new MarkerBroker()
  const two = new MarkerBroker()
  let image: MetadataImage = EMPTY_IMAGE
  let channel: WireTxnMarkerChannel
  before(async () => {
    await one.start()
    await two.start()
    const orders = TopicName('orders')
    image = {
      ...EMPTY_IMAGE,
      brokers: new Map([
        [BrokerId(1), broker(1, one.port)],
        [BrokerId(2), broker(2, two.port)],
      ]),
      topicsByName: new Map([
        [
          orders,
          {
            name: orders,
            id: 'BBBBBBBBBBBBBBBBBBBBBB' as Uuid,
            partitions: new Map([
              [0, partition(BrokerId(1))],
              [1, partition(BrokerId(2))],
              [2, partition(BrokerId(1))],
              [3, partition(NO_LEADER)],
            ]),
          },
        ],
      ]),
    }
    channel = new WireTxnMarkerChannel({
      nodeId: BrokerId(1),
      image: () => image,
      listenerName: 'REPLICATION',
      clock: systemClock,
      transport: nodeTransport,
      requestTimeoutMs: 5000,
    })
  })
  after(async () => {
    channel.close()
    await one.stop()
    await two.stop()
  })

  test('one WriteTxnMarkers v1 per leader with all its partitions; each answer by partition', async () => {
    two.answer = (_t, p) => (p === 1 ? ErrorCode.UnknownTopicOrPartition : ErrorCode.None)
    const marker: TxnMarker = {
      producerId: 4000n,
      producerEpoch: 2,
      coordinatorEpoch: 9,
      committed: true,
      partitions: [
        { topic: 'orders', partition: 0 },
        { topic: 'orders', partition: 1 },
        { topic: 'orders', partition: 2 },
        { topic: 'orders', partition: 3 },
        { topic: 'gone', partition: 0 },
      ],
    }
    const answers = await channel.writeMarkers(marker)
    assert.deepEqual(Object.fromEntries(answers), {
      'orders:0': ErrorCode.None,
      // The leader's own UNKNOWN_TOPIC_OR_PARTITION is retried: it may not host the partition yet.
      'orders:1': ErrorCode.NotLeaderOrFollower,
      'orders:2': ErrorCode.None,
      'orders:3': ErrorCode.NotLeaderOrFollower,
      // Gone from this broker's metadata: dropped by the coordinator.
      'gone:0': ErrorCode.UnknownTopicOrPartition,
    })
    assert.equal(one.received.length, 1)
    assert.deepEqual(one.received[0]?.markers, [
      {
        producerId: 4000n,
        producerEpoch: 2,
        transactionResult: true,
        coordinatorEpoch: 9,
        topics: [{ name: 'orders', partitionIndexes: [0, 2] }],
      },
    ])
    assert.equal(two.received.length, 1)
    assert.deepEqual(two.received[0]?.markers[0]?.topics, [{ name: 'orders', partitionIndexes: [1] }])
  })

  test('a leader that cannot be reached answers NETWORK_EXCEPTION, and is reached again once back', async () => {
    await two.stop()
    const marker: TxnMarker = {
      producerId: 4001n,
      producerEpoch: 0,
      coordinatorEpoch: 9,
      committed: false,
      partitions: [{ topic: 'orders', partition: 1 }],
    }
    const down = await channel.writeMarkers(marker)
    assert.equal(down.get('orders:1'), ErrorCode.NetworkException)
    await two.start()
    image = {
      ...image,
      brokers: new Map([...image.brokers, [BrokerId(2), broker(2, two.port)]]),
    }
    two.answer = () => ErrorCode.None
    const up = await channel.writeMarkers(marker)
    assert.equal(up.get('orders:1'), ErrorCode.None)
  })
})

/**
 * A transaction coordinator's listener: the real AddPartitionsToTxn handler over a view that
 * records each entry and answers `answer`; `hold` keeps the answers back until released.
 */
class CoordinatorBroker {
  readonly entries: { transactionalId: string; verifyOnly: boolean; partitions: string[] }[] = []
  requests = 0
  answer: (transactionalId: string, topic: string, partition: number) => ErrorCode = () => ErrorCode.None
  hold: Promise<void> | null = null
  readonly #listener: Listener
  port = 0

  constructor() {
    const registry = new HandlerRegistry()
    const seen = async (
      verifyOnly: boolean,
      req: { transactionalId: string; partitions: readonly { topic: string; partition: number }[] },
    ) => {
      this.entries.push({
        transactionalId: req.transactionalId,
        verifyOnly,
        partitions: req.partitions.map((p) => `${p.topic}:${p.partition}`),
      })
      await this.hold
      return req.partitions.map((p) => this.answer(req.transactionalId, p.topic, p.partition))
    }
    const unused = () => {
      throw new Error('not in this test')
    }
    registry.register(
      makeApiVersionsHandler(registry, () => NO_FEATURES),
      ...makeTransactionHandlers({
        verifyPartitionsInTxn: (req) => seen(true, req),
        addPartitionsToTxn: async (req) => (await seen(false, req))[0]!,
        addOffsetsToTxn: unused,
        endTxn: unused,
        describeTransactions: unused,
        listTransactions: unused,
        topicExists: () => true,
      }).filter((h) => h.api.apiKey === apis.AddPartitionsToTxn.apiKey),
    )
    this.#listener = new Listener({
      listenerName: 'REPLICATION',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(registry, {
        observe: {
          now: () => 0,
          answered: (api) => {
            if (api === 'AddPartitionsToTxn') this.requests++
          },
        },
      }),
      clock: systemClock,
      limits: {
        requestBytesMax: 1024 * 1024,
        inFlightRequestsMax: 8,
        inFlightBytesMax: 1024 * 1024,
        connectionsIdleMsMax: 10_000,
        connectionsMax: 8,
      },
      log: () => {},
    })
  }

  async start(): Promise<void> {
    this.port = (await this.#listener.start()).port
  }

  stop(): Promise<void> {
    return this.#listener.stop(1000)
  }
}

describe('TxnVerifier (real sockets)', () => {
  const coordinator = new CoordinatorBroker()
  let verifier: TxnVerifier
  let image: MetadataImage = EMPTY_IMAGE
  before(async () => {
    await coordinator.start()
    const state = TopicName('__transaction_state')
    image = {
      ...EMPTY_IMAGE,
      brokers: new Map([[BrokerId(1), broker(1, coordinator.port)]]),
      topicsByName: new Map([
        [
          state,
          {
            name: state,
            id: 'CCCCCCCCCCCCCCCCCCCCCC' as Uuid,
            partitions: new Map([[0, partition(BrokerId(1))]]),
          },
        ],
      ]),
    }
    verifier = new TxnVerifier({
      nodeId: BrokerId(2),
      image: () => image,
      listenerName: 'REPLICATION',
      clock: systemClock,
      transport: nodeTransport,
      requestTimeoutMs: 5000,
    })
  })
  after(async () => {
    verifier.close()
    await coordinator.stop()
  })
  const v = (
    transactionalId: string,
    partitions: number[],
    addPartitions = false,
    abortableKnown = true,
  ) => ({
    transactionalId,
    producerId: 5000n,
    producerEpoch: 1,
    partitions: partitions.map((partition) => ({ topic: 'orders', partition })),
    addPartitions,
    abortableKnown,
  })

  test('verifications wait behind the one in flight to their coordinator and go together in the next request', async () => {
    let release = () => {}
    coordinator.hold = new Promise((done) => {
      release = done
    })
    coordinator.answer = (_id, _t, p) => (p === 1 ? ErrorCode.TransactionAbortable : ErrorCode.None)
    const first = verifier.verify(v('a', [0]))
    while (coordinator.entries.length === 0) await new Promise((done) => setTimeout(done, 5))
    const second = verifier.verify(v('b', [0, 1]))
    const third = verifier.verify(v('c', [1], true, false))
    const sameProducer = verifier.verify(v('b', [2]))
    coordinator.hold = null
    release()
    assert.deepEqual(Object.fromEntries(await first), { 'orders:0': ErrorCode.None })
    assert.deepEqual(Object.fromEntries(await second), {
      'orders:0': ErrorCode.None,
      'orders:1': ErrorCode.TransactionAbortable,
      'orders:2': ErrorCode.None,
    })
    assert.deepEqual(Object.fromEntries(await sameProducer), Object.fromEntries(await second))
    // A client before TRANSACTION_ABORTABLE gets INVALID_TXN_STATE; Produce v12 adds (not verifyOnly).
    assert.deepEqual(Object.fromEntries(await third), { 'orders:1': ErrorCode.InvalidTxnState })
    assert.equal(coordinator.requests, 2)
    assert.deepEqual(coordinator.entries, [
      { transactionalId: 'a', verifyOnly: true, partitions: ['orders:0'] },
      { transactionalId: 'b', verifyOnly: true, partitions: ['orders:0', 'orders:1', 'orders:2'] },
      { transactionalId: 'c', verifyOnly: false, partitions: ['orders:1'] },
    ])
  })

  test('transaction version 2: a produce that meets CONCURRENT_TRANSACTIONS asks again with a new guard, for up to 100 ms', async () => {
    // The partition's guard, as its producer state keeps it: the same one until a marker voids it.
    let current: object | null = null
    const marker = () => {
      current = null
    }
    const produce = (apiVersion: number) => {
      const guards: object[] = []
      const appended: unknown[] = []
      const records = encodeBatch({
        records: [{ value: Buffer.from('x') }],
        producerId: 5000n,
        producerEpoch: 1,
        baseSequence: 0,
        transactional: true,
      })
      const result = appendVerified(
        {
          verifier,
          clock: systemClock,
          startTxnVerification: () => {
            if (current === null) {
              current = {}
              guards.push(current)
            }
            return current
          },
          appendRecords: async (entries) => {
            appended.push(...entries.map((e) => e.verificationGuard))
            return entries.map(() => ({
              errorCode: ErrorCode.None,
              errorMessage: null,
              baseOffset: 0n,
              logAppendTimeMs: -1,
              logStartOffset: 0n,
            }))
          },
        },
        [{ topic: 'orders' as TopicName, partition: 0, records }],
        { acks: -1, timeoutMs: 1000, transactionalId: 'e', apiVersion },
      )
      return { result, guards, appended }
    }
    // The previous transaction's markers are still being written at each CONCURRENT_TRANSACTIONS.
    let concurrent = 2
    coordinator.answer = () => {
      if (concurrent-- <= 0) return ErrorCode.None
      marker()
      return ErrorCode.ConcurrentTransactions
    }
    const retried = produce(12)
    assert.equal((await retried.result)[0]!.errorCode, ErrorCode.None)
    assert.equal(
      retried.guards.length,
      3,
      'a guard per ask: the marker that ended the previous one voided it',
    )
    assert.deepEqual(retried.appended, [retried.guards[2]])
    // The coordinator waited for the previous transaction's marker, which voided the guard, then
    // said yes: asked again at once under a new guard, which stands.
    let waited = 1
    coordinator.answer = () => {
      if (waited-- > 0) marker()
      return ErrorCode.None
    }
    current = null
    const reasked = produce(12)
    assert.equal((await reasked.result)[0]!.errorCode, ErrorCode.None)
    assert.equal(reasked.guards.length, 2)
    assert.deepEqual(reasked.appended, [reasked.guards[1]], 'appended under the guard that stands')
    // A marker at every answer: never appended under a voided guard.
    coordinator.answer = () => {
      marker()
      return ErrorCode.None
    }
    const voided = produce(12)
    assert.equal((await voided.result)[0]!.errorCode, ErrorCode.NotEnoughReplicas)
    assert.deepEqual(voided.appended, [])
    coordinator.answer = () => {
      marker()
      return ErrorCode.ConcurrentTransactions
    }
    const given = produce(12)
    assert.equal((await given.result)[0]!.errorCode, ErrorCode.NotEnoughReplicas, 'retriable, after 100 ms')
    assert.ok(given.guards.length >= 3 && given.guards.length <= 6, `${given.guards.length} asks`)
    const old = produce(11)
    assert.equal((await old.result)[0]!.errorCode, ErrorCode.NotEnoughReplicas)
    assert.equal(old.guards.length, 1, 'verifyOnly (version 1) is not retried here')
  })

  test("the coordinator's errors as Kafka's manager maps them; no coordinator, or none reachable", async () => {
    coordinator.answer = () => ErrorCode.ProducerFenced
    assert.equal((await verifier.verify(v('d', [0]))).get('orders:0'), ErrorCode.InvalidProducerEpoch)
    const saved = image
    image = { ...image, topicsByName: new Map() }
    assert.equal((await verifier.verify(v('d', [0]))).get('orders:0'), ErrorCode.CoordinatorNotAvailable)
    image = saved
    await coordinator.stop()
    assert.equal((await verifier.verify(v('d', [0]))).get('orders:0'), ErrorCode.NetworkException)
    await coordinator.start()
  })
})
