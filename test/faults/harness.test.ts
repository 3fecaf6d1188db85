/**
 * The fault harness, short: three real Weir nodes (each in its own network namespace where the
 * machine allows, else on loopback), kafkajs idempotent acks=all producers on every partition and a
 * consumer group, and a seeded schedule of faults (kill -9 and restart, SIGSTOP/SIGCONT, network
 * partitions, a full disk). After healing: nothing acknowledged is lost, nothing duplicated or
 * reordered, every reader and replica agrees on every offset, committed offsets never went back,
 * and the group drains. `npm run faults -- --duration 600` is the long run.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runHarness } from './harness/run.ts'
import { clean, formatProblems } from './harness/table.ts'

for (const seed of [1, 2]) {
  test(`seeded fault schedule ${seed}: nothing acknowledged is lost, duplicated or reordered`, {
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
    console.log(`${lines.join('\n')}\nreplay: ${report.replay}\n${report.table}`)
    assert.ok(report.injected.length >= 4, `faults injected: ${report.injected.length}`)
    assert.ok(report.verdict.acknowledged > 0, 'writes were acknowledged')
    assert.ok(clean(report.verdict), formatProblems(report.verdict))
  })
}
