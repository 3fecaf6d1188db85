/**
 * The whole-cluster simulator's command line. `npm run sim:cluster -- --seed 42` replays one seed
 * (the last 120 trace lines on failure, all with --trace); `npm run sim:cluster -- --seeds 1000
 * [--start 1] [--workers 2]` runs many. A failure prints the command that replays it; pin it in
 * cluster-pinned-seeds.ts.
 */
import { availableParallelism } from 'node:os'
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import { runSeedPool } from '../seed-pool.ts'
import { type ClusterSeedResult, runClusterSeed } from './run-cluster-seed.ts'

/** What a worker sends back per seed (a result without the trace). */
export interface ClusterSeedSummary {
  readonly seed: number
  readonly ok: boolean
  readonly invariant: string | undefined
  readonly message: string | undefined
  readonly atMs: number | undefined
  readonly events: number
  readonly simulatedMs: number
  readonly brokers: number
  readonly acked: number
  readonly commits: number
  readonly crashes: number
  readonly excusedLosses: number
  readonly anomalies: number
  readonly traceHash: string
}

export function summarizeCluster(r: ClusterSeedResult): ClusterSeedSummary {
  return {
    seed: r.seed,
    ok: r.ok,
    invariant: r.invariant,
    message: r.message,
    atMs: r.atMs,
    events: r.events,
    simulatedMs: Math.round(r.simulatedMs),
    brokers: r.plan.brokers,
    acked: r.acked,
    commits: r.commits,
    crashes: r.crashes,
    excusedLosses: r.excusedLosses,
    anomalies: r.anomalies,
    traceHash: r.traceHash,
  }
}

export function clusterReplayCommand(seed: number): string {
  return `npm run sim:cluster -- --seed ${seed}`
}

/** Run seeds [start, start + count) on `workers` threads; results arrive in completion order. */
export async function runClusterSeeds(
  start: number,
  count: number,
  workers: number,
  onResult: (summary: ClusterSeedSummary) => void,
): Promise<void> {
  if (workers <= 1) {
    for (let seed = start; seed < start + count; seed++)
      onResult(summarizeCluster(await runClusterSeed(seed)))
    return
  }
  await runSeedPool<ClusterSeedSummary>({
    start,
    count,
    workers,
    workerUrl: new URL(import.meta.url),
    role: 'cluster-sim-worker',
    onResult,
  })
}

function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}

async function main(args: string[]): Promise<number> {
  const single = argValue(args, '--seed')
  if (single !== undefined) {
    const result = await runClusterSeed(Number(single), { trace: true })
    const { trace: _trace, plan, ...rest } = result
    console.log(`seed ${result.seed}: ${JSON.stringify(plan)}`)
    if (args.includes('--trace') || !result.ok) {
      const lines = args.includes('--trace') ? result.trace : result.trace.slice(-120)
      for (const line of lines) console.log(line)
    }
    console.log(JSON.stringify(summarizeCluster({ ...rest, plan, trace: [] })))
    if (!result.ok) {
      console.log(
        `FAIL ${result.invariant}: ${result.message}\n  replay: ${clusterReplayCommand(result.seed)}`,
      )
      return 1
    }
    console.log(
      `ok: ${result.acked} records and ${result.commits} offset commits acknowledged, ${result.crashes} crashes, converged`,
    )
    return 0
  }
  const count = Number(argValue(args, '--seeds') ?? '100')
  const start = Number(argValue(args, '--start') ?? '1')
  const workers = Number(argValue(args, '--workers') ?? String(Math.min(2, availableParallelism())))
  const began = performance.now()
  const failures: ClusterSeedSummary[] = []
  let done = 0
  let events = 0
  let acked = 0
  let commits = 0
  let crashes = 0
  let excused = 0
  let anomalies = 0
  await runClusterSeeds(start, count, workers, (s) => {
    done++
    events += s.events
    acked += s.acked
    commits += s.commits
    crashes += s.crashes
    excused += s.excusedLosses
    anomalies += s.anomalies
    if (!s.ok) {
      failures.push(s)
      console.log(`FAIL seed ${s.seed}: ${s.message}\n  replay: ${clusterReplayCommand(s.seed)}`)
    }
    if (done % 100 === 0) console.log(`... ${done}/${count} seeds`)
  })
  const seconds = (performance.now() - began) / 1000
  console.log(
    `${done} seeds (${start}..${start + count - 1}) in ${seconds.toFixed(1)} s on ${workers} workers: ` +
      `${failures.length} failed; ${events} events, ${acked} acknowledged records, ${commits} acknowledged offset commits, ${crashes} crashes, ` +
      `${excused} losses excused by power failures, ${anomalies} producer anomalies`,
  )
  return failures.length === 0 ? 0 : 1
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'cluster-sim-worker') {
  parentPort!.on('message', (seed: number) => {
    void runClusterSeed(seed).then((r) => parentPort!.postMessage(summarizeCluster(r)))
  })
} else if (
  isMainThread &&
  process.argv[1] !== undefined &&
  import.meta.url.endsWith(process.argv[1].split('/').pop()!)
) {
  process.exitCode = await main(process.argv.slice(2))
}
