/**
 * The simulator in CI: every pinned seed, then seeds 1..SIM_SEEDS (default 2000) on two worker
 * threads. A failure names the invariant and the command that replays it.
 */
import assert from 'node:assert/strict'
import { availableParallelism } from 'node:os'
import { describe, it } from 'node:test'
import { replayCommand, runSeeds, type SeedSummary, summarize } from './main.ts'
import { PINNED_SEEDS } from './pinned-seeds.ts'
import { runSeed } from './run-seed.ts'

const SEEDS = Number(process.env.SIM_SEEDS ?? '2000')
const WORKERS = Math.max(1, Math.min(2, availableParallelism()))

function report(failures: SeedSummary[]): string {
  return failures
    .map((f) => `seed ${f.seed}: ${f.invariant}: ${f.message}\n  replay: ${replayCommand(f.seed)}`)
    .join('\n')
}

describe('raft simulation', () => {
  for (const { seed, found } of PINNED_SEEDS) {
    it(`pinned seed ${seed} (${found.split(':')[0]})`, () => {
      const result = summarize(runSeed(seed))
      assert.ok(result.ok, report([result]))
    })
  }

  it(`seeds 1..${SEEDS}`, { timeout: 20 * 60_000 }, async () => {
    const failures: SeedSummary[] = []
    let count = 0
    await runSeeds(1, SEEDS, WORKERS, (s) => {
      count++
      if (!s.ok) failures.push(s)
    })
    assert.equal(count, SEEDS)
    assert.equal(failures.length, 0, report(failures))
  })
})
