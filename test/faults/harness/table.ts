/** The results table: what was injected, what was acknowledged, and what went wrong. */
import { countOf, type Verdict } from './checker.ts'
import type { InjectedFault } from './faults.ts'

export function formatTable(input: { injected: readonly InjectedFault[]; verdict: Verdict }): string {
  const { injected, verdict: v } = input
  const kinds = new Map<string, number>()
  for (const f of injected) kinds.set(f.kind, (kinds.get(f.kind) ?? 0) + 1)
  let worst = 0
  let worstPartition = -1
  for (const [p, ms] of v.unavailableMs)
    if (ms > worst) {
      worst = ms
      worstPartition = p
    }
  /** The faults the worst gap overlapped. */
  const during = () => {
    const [from, to] = v.unavailableAt.get(worstPartition) ?? [0, 0]
    const hit = injected.filter((f) => f.from < to && f.to > from).map((f) => `${f.kind} ${f.target}`)
    if (hit.length === 0) return ', no fault active'
    return `, during ${hit.slice(0, 3).join('; ')}${hit.length > 3 ? ` and ${hit.length - 3} more faults` : ''}`
  }
  const sorted = [...v.unavailableMs.values()].sort((a, b) => a - b)
  const median = sorted.length === 0 ? 0 : sorted[Math.floor(sorted.length / 2)]!
  const rows: Array<[string, string]> = [
    ['faults injected', `${injected.length} (${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')})`],
    ['writes acknowledged', String(v.acknowledged)],
    ['writes with unknown outcome', String(v.unknownOutcome)],
    ['records read back', String(v.recordsRead)],
    ['lost', String(countOf(v.lost))],
    ['at another offset than acked', String(countOf(v.moved))],
    ['duplicated', String(countOf(v.duplicated))],
    ['reordered', String(countOf(v.reordered))],
    ['offset conflicts between readers', String(countOf(v.offsetConflicts))],
    ['replica disagreements', String(countOf(v.replicaProblems))],
    ['never-sent values', String(countOf(v.phantom))],
    ['committed offsets moved backwards', String(countOf(v.commitsBackwards))],
    ['partitions not drained after healing', String(v.undrained.length)],
    ["median of partitions' max unavailability", `${(median / 1000).toFixed(1)} s`],
    [
      'max unavailability',
      worstPartition < 0 ? '-' : `${(worst / 1000).toFixed(1)} s (partition ${worstPartition}${during()})`,
    ],
  ]
  const width = Math.max(...rows.map(([k]) => k.length))
  const line = `+${'-'.repeat(width + 2)}+${'-'.repeat(Math.max(...rows.map(([, x]) => x.length)) + 2)}+`
  const valueWidth = line.length - width - 7
  return [line, ...rows.map(([k, x]) => `| ${k.padEnd(width)} | ${x.padEnd(valueWidth)} |`), line].join('\n')
}

/** The examples behind every non-zero count, for the log. */
export function formatProblems(v: Verdict): string {
  const parts: string[] = []
  const add = (name: string, list: readonly (string | number)[]) => {
    if (list.length > 0) parts.push(`${name}:\n  ${list.join('\n  ')}`)
  }
  add('lost', v.lost)
  add('moved', v.moved)
  add('duplicated', v.duplicated)
  add('reordered', v.reordered)
  add('offset conflicts', v.offsetConflicts)
  add('replica disagreements', v.replicaProblems)
  add('never sent', v.phantom)
  add('commits backwards', v.commitsBackwards)
  add('not drained (partitions)', v.undrained)
  return parts.join('\n')
}

/** True when nothing went wrong. */
export function clean(v: Verdict): boolean {
  return (
    countOf(v.lost) +
      countOf(v.moved) +
      countOf(v.duplicated) +
      countOf(v.reordered) +
      countOf(v.offsetConflicts) +
      countOf(v.replicaProblems) +
      countOf(v.phantom) +
      countOf(v.commitsBackwards) +
      v.undrained.length ===
    0
  )
}
