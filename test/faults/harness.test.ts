/**
 * The fault harness, short: three real Weir nodes (each in its own network namespace where the
 * machine allows, else on loopback), a topic with RF 3 and min.insync.replicas 2, kafkajs
 * idempotent acks=all producers on every partition and a consumer group, and a seeded schedule of
 * faults (kill -9 and restart, SIGSTOP/SIGCONT, network partitions, a full disk, a slow disk). After
 * healing: nothing acknowledged is lost, nothing duplicated or reordered, every reader and replica
 * agrees on every offset, and the group drains. `npm run faults -- --duration 600` is the long run.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { assertNoProblems } from './harness/assert-verdict.ts'
import { type RunReport, runHarness } from './harness/run.ts'

const reports: RunReport[] = []

for (const seed of [1, 2]) {
  test(`seeded fault schedule ${seed}: nothing acknowledged is lost, duplicated or reordered; replicas agree`, {
    timeout: 240_000,
  }, async () => {
    const lines: string[] = []
    const report = await runHarness({
      seed,
      durationMs: 45_000,
      partitions: 6,
      timing: { gapMs: [2_000, 4_000], holdMs: [3_000, 6_000] },
      log: (line) => lines.push(line),
    })
    reports.push(report)
    console.log(`${lines.join('\n')}\nreplay: ${report.replay}\n${report.table}`)
    const v = report.verdict
    assert.ok(report.injected.length >= 4, `faults injected: ${report.injected.length}`)
    assert.ok(v.acknowledged > 0, 'writes were acknowledged')
    assertNoProblems(v)
  })
}

// The 600 s run of 2026-11-30 (docs/reliability.md) saw committed offsets read back lower than
// before, around coordinator failovers: ReplicaOffsetsLog loaded a group partition only up to the
// high watermark (fixed by d817407; cluster simulation seeds 2, 5). Runs since have none.
test('committed group offsets never move backwards under faults', () => {
  for (const r of reports) assert.deepEqual(r.verdict.commitsBackwards, [], `seed ${r.seed}`)
})
