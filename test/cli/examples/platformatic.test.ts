// README example: @platformatic/kafka against an embedded Weir in node:test.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { type EmbeddedCluster, startCluster } from 'weir'

let cluster: EmbeddedCluster
before(async () => {
  cluster = await startCluster()
})
after(() => cluster.stop())

test('@platformatic/kafka: produce, then consume as a group', async () => {
  const admin = new Admin({ clientId: 'example', bootstrapBrokers: cluster.bootstrap })
  await admin.createTopics({ topics: ['greetings'], partitions: 1, replicas: 1 })
  await admin.close()

  const producer = new Producer({
    clientId: 'example',
    bootstrapBrokers: cluster.bootstrap,
    serializers: stringSerializers,
  })
  await producer.send({ messages: [{ topic: 'greetings', key: 'k1', value: 'hello' }] })
  await producer.close()

  const consumer = new Consumer({
    clientId: 'example',
    groupId: 'example',
    bootstrapBrokers: cluster.bootstrap,
    deserializers: stringDeserializers,
  })
  const stream = await consumer.consume({ topics: ['greetings'], mode: 'earliest' })
  let received: string | undefined
  for await (const message of stream) {
    received = message.value
    break
  }
  await stream.close()
  await consumer.close()
  assert.equal(received, 'hello')
})
