/**
 * Kafka's own tools (4.4.0 jars, tools/kafka) against three combined Weir nodes and a broker-only
 * fourth: kafka-topics
 * --describe (leaders, replicas, ISR), kafka-metadata-quorum describe --status,
 * kafka-reassign-partitions (--generate, --execute, --verify, --cancel), kafka-leader-election
 * --election-type preferred and unclean, and kafka-configs enabling unclean election on a topic.
 */
// compat-cluster: skip it starts its own three-node cluster
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { WeirCluster } from '../support/cluster.ts'
import { describeTopic, kafkaTool } from '../support/kafka-tools.ts'
import { waitFor } from '../support/weir-process.ts'

let cluster: WeirCluster
/** How long a wait after a kill may take (see the unclean-election test). */
const AFTER_KILL_MS = 90_000

const tool = kafkaTool
const describe = (topic: string, via = cluster.node(1).address) => describeTopic(via, topic)

before(async () => {
  cluster = await WeirCluster.start({
    nodes: 4,
    controllers: 3,
    prefix: 'weir-cluster-control-',
    // A session long enough that broker 4 keeps it through a controller failover while JVM tools
    // load both cores: a fenced broker 4 leaves the ISR before broker 3 does, and the
    // unclean-election test then has no clean leader to wait for.
    config: {
      'broker.session.timeout.ms': 6000,
      'broker.heartbeat.interval.ms': 500,
      'offsets.topic.replication.factor': 1,
    },
  })
})

after(async () => {
  await cluster.kill()
})

test('kafka-metadata-quorum describe --status names a leader and the three voters', async () => {
  const out = await tool(
    'kafka-metadata-quorum',
    '--bootstrap-server',
    cluster.bootstrap,
    'describe',
    '--status',
  )
  assert.match(out, /LeaderId:\s+[123]/)
  const voters = /CurrentVoters:\s+(\[.*\])/.exec(out)?.[1] ?? ''
  const ids = [...voters.matchAll(/"id":\s*(\d+)/g)].map((m) => Number(m[1])).sort()
  assert.deepEqual(ids, [1, 2, 3])
})

test('kafka-topics --describe shows each partition spread over the three brokers with a full ISR', async () => {
  await tool(
    'kafka-topics',
    '--bootstrap-server',
    cluster.bootstrap,
    '--create',
    '--topic',
    'spread',
    '--partitions',
    '3',
    '--replication-factor',
    '3',
  )
  const parts = await waitFor('three partitions described', async () => {
    const d = await describe('spread')
    return d.size === 3 ? d : undefined
  })
  const leaders = new Set<number>()
  for (const p of parts.values()) {
    assert.equal(new Set(p.replicas).size, 3)
    assert.ok(p.replicas.every((r) => r >= 1 && r <= 4))
    assert.deepEqual([...p.isr].sort(), [...p.replicas].sort())
    assert.equal(p.leader, p.replicas[0], 'the preferred replica leads a new partition')
    leaders.add(p.leader)
  }
  assert.equal(leaders.size, 3, 'leadership is spread over the brokers')
})

test('kafka-reassign-partitions reorders replicas at once; kafka-leader-election preferred moves the leader', async () => {
  await tool(
    'kafka-topics',
    '--bootstrap-server',
    cluster.bootstrap,
    '--create',
    '--topic',
    'reorder',
    '--replica-assignment',
    '1:2:3',
  )
  await waitFor('reorder-0 led by 1', async () =>
    (await describe('reorder')).get(0)?.leader === 1 ? true : undefined,
  )
  const plan = join(cluster.dir, 'reorder.json')
  writeFileSync(
    plan,
    JSON.stringify({ version: 1, partitions: [{ topic: 'reorder', partition: 0, replicas: [2, 1, 3] }] }),
  )
  const executed = await tool(
    'kafka-reassign-partitions',
    '--bootstrap-server',
    cluster.bootstrap,
    '--reassignment-json-file',
    plan,
    '--execute',
  )
  assert.match(executed, /Successfully started partition reassignment/)
  const verified = await waitFor('the reorder to complete', async () => {
    const out = await tool(
      'kafka-reassign-partitions',
      '--bootstrap-server',
      cluster.bootstrap,
      '--reassignment-json-file',
      plan,
      '--verify',
    )
    return /Reassignment of partition reorder-0 is completed/.test(out) ? out : undefined
  })
  assert.doesNotMatch(verified, /Error|Exception/)
  let p = (await describe('reorder')).get(0)!
  assert.deepEqual(p.replicas, [2, 1, 3])
  assert.equal(p.leader, 1, 'a reorder keeps the leader')
  const elected = await tool(
    'kafka-leader-election',
    '--bootstrap-server',
    cluster.bootstrap,
    '--election-type',
    'preferred',
    '--topic',
    'reorder',
    '--partition',
    '0',
  )
  assert.match(elected, /Successfully completed leader election \(PREFERRED\) for partitions reorder-0/)
  p = await waitFor('broker 2 to lead reorder-0', async () => {
    const d = (await describe('reorder')).get(0)
    return d?.leader === 2 ? d : undefined
  })
  assert.deepEqual(p.replicas, [2, 1, 3])
})

test('kafka-reassign-partitions --generate proposes a plan; --execute starts a move that --verify reports and --cancel reverts', async () => {
  await tool(
    'kafka-topics',
    '--bootstrap-server',
    cluster.bootstrap,
    '--create',
    '--topic',
    'move',
    '--replica-assignment',
    '1',
  )
  const topics = join(cluster.dir, 'move-topics.json')
  writeFileSync(topics, JSON.stringify({ version: 1, topics: [{ topic: 'move' }] }))
  const generated = await tool(
    'kafka-reassign-partitions',
    '--bootstrap-server',
    cluster.bootstrap,
    '--topics-to-move-json-file',
    topics,
    '--broker-list',
    '2,3',
    '--generate',
  )
  assert.match(
    generated,
    /Current partition replica assignment\s*\{"version":1,"partitions":\[\{"topic":"move","partition":0,"replicas":\[1\]/,
  )
  const proposed = /Proposed partition reassignment configuration\s*(\{.*\})/.exec(generated)
  assert.ok(proposed, generated)
  const target = JSON.parse(proposed[1]!) as { partitions: Array<{ replicas: number[] }> }
  assert.ok([2, 3].includes(target.partitions[0]!.replicas[0]!))
  // A move to broker 4 while it is down (registered, fenced): it cannot complete until 4 catches up.
  await cluster.node(4).process.kill()
  const plan = join(cluster.dir, 'move.json')
  writeFileSync(
    plan,
    JSON.stringify({ version: 1, partitions: [{ topic: 'move', partition: 0, replicas: [4] }] }),
  )
  const executed = await tool(
    'kafka-reassign-partitions',
    '--bootstrap-server',
    cluster.bootstrap,
    '--reassignment-json-file',
    plan,
    '--execute',
  )
  assert.match(executed, /Successfully started partition reassignment for move-0/)
  const d = (await describe('move')).get(0)!
  assert.deepEqual(d.replicas, [4, 1], 'target ∪ current while the move is in progress')
  const verified = await tool(
    'kafka-reassign-partitions',
    '--bootstrap-server',
    cluster.bootstrap,
    '--reassignment-json-file',
    plan,
    '--verify',
  )
  assert.match(verified, /Reassignment of partition move-0 is still in progress/)
  const listed = await tool('kafka-reassign-partitions', '--bootstrap-server', cluster.bootstrap, '--list')
  assert.match(listed, /move-0/)
  // The tool then clears the throttles on every broker of the plan, and broker 4 is down: it times
  // out on that, as it would against Kafka, after the cancel.
  const cancelled = await tool(
    'kafka-reassign-partitions',
    '--bootstrap-server',
    cluster.bootstrap,
    '--reassignment-json-file',
    plan,
    '--cancel',
  ).catch((e: Error) => e.message)
  assert.match(cancelled, /Successfully cancelled partition reassignment/)
  const reverted = (await describe('move')).get(0)!
  assert.deepEqual(reverted.replicas, [1])
  assert.equal(reverted.leader, 1)
  await cluster.node(4).process.start()
})

test('a partition whose last ISR member died stays leaderless; unclean elections (tool, then topic config) elect a live replica', async () => {
  for (const topic of ['unclean-tool', 'unclean-config']) {
    await tool(
      'kafka-topics',
      '--bootstrap-server',
      cluster.bootstrap,
      '--create',
      '--topic',
      topic,
      '--replica-assignment',
      '4:3',
    )
  }
  const via = cluster.node(1).address
  // Both replicas in the ISR first: broker 4 restarted at the end of the test before, and a topic
  // created while it was still fenced starts with an ISR of broker 3 alone (as Kafka places it).
  await waitFor('a full ISR', async () => {
    const a = (await describe('unclean-tool', via)).get(0)
    const b = (await describe('unclean-config', via)).get(0)
    const full = (d: typeof a) => d !== undefined && [...d.isr].sort().join() === '3,4'
    return full(a) && full(b) ? true : undefined
  })
  // Broker 3 dies: fenced, it leaves the ISR. Node 3 is a controller voter, perhaps the active one:
  // the fencing may wait for a controller election first, and each look is two JVM tool runs
  // (several seconds each on a loaded machine), so the waits after a kill allow more than the default.
  await cluster.node(3).process.kill()
  let seen = ''
  await waitFor(
    'broker 3 out of the ISR',
    async () => {
      const a = (await describe('unclean-tool', via)).get(0)
      const b = (await describe('unclean-config', via)).get(0)
      seen = `unclean-tool ${JSON.stringify(a)}, unclean-config ${JSON.stringify(b)}`
      return a?.isr.join() === '4' && b?.isr.join() === '4' ? true : undefined
    },
    AFTER_KILL_MS,
  ).catch((e: Error) => {
    const events = cluster
      .outputTail(200_000)
      .split('\n')
      .filter((l) => /^--- node|fenc|controller active/.test(l))
      .join('\n')
    throw new Error(`${e.message}; last seen: ${seen}\n${events}`)
  })
  // Broker 4, the last ISR member, dies: no leader, as unclean.leader.election.enable is false.
  await cluster.node(4).process.kill()
  for (const topic of ['unclean-tool', 'unclean-config']) {
    const p = await waitFor(
      `${topic} leaderless`,
      async () => {
        const d = (await describe(topic, via)).get(0)
        return d?.leader === -1 ? d : undefined
      },
      AFTER_KILL_MS,
    )
    assert.deepEqual(p.isr, [4], 'the ISR keeps its last member')
  }
  // Broker 3 comes back: alive, out of the ISR, with no leader to catch up from.
  await cluster.node(3).process.start()
  assert.equal((await describe('unclean-tool', via)).get(0)?.leader, -1, 'no clean election is possible')
  const elected = await tool(
    'kafka-leader-election',
    '--bootstrap-server',
    via,
    '--election-type',
    'unclean',
    '--topic',
    'unclean-tool',
    '--partition',
    '0',
  )
  assert.match(elected, /Successfully completed leader election \(UNCLEAN\) for partitions unclean-tool-0/)
  const a = await waitFor('broker 3 to lead unclean-tool-0', async () => {
    const d = (await describe('unclean-tool', via)).get(0)
    return d?.leader === 3 ? d : undefined
  })
  assert.deepEqual(a.isr, [3])
  assert.equal((await describe('unclean-config', via)).get(0)?.leader, -1)
  await tool(
    'kafka-configs',
    '--bootstrap-server',
    via,
    '--alter',
    '--entity-type',
    'topics',
    '--entity-name',
    'unclean-config',
    '--add-config',
    'unclean.leader.election.enable=true',
  )
  const b = await waitFor('broker 3 to lead unclean-config-0', async () => {
    const d = (await describe('unclean-config', via)).get(0)
    return d?.leader === 3 ? d : undefined
  })
  assert.deepEqual(b.isr, [3])
  await cluster.node(4).process.start()
})
