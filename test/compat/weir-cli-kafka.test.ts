/**
 * The `weir` cluster commands against a real Apache Kafka (KRaft, tools/kafka): they speak only the
 * wire protocol, so topics, produce/consume with keys and headers, groups and offset resets, cluster
 * status and bench work the same against Kafka as against Weir (test/cli/ runs them against Weir),
 * and so do `weir acl` and `weir user` (the scenarios of test/cli/security-scenarios.ts; Kafka runs
 * its StandardAuthorizer, the PLAINTEXT listener's User:ANONYMOUS a super user).
 */
// compat-cluster: skip it runs against Apache Kafka, not Weir
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type KafkaBroker, startKafka } from '../../tools/kafka/kafka.ts'
import { weir, weirJson, weirOk } from '../cli/cli-support.ts'
import { aclBookkeeping, scramUserBookkeeping } from '../cli/security-scenarios.ts'
import { tempDir } from '../support/weir-process.ts'

describe('weir commands against Apache Kafka', () => {
  let kafka: KafkaBroker
  let dir: ReturnType<typeof tempDir>
  let b: string[]
  before(async () => {
    dir = tempDir('weir-cli-kafka-')
    kafka = await startKafka({
      port: 0,
      dataDir: join(dir.path, 'kafka'),
      config: {
        'group.initial.rebalance.delay.ms': '0',
        'offsets.topic.replication.factor': '1',
        'offsets.topic.num.partitions': '4',
        'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
        'super.users': 'User:ANONYMOUS',
      },
      quiet: true,
    })
    b = ['-b', kafka.bootstrap]
  })
  after(async () => {
    await kafka?.stop()
    dir?.remove()
  })

  test('topics, produce and consume, groups, cluster status, bench', async () => {
    await weirOk(['topic', 'create', 'k', '-p', '3', '-c', 'retention.ms=3600000', ...b])
    const again = await weir(['topic', 'create', 'k', ...b])
    assert.equal(again.code, 1)
    assert.match(again.stderr, /\(TOPIC_ALREADY_EXISTS\)\n$/)
    assert.deepEqual(
      (await weirJson<Array<{ topic: string; partitions: number }>>(['topic', 'list', ...b])).map((t) => [
        t.topic,
        t.partitions,
      ]),
      [['k', 3]],
    )
    await weirOk(['topic', 'alter', 'k', '-p', '4', ...b])
    const d = await weirJson<{ partitions: unknown[]; configs: Record<string, string> }>([
      'topic',
      'describe',
      'k',
      ...b,
    ])
    assert.equal(d.partitions.length, 4)
    assert.deepEqual(d.configs, { 'retention.ms': '3600000' })

    const lines = ['a:1', 'b:2', 'c:3', 'a:4']
    await weirOk(['produce', 'k', '-k', ':', '-H', 'h=v', '-z', 'zstd', ...b], `${lines.join('\n')}\n`)
    const back = (await weirOk(['consume', 'k', '--json', ...b]))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { key: string; value: string; headers: Record<string, string> })
    assert.deepEqual(back.map((r) => `${r.key}:${r.value}`).sort(), [...lines].sort())
    for (const r of back) assert.deepEqual(r.headers, { h: 'v' })

    assert.equal(
      (await weirOk(['consume', 'k', '-g', 'g', ...b])).split('\n').filter((l) => l !== '').length,
      4,
    )
    const g = await weirJson<{ state: string; offsets: Array<{ lag: number }> }>([
      'group',
      'describe',
      'g',
      ...b,
    ])
    assert.equal(g.state, 'Empty')
    assert.ok(g.offsets.every((o) => o.lag === 0))
    const reset = await weirJson<{ partitions: Array<{ newOffset: number }> }>([
      'group',
      'reset-offsets',
      'g',
      '--all-topics',
      '--to-earliest',
      '--execute',
      ...b,
    ])
    assert.ok(reset.partitions.every((p) => p.newOffset === 0))
    assert.equal(
      (await weirOk(['consume', 'k', '-g', 'g', ...b])).split('\n').filter((l) => l !== '').length,
      4,
    )
    assert.deepEqual(await weirJson(['group', 'delete', 'g', ...b]), [{ group: 'g', deleted: true }])

    const s = await weirJson<{
      clusterId: string
      quorum: { leaderId: number }
      brokers: unknown[]
      offline: unknown[]
    }>(['cluster', 'status', ...b])
    assert.equal(s.clusterId, kafka.clusterId)
    assert.equal(s.quorum.leaderId, 1)
    assert.equal(s.brokers.length, 1)
    assert.deepEqual(s.offline, [])

    const p = await weirJson<{ records: number }>(['bench', 'produce', '-t', 'kb', '-n', '2000', ...b])
    assert.equal(p.records, 2000)
    assert.equal((await weirJson<{ records: number }>(['bench', 'consume', '-t', 'kb', ...b])).records, 2000)
    await weirOk(['topic', 'delete', 'k', 'kb', ...b])
  })

  test('acl create, list, delete and user set, list, delete answer as against Weir', async () => {
    await aclBookkeeping(b)
    await scramUserBookkeeping(b, dir.path)
  })
})
