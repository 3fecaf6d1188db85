// @platformatic/kafka scenario for the golden capture (tools/capture/run-all.ts): admin, produce in
// every codec, a classic and a KIP-848 consumer group, offsets. Prints `@@step <slug> <note>` before
// each step so the proxy can label the exchanges. Env: BOOTSTRAP, TOPIC, GROUP.
import { readFileSync } from 'node:fs'
import {
  Admin,
  ConfigResourceTypes,
  Consumer,
  GroupProtocols,
  Producer,
  stringDeserializers,
  stringSerializers,
} from '@platformatic/kafka'

const bootstrap = process.env.BOOTSTRAP ?? '127.0.0.1:9092'
const topic = process.env.TOPIC ?? 'golden-platformatic'
const groupId = process.env.GROUP ?? 'golden-platformatic-group'
const perCodec = 3
const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
const total = perCodec * codecs.length
/** Compressible filler, so that every codec's batch is smaller compressed and sent compressed. */
const filler = 'weir-golden-'.repeat(6)

async function step(slug: string, note: string): Promise<void> {
  console.log(`@@step ${slug} ${note}`)
  await new Promise((done) => setTimeout(done, 150))
}

// The package exports no ./package.json: read it beside the resolved entry point (dist/index.js).
const pkg = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.resolve('@platformatic/kafka')), 'utf8'),
) as {
  version: string
}
console.log(`@@version platformatic-kafka ${pkg.version}`)

const base = { bootstrapBrokers: [bootstrap], retries: 3 }
const admin = new Admin({ ...base, clientId: 'golden-platformatic-admin' })
await step('admin-create-topic', `CreateTopics ${topic}, 3 partitions, replication 1`)
await admin.createTopics({ topics: [topic], partitions: 3, replicas: 1 })
await step('admin-create-topic-again', `CreateTopics ${topic} again: TOPIC_ALREADY_EXISTS`)
await admin
  .createTopics({ topics: [topic], partitions: 3, replicas: 1 })
  .catch((e: Error) => console.log(e.message))
await step('admin-list-topics', 'listTopics')
await admin.listTopics()
await step('admin-metadata', `metadata of ${topic}`)
await admin.metadata({ topics: [topic], forceUpdate: true })
await step('admin-describe-configs', `DescribeConfigs of topic ${topic} and broker 1`)
await admin.describeConfigs({
  resources: [
    { resourceType: ConfigResourceTypes.TOPIC, resourceName: topic },
    { resourceType: ConfigResourceTypes.BROKER, resourceName: '1' },
  ],
})

const producer = new Producer({
  ...base,
  clientId: 'golden-platformatic-producer',
  serializers: stringSerializers,
})
for (const [index, codec] of codecs.entries()) {
  const partition = index % 3
  await step(
    `produce-${codec}`,
    `Produce one batch of ${perCodec} records to ${topic}-${partition}, compression ${codec}, keys k0..k${perCodec - 1}, values ${codec}-<i>:weir-golden-x6, headers trace=<codec>-<i> and source=platformatic`,
  )
  await producer.send({
    compression: codec,
    messages: Array.from({ length: perCodec }, (_, i) => ({
      topic,
      partition,
      key: `k${i}`,
      value: `${codec}-${i}:${filler}`,
      headers: new Map([
        ['trace', `${codec}-${i}`],
        ['source', 'platformatic'],
      ]),
    })),
  })
}
await producer.close()

async function consumeAll(consumer: Consumer<string, string, string, string>, label: string): Promise<void> {
  const stream = await consumer.consume({
    topics: [topic],
    mode: 'earliest',
    autocommit: false,
    maxWaitTime: 500,
  })
  let seen = 0
  for await (const message of stream) {
    seen++
    if (seen === total) {
      await step(`${label}-commit`, 'commit the last message of each partition (OffsetCommit)')
      await message.commit()
      break
    }
  }
  await stream.close()
  console.log(`${label} consumed ${seen}`)
}

await step(
  'consume-classic',
  `classic consumer group ${groupId} reads ${total} records from the beginning (JoinGroup, SyncGroup, Fetch)`,
)
const classic = new Consumer({
  ...base,
  clientId: 'golden-platformatic-consumer',
  groupId,
  deserializers: stringDeserializers,
  heartbeatInterval: 500,
  sessionTimeout: 10_000,
})
await consumeAll(classic, 'consume-classic')
await step('consume-classic-offsets', 'listCommittedOffsets, listOffsets (latest and earliest)')
await classic.listCommittedOffsets({ topics: [{ topic, partitions: [0, 1, 2] }] })
await classic.listOffsets({ topics: [topic] })
await classic.listOffsets({ topics: [topic], timestamp: -2n })
await step('consume-classic-leave', 'close(): LeaveGroup')
await classic.close()

const group848 = `${groupId}-848`
await step(
  'consume-consumer-protocol',
  `KIP-848 consumer group ${group848} reads ${total} records (ConsumerGroupHeartbeat)`,
)
const next = new Consumer({
  ...base,
  clientId: 'golden-platformatic-consumer-848',
  groupId: group848,
  groupProtocol: GroupProtocols.CONSUMER,
  deserializers: stringDeserializers,
})
await consumeAll(next, 'consume-consumer-protocol')
await step('consume-consumer-protocol-leave', 'close(): ConsumerGroupHeartbeat with epoch -1')
await next.close()

await step('admin-list-offsets', `listOffsets of ${topic}: latest (-1), earliest (-2)`)
await admin.listOffsets({
  topics: [
    { name: topic, partitions: [0, 1, 2].map((partitionIndex) => ({ partitionIndex, timestamp: -1n })) },
  ],
})
await admin.listOffsets({
  topics: [
    { name: topic, partitions: [0, 1, 2].map((partitionIndex) => ({ partitionIndex, timestamp: -2n })) },
  ],
})
await step('admin-groups', `listGroups, describeGroups ${groupId}, listConsumerGroupOffsets`)
await admin.listGroups()
await admin.describeGroups({ groups: [groupId] })
await admin.listConsumerGroupOffsets({ groups: [groupId] })
await step('admin-describe-log-dirs', 'describeLogDirs')
await admin.describeLogDirs({ topics: [{ name: topic, partitions: [0, 1, 2] }] })
await step('admin-delete-groups', `deleteGroups ${groupId}, ${group848}`)
await admin.deleteGroups({ groups: [groupId, group848] })
await step('admin-delete-topic', `DeleteTopics ${topic}`)
await admin.deleteTopics({ topics: [topic] })
await admin.close()
console.log('@@done')
