// README example: kafkajs against an embedded Weir in node:test.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import kafkajs from 'kafkajs'
import { type EmbeddedCluster, startCluster } from 'weir'

const { Kafka, logLevel } = kafkajs

let cluster: EmbeddedCluster
before(async () => {
  cluster = await startCluster()
})
after(() => cluster.stop())

test('kafkajs: produce, then consume as a group', async () => {
  const kafka = new Kafka({ clientId: 'example', brokers: cluster.bootstrap, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'greetings', numPartitions: 1 }] })
  await admin.disconnect()

  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: 'greetings', messages: [{ key: 'k1', value: 'hello' }] })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: 'example' })
  await consumer.connect()
  await consumer.subscribe({ topic: 'greetings', fromBeginning: true })
  const received = await new Promise<string>((resolve) => {
    void consumer.run({ eachMessage: async ({ message }) => resolve(String(message.value)) })
  })
  await consumer.disconnect()
  assert.equal(received, 'hello')
})

test('kafkajs: records acknowledged with acks=all survive kill(0) and restart(0)', async () => {
  const kafka = new Kafka({
    clientId: 'example',
    brokers: cluster.bootstrap,
    logLevel: logLevel.NOTHING,
    retry: { retries: 10 },
  })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: 'greetings', acks: -1, messages: [{ value: 'durable' }] })
  await producer.disconnect()

  await cluster.kill(0) // abrupt: no controlled shutdown, nothing more reaches the disk
  await cluster.restart(0) // same directory and ports: the log is recovered as after a crash

  const admin = kafka.admin()
  await admin.connect()
  const [offsets] = await admin.fetchTopicOffsets('greetings')
  await admin.disconnect()
  assert.equal(offsets?.high, '2')
})
