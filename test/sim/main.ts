/**
 * The simulator's command line. `npm run sim -- --seed 42` replays one seed (and prints its trace
 * with --trace); `npm run sim -- --seeds 10000 [--start 1] [--workers 2]` runs many.
 * A failure prints the command that replays it; add that seed to pinned-seeds.ts.
 */
import { availableParallelism } from 'node:os'
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import { runSeed, type SeedResult } from './run-seed.ts'
import { runSeedPool } from './seed-pool.ts'

/** What a worker sends back per seed (a SeedResult without the bulky parts). */
export interface SeedSummary {
  readonly seed: number
  readonly ok: boolean
  readonly invariant: string | undefined
  readonly message: string | undefined
  readonly atMs: number | undefined
  readonly events: number
  readonly simulatedMs: number
  readonly recoveryMs: number | null
  readonly voters: number
  readonly observers: number
  readonly timeScale: number
  readonly committed: string
  readonly epochMax: number
  readonly crashes: number
  readonly snapshotsInstalled: number
}

export function summarize(result: SeedResult): SeedSummary {
  return {
    seed: result.seed,
    ok: result.ok,
    invariant: result.invariant,
    message: result.message,
    atMs: result.atMs,
    events: result.stats.events,
    simulatedMs: result.simulatedMs,
    recoveryMs: result.recoveryMs,
    voters: result.plan.cluster.voters,
    observers: result.plan.cluster.observers,
    timeScale: result.plan.timeScale,
    committed: String(result.committed),
    epochMax: result.stats.epochMax,
    crashes: result.stats.crashes,
    snapshotsInstalled: result.stats.snapshotsInstalled,
  }
}

export function replayCommand(seed: number): string {
  return `npm run sim -- --seed ${seed}`
}

/** Run seeds [start, start + count) on `workers` threads; results arrive in completion order. */
export async function runSeeds(
  start: number,
  count: number,
  workers: number,
  onResult: (summary: SeedSummary) => void,
): Promise<void> {
  if (workers <= 1) {
    for (let seed = start; seed < start + count; seed++) onResult(summarize(runSeed(seed)))
    return
  }
  await runSeedPool<SeedSummary>({
    start,
    count,
    workers,
    workerUrl: new URL(import.meta.url),
    role: 'sim-worker',
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
    const result = runSeed(Number(single), { trace: true })
    const plan = result.plan
    console.log(
      `seed ${result.seed}: ${plan.cluster.voters} voters + ${plan.cluster.observers} observers, time scale ${plan.timeScale}, ` +
        `faults for ${plan.faultPhaseMs} ms, network ${JSON.stringify(plan.cluster.network)}`,
    )
    if (args.includes('--trace') || !result.ok) {
      const lines = args.includes('--trace') ? result.trace : result.trace.slice(-80)
      for (const line of lines) console.log(line)
    }
    console.log(JSON.stringify(summarize(result)))
    if (!result.ok) {
      console.log(`FAIL ${result.invariant}: ${result.message}`)
      return 1
    }
    console.log(`ok: committed ${result.committed}, recovered ${result.recoveryMs} ms after faults stopped`)
    return 0
  }
  const count = Number(argValue(args, '--seeds') ?? '100')
  const start = Number(argValue(args, '--start') ?? '1')
  const workers = Number(argValue(args, '--workers') ?? String(Math.min(2, availableParallelism())))
  const began = performance.now()
  const failures: SeedSummary[] = []
  let done = 0
  let events = 0
  let worstRecoveryMs = 0
  let crashes = 0
  let epochs = 0
  let installs = 0
  await runSeeds(start, count, workers, (s) => {
    done++
    events += s.events
    crashes += s.crashes
    epochs += s.epochMax
    installs += s.snapshotsInstalled
    if (s.recoveryMs !== null) worstRecoveryMs = Math.max(worstRecoveryMs, s.recoveryMs / s.timeScale)
    if (!s.ok) {
      failures.push(s)
      console.log(`FAIL seed ${s.seed}: ${s.invariant}: ${s.message}\n  replay: ${replayCommand(s.seed)}`)
    }
    if (done % 500 === 0) console.log(`... ${done}/${count} seeds`)
  })
  const seconds = (performance.now() - began) / 1000
  console.log(
    `${done} seeds (${start}..${start + count - 1}) in ${seconds.toFixed(1)} s on ${workers} workers: ` +
      `${failures.length} failed; ${events} events, ${crashes} crashes, ${epochs} epochs, ${installs} snapshot installs; ` +
      `worst recovery ${worstRecoveryMs.toFixed(0)} ms (at default timeouts)`,
  )
  return failures.length === 0 ? 0 : 1
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'sim-worker') {
  parentPort!.on('message', (seed: number) => parentPort!.postMessage(summarize(runSeed(seed))))
} else if (
  isMainThread &&
  process.argv[1] !== undefined &&
  import.meta.url.endsWith(process.argv[1].split('/').pop()!)
) {
  process.exitCode = await main(process.argv.slice(2))
}
