/**
 * kafkajs 2.2.4 against a real `weir start` process: keyed records with headers in every codec,
 * an idempotent producer, ListOffsets by time, and everything read back exactly once and in order,
 * again after a clean restart and after kill -9. Records are read with kafkajs's own Fetch (its
 * broker API: encoder, decoder, decompression), since consumer groups are not served yet.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { zstdCompressSync, zstdDecompressSync } from 'node:zlib'
import kafkajs from 'kafkajs'
import SnappyCodec from 'kafkajs-snappy'
import * as lz4 from 'lz4js'
import { hash as xxh32 } from 'lz4js/xxh32.js'
import { CompatTarget } from '../support/compat-target.ts'
import { waitFor } from '../support/weir-process.ts'

const { CompressionCodecs, CompressionTypes, Kafka, logLevel } = kafkajs

/** lz4js writes dependent-block frames, which Kafka refuses: set the independence flag (see the golden driver). */
function lz4Frame(input: Buffer): Buffer {
  const frame = Buffer.from(lz4.compress(input))
  frame[4] = (frame[4] ?? 0) | 0x20
  frame[6] = (xxh32(0, frame, 4, 2) >> 8) & 0xff
  return frame
}
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async (encoder: { buffer: Buffer }) => lz4Frame(encoder.buffer),
  decompress: async (buffer: Buffer) => Buffer.from(lz4.decompress(buffer)),
})
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: async (encoder: { buffer: Buffer }) => zstdCompressSync(encoder.buffer),
  decompress: async (buffer: Buffer) => zstdDecompressSync(buffer),
})

const CODECS = [
  ['none', CompressionTypes.None],
  ['gzip', CompressionTypes.GZIP],
  ['snappy', CompressionTypes.Snappy],
  ['lz4', CompressionTypes.LZ4],
  ['zstd', CompressionTypes.ZSTD],
] as const
const PER_CODEC = 40
const BATCHES_PER_CODEC = 4
const PARTITIONS = 3

interface Read {
  readonly partition: number
  readonly offset: bigint
  readonly key: string
  readonly value: string
  readonly headers: Record<string, string>
  readonly timestamp: string
  readonly producerId: string
}

/** kafkajs's internal cluster (its broker API sends Fetch without a consumer group). */
function clusterOf(kafka: InstanceType<typeof Kafka>, isolationLevel = 0) {
  const symbol = Object.getOwnPropertySymbols(kafka).find(
    (s) => s.description === 'private:Kafka:createCluster',
  )
  assert.ok(symbol !== undefined, 'kafkajs internals changed')
  const create = (kafka as unknown as Record<symbol, (o: object) => KafkajsCluster>)[symbol]!
  return create({ isolationLevel, allowAutoTopicCreation: false })
}

interface KafkajsCluster {
  connect(): Promise<void>
  disconnect(): Promise<void>
  addTargetTopic(topic: string): Promise<void>
  refreshMetadata(): Promise<void>
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>
  findBroker(o: { nodeId: string }): Promise<{
    fetch(request: object): Promise<{
      responses: Array<{
        topicName: string
        partitions: Array<{
          partition: number
          errorCode: number
          highWatermark: string
          messages: Array<{
            offset: string
            key: Buffer | null
            value: Buffer | null
            timestamp: string
            headers: Record<string, Buffer | Buffer[]>
            batchContext?: { producerId: string }
          }>
        }>
      }>
    }>
  }>
}

/** Every record of `topic` from offset 0 to the high watermark, per partition in offset order. */
async function readAll(
  kafka: InstanceType<typeof Kafka>,
  topic: string,
  partitions: number,
): Promise<Read[]> {
  const cluster = clusterOf(kafka)
  await cluster.connect()
  try {
    await cluster.addTargetTopic(topic)
    await cluster.refreshMetadata()
    const leaders = cluster.findLeaderForPartitions(
      topic,
      Array.from({ length: partitions }, (_, i) => i),
    )
    const out: Read[] = []
    for (const [nodeId, ps] of Object.entries(leaders)) {
      const broker = await cluster.findBroker({ nodeId })
      for (const partition of ps) {
        let offset = 0n
        for (let round = 0; round < 1000; round++) {
          const res = await broker.fetch({
            isolationLevel: 0,
            maxWaitTime: 100,
            minBytes: 1,
            maxBytes: 64 * 1024,
            topics: [
              { topic, partitions: [{ partition, fetchOffset: offset.toString(), maxBytes: 16 * 1024 }] },
            ],
          })
          const p = res.responses[0]!.partitions[0]!
          assert.equal(p.errorCode, 0)
          for (const m of p.messages) {
            const o = BigInt(m.offset)
            if (o < offset) continue // the start of a compressed batch read from its middle
            out.push({
              partition,
              offset: o,
              key: m.key?.toString() ?? '',
              value: m.value?.toString() ?? '',
              headers: Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, String(v)])),
              timestamp: m.timestamp,
              producerId: m.batchContext?.producerId ?? '-1',
            })
            offset = o + 1n
          }
          if (offset >= BigInt(p.highWatermark)) break
        }
      }
    }
    return out
  } finally {
    await cluster.disconnect()
  }
}

function checkCodecRecords(records: readonly Read[]): void {
  assert.equal(records.length, CODECS.length * PER_CODEC, 'every record once')
  const seen = new Set<string>()
  for (const r of records) {
    assert.ok(!seen.has(r.key), `${r.key} read twice`)
    seen.add(r.key)
    const [, codec, i] = /^k-(\w+)-(\d+)$/.exec(r.key) ?? []
    assert.equal(r.value, `${codec}-${i}:${'payload-'.repeat(8)}`)
    assert.deepEqual(r.headers, { codec: codec!, index: i!, source: 'kafkajs' })
  }
  // Within a partition, records are in the order they were sent.
  for (let p = 0; p < PARTITIONS; p++) {
    const order = records.filter((r) => r.partition === p)
    for (let i = 1; i < order.length; i++) {
      assert.ok(order[i]!.offset > order[i - 1]!.offset)
      const rank = (r: Read) => {
        const [, codec, n] = /^k-(\w+)-(\d+)$/.exec(r.key)!
        return CODECS.findIndex(([name]) => name === codec) * 1000 + Number(n)
      }
      assert.ok(rank(order[i]!) > rank(order[i - 1]!), `partition ${p} keeps send order`)
    }
  }
}

describe('kafkajs against weir start', () => {
  // A restarted controller waits out the last broker session before re-registration.
  const weir = new CompatTarget('weir-kafkajs-', {
    'broker.heartbeat.interval.ms': 300,
    'broker.session.timeout.ms': 1200,
  })
  let kafka: InstanceType<typeof Kafka>
  const timestamps = { base: 1_600_000_000_000 }

  before(async () => {
    await weir.start()
    kafka = new Kafka({ clientId: 'weir-compat', brokers: weir.addresses, logLevel: logLevel.NOTHING })
  })

  after(async () => {
    await weir.close()
  })

  test('keyed records with headers in every codec come back exactly once and in order', async () => {
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({
      topics: [{ topic: 'codecs', numPartitions: PARTITIONS }],
      waitForLeaders: true,
    })
    // CreateTopics answers once the controller committed the topic; the broker takes leadership a
    // moment later, partition by partition (as Kafka). The default producer is not idempotent and
    // kafkajs resends a whole multi-partition request when one partition is refused, so produce only
    // once every partition answers ListOffsets (otherwise a resend can legally duplicate records).
    await waitFor('every partition to be served', async () => {
      const offsets = await admin.fetchTopicOffsets('codecs')
      return offsets.length === PARTITIONS ? true : undefined
    })
    await admin.disconnect()
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
    for (const [codec, compression] of CODECS) {
      for (let b = 0; b < BATCHES_PER_CODEC; b++) {
        const per = PER_CODEC / BATCHES_PER_CODEC
        await producer.send({
          topic: 'codecs',
          acks: -1,
          compression,
          messages: Array.from({ length: per }, (_, j) => {
            const i = b * per + j
            return {
              key: `k-${codec}-${i}`,
              value: `${codec}-${i}:${'payload-'.repeat(8)}`,
              headers: { codec, index: String(i), source: 'kafkajs' },
            }
          }),
        })
      }
    }
    await producer.disconnect()
    checkCodecRecords(await readAll(kafka, 'codecs', PARTITIONS))
  })

  test('an idempotent producer gets a producer id and writes each record once', async () => {
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: true,
    })
    await producer.connect()
    for (let i = 0; i < 20; i++) {
      await producer.send({ topic: 'idempotent', messages: [{ key: `i${i}`, value: `v${i}`, partition: 0 }] })
    }
    await producer.disconnect()
    const records = await readAll(kafka, 'idempotent', 1)
    assert.deepEqual(
      records.map((r) => r.value),
      Array.from({ length: 20 }, (_, i) => `v${i}`),
    )
    assert.ok(records.every((r) => BigInt(r.producerId) >= 0n && r.producerId === records[0]!.producerId))
  })

  test('ListOffsets: earliest, latest and by timestamp', async () => {
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: 'timed', numPartitions: 1 }], waitForLeaders: true })
    const producer = kafka.producer()
    await producer.connect()
    for (let i = 0; i < 3; i++) {
      await producer.send({
        topic: 'timed',
        messages: [0, 1].map((j) => ({
          value: `t${i}-${j}`,
          timestamp: String(timestamps.base + i * 10_000 + j),
        })),
      })
    }
    await producer.disconnect()
    const [offsets] = await admin.fetchTopicOffsets('timed')
    assert.deepEqual([offsets!.low, offsets!.high], ['0', '6'])
    const at = async (ts: number) => (await admin.fetchTopicOffsetsByTimestamp('timed', ts))[0]!.offset
    assert.equal(await at(timestamps.base + 5_000), '2')
    assert.equal(await at(timestamps.base + 20_000), '4')
    assert.equal(await at(timestamps.base), '0')
    await admin.disconnect()
  })

  test('a clean restart serves everything again, and writes continue at the next offsets', async () => {
    await weir.restart()
    checkCodecRecords(await readAll(kafka, 'codecs', PARTITIONS))
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const [meta] = await producer.send({
      topic: 'idempotent',
      messages: [{ value: 'after-restart', partition: 0 }],
    })
    assert.equal(meta!.baseOffset, '20')
    await producer.disconnect()
    const admin = kafka.admin()
    await admin.connect()
    assert.equal(
      (await admin.fetchTopicOffsetsByTimestamp('timed', timestamps.base + 5_000))[0]!.offset,
      '2',
      'the time index survived',
    )
    await admin.disconnect()
  })

  test('after kill -9, every acknowledged (acks=-1) record is still there', async () => {
    const producer = kafka.producer()
    await producer.connect()
    for (let i = 0; i < 10; i++) {
      await producer.send({ topic: 'crash', acks: -1, messages: [{ value: `c${i}`, partition: 0 }] })
    }
    await producer.disconnect()
    await weir.crash()
    assert.deepEqual(
      (await readAll(kafka, 'crash', 1)).map((r) => r.value),
      Array.from({ length: 10 }, (_, i) => `c${i}`),
    )
    checkCodecRecords(await readAll(kafka, 'codecs', PARTITIONS))
    assert.equal((await readAll(kafka, 'idempotent', 1)).length, 21)
  })
})
