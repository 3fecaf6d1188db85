/**
 * Consumer groups with librdkafka and kafka-python against a real `weir start`: kafka-python 2.0.2
 * and confluent-kafka 2.16 read, commit and resume from their committed offsets; two
 * confluent-kafka static members (group.instance.id) split a topic and one restarts after kill -9
 * without a rebalance (the other is never revoked); `kcat -G` (librdkafka 2.0) consumes as a group
 * and resumes. The Python clients come from the capture venv (tools/capture), kcat from Debian's
 * package; npm test installs every one of them (tools/test-deps.sh), and a missing one fails the test.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import kafkajs from 'kafkajs'
import { CompatTarget } from '../support/compat-target.ts'
import { REPO, waitFor } from '../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs
const run = promisify(execFile)
const PYTHON = join(REPO, '.cache/capture/venv/bin/python')
const SCRIPT = join(REPO, 'test/compat/clients/python/groups_scenario.py')
const KCAT = ['/usr/bin/kcat', '/usr/local/bin/kcat'].find((p) => existsSync(p))
// npm test installs both (tools/test-deps.sh: compat-install.sh and apt-get install kcat): a missing
// one fails.
const skipPython = false as const
const skipKcat = false as const
assert.ok(existsSync(PYTHON), 'no Python client venv: run tools/test-deps.sh (npm test does)')
assert.ok(KCAT !== undefined, 'no kcat: run tools/test-deps.sh (npm test does; apt-get install kcat)')

const weir = new CompatTarget('weir-groups-py-', { 'group.initial.rebalance.delay.ms': 300 })
let bootstrap = ''
let kafka: InstanceType<typeof Kafka>
const children: ChildProcess[] = []

before(async () => {
  if (skipPython !== false && skipKcat !== false) return
  await weir.start()
  bootstrap = weir.bootstrap
  kafka = new Kafka({ brokers: bootstrap.split(','), clientId: 'weir-groups-py', logLevel: logLevel.NOTHING })
})

after(async () => {
  for (const c of children) c.kill('SIGKILL')
  await weir.close()
})

async function topicWith(topic: string, partitions: number, from: number, count: number): Promise<void> {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true })
  await admin.disconnect()
  await produce(topic, partitions, from, count)
}

async function produce(topic: string, partitions: number, from: number, count: number): Promise<void> {
  const producer = kafka.producer()
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

async function python(...args: string[]): Promise<{ values: string[]; assigned: number[] }> {
  const { stdout } = await run(PYTHON, [SCRIPT, ...args], {
    env: { ...process.env, BOOTSTRAP: bootstrap },
    timeout: 120_000,
  })
  return JSON.parse(stdout.trim().split('\n').at(-1)!)
}

function numbers(values: readonly string[]): number[] {
  return values.map((v) => Number(v.slice(1))).sort((a, b) => a - b)
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i)
}

async function committedSum(groupId: string, topic: string): Promise<number> {
  const admin = kafka.admin()
  await admin.connect()
  const o = await admin.fetchOffsets({ groupId, topics: [topic] })
  await admin.disconnect()
  return o[0]!.partitions.reduce((s, p) => s + Math.max(0, Number(p.offset)), 0)
}

describe('Python clients', { skip: skipPython }, () => {
  test('kafka-python 2.0.2 reads as a group, commits, and resumes after a restart', async () => {
    await topicWith('kp', 3, 0, 12)
    const first = await python('kafka-python-consume', 'kp-group', 'kp', '12')
    assert.deepEqual(numbers(first.values), range(0, 12))
    assert.deepEqual(first.assigned, [0, 1, 2])
    assert.equal(await committedSum('kp-group', 'kp'), 12)
    await produce('kp', 3, 12, 6)
    const second = await python('kafka-python-consume', 'kp-group', 'kp', '6')
    assert.deepEqual(numbers(second.values), range(12, 18))
  })

  test('confluent-kafka reads as a group, commits, and resumes after a restart', async () => {
    await topicWith('ck', 2, 0, 10)
    const first = await python('confluent-consume', 'ck-group', 'ck', '10')
    assert.deepEqual(numbers(first.values), range(0, 10))
    assert.equal(await committedSum('ck-group', 'ck'), 10)
    await produce('ck', 2, 10, 4)
    const second = await python('confluent-consume', 'ck-group', 'ck', '4')
    assert.deepEqual(numbers(second.values), range(10, 14))
  })

  test('a static member (group.instance.id) restarts after kill -9 without a rebalance', async () => {
    await topicWith('static', 4, 0, 0)
    type Event = { event: 'assign' | 'revoke'; partitions: number[] }
    const start = (instance: string, events: Event[]) => {
      const child = spawn(PYTHON, [SCRIPT, 'confluent-static', 'static-group', 'static', instance], {
        env: { ...process.env, BOOTSTRAP: bootstrap },
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      children.push(child)
      let buffered = ''
      child.stdout!.on('data', (d: Buffer) => {
        buffered += d.toString()
        const lines = buffered.split('\n')
        buffered = lines.pop()!
        for (const line of lines) if (line.trim() !== '') events.push(JSON.parse(line))
      })
      return child
    }
    const a: Event[] = []
    const b: Event[] = []
    const childA = start('instance-a', a)
    start('instance-b', b)
    const assigned = (events: Event[]) => events.filter((e) => e.event === 'assign').at(-1)?.partitions ?? []
    await waitFor(
      'a and b split the 4 partitions',
      () => {
        const all = [...assigned(a), ...assigned(b)].sort()
        return all.join() === '0,1,2,3' && assigned(a).length > 0 && assigned(b).length > 0 ? true : undefined
      },
      60_000,
    )
    const bEventsBefore = b.length
    const aPartitions = assigned(a)
    childA.kill('SIGKILL')
    const a2: Event[] = []
    start('instance-a', a2)
    await waitFor(
      'the restarted a has its partitions back',
      () => (a2.some((e) => e.event === 'assign') ? true : undefined),
      60_000,
    )
    assert.deepEqual(assigned(a2), aPartitions)
    // Give a rebalance, if there were one, time to reach b.
    await new Promise((r) => setTimeout(r, 3000))
    assert.equal(b.length, bEventsBefore, `b saw no rebalance: ${JSON.stringify(b)}`)
    const admin = kafka.admin()
    await admin.connect()
    const g = (await admin.describeGroups(['static-group'])).groups[0]!
    await admin.disconnect()
    assert.equal(g.state, 'Stable')
    assert.equal(g.members.length, 2)
  })
})

describe('kcat -G', { skip: skipKcat }, () => {
  test('kcat consumes as a group member and resumes from its committed offsets', async () => {
    await topicWith('kc', 2, 0, 8)
    const consume = async () => {
      const { stdout } = await run(
        KCAT!,
        [
          '-b',
          bootstrap,
          '-G',
          'kcat-group',
          '-X',
          'auto.offset.reset=earliest',
          '-e',
          '-q',
          '-f',
          '%s\n',
          'kc',
        ],
        { timeout: 60_000 },
      )
      return stdout.split('\n').filter((l) => l !== '')
    }
    assert.deepEqual(numbers(await consume()), range(0, 8))
    await waitFor('kcat committed', async () =>
      (await committedSum('kcat-group', 'kc')) === 8 ? true : undefined,
    )
    await produce('kc', 2, 8, 4)
    assert.deepEqual(numbers(await consume()), range(8, 12))
  })
})
