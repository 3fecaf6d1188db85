/**
 * Kafka's own `kafka-metadata-quorum` (from the Apache Kafka jars, tools/kafka) against a real
 * three-node Weir cluster: `describe --status` and `--replication` show Weir's quorum as it is.
 */
// compat-cluster: skip it starts its own three-node cluster
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { freePorts, REPO, tempDir, WeirProcess, writeProperties } from '../support/weir-process.ts'

const run = promisify(execFile)
const dir = tempDir('weir-mq-')
const nodes: WeirProcess[] = []
let bootstrap = ''

async function kafkaTool(...args: string[]): Promise<string> {
  const { stdout } = await run(join(REPO, 'tools/kafka/tool.sh'), args, { timeout: 60_000 })
  return stdout
}

before(async () => {
  const ports = await freePorts(6)
  const voters = [0, 1, 2].map((i) => `${i + 1}@127.0.0.1:${ports[i * 2 + 1]}`).join(',')
  for (const i of [0, 1, 2]) {
    const config = writeProperties(dir.path, `n${i + 1}.properties`, {
      'node.id': i + 1,
      listeners: `PLAINTEXT://127.0.0.1:${ports[i * 2]},CONTROLLER://127.0.0.1:${ports[i * 2 + 1]}`,
      'controller.quorum.voters': voters,
      'log.dirs': `${dir.path}/n${i + 1}`,
      'cluster.id': 'metadataQuorumToolTest',
    })
    nodes.push(new WeirProcess(['--config', config]))
  }
  await Promise.all(nodes.map((n) => n.start()))
  bootstrap = `127.0.0.1:${ports[0]}`
})

after(async () => {
  for (const n of nodes) await n.stop()
  dir.remove()
})

test('describe --status names the leader, its epoch and the three voters', async () => {
  const out = await kafkaTool(
    'kafka-metadata-quorum',
    '--bootstrap-server',
    bootstrap,
    'describe',
    '--status',
  )
  const field = (name: string) => new RegExp(`^${name}:\\s+(.*)$`, 'm').exec(out)?.[1]
  assert.equal(field('ClusterId'), 'metadataQuorumToolTest')
  const leaderId = Number(field('LeaderId'))
  assert.ok([1, 2, 3].includes(leaderId), out)
  assert.ok(Number(field('LeaderEpoch')) >= 1, out)
  assert.ok(Number(field('HighWatermark')) > 0, out)
  const voters = field('CurrentVoters') ?? ''
  for (const id of [1, 2, 3]) assert.match(voters, new RegExp(`"id": ${id}\\b`))
})

test('describe --replication lists every voter with its log end offset and lag', async () => {
  const out = await kafkaTool(
    'kafka-metadata-quorum',
    '--bootstrap-server',
    bootstrap,
    'describe',
    '--replication',
  )
  const [header, ...lines] = out.trim().split('\n')
  const leo = (header ?? '').trim().split(/\s+/).indexOf('LogEndOffset')
  assert.ok(leo > 0, out)
  const rows = lines.map((line) => line.trim().split(/\s+/))
  const ids = rows.map((r) => Number(r[0])).sort()
  assert.deepEqual(ids, [1, 2, 3], out)
  const statuses = rows.map((r) => r.at(-1))
  assert.equal(statuses.filter((s) => s === 'Leader').length, 1, out)
  assert.equal(statuses.filter((s) => s === 'Follower').length, 2, out)
  for (const r of rows) assert.ok(Number(r[leo]) > 0, `log end offset of ${r[0]}: ${out}`)
})
