/**
 * `weir cluster status` on a 3-node embedded cluster (quorum leader and epoch, voters, brokers,
 * under-replicated and offline partitions, before and after a node is killed), `weir dev --brokers 3`
 * (three processes, the bootstrap list, a clean stop on SIGINT), and `weir bench` small runs.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type EmbeddedCluster, startCluster } from 'weir'
import { freePorts, NODE, tempDir, WEIR } from '../support/weir-process.ts'
import { weir, weirJson, weirOk } from './cli-support.ts'

interface Status {
  clusterId: string
  quorum: {
    leaderId: number
    leaderEpoch: number
    highWatermark: number
    voters: Array<{ nodeId: number; lag: number | null }>
  }
  brokers: Array<{ nodeId: number; port: number }>
  partitions: number
  underReplicated: Array<{ topic: string; partition: number }>
  offline: Array<{ topic: string; partition: number }>
}

describe('weir cluster status on three nodes', () => {
  let cluster: EmbeddedCluster
  before(async () => {
    cluster = await startCluster({ nodes: 3 })
  })
  after(() => cluster.stop())

  test('quorum, brokers, then an offline partition after a kill', async () => {
    const b = ['-b', cluster.bootstrapServers]
    await weirOk(['topic', 'create', 'spread', '-p', '6', '-r', '1', ...b])
    const s = await weirJson<Status>(['cluster', 'status', ...b])
    assert.equal(s.clusterId, cluster.clusterId)
    assert.ok([1, 2, 3].includes(s.quorum.leaderId))
    assert.ok(s.quorum.leaderEpoch >= 1)
    assert.deepEqual(s.quorum.voters.map((v) => v.nodeId).sort(), [1, 2, 3])
    assert.deepEqual(
      s.brokers.map((x) => [x.nodeId, x.port]),
      cluster.nodes.map((n) => [n.nodeId, n.port]),
    )
    assert.equal(s.offline.length, 0)
    assert.equal(s.underReplicated.length, 0)
    const human = await weirOk(['cluster', 'status', ...b])
    assert.match(
      human,
      new RegExp(
        `^Cluster: ${cluster.clusterId}\\nQuorum: {2}leader ${s.quorum.leaderId}, epoch \\d+, high watermark \\d+\\n`,
      ),
    )
    assert.match(human, /\nBROKER\s+HOST\s+PORT\s+RACK\n1\s+127\.0\.0\.1/)
    assert.match(human, /1 topics, 6 partitions: 0 under-replicated, 0 offline\n$/)

    // Produce and consume route to each partition's leader, spread over the three nodes.
    const leaders = await weirJson<{ partitions: Array<{ leader: number }> }>([
      'topic',
      'describe',
      'spread',
      ...b,
    ])
    assert.equal(new Set(leaders.partitions.map((p) => p.leader)).size, 3)
    const lines = Array.from({ length: 60 }, (_, i) => `k${i}=v${i}`)
    await weirOk(['produce', 'spread', '-k', '=', ...b], `${lines.join('\n')}\n`)
    const back = (await weirOk(['consume', 'spread', '--format', '{key}={value}', ...b]))
      .split('\n')
      .filter((l) => l !== '')
    assert.deepEqual(back.sort(), [...lines].sort())

    // Kill a node that is not the quorum leader: its single-replica partitions go offline.
    const victim = [0, 1, 2].find((i) => i + 1 !== s.quorum.leaderId)!
    await cluster.kill(victim)
    const alive = cluster.nodes
      .filter((n) => n.running)
      .map((n) => `127.0.0.1:${n.port}`)
      .join(',')
    let after: Status | undefined
    let code: number | null = null
    for (let i = 0; i < 100; i++) {
      const r = await weir(['cluster', 'status', '--json', '-b', alive])
      code = r.code
      if (r.stdout !== '') after = JSON.parse(r.stdout) as Status
      if (after !== undefined && after.offline.length > 0) break
      await new Promise((res) => setTimeout(res, 300))
    }
    assert.equal(code, 1, 'exit 1 while a partition is offline')
    assert.ok(after!.offline.length >= 1)
    assert.ok(!after!.brokers.some((x) => x.nodeId === victim + 1))
    // Reading a partition without a leader fails after --timeout with Kafka's error name.
    const stuck = await weir(['consume', 'spread', '--timeout', '2000', '-b', alive])
    assert.equal(stuck.code, 1)
    assert.match(stuck.stderr, /has no leader \(LEADER_NOT_AVAILABLE\)\n$/)
    await cluster.restart(victim)
  })
})

describe('weir dev --brokers 3', () => {
  test('three processes, the bootstrap list, cluster status, a clean stop on SIGINT', async () => {
    const dir = tempDir('weir-dev-')
    try {
      const [port] = await freePorts(1)
      // Six consecutive ports from `port`: likely free; the test fails plainly if not.
      const child = spawn(
        NODE,
        [WEIR, 'dev', '--brokers', '3', '--port', String(port), '--dir', dir.path, '--json'],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      let out = ''
      let err = ''
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
      })
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString()
      })
      const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
      let info: { bootstrap: string; clusterId: string; nodes: Array<{ nodeId: number; dataDir: string }> }
      try {
        for (let i = 0; i < 600 && !out.includes('\n') && child.exitCode === null; i++)
          await new Promise((r) => setTimeout(r, 100))
        info = JSON.parse(out.split('\n')[0]!)
        assert.equal(info.bootstrap, [0, 2, 4].map((d) => `127.0.0.1:${port! + d}`).join(','), err)
        assert.deepEqual(
          info.nodes.map((n) => n.nodeId),
          [1, 2, 3],
        )
        const s = await weirJson<Status>(['cluster', 'status', '-b', info.bootstrap])
        assert.equal(s.clusterId, info.clusterId)
        assert.deepEqual(
          s.brokers.map((x) => x.nodeId),
          [1, 2, 3],
        )
        assert.deepEqual(s.quorum.voters.map((v) => v.nodeId).sort(), [1, 2, 3])
        await weirOk(['topic', 'create', 'dev-t', '-r', '3', '-b', info.bootstrap])
        await weirOk(['produce', 'dev-t', '-b', info.bootstrap], 'x\n')
        assert.equal(await weirOk(['consume', 'dev-t', '-g', 'dev-g', '-b', info.bootstrap]), 'x\n')
        // Internal topics get replication factor min(3, N).
        const offsets = await weirJson<{ partitions: Array<{ replicas: number[] }> }>([
          'topic',
          'describe',
          '__consumer_offsets',
          '-b',
          info.bootstrap,
        ])
        assert.equal(offsets.partitions[0]!.replicas.length, 3)
      } finally {
        child.kill('SIGINT')
      }
      assert.equal(await exited, 0)
      for (const n of info.nodes) {
        assert.ok(existsSync(join(n.dataDir, 'meta.properties')))
        assert.match(readFileSync(join(dir.path, `node-${n.nodeId}.log`), 'utf8'), /SIGTERM: shutting down/)
      }
    } finally {
      dir.remove()
    }
  })
})

describe('weir bench', () => {
  let cluster: EmbeddedCluster
  before(async () => {
    cluster = await startCluster()
  })
  after(() => cluster.stop())

  test('produce then consume small runs report throughput and percentiles', async () => {
    const b = ['-b', cluster.bootstrapServers]
    const p = await weirJson<{
      records: number
      recordsPerSecond: number
      latencyMs: Record<string, number>
    }>([
      'bench',
      'produce',
      '--topic',
      'bench',
      '--records',
      '5000',
      '--record-size',
      '64',
      '--acks',
      '1',
      '--compression',
      'lz4',
      '--partitions',
      '2',
      ...b,
    ])
    assert.equal(p.records, 5000)
    assert.ok(p.recordsPerSecond > 0)
    for (const k of ['p50', 'p95', 'p99', 'p999']) assert.equal(typeof p.latencyMs[k], 'number')
    assert.ok(p.latencyMs.p50! <= p.latencyMs.p99!)
    const rated = await weirJson<{ records: number; targetRate: number }>([
      'bench',
      'produce',
      '--topic',
      'bench',
      '-n',
      '200',
      '--rate',
      '1000',
      ...b,
    ])
    assert.deepEqual([rated.records, rated.targetRate], [200, 1000])
    const c = await weirJson<{ records: number; latencyMs: Record<string, number> }>([
      'bench',
      'consume',
      '--topic',
      'bench',
      ...b,
    ])
    assert.equal(c.records, 5200)
    const human = await weirOk(['bench', 'consume', '--topic', 'bench', '--records', '1000', ...b])
    assert.match(
      human,
      /^consume: [\d,]+ records, .* records\/s, .* MB\/s\nLATENCY \(ms\)\s+p50\s+p95\s+p99\s+p99\.9\s+max\nfetch round trip/,
    )
  })
})
