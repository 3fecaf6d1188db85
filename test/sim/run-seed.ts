/**
 * One simulation run from one seed: the seed picks the cluster (1, 3 or 5 voters, observers), the
 * timeouts, limits, network and disk behaviour, and a schedule of faults; then faults stop and the
 * quorum must elect a leader, commit and converge within bounded simulated time.
 */
import { SeededRandom } from '../../src/io/random.ts'
import type { NodeId } from '../../src/model/index.ts'
import { type Invariant, InvariantViolation } from './invariant-checker.ts'
import {
  CALM_NETWORK,
  type ClusterOptions,
  type ClusterStats,
  type NetworkProfile,
  SimCluster,
} from './sim-cluster.ts'

export interface SeedPlan {
  readonly cluster: ClusterOptions
  /** Timeouts are Kafka's defaults times this (1 = controller.quorum.* defaults). */
  readonly timeScale: number
  readonly faultPhaseMs: number
  /** Mean time between two faults. */
  readonly faultGapMs: number
  readonly proposeEveryMs: number
  /** Once faults stop, a new entry must be committed within this. */
  readonly livenessBoundMs: number
  /** ...and then every live node must have applied it within this. */
  readonly convergenceBoundMs: number
}

export interface SeedResult {
  readonly seed: number
  readonly ok: boolean
  readonly invariant?: Invariant | 'SimulatorError'
  readonly message?: string
  readonly atMs?: number
  readonly plan: SeedPlan
  readonly stats: ClusterStats
  readonly committed: bigint
  /** Simulated time from the end of faults to the first new commit. */
  readonly recoveryMs: number | null
  readonly simulatedMs: number
  readonly trace: readonly string[]
}

function pick<T>(random: SeededRandom, choices: readonly T[]): T {
  return choices[random.int(choices.length)]!
}

function faultNetwork(random: SeededRandom, timeScale: number): NetworkProfile {
  const delayMinMs = 1 + random.int(3)
  return {
    dropRate: pick(random, [0, 0.01, 0.05, 0.2]),
    duplicateRate: pick(random, [0, 0.02, 0.1]),
    delayMinMs,
    delayMaxMs: delayMinMs + pick(random, [0, 5, 20]),
    longDelayRate: pick(random, [0, 0.01, 0.05]),
    longDelayMaxMs: Math.round(1000 * timeScale),
  }
}

/** Everything a seed decides before the run starts. */
export function planSeed(seed: number, options: { trace?: boolean } = {}): SeedPlan {
  const random = new SeededRandom(BigInt(seed) + (1n << 40n))
  const timeScale = pick(random, [1, 0.5, 0.2, 0.1])
  const ms = (defaultMs: number) => Math.max(1, Math.round(defaultMs * timeScale))
  const cluster: ClusterOptions = {
    seed,
    voters: pick(random, [1, 3, 3, 3, 5, 5]),
    observers: pick(random, [0, 0, 1, 2]),
    config: {
      electionTimeoutMs: ms(1000),
      fetchTimeoutMs: ms(2000),
      electionBackoffMaxMs: ms(1000),
      requestTimeoutMs: ms(2000),
      retryBackoffMs: ms(20),
      fetchMaxWaitMs: ms(500),
      prospectiveJitterMsMax: ms(50),
      fetchEntriesMax: pick(random, [1, 4, 64, 4096]),
      snapshotChunkBytesMax: pick(random, [64, 1000, 65_536]),
      uncommittedEntriesMax: pick(random, [16, 256, 65_536]),
      applyEntriesMax: pick(random, [1, 5, 4096]),
    },
    network: faultNetwork(random, timeScale),
    fsyncMsMax: pick(random, [0, 1, 5]),
    clockDrift: pick(random, [0, 0.001, 0.02]),
    snapshotEveryEntries: pick(random, [null, 8, 50, 200]),
    snapshotPaddingBytes: random.int(2000),
    trace: options.trace ?? false,
  }
  return {
    cluster,
    timeScale,
    faultPhaseMs: ms(10_000 + random.int(20_000)),
    faultGapMs: ms(300 + random.int(2700)),
    proposeEveryMs: pick(random, [5, 20, 100]),
    livenessBoundMs: ms(40_000),
    convergenceBoundMs: ms(20_000),
  }
}

/** Run one seed to the end; never throws for a violation, it reports it. */
export function runSeed(seed: number, options: { trace?: boolean } = {}): SeedResult {
  const plan = planSeed(seed, options)
  const cluster = new SimCluster(plan.cluster)
  const faults = new SeededRandom(BigInt(seed) + (2n << 40n))
  const encoder = new TextDecoder()
  const proposedAt = new Map<string, number>()
  const quietAtMs = plan.faultPhaseMs
  let recoveredAtMs: number | null = null
  let convergeTo: bigint | null = null
  let proposalCount = 0

  cluster.checker.onCommitted = (_offset, entry) => {
    if (recoveredAtMs !== null || entry.kind !== 'data') return
    const at = proposedAt.get(encoder.decode(entry.data))
    if (at !== undefined && at >= quietAtMs) {
      recoveredAtMs = cluster.nowMs
      convergeTo =
        cluster.checker.committedEnd > entry.offset ? cluster.checker.committedEnd : entry.offset + 1n
      cluster.log(`LIVENESS: ${entry.offset} committed ${cluster.nowMs - quietAtMs} ms after faults stopped`)
    }
  }

  // Clients: a few records at a time to whoever leads.
  const propose = () => {
    if (recoveredAtMs !== null) return // from now on: catch up without new load
    const count = 1 + faults.int(3)
    const records = Array.from({ length: count }, () => `p${proposalCount++}`)
    if (cluster.propose(records) !== null) for (const r of records) proposedAt.set(r, cluster.nowMs)
    cluster.at(cluster.nowMs + 1 + faults.int(2 * plan.proposeEveryMs), 'propose', propose)
  }
  cluster.at(faults.int(plan.proposeEveryMs), 'propose', propose)

  // Faults, until the quiet time.
  const crashed = () => cluster.nodes.filter((n) => !n.up)
  const randomUp = () => {
    const up = cluster.nodes.filter((n) => n.up)
    return up.length > 0 ? up[faults.int(up.length)]! : undefined
  }
  const ids = cluster.nodes.map((n) => n.id)
  const split = (): [NodeId[], NodeId[]] => {
    const a: NodeId[] = []
    const b: NodeId[] = []
    for (const id of ids) (faults.nextFloat() < 0.5 ? a : b).push(id)
    return [a, b]
  }
  const fault = () => {
    if (cluster.nowMs >= quietAtMs) return
    const roll = faults.int(14)
    if (roll < 3) {
      const node = randomUp()
      if (node !== undefined) {
        cluster.crash(node, faults)
        cluster.at(cluster.nowMs + faults.int(plan.faultGapMs * 3), 'restart', () => cluster.restart(node))
      }
    } else if (roll < 5) {
      const leader = cluster.leader()
      if (leader !== undefined) {
        cluster.crash(leader, faults)
        cluster.at(cluster.nowMs + faults.int(plan.faultGapMs * 3), 'restart', () => cluster.restart(leader))
      }
    } else if (roll < 7) {
      const [a, b] = split()
      const oneWay = faults.nextFloat() < 0.3
      for (const x of a)
        for (const y of b) {
          cluster.block(x, y)
          if (!oneWay) cluster.block(y, x)
        }
      cluster.log(`PARTITION ${a.join(',')} ${oneWay ? '->|' : '|'} ${b.join(',')}`)
    } else if (roll < 8) {
      const leader = cluster.leader()
      if (leader !== undefined) {
        const inbound = faults.int(3) // 0: both ways, 1: only inbound cut, 2: only outbound cut
        for (const id of ids) {
          if (id === leader.id) continue
          if (inbound !== 2) cluster.block(id, leader.id)
          if (inbound !== 1) cluster.block(leader.id, id)
        }
        cluster.log(`ISOLATE leader ${leader.id} (${['both', 'inbound', 'outbound'][inbound]})`)
      }
    } else if (roll < 10) {
      cluster.heal()
      cluster.log('HEAL')
    } else if (roll < 11) {
      cluster.resign()
    } else if (roll < 12) {
      cluster.network = faultNetwork(faults, plan.timeScale)
      cluster.log(`NETWORK ${JSON.stringify(cluster.network)}`)
    } else {
      for (const node of crashed()) cluster.restart(node)
    }
    cluster.at(cluster.nowMs + 1 + faults.int(2 * plan.faultGapMs), 'fault', fault)
  }
  cluster.at(faults.int(plan.faultGapMs), 'fault', fault)
  cluster.at(quietAtMs, 'quiet', () => {
    cluster.heal()
    cluster.network = CALM_NETWORK
    for (const node of crashed()) cluster.restart(node)
    cluster.log('QUIET: faults stop')
  })

  const converged = () =>
    convergeTo !== null && cluster.nodes.every((n) => n.up && n.sm.applied >= (convergeTo as bigint))
  const result = (ok: boolean, extra: Partial<SeedResult> = {}): SeedResult => ({
    seed,
    ok,
    plan,
    stats: cluster.stats,
    committed: cluster.checker.committedEnd,
    recoveryMs: recoveredAtMs === null ? null : recoveredAtMs - quietAtMs,
    simulatedMs: cluster.nowMs,
    trace: cluster.trace,
    ...extra,
  })
  try {
    cluster.runUntil(quietAtMs + plan.livenessBoundMs, () => recoveredAtMs !== null)
    if (recoveredAtMs === null) {
      const leader = cluster.leader()
      return result(false, {
        invariant: 'Liveness',
        message: `no new entry committed within ${plan.livenessBoundMs} ms after faults stopped (leader: ${leader?.id ?? 'none'})`,
        atMs: cluster.nowMs,
      })
    }
    // Catching up takes a round trip per fetch of at most fetchEntriesMax entries.
    let backlog = 0n
    for (const node of cluster.nodes) {
      const behind = (convergeTo as unknown as bigint) - node.sm.applied
      if (behind > backlog) backlog = behind
    }
    const roundTripMs = 2 * CALM_NETWORK.delayMaxMs + plan.cluster.fsyncMsMax + 2
    const fetchEntriesMax = plan.cluster.config.fetchEntriesMax ?? 4096
    const catchUpMs = Math.ceil((Number(backlog) / fetchEntriesMax) * roundTripMs)
    const deadline = (recoveredAtMs as number) + plan.convergenceBoundMs + catchUpMs
    cluster.runUntil(deadline, converged)
    if (!converged()) {
      const lagging = cluster.nodes
        .filter((n) => n.sm.applied < (convergeTo as unknown as bigint))
        .map((n) => `${n.id}@${n.sm.applied}(${n.raft?.status().role})`)
      return result(false, {
        invariant: 'Convergence',
        message: `nodes ${lagging.join(' ')} below ${convergeTo} ${deadline - (recoveredAtMs as number)} ms after recovery`,
        atMs: cluster.nowMs,
      })
    }
    return result(true)
  } catch (error) {
    if (error instanceof InvariantViolation) {
      return result(false, { invariant: error.invariant, message: error.message, atMs: cluster.nowMs })
    }
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error)
    return result(false, { invariant: 'SimulatorError', message, atMs: cluster.nowMs })
  }
}
