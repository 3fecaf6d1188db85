// kafkajs scenario for the golden capture (tools/capture/run-all.ts): admin, produce in every codec,
// a consumer group, offsets. Prints `@@step <slug> <note>` before each step so the proxy can label
// the exchanges. Env: BOOTSTRAP, TOPIC, GROUP.
import { createRequire } from 'node:module'
import { zstdCompressSync, zstdDecompressSync } from 'node:zlib'
import kafkajs from 'kafkajs'
import SnappyCodec from 'kafkajs-snappy'
import * as lz4 from 'lz4js'
import { hash as xxh32 } from 'lz4js/xxh32.js'

const bootstrap = process.env.BOOTSTRAP ?? '127.0.0.1:9092'
const topic = process.env.TOPIC ?? 'golden-kafkajs'
const groupId = process.env.GROUP ?? 'golden-kafkajs-group'
const perCodec = 3
/** Compressible filler, so that every codec's batch is smaller compressed and sent compressed. */
const filler = 'weir-golden-'.repeat(6)
const { CompressionCodecs, CompressionTypes, Kafka, logLevel } = kafkajs

async function step(slug: string, note: string): Promise<void> {
  console.log(`@@step ${slug} ${note}`)
  await new Promise((done) => setTimeout(done, 150))
}

/**
 * An LZ4 frame that Kafka accepts: lz4js leaves the block-independence flag clear, which Kafka refuses
 * ("Dependent block stream is unsupported"). Our batches fit in one block, so they are independent:
 * set the flag (FLG 0x40 -> 0x60) and redo the header checksum (byte 6: xxh32 of FLG and BD, >> 8).
 */
function lz4Frame(input: Buffer): Buffer {
  if (input.length >= 4 * 1024 * 1024) throw new Error('lz4Frame: one block only')
  const frame = Buffer.from(lz4.compress(input))
  frame[4] = (frame[4] ?? 0) | 0x20
  frame[6] = (xxh32(0, frame, 4, 2) >> 8) & 0xff
  return frame
}

// kafkajs ships only gzip; Snappy via kafkajs-snappy, LZ4 (frame format) via lz4js, zstd via node:zlib.
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async (encoder: { buffer: Buffer }) => lz4Frame(encoder.buffer),
  decompress: async (buffer: Buffer) => Buffer.from(lz4.decompress(buffer)),
})
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: async (encoder: { buffer: Buffer }) => zstdCompressSync(encoder.buffer),
  decompress: async (buffer: Buffer) => zstdDecompressSync(buffer),
})

const pkg = createRequire(import.meta.url)('kafkajs/package.json') as { version: string }
console.log(`@@version kafkajs ${pkg.version}`)

const kafka = new Kafka({ clientId: 'golden-kafkajs', brokers: [bootstrap], logLevel: logLevel.WARN })
const admin = kafka.admin()
await admin.connect()
await step('admin-create-topic', `CreateTopics ${topic}, 3 partitions, replication 1`)
await admin.createTopics({
  topics: [{ topic, numPartitions: 3, replicationFactor: 1 }],
  waitForLeaders: true,
})
await step('admin-create-topic-again', `CreateTopics ${topic} again: TOPIC_ALREADY_EXISTS`)
await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] })
await step('admin-list-topics', 'listTopics')
await admin.listTopics()
await step('admin-describe-cluster', 'describeCluster')
await admin.describeCluster()
await step('admin-describe-configs', `DescribeConfigs of topic ${topic} and broker 1`)
await admin.describeConfigs({
  resources: [
    { type: 2, name: topic },
    { type: 4, name: '1' },
  ],
  includeSynonyms: false,
})

const producer = kafka.producer({ allowAutoTopicCreation: false })
await producer.connect()
const codecs = [
  ['none', CompressionTypes.None],
  ['gzip', CompressionTypes.GZIP],
  ['snappy', CompressionTypes.Snappy],
  ['lz4', CompressionTypes.LZ4],
  ['zstd', CompressionTypes.ZSTD],
] as const
for (const [index, [name, compression]] of codecs.entries()) {
  const partition = index % 3
  await step(
    `produce-${name}`,
    `Produce one batch of ${perCodec} records to ${topic}-${partition}, compression ${name}, acks -1, keys k0..k${perCodec - 1}, values ${name}-<i>:weir-golden-x6, headers trace=<codec>-<i> and source=kafkajs`,
  )
  await producer.send({
    topic,
    acks: -1,
    compression,
    messages: Array.from({ length: perCodec }, (_, i) => ({
      partition,
      key: `k${i}`,
      value: `${name}-${i}:${filler}`,
      headers: { trace: `${name}-${i}`, source: 'kafkajs' },
    })),
  })
}
await producer.disconnect()

await step(
  'consume-join',
  `consumer group ${groupId} subscribes to ${topic} from the beginning (JoinGroup, SyncGroup)`,
)
const consumer = kafka.consumer({ groupId, heartbeatInterval: 500, sessionTimeout: 10_000 })
await consumer.connect()
await consumer.subscribe({ topic, fromBeginning: true })
const total = perCodec * codecs.length
let seen = 0
const all = new Promise<void>((done) => {
  void consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      seen++
      await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }])
      if (seen === total) done()
    },
  })
})
await step('consume-fetch', `Fetch the ${total} records, committing each offset (OffsetCommit)`)
await all
await step('consume-heartbeat', 'idle 1.5 s in the group: Heartbeat')
await new Promise((done) => setTimeout(done, 1500))
await step('admin-fetch-offsets', `OffsetFetch of group ${groupId}`)
await admin.fetchOffsets({ groupId, topics: [topic] })
await step('admin-list-offsets', `ListOffsets of ${topic}: earliest, latest, by timestamp`)
await admin.fetchTopicOffsets(topic)
await admin.fetchTopicOffsetsByTimestamp(topic, Date.now() - 60_000)
await step('admin-describe-groups', `ListGroups, DescribeGroups ${groupId}`)
await admin.listGroups()
await admin.describeGroups([groupId])
await step('consume-leave', 'consumer disconnects: LeaveGroup')
await consumer.disconnect()
await step('admin-delete-group', `DeleteGroups ${groupId}`)
await admin.deleteGroups([groupId])
await step('admin-delete-topic', `DeleteTopics ${topic}`)
await admin.deleteTopics({ topics: [topic] })
await admin.disconnect()
console.log(`@@done consumed ${seen}`)
