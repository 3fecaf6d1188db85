/**
 * Topic and broker configs against a real Weir process with Kafka's own tools (`kafka-configs`,
 * `kafka-topics`, from the Apache Kafka jars of tools/kafka) and kafkajs's admin client:
 * IncrementalAlterConfigs, AlterConfigs and DescribeConfigs as those clients use them. Java is
 * required: without it these tests fail (npm test installs it and the jars: tools/test-deps.sh).
 */
// compat-cluster: skip per-node broker configs of one node; kafka-configs-cluster.test.ts is the cluster side
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import kafkajs from 'kafkajs'
import type { TopicName } from '../../src/model/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { openConnection } from '../support/connection.ts'
import { portPair, REPO, tempDir, WeirProcess } from '../support/weir-process.ts'

const run = promisify(execFile)
const { ConfigResourceTypes, Kafka, logLevel } = kafkajs
const dir = tempDir('weir-configs-')
let weir: WeirProcess | null = null
let bootstrap = ''
let port = 0

interface ToolResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs one of Kafka's tools; a non-zero exit is a result, not an exception. */
async function kafkaTool(...args: string[]): Promise<ToolResult> {
  try {
    const { stdout, stderr } = await run(join(REPO, 'tools/kafka/tool.sh'), args, { timeout: 90_000 })
    return { code: 0, stdout, stderr }
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string; message: string }
    if (typeof err.code !== 'number') throw e
    return { code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? err.message }
  }
}

async function ok(...args: string[]): Promise<string> {
  const r = await kafkaTool(...args)
  assert.equal(r.code, 0, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

const configs = (...args: string[]) => ok('kafka-configs', '--bootstrap-server', bootstrap, ...args)

before(async () => {
  // Fail loudly, never skip, when the tools cannot run.
  const java = await run('java', ['-version']).catch((e: Error) => {
    throw new Error(
      `java is required for the Kafka tool tests (tools/test-deps.sh installs it): ${e.message}`,
    )
  })
  assert.match(java.stderr + java.stdout, /version/)
  port = await portPair()
  weir = new WeirProcess(['--data-dir', join(dir.path, 'data'), '--listen', `127.0.0.1:${port}`])
  await weir.start()
  bootstrap = `127.0.0.1:${port}`
})

after(async () => {
  await weir?.stop()
  dir.remove()
})

test('kafka-topics creates a topic with a config; kafka-topics --describe shows it (DescribeConfigs)', async () => {
  const created = await ok(
    'kafka-topics',
    '--bootstrap-server',
    bootstrap,
    '--create',
    '--topic',
    't',
    '--partitions',
    '1',
    '--replication-factor',
    '1',
    '--config',
    'segment.bytes=1048576',
  )
  assert.match(created, /Created topic t\./)
  const described = await ok('kafka-topics', '--bootstrap-server', bootstrap, '--describe', '--topic', 't')
  assert.match(
    described,
    /Topic: t\tTopicId: \S+\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: segment\.bytes=1048576\n/,
  )
})

test('kafka-configs --alter --add-config, --describe, then --delete-config', async () => {
  const altered = await configs(
    '--entity-type',
    'topics',
    '--entity-name',
    't',
    '--alter',
    '--add-config',
    'retention.ms=1000',
  )
  assert.match(altered, /Completed updating config for topic t\./)
  const described = await configs('--entity-type', 'topics', '--entity-name', 't', '--describe')
  assert.match(described, /Dynamic configs for topic t are:\n/)
  assert.match(
    described,
    /^ {2}retention\.ms=1000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention\.ms=1000\}$/m,
  )
  assert.match(
    described,
    /^ {2}segment\.bytes=1048576 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:segment\.bytes=1048576, DEFAULT_CONFIG:log\.segment\.bytes=1073741824\}$/m,
  )
  const topics = await ok('kafka-topics', '--bootstrap-server', bootstrap, '--describe', '--topic', 't')
  assert.match(
    topics,
    /Configs: (segment\.bytes=1048576,retention\.ms=1000|retention\.ms=1000,segment\.bytes=1048576)\n/,
  )

  await configs('--entity-type', 'topics', '--entity-name', 't', '--alter', '--delete-config', 'retention.ms')
  const after = await configs('--entity-type', 'topics', '--entity-name', 't', '--describe')
  assert.doesNotMatch(after, /retention\.ms/)
  assert.match(after, /segment\.bytes=1048576/)
})

test('a bad value is refused with Kafka message and changes nothing', async () => {
  await configs(
    '--entity-type',
    'topics',
    '--entity-name',
    't',
    '--alter',
    '--add-config',
    'retention.ms=5000',
  )
  const bad = await kafkaTool(
    'kafka-configs',
    '--bootstrap-server',
    bootstrap,
    '--entity-type',
    'topics',
    '--entity-name',
    't',
    '--alter',
    '--add-config',
    'retention.ms=abc,segment.bytes=2097152',
  )
  assert.notEqual(bad.code, 0)
  assert.match(
    bad.stdout + bad.stderr,
    /InvalidConfigurationException: Invalid value abc for configuration retention\.ms: Not a number of type LONG/,
  )
  const unknown = await kafkaTool(
    'kafka-configs',
    '--bootstrap-server',
    bootstrap,
    '--entity-type',
    'topics',
    '--entity-name',
    't',
    '--alter',
    '--add-config',
    'retention.mss=1',
  )
  assert.notEqual(unknown.code, 0)
  assert.match(unknown.stdout + unknown.stderr, /Unknown topic config name: retention\.mss/)
  const described = await configs('--entity-type', 'topics', '--entity-name', 't', '--describe')
  assert.match(described, /retention\.ms=5000 /)
  assert.match(described, /segment\.bytes=1048576 /)
})

test('broker configs: per broker and cluster default, read-only keys refused as Kafka does', async () => {
  await configs(
    '--entity-type',
    'brokers',
    '--entity-name',
    '1',
    '--alter',
    '--add-config',
    'log.retention.ms=600000',
  )
  await configs(
    '--entity-type',
    'brokers',
    '--entity-default',
    '--alter',
    '--add-config',
    'log.segment.bytes=2097152',
  )
  const broker = await configs('--entity-type', 'brokers', '--entity-name', '1', '--describe')
  assert.match(broker, /Dynamic configs for broker 1 are:\n/)
  assert.match(
    broker,
    /^ {2}log\.retention\.ms=600000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:log\.retention\.ms=600000, DEFAULT_CONFIG:log\.retention\.hours=168\}$/m,
  )
  const defaults = await configs('--entity-type', 'brokers', '--entity-default', '--describe')
  assert.match(
    defaults,
    /^ {2}log\.segment\.bytes=2097152 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:log\.segment\.bytes=2097152\}$/m,
  )
  // The topic without its own retention now follows the broker's.
  const all = await configs('--entity-type', 'topics', '--entity-name', 't', '--describe', '--all')
  assert.match(all, /^ {2}retention\.ms=5000 /m)
  const refused = await kafkaTool(
    'kafka-configs',
    '--bootstrap-server',
    bootstrap,
    '--entity-type',
    'brokers',
    '--entity-name',
    '1',
    '--alter',
    '--add-config',
    'num.partitions=3',
  )
  assert.notEqual(refused.code, 0)
  assert.match(
    refused.stdout + refused.stderr,
    /InvalidRequestException: Cannot update these configs dynamically: Set\(num\.partitions\)/,
  )
  await configs(
    '--entity-type',
    'brokers',
    '--entity-default',
    '--alter',
    '--delete-config',
    'log.segment.bytes',
  )
  const cleared = await configs('--entity-type', 'brokers', '--entity-default', '--describe')
  assert.doesNotMatch(cleared, /log\.segment\.bytes/)
})

test('kafkajs admin: alterConfigs (legacy, replaces the set) and describeConfigs', async () => {
  const kafka = new Kafka({ clientId: 'weir-configs-test', brokers: [bootstrap], logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: 't',
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'retention.ms', value: '7000' },
          ],
        },
      ],
    })
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: 't',
          configNames: ['cleanup.policy', 'retention.ms', 'segment.bytes'],
        },
      ],
    })
    const resource = described.resources[0]
    assert.equal(resource?.errorCode, 0)
    const entries = new Map(resource?.configEntries.map((e) => [e.configName, e]))
    assert.equal(entries.get('cleanup.policy')?.configValue, 'compact')
    assert.equal(entries.get('retention.ms')?.configValue, '7000')
    // AlterConfigs replaced the whole set: segment.bytes is back to its default.
    assert.equal(entries.get('segment.bytes')?.configValue, '1073741824')
    assert.equal(entries.get('segment.bytes')?.isDefault, true)

    await assert.rejects(
      admin.alterConfigs({
        validateOnly: false,
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: 't',
            configEntries: [{ name: 'retention.ms', value: '-5' }],
          },
        ],
      }),
      (e: { type?: string }) => e.type === 'INVALID_CONFIG',
    )
    const broker = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        { type: ConfigResourceTypes.BROKER, name: '1', configNames: ['log.retention.ms', 'node.id'] },
      ],
    })
    const brokerEntries = new Map(broker.resources[0]?.configEntries.map((e) => [e.configName, e]))
    assert.equal(brokerEntries.get('log.retention.ms')?.configValue, '600000')
    assert.equal(brokerEntries.get('node.id')?.readOnly, true)
  } finally {
    await admin.disconnect()
  }
})

test('CreateTopics v7 returns the created topic configs with their sources', async () => {
  const c = await openConnection({ host: '127.0.0.1', port }, 'weir-configs-test')
  try {
    const res = await c.request(apis.CreateTopics, 7, {
      topics: [
        {
          name: 'created' as TopicName,
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          configs: [{ name: 'retention.ms', value: '1234' }],
        },
      ],
      timeoutMs: 10_000,
      validateOnly: false,
    })
    const topic = res.topics[0]
    assert.equal(topic?.errorCode, 0)
    const byName = new Map(topic?.configs?.map((e) => [e.name, e]))
    assert.deepEqual(
      [byName.get('retention.ms')?.value, byName.get('retention.ms')?.configSource],
      ['1234', 1],
    )
    // The broker's dynamic default set above (log.segment.bytes) was deleted again: DEFAULT_CONFIG.
    assert.deepEqual(
      [byName.get('segment.bytes')?.value, byName.get('segment.bytes')?.configSource],
      ['1073741824', 5],
    )
    const names = topic?.configs?.map((e) => e.name) ?? []
    assert.deepEqual(names, [...names].sort())
  } finally {
    c.close()
  }
})
