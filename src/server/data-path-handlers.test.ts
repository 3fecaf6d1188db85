// The data-path handlers through Dispatcher.dispatch (no sockets), over a real replica manager on a
// simulated disk: every served version of Produce and Fetch round-trips records, and Kafka's errors.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { resolveTopicConfig } from '../config/index.ts'
import { ManualClock, SeededRandom, SimDisk } from '../io/index.ts'
import { ConfigResourceType, configKey, MetadataLoader } from '../metadata/index.ts'
import type { BrokerId, ProducerId, TopicName, Uuid } from '../model/index.ts'
import {
  type Api,
  apis,
  Compression,
  decodeBatch,
  decodeResponse,
  ErrorCode,
  encodeBatch,
  encodeMetadataRecord,
  encodeRequest,
  LOG_OVERHEAD,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { ProducerIdManager, ReplicaManager } from '../replication/index.ts'
import { LogManager } from '../storage/index.ts'
import { Dispatcher } from './dispatcher.ts'
import { FetchSessionCache } from './fetch-session.ts'
import { makeDeleteRecordsHandler } from './handlers/delete-records.ts'
import { makeDescribeLogDirsHandler } from './handlers/describe-log-dirs.ts'
import { makeDescribeProducersHandler } from './handlers/describe-producers.ts'
import { makeFetchHandler } from './handlers/fetch.ts'
import { makeInitProducerIdHandler } from './handlers/init-producer-id.ts'
import { makeListOffsetsHandler } from './handlers/list-offsets.ts'
import { makeOffsetForLeaderEpochHandler } from './handlers/offset-for-leader-epoch.ts'
import { makeProduceHandler } from './handlers/produce.ts'
import { HandlerRegistry } from './registry.ts'

const NODE = 1 as BrokerId
const TOPIC = 'orders' as TopicName
const TOPIC_ID = Buffer.alloc(16, 9).toString('base64url') as Uuid
const CONN = { connectionId: 1, clientAddress: 'inject', listenerName: 'PLAINTEXT' }

interface Node {
  readonly dispatcher: Dispatcher
  readonly rm: ReplicaManager
  readonly loader: MetadataLoader
  readonly clock: ManualClock
  commit(...records: Buffer[]): Promise<void>
}

async function startNode(options: { configs?: Record<string, string> } = {}): Promise<Node> {
  const disk = new SimDisk()
  await disk.mkdir('/data')
  await disk.syncDir('/')
  const clock = new ManualClock({ nowMs: 1_700_000_000_000 })
  const loader = new MetadataLoader()
  const rm = new ReplicaManager({
    nodeId: NODE,
    disk,
    clock,
    topicConfig: (topic, image) =>
      resolveTopicConfig({
        topic: image.configs.get(configKey(ConfigResourceType.Topic, topic)) ?? new Map(),
      }),
    producerIdExpirationMs: 86_400_000,
  })
  const manager = await LogManager.open('/data', {
    disk,
    clock,
    clusterId: 'c',
    nodeId: NODE,
    hooksFor: (t, p) => rm.hooksFor(t, p),
  })
  loader.subscribe((p) => rm.onPublish(p))
  rm.start([manager])
  let offset = 0n
  const commit = async (...records: Buffer[]) => {
    loader.applyCommitted(
      records.map((data) => ({ kind: 'data' as const, offset: offset++, epoch: 1, data })),
    )
    await rm.settled()
  }
  await commit(
    encodeMetadataRecord(T.RegisterBroker, 0, {
      brokerId: NODE,
      brokerEpoch: 1n,
      incarnationId: TOPIC_ID,
      rack: null,
      endPoints: [{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092, securityProtocol: 0 }],
      fenced: false,
    }),
    encodeMetadataRecord(T.Topic, 0, { name: TOPIC, topicId: TOPIC_ID }),
    ...Object.entries(options.configs ?? {}).map(([name, value]) =>
      encodeMetadataRecord(T.Config, 0, {
        resourceType: ConfigResourceType.Topic,
        resourceName: TOPIC,
        name,
        value,
      }),
    ),
    ...[0, 1].map((partitionId) =>
      encodeMetadataRecord(T.Partition, 0, {
        topicId: TOPIC_ID,
        partitionId,
        replicas: [NODE],
        isr: [NODE],
        leader: NODE,
        leaderEpoch: 0,
        partitionEpoch: 0,
      }),
    ),
  )
  let nextBlock = 5000n
  const producerIds = new ProducerIdManager(async () => {
    const start = nextBlock
    nextBlock += 10n
    return { start, length: 10 }
  })
  const registry = new HandlerRegistry()
  registry.register(
    makeProduceHandler({
      image: () => loader.image,
      appendRecords: (e, o) => rm.appendRecords(e, o),
    }),
    makeFetchHandler({
      image: () => loader.image,
      sessions: new FetchSessionCache({ slotsMax: 10, evictionMs: 120_000 }, new SeededRandom(1)),
      nowMs: () => clock.monotonicMs(),
      fetchBytesMax: 55 * 1024 * 1024,
      fetchMessages: (s, p) => rm.fetchMessages(s, p),
    }),
    makeListOffsetsHandler(rm),
    makeOffsetForLeaderEpochHandler(rm),
    makeDeleteRecordsHandler(rm),
    makeInitProducerIdHandler({ generateProducerId: () => producerIds.generate() }),
    makeDescribeLogDirsHandler({
      describeLogDirs: () => rm.describeLogDirs(),
      volumeBytes: async () => ({ totalBytes: 1000n, usableBytes: 400n }),
    }),
    makeDescribeProducersHandler(rm),
  )
  return { dispatcher: new Dispatcher(registry), rm, loader, clock, commit }
}

let correlation = 0

/** Sends one request through the dispatcher and decodes the answer (null: answered by silence). */
async function call<ReqIn, Res>(
  node: Node,
  api: Api<unknown, ReqIn, Res, never>,
  version: number,
  body: ReqIn,
): Promise<Res | null> {
  const frame = Buffer.concat(
    encodeRequest(api, { requestApiVersion: version, correlationId: ++correlation, clientId: 'test' }, body),
  )
  const r = await node.dispatcher.dispatch(frame.subarray(4), CONN)
  if (r.kind === 'none') return null
  assert.equal(r.kind, 'response', r.kind === 'close' ? r.reason : '')
  if (r.kind !== 'response') throw new Error('unreachable')
  return decodeResponse(api, version, Buffer.concat(r.frame).subarray(4)).body
}

function batch(
  values: readonly string[],
  options: { compression?: number; producerId?: bigint } = {},
): Buffer {
  return encodeBatch({
    records: values.map((v, i) => ({
      key: Buffer.from(`key-${i}`),
      value: Buffer.from(v),
      timestamp: 1_700_000_000_000n,
      headers: [{ key: 'h', value: Buffer.from(v) }],
    })),
    ...(options.compression !== undefined ? { compression: options.compression as 0 } : {}),
    ...(options.producerId !== undefined
      ? { producerId: options.producerId, producerEpoch: 0, baseSequence: 0 }
      : {}),
  })
}

function valuesOf(records: Buffer | null): string[] {
  const out: string[] = []
  if (records === null) return out
  for (let at = 0; at < records.length; ) {
    for (const r of decodeBatch(records, at).records) out.push(r.value?.toString() ?? '')
    at += LOG_OVERHEAD + records.readInt32BE(at + 8)
  }
  return out
}

function produceBody(records: Buffer, options: { acks?: number; topic?: string; partition?: number } = {}) {
  return {
    transactionalId: null,
    acks: options.acks ?? -1,
    timeoutMs: 30_000,
    topicData: [
      {
        name: (options.topic ?? TOPIC) as TopicName,
        partitionData: [{ index: options.partition ?? 0, records }],
      },
    ],
  }
}

function fetchBody(fetchOffset: bigint, extra: { sessionId?: number; sessionEpoch?: number } = {}) {
  return {
    replicaId: -1 as BrokerId,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: extra.sessionId ?? 0,
    sessionEpoch: extra.sessionEpoch ?? -1,
    topics: [
      {
        topic: TOPIC,
        topicId: TOPIC_ID,
        partitions: [
          {
            partition: 0,
            currentLeaderEpoch: -1,
            fetchOffset,
            lastFetchedEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1 << 20,
          },
        ],
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  }
}

describe('Produce and Fetch through the dispatcher', () => {
  test('every Produce version writes, every Fetch version reads back the same bytes', async () => {
    const node = await startNode()
    const produced: string[] = []
    for (const v of [3, 5, 7, 8, 9, 10, 11]) {
      const values = [`v${v}-a`, `v${v}-b`]
      const compression = v >= 7 ? Compression.zstd : Compression.gzip
      const res = await call(node, apis.Produce, v, produceBody(batch(values, { compression })))
      const p = res!.responses[0]!.partitionResponses[0]!
      assert.equal(p.errorCode, ErrorCode.None, `Produce v${v}`)
      assert.equal(p.baseOffset, BigInt(produced.length))
      produced.push(...values)
    }
    for (const v of [4, 5, 7, 11, 12, 13, 15, 16, 17]) {
      const res = await call(node, apis.Fetch, v, fetchBody(0n))
      assert.equal(res!.errorCode, ErrorCode.None)
      const t = res!.responses[0]!
      if (v >= 13) assert.equal(t.topicId, TOPIC_ID)
      else assert.equal(t.topic, TOPIC)
      const p = t.partitions[0]!
      assert.equal(p.errorCode, ErrorCode.None, `Fetch v${v}`)
      assert.equal(p.highWatermark, BigInt(produced.length))
      assert.deepEqual(valuesOf(p.records), produced, `Fetch v${v}`)
    }
  })

  test("Produce refusals carry Kafka's codes (and messages from v8)", async () => {
    const node = await startNode({ configs: { 'max.message.bytes': '2000' } })
    const code = async (v: number, body: ReturnType<typeof produceBody>) =>
      (await call(node, apis.Produce, v, body))!.responses[0]!.partitionResponses[0]!
    assert.equal(
      (await code(9, produceBody(batch(['x']), { acks: 2 }))).errorCode,
      ErrorCode.InvalidRequiredAcks,
    )
    const unknown = await code(9, produceBody(batch(['x']), { topic: 'nope' }))
    assert.equal(unknown.errorCode, ErrorCode.UnknownTopicOrPartition)
    assert.equal(
      (await code(9, produceBody(batch(['x']), { partition: 7 }))).errorCode,
      ErrorCode.UnknownTopicOrPartition,
    )
    const two = await code(9, produceBody(Buffer.concat([batch(['a']), batch(['b'])])))
    assert.equal(two.errorCode, ErrorCode.InvalidRecord)
    assert.match(two.errorMessage ?? '', /exactly one record batch/)
    const zstd = await code(6, produceBody(batch(['z'], { compression: Compression.zstd })))
    assert.equal(zstd.errorCode, ErrorCode.UnsupportedCompressionType)
    const corrupt = batch(['c'])
    corrupt.writeUInt8(corrupt.readUInt8(corrupt.length - 1) ^ 0xff, corrupt.length - 1)
    assert.equal((await code(9, produceBody(corrupt))).errorCode, ErrorCode.CorruptMessage)
    const big = await code(9, produceBody(batch(['y'.repeat(3000)])))
    assert.equal(big.errorCode, ErrorCode.MessageTooLarge)
    const internal = await code(9, produceBody(batch(['i']), { topic: '__consumer_offsets' }))
    assert.equal(internal.errorCode, ErrorCode.InvalidTopicException)
    assert.equal(
      await call(node, apis.Produce, 9, produceBody(batch(['q']), { acks: 0 })),
      null,
      'acks=0: silence',
    )
    const fetched = await call(node, apis.Fetch, 11, fetchBody(0n))
    assert.deepEqual(
      valuesOf(fetched!.responses[0]!.partitions[0]!.records),
      ['q'],
      'only the acks=0 batch was written',
    )
  })

  test('incremental fetch sessions answer only partitions with news', async () => {
    const node = await startNode()
    await call(node, apis.Produce, 9, produceBody(batch(['one'])))
    const full = await call(node, apis.Fetch, 12, fetchBody(0n, { sessionId: 0, sessionEpoch: 0 }))
    assert.notEqual(full!.sessionId, 0)
    assert.deepEqual(valuesOf(full!.responses[0]!.partitions[0]!.records), ['one'])
    const sessionId = full!.sessionId
    const incremental = { ...fetchBody(1n, { sessionId, sessionEpoch: 1 }) }
    const quiet = await call(node, apis.Fetch, 12, incremental)
    assert.equal(quiet!.sessionId, sessionId)
    assert.deepEqual(quiet!.responses, [], 'nothing new: no partitions')
    await call(node, apis.Produce, 9, produceBody(batch(['two'])))
    const news = await call(node, apis.Fetch, 12, {
      ...fetchBody(1n, { sessionId, sessionEpoch: 2 }),
      topics: [],
    })
    assert.deepEqual(valuesOf(news!.responses[0]!.partitions[0]!.records), ['two'])
    const stale = await call(node, apis.Fetch, 12, fetchBody(1n, { sessionId, sessionEpoch: 9 }))
    assert.equal(stale!.errorCode, ErrorCode.InvalidFetchSessionEpoch)
  })

  test('Fetch errors: fenced epochs with a leader hint, unknown topic ids, offsets out of range', async () => {
    const node = await startNode()
    const body = fetchBody(0n)
    body.topics[0]!.partitions[0]!.currentLeaderEpoch = 0
    await node.commit(
      encodeMetadataRecord(T.PartitionChange, 0, { topicId: TOPIC_ID, partitionId: 0, leader: NODE }),
    )
    const fenced = await call(node, apis.Fetch, 17, body)
    const p = fenced!.responses[0]!.partitions[0]!
    assert.equal(p.errorCode, ErrorCode.FencedLeaderEpoch)
    assert.deepEqual(p.currentLeader, { leaderId: NODE, leaderEpoch: 1 })
    assert.deepEqual(
      fenced!.nodeEndpoints.map((e) => [e.nodeId, e.host, e.port]),
      [[NODE, '127.0.0.1', 9092]],
    )
    const unknownId = fetchBody(0n)
    unknownId.topics[0]!.topicId = Buffer.alloc(16, 1).toString('base64url') as Uuid
    const r = await call(node, apis.Fetch, 13, unknownId)
    assert.equal(r!.responses[0]!.partitions[0]!.errorCode, ErrorCode.UnknownTopicId)
    const out = await call(node, apis.Fetch, 4, fetchBody(5n))
    assert.equal(out!.responses[0]!.partitions[0]!.errorCode, ErrorCode.OffsetOutOfRange)
  })

  test('a long-polled Fetch answers when the records arrive', async () => {
    const node = await startNode()
    const body = { ...fetchBody(0n), maxWaitMs: 10_000 }
    let done = false
    const waiting = call(node, apis.Fetch, 11, body).then((r) => {
      done = true
      return r
    })
    await new Promise<void>((resolve) => setImmediate(resolve))
    assert.equal(done, false)
    await call(node, apis.Produce, 9, produceBody(batch(['late'])))
    assert.deepEqual(valuesOf((await waiting)!.responses[0]!.partitions[0]!.records), ['late'])
  })
})

describe('offsets, producers and log dirs through the dispatcher', () => {
  test('ListOffsets v1, v4+ with leader epochs, v7 max timestamp', async () => {
    const node = await startNode()
    for (let i = 0; i < 3; i++) await call(node, apis.Produce, 9, produceBody(batch([`m${i}`, `n${i}`])))
    const body = (timestamp: bigint) => ({
      replicaId: -1 as BrokerId,
      isolationLevel: 0,
      topics: [
        {
          name: TOPIC,
          partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp }],
        },
      ],
      timeoutMs: 0,
    })
    const v1 = await call(node, apis.ListOffsets, 1, body(-2n))
    assert.equal(v1!.topics[0]!.partitions[0]!.offset, 0n)
    const latest = await call(node, apis.ListOffsets, 4, body(-1n))
    assert.deepEqual(
      [latest!.topics[0]!.partitions[0]!.offset, latest!.topics[0]!.partitions[0]!.leaderEpoch],
      [6n, 0],
    )
    const byTime = await call(node, apis.ListOffsets, 7, body(1_700_000_000_000n))
    assert.equal(byTime!.topics[0]!.partitions[0]!.offset, 0n)
    const max = await call(node, apis.ListOffsets, 9, body(-3n))
    assert.equal(max!.topics[0]!.partitions[0]!.errorCode, ErrorCode.None)
    // Each special timestamp from the version that brought it, as Kafka: -3 v7, -4 v8, -5 v9.
    for (const [timestamp, first] of [
      [-3n, 7],
      [-4n, 8],
      [-5n, 9],
    ] as const) {
      const older = await call(node, apis.ListOffsets, first - 1, body(timestamp))
      assert.equal(older!.topics[0]!.partitions[0]!.errorCode, ErrorCode.UnsupportedVersion)
      const served = await call(node, apis.ListOffsets, first, body(timestamp))
      assert.equal(served!.topics[0]!.partitions[0]!.errorCode, ErrorCode.None)
    }
    const dup = body(-1n)
    dup.topics[0]!.partitions.push({ ...dup.topics[0]!.partitions[0]! })
    const d = await call(node, apis.ListOffsets, 5, dup)
    assert.deepEqual(
      d!.topics[0]!.partitions.map((p) => p.errorCode),
      [ErrorCode.InvalidRequest],
      'one answer for a partition asked twice, as Kafka',
    )
  })

  test('OffsetForLeaderEpoch, DeleteRecords, DescribeLogDirs', async () => {
    const node = await startNode()
    await call(node, apis.Produce, 9, produceBody(batch(['a', 'b', 'c'])))
    const epochs = await call(node, apis.OffsetForLeaderEpoch, 4, {
      replicaId: -1 as BrokerId,
      topics: [{ topic: TOPIC, partitions: [{ partition: 0, currentLeaderEpoch: 0, leaderEpoch: 0 }] }],
    })
    assert.deepEqual(epochs!.topics[0]!.partitions[0], {
      errorCode: 0,
      partition: 0,
      leaderEpoch: 0,
      endOffset: 3n,
    })
    const deleted = await call(node, apis.DeleteRecords, 2, {
      topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, offset: 2n }] }],
      timeoutMs: 1000,
    })
    assert.deepEqual(deleted!.topics[0]!.partitions[0], { partitionIndex: 0, lowWatermark: 2n, errorCode: 0 })
    const dirs = await call(node, apis.DescribeLogDirs, 4, { topics: null })
    const r = dirs!.results[0]!
    assert.equal(r.logDir, '/data')
    assert.deepEqual([r.totalBytes, r.usableBytes], [1000n, 400n])
    assert.deepEqual(
      r.topics[0]!.partitions.map((p) => [p.partitionIndex, p.partitionSize > 0n]),
      [
        [0, true],
        [1, false],
      ],
    )
  })

  test('InitProducerId hands out ids from controller blocks; DescribeProducers shows them writing', async () => {
    const node = await startNode()
    const ids: bigint[] = []
    for (let i = 0; i < 12; i++) {
      const r = await call(node, apis.InitProducerId, 4, {
        transactionalId: null,
        transactionTimeoutMs: 60_000,
        producerId: -1n as ProducerId,
        producerEpoch: -1,
      })
      assert.equal(r!.errorCode, ErrorCode.None)
      assert.equal(r!.producerEpoch, 0)
      ids.push(r!.producerId)
    }
    assert.deepEqual(ids, [...Array.from({ length: 10 }, (_, i) => 5000n + BigInt(i)), 5010n, 5011n])
    const txn = await call(node, apis.InitProducerId, 4, {
      transactionalId: 'tx' as never,
      transactionTimeoutMs: 60_000,
      producerId: -1n as ProducerId,
      producerEpoch: -1,
    })
    assert.equal(txn!.errorCode, ErrorCode.CoordinatorNotAvailable)
    await call(node, apis.Produce, 9, produceBody(batch(['p1', 'p2'], { producerId: ids[0]! })))
    const again = await call(node, apis.Produce, 9, produceBody(batch(['p1', 'p2'], { producerId: ids[0]! })))
    assert.equal(
      again!.responses[0]!.partitionResponses[0]!.baseOffset,
      0n,
      'a retried batch is not written twice',
    )
    const described = await call(node, apis.DescribeProducers, 0, {
      topics: [{ name: TOPIC, partitionIndexes: [0, 9] }],
    })
    const [p0, p9] = described!.topics[0]!.partitions
    assert.deepEqual(
      p0!.activeProducers.map((p) => [p.producerId, p.producerEpoch, p.lastSequence]),
      [[ids[0], 0, 1]],
    )
    assert.equal(p9!.errorCode, ErrorCode.UnknownTopicOrPartition)
  })
})
