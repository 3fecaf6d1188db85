/**
 * A kafkajs 2.2.4 group member in its own process, for tests that kill it with SIGKILL (no
 * LeaveGroup). Prints one JSON line per assignment: `{"assigned":[0,2]}`.
 * Env: BOOTSTRAP, GROUP, TOPIC, SESSION_TIMEOUT_MS.
 */
import kafkajs from 'kafkajs'

const { Kafka, logLevel } = kafkajs
const kafka = new Kafka({
  brokers: process.env.BOOTSTRAP!.split(','),
  clientId: 'weir-crashing-member',
  logLevel: logLevel.NOTHING,
})
const consumer = kafka.consumer({
  groupId: process.env.GROUP!,
  sessionTimeout: Number(process.env.SESSION_TIMEOUT_MS ?? 10_000),
  heartbeatInterval: 500,
})
consumer.on(consumer.events.GROUP_JOIN, (e) => {
  const assigned = (e.payload.memberAssignment[process.env.TOPIC!] ?? []).slice().sort((a, b) => a - b)
  process.stdout.write(`${JSON.stringify({ assigned })}\n`)
})
await consumer.connect()
await consumer.subscribe({ topic: process.env.TOPIC!, fromBeginning: true })
await consumer.run({ eachMessage: async () => {} })
