/**
 * The whole-cluster simulation in CI: every pinned seed, determinism (a seed replays to the same
 * trace hash), then seeds 1..CLUSTER_SIM_SEEDS (default 1000) on two worker threads. A failure
 * names the invariant and the command that replays it.
 */
import assert from 'node:assert/strict'
import { availableParallelism } from 'node:os'
import { describe, it } from 'node:test'
import { PINNED_CLUSTER_SEEDS } from './cluster/cluster-pinned-seeds.ts'
import {
  type ClusterSeedSummary,
  clusterReplayCommand,
  runClusterSeeds,
  summarizeCluster,
} from './cluster/main.ts'
import { runClusterSeed } from './cluster/run-cluster-seed.ts'

const SEEDS = Number(process.env.CLUSTER_SIM_SEEDS ?? '1000')
const WORKERS = Math.max(1, Math.min(2, availableParallelism()))

function report(failures: ClusterSeedSummary[]): string {
  return failures
    .map((f) => `seed ${f.seed}: ${f.message}\n  replay: ${clusterReplayCommand(f.seed)}`)
    .join('\n')
}

describe('whole-cluster simulation', () => {
  for (const { seed, found, todo, transactions } of PINNED_CLUSTER_SEEDS) {
    it(`pinned seed ${seed} (${found.split(':')[0]})`, todo === undefined ? {} : { todo }, async () => {
      const result = summarizeCluster(
        await runClusterSeed(seed, transactions === undefined ? {} : { transactions }),
      )
      assert.ok(result.ok, report([result]))
    })
  }

  it('replays a seed exactly: the same trace hash twice', async () => {
    const a = await runClusterSeed(7, { trace: true })
    const b = await runClusterSeed(7, { trace: true })
    assert.ok(a.events > 1000 && a.acked > 0, `seed 7 did little: ${a.events} events, ${a.acked} acks`)
    assert.equal(a.trace.length, b.trace.length)
    assert.equal(a.traceHash, b.traceHash)
    assert.equal(a.events, b.events)
    const c = await runClusterSeed(8)
    assert.notEqual(c.traceHash, a.traceHash)
  })

  it(`seeds 1..${SEEDS}`, { timeout: 30 * 60_000 }, async () => {
    const failures: ClusterSeedSummary[] = []
    // A known bug's seeds are reported by their pinned todo test above.
    const known = new Set(PINNED_CLUSTER_SEEDS.filter((p) => p.todo !== undefined).map((p) => p.seed))
    let count = 0
    await runClusterSeeds(1, SEEDS, WORKERS, (s) => {
      count++
      if (!s.ok && !known.has(s.seed)) failures.push(s)
    })
    assert.equal(count, SEEDS)
    assert.equal(failures.length, 0, report(failures))
  })
})
