/**
 * The fault tests' shared verdict: no acknowledged write lost, moved, duplicated or reordered, no
 * offset conflict, replicas agreeing, nothing read that was never sent, every partition drained;
 * each failure names its kind with the whole problem list.
 */
import assert from 'node:assert/strict'
import { countOf, type Verdict } from './checker.ts'
import { formatProblems } from './table.ts'

export function assertNoProblems(v: Verdict): void {
  const problems = formatProblems(v)
  for (const [name, list] of [
    ['lost', v.lost],
    ['moved', v.moved],
    ['duplicated', v.duplicated],
    ['reordered', v.reordered],
    ['offset conflicts', v.offsetConflicts],
    ['replica disagreements', v.replicaProblems],
    ['never sent', v.phantom],
  ] as const)
    assert.equal(countOf(list), 0, `${name}:\n${problems}`)
  assert.deepEqual(v.undrained, [], `partitions not drained:\n${problems}`)
}
