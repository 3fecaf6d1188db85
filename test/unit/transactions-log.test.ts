/**
 * Transactions in the log, on the wire: a real `weir start` node, Weir's own KafkaConnection.
 * Transactional batches of two producers, WriteTxnMarkers COMMIT for one and ABORT for the other,
 * then read_committed and read_uncommitted Fetch and ListOffsets (records, aborted transactions, the
 * last stable offset), the same after a restart, and a third producer's transaction that stays open
 * across it.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { type BrokerId, ProducerId, type TopicName, type TransactionalId } from '../../src/model/index.ts'
import {
  apis,
  ControlRecordType,
  decodeBatch,
  decodeControlKey,
  ErrorCode,
  encodeBatch,
  isControl,
  LOG_OVERHEAD,
} from '../../src/protocol/index.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'

const dir = tempDir('weir-transactions-log-')
let weir: WeirProcess | null = null
after(async () => {
  await weir?.kill()
  dir.remove()
})

const TOPIC = 'txn-log' as TopicName
const COMMITTED = ProducerId(1000n)
const ABORTED = ProducerId(2000n)
const OPEN = ProducerId(3000n)

const connectionOptions = {
  clientId: 'transactions-log-test',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 15_000,
  inFlightRequestsMax: 1,
  responseBytesMax: 1 << 24,
  connectTimeoutMs: 2_000,
}

function txnBatch(producerId: bigint, values: string[]): Buffer {
  return encodeBatch({
    records: values.map((v) => ({ value: Buffer.from(v) })),
    producerId,
    producerEpoch: 0,
    baseSequence: 0,
    transactional: true,
  })
}

/** Each batch as data values or its control type. */
function readBack(records: Buffer): string[] {
  const out: string[] = []
  for (let at = 0; at < records.length; at += LOG_OVERHEAD + records.readInt32BE(at + 8)) {
    const b = decodeBatch(records, at)
    if (isControl(b.header.attributes)) {
      const type = decodeControlKey(b.records[0]!.key).type
      out.push(type === ControlRecordType.commit ? 'COMMIT' : 'ABORT')
    } else for (const r of b.records) out.push(r.value?.toString() ?? '')
  }
  return out
}

test('transactional batches, COMMIT and ABORT markers, read_committed Fetch and ListOffsets, across a restart', {
  timeout: 120_000,
}, async () => {
  const [port, controllerPort] = await freePorts(2)
  const config = writeProperties(dir.path, 'server.properties', {
    'node.id': 1,
    'process.roles': 'broker,controller',
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'controller.listener.names': 'CONTROLLER',
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    'log.dirs': join(dir.path, 'data'),
    'metadata.log.dir': join(dir.path, 'metadata'),
    'cluster.id': 'txnLogTestClusterId000',
    'offsets.topic.replication.factor': 1,
    // Batches without a coordinator: KIP-890's verification would refuse them.
    'transaction.partition.verification.enable': 'false',
  })
  weir = new WeirProcess(['--config', config])
  await weir.start()
  let c = await KafkaConnection.open({ host: '127.0.0.1', port: port! }, connectionOptions)
  try {
    const created = await c.request(apis.CreateTopics, 7, {
      topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1 }],
      timeoutMs: 10_000,
    })
    assert.equal(created.topics[0]?.errorCode, ErrorCode.None)
    const produce = async (records: Buffer) => {
      const res = await c.request(apis.Produce, 9, {
        transactionalId: 'txn-log-test' as TransactionalId,
        acks: -1,
        timeoutMs: 10_000,
        topicData: [{ name: TOPIC, partitionData: [{ index: 0, records }] }],
      })
      return res.responses[0]!.partitionResponses[0]!
    }
    const first = await waitFor('the partition to take writes', async () => {
      const r = await produce(txnBatch(COMMITTED, ['c0', 'c1']))
      return r.errorCode === ErrorCode.None ? r : undefined
    })
    assert.equal(first.baseOffset, 0n) // 0-1
    assert.equal((await produce(txnBatch(ABORTED, ['a0']))).baseOffset, 2n)
    assert.equal((await produce(encodeBatch({ records: [{ value: Buffer.from('plain') }] }))).baseOffset, 3n)

    const markers = (m: { producerId: ProducerId; committed: boolean }[]) =>
      c.request(apis.WriteTxnMarkers, 1, {
        markers: m.map(({ producerId, committed }) => ({
          producerId,
          producerEpoch: 0,
          transactionResult: committed,
          topics: [{ name: TOPIC, partitionIndexes: [0] }],
          coordinatorEpoch: 0,
        })),
      })
    const fetch = async (isolationLevel: number) => {
      const res = await c.request(apis.Fetch, 11, {
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
      })
      const p = res.responses[0]!.partitions[0]!
      assert.equal(p.errorCode, ErrorCode.None)
      return {
        values: readBack(p.records ?? Buffer.alloc(0)),
        lastStableOffset: p.lastStableOffset,
        highWatermark: p.highWatermark,
        aborted: p.abortedTransactions?.map((t) => [t.producerId, t.firstOffset]) ?? null,
      }
    }
    const latest = async (isolationLevel: number) => {
      const res = await c.request(apis.ListOffsets, 7, {
        replicaId: -1 as BrokerId,
        isolationLevel,
        topics: [
          { name: TOPIC, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] },
        ],
      })
      return res.topics[0]!.partitions[0]!.offset
    }

    // Both transactions open: read_committed sees nothing yet.
    assert.deepEqual(await fetch(1), { values: [], lastStableOffset: 0n, highWatermark: 4n, aborted: [] })
    assert.deepEqual([await latest(1), await latest(0)], [0n, 4n])

    const written = await markers([
      { producerId: COMMITTED, committed: true },
      { producerId: ABORTED, committed: false },
    ])
    assert.deepEqual(
      written.markers.map((m) => [m.producerId, m.topics[0]!.partitions[0]!.errorCode]),
      [
        [COMMITTED, ErrorCode.None],
        [ABORTED, ErrorCode.None],
      ],
    )
    const unknown = await c.request(apis.WriteTxnMarkers, 1, {
      markers: [
        {
          producerId: COMMITTED,
          producerEpoch: 0,
          transactionResult: true,
          topics: [{ name: 'no-such-topic' as TopicName, partitionIndexes: [0] }],
          coordinatorEpoch: 0,
        },
      ],
    })
    assert.equal(unknown.markers[0]!.topics[0]!.partitions[0]!.errorCode, ErrorCode.UnknownTopicOrPartition)
    // A third producer opens a transaction that stays open across the restart.
    assert.equal((await produce(txnBatch(OPEN, ['o0']))).baseOffset, 6n)

    const check = async (when: string) => {
      const committed = await fetch(1)
      assert.deepEqual(
        committed,
        {
          values: ['c0', 'c1', 'a0', 'plain', 'COMMIT', 'ABORT'],
          lastStableOffset: 6n,
          highWatermark: 7n,
          aborted: [[ABORTED, 2n]],
        },
        when,
      )
      const uncommitted = await fetch(0)
      assert.deepEqual(uncommitted.values, ['c0', 'c1', 'a0', 'plain', 'COMMIT', 'ABORT', 'o0'], when)
      assert.equal(uncommitted.aborted, null, `${when}: read_uncommitted gets no aborted list`)
      assert.equal(uncommitted.lastStableOffset, 6n, when)
      assert.deepEqual([await latest(1), await latest(0)], [6n, 7n], when)
    }
    await check('before the restart')
    c.close()
    assert.equal(await weir.stop(), 0)
    weir = new WeirProcess(['--config', config])
    await weir.start()
    c = await KafkaConnection.open({ host: '127.0.0.1', port: port! }, connectionOptions)
    await waitFor('the partition to be served again', async () => {
      const r = await latest(0).catch(() => -1n)
      return r === 7n ? true : undefined
    })
    await check('after the restart')
  } finally {
    c.close()
  }
})
