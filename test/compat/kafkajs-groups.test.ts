/**
 * kafkajs 2.2.4 consumer groups against a real `weir start`: two consumers split a 4-partition
 * topic with no partition owned twice and every record read once; the survivor takes every
 * partition when the other leaves and when it dies without leaving (within the session timeout);
 * committed offsets survive a consumer restart and a broker restart; the admin lists, describes and
 * deletes groups and reads their offsets.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import kafkajs from 'kafkajs'
import { CompatTarget } from '../support/compat-target.ts'
import { NODE, REPO, waitFor } from '../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs
type Consumer = ReturnType<InstanceType<typeof Kafka>['consumer']>

const SESSION_TIMEOUT_MS = 6000
const weir = new CompatTarget('weir-kafkajs-groups-', { 'group.initial.rebalance.delay.ms': 300 })
let bootstrap = ''
let kafka: InstanceType<typeof Kafka>
const open: Consumer[] = []
const children: ChildProcess[] = []

before(async () => {
  await weir.start()
  bootstrap = weir.bootstrap
  kafka = new Kafka({
    brokers: bootstrap.split(','),
    clientId: 'weir-groups-test',
    logLevel: logLevel.NOTHING,
  })
})

after(async () => {
  for (const c of open) await c.disconnect().catch(() => {})
  for (const c of children) c.kill('SIGKILL')
  await weir.close()
})

async function createTopic(topic: string, partitions: number, records: number): Promise<void> {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true })
  await admin.disconnect()
  if (records === 0) return
  await produce(topic, 0, records, partitions)
}

async function produce(topic: string, from: number, count: number, partitions: number): Promise<void> {
  // Idempotent: the partitions become leaders one by one after CreateTopics (waitForLeaders only
  // sees the metadata), so a send to several partitions can succeed on some and fail on others
  // with NOT_LEADER_OR_FOLLOWER; KafkaJS then resends the whole request, and without idempotence
  // the partitions that took it would have their records twice.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await producer.send({
    topic,
    messages: Array.from({ length: count }, (_, i) => ({
      partition: (from + i) % partitions,
      value: `v${from + i}`,
    })),
  })
  await producer.disconnect()
}

interface Member {
  readonly consumer: Consumer
  /** The latest assignment of the topic. */
  assigned: number[]
  readonly values: string[]
}

async function member(groupId: string, topic: string, autoCommit = true): Promise<Member> {
  const consumer = kafka.consumer({
    groupId,
    sessionTimeout: SESSION_TIMEOUT_MS,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 500,
  })
  open.push(consumer)
  const m: Member = { consumer, assigned: [], values: [] }
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    m.assigned = [...(e.payload.memberAssignment[topic] ?? [])].sort((a, b) => a - b)
  })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({
    autoCommit,
    autoCommitInterval: 200,
    eachMessage: async ({ message }) => {
      m.values.push(message.value!.toString())
    },
  })
  return m
}

async function leave(m: Member): Promise<void> {
  await m.consumer.disconnect()
  open.splice(open.indexOf(m.consumer), 1)
}

describe('kafkajs consumer groups', () => {
  test('two consumers split a 4-partition topic: no partition twice, every record once', async () => {
    await createTopic('split', 4, 40)
    const a = await member('split-group', 'split')
    const b = await member('split-group', 'split')
    await waitFor('both members assigned, 4 partitions between them', () => {
      const all = [...a.assigned, ...b.assigned].sort()
      return a.assigned.length > 0 && b.assigned.length > 0 && all.join() === '0,1,2,3' ? true : undefined
    })
    await waitFor('40 records read', () => (a.values.length + b.values.length >= 40 ? true : undefined))
    const values = [...a.values, ...b.values].sort()
    assert.equal(new Set(values).size, 40, 'no record read twice')
    // When one leaves, the other gets every partition.
    await leave(a)
    const leftAt = Date.now()
    await waitFor('the survivor owns all 4', () => (b.assigned.join() === '0,1,2,3' ? true : undefined))
    assert.ok(Date.now() - leftAt < SESSION_TIMEOUT_MS, 'a LeaveGroup rebalances at once')
    await leave(b)
  })

  test('a member killed without leaving is dropped after its session timeout', async () => {
    await createTopic('crash', 4, 0)
    const survivor = await member('crash-group', 'crash')
    const child = spawn(NODE, [join(REPO, 'test/compat/clients/kafkajs/group-member.ts')], {
      env: {
        ...process.env,
        BOOTSTRAP: bootstrap,
        GROUP: 'crash-group',
        TOPIC: 'crash',
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.push(child)
    let childAssigned: number[] = []
    child.stdout!.on('data', (d: Buffer) => {
      for (const line of d.toString().trim().split('\n'))
        childAssigned = (JSON.parse(line) as { assigned: number[] }).assigned
    })
    await waitFor('the two split the topic', () =>
      childAssigned.length > 0 &&
      survivor.assigned.length > 0 &&
      survivor.assigned.length + childAssigned.length === 4
        ? true
        : undefined,
    )
    const killedAt = Date.now()
    child.kill('SIGKILL')
    await waitFor(
      'the survivor owns all 4',
      () => (survivor.assigned.join() === '0,1,2,3' ? true : undefined),
      30_000,
    )
    const tookMs = Date.now() - killedAt
    assert.ok(tookMs < SESSION_TIMEOUT_MS + 5000, `took ${tookMs} ms`)
    await leave(survivor)
  })

  test('committed offsets survive a consumer restart and a broker restart', async () => {
    await createTopic('resume', 2, 10)
    const first = await member('resume-group', 'resume')
    await waitFor('10 read', () => (first.values.length >= 10 ? true : undefined))
    const admin = kafka.admin()
    await admin.connect()
    await waitFor('offsets committed', async () => {
      const o = await admin.fetchOffsets({ groupId: 'resume-group', topics: ['resume'] })
      const sum = o[0]!.partitions.reduce((s, p) => s + Number(p.offset), 0)
      return sum === 10 ? true : undefined
    })
    await leave(first)
    await produce('resume', 10, 10, 2)
    const second = await member('resume-group', 'resume')
    await waitFor('the 10 new records read', () => (second.values.length >= 10 ? true : undefined))
    assert.deepEqual(
      second.values.map((v) => Number(v.slice(1))).sort((x, y) => x - y),
      [10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
    )
    await waitFor('offsets committed', async () => {
      const o = await admin.fetchOffsets({ groupId: 'resume-group', topics: ['resume'] })
      return o[0]!.partitions.reduce((s, p) => s + Number(p.offset), 0) === 20 ? true : undefined
    })
    await leave(second)
    await admin.disconnect()

    // The broker restarts: the group and its offsets are loaded back from __consumer_offsets.
    await weir.restart()
    kafka = new Kafka({
      brokers: bootstrap.split(','),
      clientId: 'weir-groups-test',
      logLevel: logLevel.NOTHING,
    })
    const after = kafka.admin()
    await after.connect()
    const offsets = await waitFor('offsets after the restart', async () => {
      const o = await after.fetchOffsets({ groupId: 'resume-group', topics: ['resume'] })
      return o[0]!.partitions.every((p) => Number(p.offset) >= 0) ? o : undefined
    })
    assert.equal(
      offsets[0]!.partitions.reduce((s, p) => s + Number(p.offset), 0),
      20,
    )
    await after.disconnect()
    await produce('resume', 20, 4, 2)
    const third = await member('resume-group', 'resume')
    await waitFor('only the 4 new records', () => (third.values.length >= 4 ? true : undefined))
    await new Promise((r) => setTimeout(r, 500))
    assert.deepEqual(
      third.values.map((v) => Number(v.slice(1))).sort((x, y) => x - y),
      [20, 21, 22, 23],
    )
    await leave(third)
  })

  test('the admin lists, describes and deletes groups and lists their offsets', async () => {
    await createTopic('admin', 4, 8)
    const m = await member('admin-group', 'admin')
    await waitFor('8 read', () => (m.values.length >= 8 ? true : undefined))
    const admin = kafka.admin()
    await admin.connect()
    const listed = await admin.listGroups()
    assert.ok(listed.groups.some((g) => g.groupId === 'admin-group' && g.protocolType === 'consumer'))
    const described = await admin.describeGroups(['admin-group'])
    const g = described.groups[0]!
    assert.equal(g.state, 'Stable')
    assert.equal(g.protocolType, 'consumer')
    assert.equal(g.members.length, 1)
    assert.equal(g.members[0]!.clientHost, '/127.0.0.1')
    await assert.rejects(
      admin.deleteGroups(['admin-group']),
      (e: { groups?: { error?: { type?: string } }[] }) => {
        assert.equal(e.groups?.[0]?.error?.type, 'NON_EMPTY_GROUP')
        return true
      },
    )
    await waitFor('offsets committed', async () => {
      const o = await admin.fetchOffsets({ groupId: 'admin-group', topics: ['admin'] })
      return o[0]!.partitions.reduce((s, p) => s + Number(p.offset), 0) === 8 ? true : undefined
    })
    await leave(m)
    await waitFor('the group empty', async () => {
      const d = await admin.describeGroups(['admin-group'])
      return d.groups[0]!.state === 'Empty' ? true : undefined
    })
    const deleted = await admin.deleteGroups(['admin-group'])
    assert.equal(deleted[0]!.errorCode, 0)
    const gone = await admin.fetchOffsets({ groupId: 'admin-group', topics: ['admin'] })
    assert.ok(gone[0]!.partitions.every((p) => p.offset === '-1'))
    assert.ok(!(await admin.listGroups()).groups.some((x) => x.groupId === 'admin-group'))
    await admin.disconnect()
  })
})
