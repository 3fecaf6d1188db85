/**
 * Differential: the data path, the same requests to Kafka 4.0 and to Weir. Batches are built once
 * with encodeBatch and sent as the same bytes to both; Fetch must then give back the same bytes.
 */
import { after, before } from 'node:test'
import type { BrokerId, ProducerId, TopicName, TransactionalId, Uuid } from '../../src/model/index.ts'
import {
  apis,
  BatchOffsets,
  Compression,
  type CompressionCodec,
  encodeBatch,
  type RecordInput,
} from '../../src/protocol/index.ts'
import { Pair, SIDES, type Side, scenario, TEST_PRODUCER_ID_MIN } from './harness.ts'

let pair: Pair

const topic = (name: string) => name as TopicName
/** Record timestamps: ten minutes ago (Kafka refuses more than an hour ahead), the same on both sides. */
const T0 = BigInt(Math.floor(Date.now() / 1000) * 1000 - 600_000)
const CODECS: readonly [string, CompressionCodec][] = [
  ['none', Compression.none],
  ['gzip', Compression.gzip],
  ['snappy', Compression.snappy],
  ['lz4', Compression.lz4],
  ['zstd', Compression.zstd],
]

before(async () => {
  pair = await Pair.start('data')
  const created = await pair.each(apis.CreateTopics, pair.version(apis.CreateTopics), {
    topics: [
      { name: topic('data'), numPartitions: 2, replicationFactor: 1 },
      {
        name: topic('appendtime'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }],
      },
      {
        name: topic('small'),
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'max.message.bytes', value: '1024' }],
      },
      { name: topic('idempotent'), numPartitions: 1, replicationFactor: 1 },
      { name: topic('trimmed'), numPartitions: 1, replicationFactor: 1 },
      { name: topic('old'), numPartitions: 1, replicationFactor: 1 },
    ],
    timeoutMs: 30_000,
  })
  for (const side of ['kafka', 'weir'] as const) {
    const bad = created[side].topics.filter((t) => t.errorCode !== 0)
    if (bad.length > 0) throw new Error(`${side}: CreateTopics failed: ${JSON.stringify(bad)}`)
  }
  for (const [name, n] of [
    ['data', 2],
    ['appendtime', 1],
    ['small', 1],
    ['idempotent', 1],
    ['trimmed', 1],
    ['old', 1],
  ] as const)
    await pair.waitForTopic(name, n)
})

after(async () => {
  await pair?.stop()
})

function records(n: number, prefix: string, at = T0): RecordInput[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`${prefix}-k${i}`),
    value: Buffer.from(`${prefix}-value-${i}-${'x'.repeat(40)}`),
    headers: [
      { key: 'h', value: Buffer.from(`${prefix}-${i}`) },
      { key: 'null', value: null },
    ],
    timestamp: at + BigInt(i),
  }))
}

function produceBody(name: string, partition: number, batch: Buffer | null, acks = -1) {
  return {
    transactionalId: null,
    acks,
    timeoutMs: 30_000,
    topicData: [{ name: topic(name), partitionData: [{ index: partition, records: batch }] }],
  }
}

/** Fetch request topics by name (v0-12) or by each side's topic id (v13+). */
class TopicIds {
  readonly #ids = new Map<string, Uuid>()

  async load(names: string[]): Promise<void> {
    const res = await pair.each(apis.Metadata, pair.version(apis.Metadata), {
      topics: names.map((name) => ({ name: topic(name) })),
      allowAutoTopicCreation: false,
    })
    for (const side of ['kafka', 'weir'] as const)
      for (const t of res[side].topics) this.#ids.set(`${side}/${t.name}`, t.topicId)
  }

  of(side: Side, name: string): Uuid {
    return this.#ids.get(`${side}/${name}`) ?? ('AAAAAAAAAAAAAAAAAAAAAA' as Uuid)
  }
}
const ids = new TopicIds()

function fetchBody(
  side: Side,
  version: number,
  partitions: {
    topic: string
    partition: number
    offset: bigint
    maxBytes?: number
    currentLeaderEpoch?: number
  }[],
  o: {
    maxBytes?: number
    isolationLevel?: number
    sessionId?: number
    sessionEpoch?: number
    maxWaitMs?: number
    minBytes?: number
  } = {},
) {
  const byTopic = new Map<string, typeof partitions>()
  for (const p of partitions) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p])
  return {
    replicaId: -1 as BrokerId,
    maxWaitMs: o.maxWaitMs ?? 0,
    minBytes: o.minBytes ?? 0,
    maxBytes: o.maxBytes ?? 50 * 1024 * 1024,
    isolationLevel: o.isolationLevel ?? 0,
    sessionId: o.sessionId ?? 0,
    sessionEpoch: o.sessionEpoch ?? -1,
    topics: [...byTopic].map(([name, ps]) => ({
      ...(version >= 13 ? { topicId: ids.of(side, name) } : { topic: topic(name) }),
      partitions: ps.map((p) => ({
        partition: p.partition,
        currentLeaderEpoch: p.currentLeaderEpoch ?? -1,
        fetchOffset: p.offset,
        logStartOffset: -1n,
        partitionMaxBytes: p.maxBytes ?? 1024 * 1024,
      })),
    })),
    forgottenTopicsData: [],
    rackId: '',
  }
}

function listOffsetsBody(
  name: string,
  partitions: { partition: number; timestamp: bigint; currentLeaderEpoch?: number }[],
  isolationLevel = 0,
) {
  return {
    replicaId: -1 as BrokerId,
    isolationLevel,
    topics: [
      {
        name: topic(name),
        partitions: partitions.map((p) => ({
          partitionIndex: p.partition,
          currentLeaderEpoch: p.currentLeaderEpoch ?? -1,
          timestamp: p.timestamp,
        })),
      },
    ],
    timeoutMs: 30_000,
  }
}

scenario(
  'Produce: acks 1 and -1, every codec, corrupt, too large, unknown partition, bad acks, timestamps',
  () => pair,
  async () => {
    const v = pair.version(apis.Produce)
    await pair.both(
      'produce/acks-1',
      apis.Produce,
      v,
      produceBody('data', 0, encodeBatch({ records: records(3, 'acks1') }), 1),
    )
    for (const [name, codec] of CODECS) {
      await pair.both(
        `produce/codec-${name}`,
        apis.Produce,
        v,
        produceBody('data', 0, encodeBatch({ records: records(4, name), compression: codec })),
      )
    }
    await pair.both(
      'produce/partition-1',
      apis.Produce,
      v,
      produceBody('data', 1, encodeBatch({ records: records(2, 'p1') })),
    )
    const corrupt = encodeBatch({ records: records(2, 'corrupt') })
    corrupt[corrupt.length - 3]! ^= 0xff
    await pair.both('produce/corrupt-crc', apis.Produce, v, produceBody('data', 0, corrupt))
    const badMagic = encodeBatch({ records: records(1, 'magic') })
    badMagic.writeInt8(1, BatchOffsets.magic)
    await pair.both('produce/bad-magic', apis.Produce, v, produceBody('data', 0, badMagic))
    await pair.both(
      'produce/too-large',
      apis.Produce,
      v,
      produceBody('small', 0, encodeBatch({ records: records(30, 'large') })),
    )
    await pair.both(
      'produce/fits',
      apis.Produce,
      v,
      produceBody('small', 0, encodeBatch({ records: records(1, 'fits') })),
    )
    await pair.both(
      'produce/unknown-partition',
      apis.Produce,
      v,
      produceBody('data', 7, encodeBatch({ records: records(1, 'unknown') })),
    )
    await pair.both(
      'produce/unknown-topic',
      apis.Produce,
      v,
      produceBody('no-such-topic', 0, encodeBatch({ records: records(1, 'unknown') })),
    )
    await pair.both(
      'produce/bad-acks',
      apis.Produce,
      v,
      produceBody('data', 0, encodeBatch({ records: records(1, 'acks2') }), 2),
    )
    await pair.both(
      'produce/future-timestamp',
      apis.Produce,
      v,
      produceBody('data', 0, encodeBatch({ records: records(1, 'future', BigInt(Date.now()) + 7_200_000n) })),
    )
    await pair.both(
      'produce/empty-batch',
      apis.Produce,
      v,
      produceBody('data', 0, encodeBatch({ records: [] })),
    )
    // Null records are left out: Kafka 4.0 fails on them with a NullPointerException and never answers.
    await pair.both(
      'produce/offset-gap',
      apis.Produce,
      v,
      produceBody(
        'data',
        0,
        encodeBatch({
          records: records(2, 'gap').map((r, i) => ({ ...r, offsetDelta: i * 2 })),
        }),
      ),
    )
    await pair.both(
      'produce/compressed-offset-gap',
      apis.Produce,
      v,
      produceBody(
        'data',
        0,
        encodeBatch({
          records: records(2, 'cgap').map((r, i) => ({ ...r, offsetDelta: i * 2 })),
          compression: Compression.gzip,
        }),
      ),
    )
    await pair.both(
      'produce/log-append-time',
      apis.Produce,
      v,
      produceBody('appendtime', 0, encodeBatch({ records: records(3, 'lat') })),
    )
    await pair.both(
      'produce/log-append-time-gzip',
      apis.Produce,
      v,
      produceBody(
        'appendtime',
        0,
        encodeBatch({ records: records(3, 'latz'), compression: Compression.gzip }),
      ),
    )
    // kafka-python 2.0.2 produces with v3.
    await pair.both(
      'produce/v3',
      apis.Produce,
      3,
      produceBody('old', 0, encodeBatch({ records: records(3, 'v3'), compression: Compression.gzip })),
    )
    await pair.both(
      'produce/v3-unknown',
      apis.Produce,
      3,
      produceBody('old', 4, encodeBatch({ records: records(1, 'v3') })),
    )
    // acks=0: no answer at all; the records land all the same.
    const silent = encodeBatch({ records: records(1, 'acks0') })
    for (const side of SIDES) pair.connection(side).send(apis.Produce, v, produceBody('small', 0, silent, 0))
    await pair.both(
      'produce/acks-0-landed',
      apis.ListOffsets,
      pair.version(apis.ListOffsets),
      listOffsetsBody('small', [{ partition: 0, timestamp: -1n }]),
      { until: (res) => res.topics[0]?.partitions[0]?.offset === 2n },
    )
  },
)

scenario(
  'Fetch: the same records, offsets and high watermarks; errors; sessions; v4',
  () => pair,
  async () => {
    const v = pair.version(apis.Fetch)
    await ids.load(['data', 'appendtime', 'small', 'old'])
    const fetch = (
      step: string,
      ps: Parameters<typeof fetchBody>[2],
      o: Parameters<typeof fetchBody>[3] = {},
      version = v,
    ) => pair.both(`fetch/${step}`, apis.Fetch, version, (side) => fetchBody(side, version, ps, o))
    await fetch('all', [
      { topic: 'data', partition: 0, offset: 0n },
      { topic: 'data', partition: 1, offset: 0n },
      { topic: 'small', partition: 0, offset: 0n },
    ])
    await fetch('log-append-time', [{ topic: 'appendtime', partition: 0, offset: 0n }])
    await fetch('middle-of-batch', [{ topic: 'data', partition: 0, offset: 5n }])
    await fetch('at-high-watermark', [{ topic: 'data', partition: 1, offset: 2n }])
    await fetch('out-of-range', [{ topic: 'data', partition: 1, offset: 1000n }])
    await fetch('negative-offset', [{ topic: 'data', partition: 1, offset: -5n }])
    await fetch('unknown-partition', [{ topic: 'data', partition: 9, offset: 0n }])
    await fetch('small-partition-max', [{ topic: 'data', partition: 0, offset: 0n, maxBytes: 100 }])
    await fetch(
      'small-response-max',
      [
        { topic: 'data', partition: 0, offset: 0n },
        { topic: 'data', partition: 1, offset: 0n },
      ],
      { maxBytes: 300 },
    )
    await fetch('fenced-epoch', [{ topic: 'data', partition: 0, offset: 0n, currentLeaderEpoch: 5 }])
    await fetch('read-committed', [{ topic: 'data', partition: 0, offset: 0n }], { isolationLevel: 1 })
    // A long poll at the end of the log: both wait out maxWaitMs and answer empty.
    await fetch('long-poll', [{ topic: 'data', partition: 1, offset: 2n }], { maxWaitMs: 300, minBytes: 1 })
    // A session: epoch 0 opens it with every partition, epoch 1 with none answers only what changed.
    const opened = await fetch(
      'session-open',
      [
        { topic: 'data', partition: 0, offset: 0n },
        { topic: 'data', partition: 1, offset: 2n },
      ],
      { sessionEpoch: 0 },
    )
    await pair.both('fetch/session-incremental', apis.Fetch, v, (side) =>
      fetchBody(side, v, [], { sessionId: opened[side].sessionId, sessionEpoch: 1 }),
    )
    await pair.both('fetch/session-bad-epoch', apis.Fetch, v, (side) =>
      fetchBody(side, v, [], { sessionId: opened[side].sessionId, sessionEpoch: 5 }),
    )
    await pair.both('fetch/session-unknown', apis.Fetch, v, () =>
      fetchBody('kafka', v, [], { sessionId: 123456, sessionEpoch: 1 }),
    )
    // kafka-python 2.0.2 fetches with v4.
    await fetch(
      'v4',
      [
        { topic: 'old', partition: 0, offset: 0n },
        { topic: 'data', partition: 1, offset: 0n },
      ],
      {},
      4,
    )
    await fetch('v4-out-of-range', [{ topic: 'old', partition: 0, offset: 99n }], {}, 4)
    await fetch('v4-unknown', [{ topic: 'no-such-topic', partition: 0, offset: 0n }], {}, 4)
    if (v >= 13) {
      await pair.both('fetch/unknown-topic-id', apis.Fetch, v, {
        ...fetchBody('kafka', v, []),
        topics: [
          {
            topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' as Uuid,
            partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1024 }],
          },
        ],
      })
    }
  },
)

scenario(
  'ListOffsets: earliest, latest, by time, max timestamp, v1',
  () => pair,
  async () => {
    const v = pair.version(apis.ListOffsets)
    const list = (
      step: string,
      name: string,
      ps: Parameters<typeof listOffsetsBody>[1],
      version = v,
      isolation = 0,
    ) => pair.both(`list-offsets/${step}`, apis.ListOffsets, version, listOffsetsBody(name, ps, isolation))
    await list('earliest-latest', 'data', [
      { partition: 0, timestamp: -2n },
      { partition: 1, timestamp: -1n },
    ])
    await list('max-timestamp', 'data', [{ partition: 0, timestamp: -3n }])
    await list('by-time', 'data', [{ partition: 0, timestamp: T0 + 2n }])
    await list('by-time-before-all', 'data', [{ partition: 0, timestamp: T0 - 100_000n }])
    await list('by-time-after-all', 'data', [{ partition: 0, timestamp: T0 + 100_000n }])
    await pair.both(
      'list-offsets/log-append-time',
      apis.ListOffsets,
      v,
      listOffsetsBody('appendtime', [{ partition: 0, timestamp: -3n }]),
      // The brokers' clocks stamped those records.
      { ignore: ['topics[name=appendtime].partitions[partitionIndex=0].timestamp'] },
    )
    await list('read-committed', 'data', [{ partition: 0, timestamp: -1n }], v, 1)
    await list('unknown-partition', 'data', [{ partition: 9, timestamp: -1n }])
    await list('unknown-topic', 'no-such-topic', [{ partition: 0, timestamp: -1n }])
    await list('fenced-epoch', 'data', [{ partition: 0, timestamp: -1n, currentLeaderEpoch: 3 }])
    if (pair.serves(apis.ListOffsets, 8))
      await list('earliest-local', 'data', [{ partition: 0, timestamp: -4n }])
    await list('same-partition-twice', 'data', [
      { partition: 0, timestamp: -2n },
      { partition: 0, timestamp: -1n },
    ])
    // kafka-python 2.0.2 lists offsets with v1.
    await list('v1', 'old', [{ partition: 0, timestamp: -1n }], 1)
    await list('v1-by-time', 'data', [{ partition: 0, timestamp: T0 + 1n }], 1)
    // Each special timestamp at every version: Kafka accepts each from the version that brought it.
    for (let version = 1; version <= v; version++) {
      if (!pair.serves(apis.ListOffsets, version)) continue
      await list(
        `v${version}-special`,
        'data',
        [
          { partition: 0, timestamp: -3n },
          { partition: 1, timestamp: -4n },
        ],
        version,
      )
      await list(`v${version}-latest-tiered`, 'data', [{ partition: 0, timestamp: -5n }], version)
    }
  },
)

scenario(
  'InitProducerId, idempotent produce, duplicate retry, out-of-order and stale epochs',
  () => pair,
  async () => {
    const v = pair.version(apis.Produce)
    const init = await pair.both(
      'idempotent/init-producer-id',
      apis.InitProducerId,
      pair.version(apis.InitProducerId),
      {
        transactionalId: null,
        transactionTimeoutMs: 60_000,
        producerId: -1n as ProducerId,
        producerEpoch: -1,
      },
      // Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its first block of producer ids came from
      // its controller; clients retry, and so does this step.
      { until: (res) => res.errorCode !== 14 },
    )
    const batch = (
      side: Side,
      n: number,
      baseSequence: number,
      o: { epoch?: number; prefix?: string } = {},
    ) =>
      encodeBatch({
        records: records(n, o.prefix ?? `seq${baseSequence}`),
        producerId: init[side].producerId,
        producerEpoch: o.epoch ?? init[side].producerEpoch,
        baseSequence,
      })
    const produce = (step: string, make: (side: Side) => Buffer) =>
      pair.both(`idempotent/${step}`, apis.Produce, v, (side) => produceBody('idempotent', 0, make(side)))
    await produce('first', (side) => batch(side, 3, 0))
    await produce('second', (side) => batch(side, 2, 3))
    await produce('duplicate-retry', (side) => batch(side, 2, 3))
    await produce('duplicate-older', (side) => batch(side, 3, 0))
    await produce('out-of-order', (side) => batch(side, 1, 10))
    await produce('next', (side) => batch(side, 1, 5))
    await produce('epoch-bump-nonzero-sequence', (side) => batch(side, 1, 3, { epoch: 1 }))
    await produce('epoch-bump', (side) => batch(side, 1, 0, { epoch: 1 }))
    await produce('stale-epoch', (side) => batch(side, 1, 6, { epoch: 0 }))
    await produce('unknown-producer', () =>
      encodeBatch({
        records: records(1, 'stranger'),
        producerId: TEST_PRODUCER_ID_MIN + 1n,
        producerEpoch: 0,
        baseSequence: 7,
      }),
    )
    await produce('unknown-producer-zero', () =>
      encodeBatch({
        records: records(1, 'stranger'),
        producerId: TEST_PRODUCER_ID_MIN + 2n,
        producerEpoch: 0,
        baseSequence: 0,
      }),
    )
    await pair.both(
      'idempotent/describe-producers',
      apis.DescribeProducers,
      pair.version(apis.DescribeProducers),
      {
        topics: [
          { name: topic('idempotent'), partitionIndexes: [0, 5] },
          { name: topic('no-such-topic'), partitionIndexes: [0] },
        ],
      },
    )
    await ids.load(['idempotent'])
    const f = pair.version(apis.Fetch)
    await pair.both('idempotent/fetch', apis.Fetch, f, (side) =>
      fetchBody(side, f, [{ topic: 'idempotent', partition: 0, offset: 0n }]),
    )
    await pair.both(
      'idempotent/init-producer-id-again',
      apis.InitProducerId,
      pair.version(apis.InitProducerId),
      (side) => ({
        transactionalId: null,
        transactionTimeoutMs: 60_000,
        producerId: init[side].producerId,
        producerEpoch: init[side].producerEpoch,
      }),
    )
    // Transactions: a transactional id's producer id, and a transactional batch.
    await pair.both('transactions/init-producer-id', apis.InitProducerId, pair.version(apis.InitProducerId), {
      transactionalId: 'differential-tx' as TransactionalId,
      transactionTimeoutMs: 60_000,
      producerId: -1n as ProducerId,
      producerEpoch: -1,
    })
    await pair.both('transactions/produce', apis.Produce, v, {
      ...produceBody(
        'idempotent',
        0,
        encodeBatch({
          records: records(1, 'tx'),
          producerId: TEST_PRODUCER_ID_MIN + 3n,
          producerEpoch: 0,
          baseSequence: 0,
          transactional: true,
        }),
      ),
      transactionalId: 'differential-tx' as TransactionalId,
    })
  },
)

scenario(
  'OffsetForLeaderEpoch',
  () => pair,
  async () => {
    const v = pair.version(apis.OffsetForLeaderEpoch)
    const ask = (
      step: string,
      ps: { partition: number; leaderEpoch: number; currentLeaderEpoch?: number }[],
      name = 'data',
    ) =>
      pair.both(`offset-for-leader-epoch/${step}`, apis.OffsetForLeaderEpoch, v, {
        replicaId: -1 as BrokerId,
        topics: [
          {
            topic: topic(name),
            partitions: ps.map((p) => ({
              partition: p.partition,
              leaderEpoch: p.leaderEpoch,
              currentLeaderEpoch: p.currentLeaderEpoch ?? -1,
            })),
          },
        ],
      })
    await ask('epoch-0', [
      { partition: 0, leaderEpoch: 0 },
      { partition: 1, leaderEpoch: 0, currentLeaderEpoch: 0 },
    ])
    await ask('future-epoch', [{ partition: 0, leaderEpoch: 7 }])
    await ask('fenced', [{ partition: 0, leaderEpoch: 0, currentLeaderEpoch: 4 }])
    await ask('unknown-partition', [{ partition: 5, leaderEpoch: 0 }])
    await ask('unknown-topic', [{ partition: 0, leaderEpoch: 0 }], 'no-such-topic')
    await ask('empty-partition', [{ partition: 0, leaderEpoch: 0 }], 'trimmed')
  },
)

scenario(
  'DeleteRecords, then ListOffsets and Fetch below the new log start',
  () => pair,
  async () => {
    const v = pair.version(apis.DeleteRecords)
    await pair.each(
      apis.Produce,
      pair.version(apis.Produce),
      produceBody('trimmed', 0, encodeBatch({ records: records(3, 'a') })),
    )
    await pair.each(
      apis.Produce,
      pair.version(apis.Produce),
      produceBody('trimmed', 0, encodeBatch({ records: records(3, 'b') })),
    )
    const del = (step: string, ps: { partition: number; offset: bigint }[], name = 'trimmed') =>
      pair.both(`delete-records/${step}`, apis.DeleteRecords, v, {
        topics: [
          {
            name: topic(name),
            partitions: ps.map((p) => ({ partitionIndex: p.partition, offset: p.offset })),
          },
        ],
        timeoutMs: 30_000,
      })
    await del('mid-batch', [{ partition: 0, offset: 2n }])
    await del('backwards', [{ partition: 0, offset: 1n }])
    await del('beyond-high-watermark', [{ partition: 0, offset: 100n }])
    await del('unknown-partition', [{ partition: 3, offset: 1n }])
    await del('unknown-topic', [{ partition: 0, offset: 1n }], 'no-such-topic')
    await pair.both(
      'delete-records/list-offsets',
      apis.ListOffsets,
      pair.version(apis.ListOffsets),
      listOffsetsBody('trimmed', [{ partition: 0, timestamp: -2n }]),
    )
    await ids.load(['trimmed'])
    const f = pair.version(apis.Fetch)
    await pair.both('delete-records/fetch-below', apis.Fetch, f, (side) =>
      fetchBody(side, f, [{ topic: 'trimmed', partition: 0, offset: 0n }]),
    )
    await pair.both('delete-records/fetch-at-start', apis.Fetch, f, (side) =>
      fetchBody(side, f, [{ topic: 'trimmed', partition: 0, offset: 2n }]),
    )
    await del('to-high-watermark', [{ partition: 0, offset: -1n }])
    await pair.both(
      'delete-records/earliest-after-all',
      apis.ListOffsets,
      pair.version(apis.ListOffsets),
      listOffsetsBody('trimmed', [{ partition: 0, timestamp: -2n }]),
    )
    await pair.both(
      'delete-records/latest-after-all',
      apis.ListOffsets,
      pair.version(apis.ListOffsets),
      listOffsetsBody('trimmed', [{ partition: 0, timestamp: -1n }]),
    )
  },
)

scenario(
  'DescribeLogDirs',
  () => pair,
  async () => {
    // Same bytes in each partition, so the same sizes; the directories and volumes are each side's.
    await pair.both(
      'describe-log-dirs',
      apis.DescribeLogDirs,
      pair.version(apis.DescribeLogDirs),
      {
        topics: [
          { topic: topic('data'), partitions: [0, 1, 7] },
          { topic: topic('no-such-topic'), partitions: [0] },
        ],
      },
      { ignore: ['results[*].logDir', 'results[*].totalBytes', 'results[*].usableBytes'] },
    )
  },
)
