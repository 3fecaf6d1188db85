/** `weir topic ...` against an embedded node: every subcommand, human and --json, and its errors' exit codes. */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type EmbeddedCluster, startCluster } from 'weir'
import { weir, weirJson, weirOk } from './cli-support.ts'

describe('weir topic', () => {
  let cluster: EmbeddedCluster
  let b: string[]
  before(async () => {
    cluster = await startCluster()
    b = ['-b', cluster.bootstrapServers]
  })
  after(() => cluster.stop())

  test('create, list, describe, alter, delete (--json)', async () => {
    const created = await weirJson<{
      topic: string
      created: boolean
      partitions: number
      replicationFactor: number
    }>(['topic', 'create', 'orders', '--partitions', '3', '--config', 'retention.ms=3600000', ...b])
    assert.deepEqual(
      {
        topic: created.topic,
        created: created.created,
        partitions: created.partitions,
        rf: created.replicationFactor,
      },
      { topic: 'orders', created: true, partitions: 3, rf: 1 },
    )
    const listed = await weirJson<Array<{ topic: string; partitions: number }>>(['topic', 'list', ...b])
    assert.deepEqual(
      listed.map((t) => [t.topic, t.partitions]),
      [['orders', 3]],
    )

    const described = await weirJson<{
      topic: string
      partitions: Array<{ partition: number; leader: number; replicas: number[]; isr: number[] }>
      configs: Record<string, string>
    }>(['topic', 'describe', 'orders', ...b])
    assert.equal(described.partitions.length, 3)
    assert.deepEqual(
      described.partitions.map((p) => [p.partition, p.leader, p.replicas, p.isr]),
      [
        [0, 1, [1], [1]],
        [1, 1, [1], [1]],
        [2, 1, [1], [1]],
      ],
    )
    assert.deepEqual(described.configs, { 'retention.ms': '3600000' })

    await weirJson([
      'topic',
      'alter',
      'orders',
      '--partitions',
      '5',
      '--config',
      'cleanup.policy=compact',
      '--delete-config',
      'retention.ms',
      ...b,
    ])
    const altered = await weirJson<{ partitions: unknown[]; configs: Record<string, string> }>([
      'topic',
      'describe',
      'orders',
      ...b,
    ])
    assert.equal(altered.partitions.length, 5)
    assert.deepEqual(altered.configs, { 'cleanup.policy': 'compact' })

    const deleted = await weirJson<Array<{ topic: string; deleted: boolean }>>([
      'topic',
      'delete',
      'orders',
      ...b,
    ])
    assert.deepEqual(deleted, [{ topic: 'orders', deleted: true }])
    assert.deepEqual(await weirJson(['topic', 'list', ...b]), [])
  })

  test('human output: a table and one line per action', async () => {
    assert.match(
      await weirOk(['topic', 'create', 'plain', '-p', '2', ...b]),
      /^created topic plain \(2 partitions, replication factor 1\)\n$/,
    )
    assert.match(await weirOk(['topic', 'list', ...b]), /^TOPIC\s+PARTITIONS\s+RF\nplain\s+2\s+1\n$/)
    const d = await weirOk(['topic', 'describe', 'plain', ...b])
    assert.match(d, /^Topic: plain {2}TopicId: \S+ {2}Partitions: 2 {2}ReplicationFactor: 1 {2}Configs: -\n/)
    assert.match(d, /PARTITION\s+LEADER\s+REPLICAS\s+ISR\s+OFFLINE\n0\s+1\s+1\s+1\s+-\n1\s+1\s+1\s+1\s+-\n$/)
    assert.match(await weirOk(['topic', 'delete', 'plain', ...b]), /^deleted topic plain\n$/)
  })

  test('errors: Kafka error names with exit 1, usage 2, unreachable 3', async () => {
    await weirOk(['topic', 'create', 'twice', ...b])
    const again = await weir(['topic', 'create', 'twice', ...b])
    assert.equal(again.code, 1)
    assert.equal(again.stderr, "weir topic create: topic 'twice' already exists (TOPIC_ALREADY_EXISTS)\n")
    assert.deepEqual(await weirJson(['topic', 'create', 'twice', '--if-not-exists', ...b]), {
      topic: 'twice',
      created: false,
    })

    const missing = await weir(['topic', 'delete', 'nope', ...b])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /topic 'nope' does not exist \(UNKNOWN_TOPIC_OR_PARTITION\)/)
    assert.equal((await weir(['topic', 'delete', 'nope', '--if-exists', ...b])).code, 0)

    const badName = await weir(['topic', 'create', 'bad/name', ...b])
    assert.equal(badName.code, 1)
    assert.match(badName.stderr, /\(INVALID_TOPIC_EXCEPTION\)/)

    const usage = await weir(['topic', 'create', ...b])
    assert.equal(usage.code, 2)
    assert.match(usage.stderr, /give exactly one topic name/)
    assert.equal((await weir(['topic', 'frobnicate', ...b])).code, 2)
    assert.equal((await weir(['topic', 'create', 'x', '--partitions', 'many', ...b])).code, 2)

    const unreachable = await weir(['topic', 'list', '-b', '127.0.0.1:1'])
    assert.equal(unreachable.code, 3)
    assert.match(unreachable.stderr, /^weir topic list: cannot reach the cluster: /)
  })

  test('--help and the command list exit 0', async () => {
    assert.match(await weirOk(['--help']), /Usage: weir <command>/)
    for (const c of ['topic', 'produce', 'consume', 'group', 'cluster', 'bench', 'dev', 'start'])
      assert.match(await weirOk([c, '--help']), new RegExp(`Usage: weir ${c}`))
  })
})
