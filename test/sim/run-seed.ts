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
  type SimNode,
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

/** The faults a seed draws from, and how often. */
const FAULT_WEIGHTS = {
  crash: 3,
  crashLeader: 2,
  crashElecting: 2,
  partition: 3,
  isolateLeader: 1,
  heal: 3,
  resign: 1,
  network: 1,
  restartAll: 1,
  crashNextLeader: 2,
} as const
type FaultKind = keyof typeof FAULT_WEIGHTS

function pick<T>(random: SeededRandom, choices: readonly T[]): T {
  return choices[random.int(choices.length)]!
}

function faultNetwork(random: SeededRandom, timeScale: number): NetworkProfile {
  const delayMsMin = 1 + random.int(3)
  return {
    dropRate: pick(random, [0, 0.01, 0.05, 0.2]),
    duplicateRate: pick(random, [0, 0.02, 0.1]),
    delayMsMin,
    delayMsMax: delayMsMin + pick(random, [0, 5, 20, Math.round(250 * timeScale)]),
    longDelayRate: pick(random, [0, 0.01, 0.05]),
    longDelayMsMax: Math.round(1000 * timeScale),
  }
}

/** Everything a seed decides before the run starts. */
export function planSeed(seed: number, options: { trace?: boolean } = {}): SeedPlan {
  const random = new SeededRandom(BigInt(seed) + (1n << 40n))
  const timeScale = pick(random, [1, 0.5, 0.2, 0.1])
  const ms = (defaultMs: number) => Math.max(1, Math.round(defaultMs * timeScale))
  const cluster: ClusterOptions = {
    seed,
    voters: pick(random, [1, 3, 3, 5, 5, 5]),
    observers: pick(random, [0, 0, 1, 2]),
    config: {
      electionTimeoutMs: ms(1000),
      fetchTimeoutMs: ms(2000),
      electionBackoffMsMax: ms(1000),
      requestTimeoutMs: ms(2000),
      retryBackoffMs: ms(20),
      fetchWaitMsMax: ms(500),
      fetchTimeoutJitterMsMax: ms(200),
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
    faultPhaseMs: ms(30_000 + random.int(60_000)),
    faultGapMs: ms(100 + random.int(2000)),
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
    const make = () => Array.from({ length: 1 + faults.int(3) }, () => `p${proposalCount++}`)
    for (const record of cluster.propose(make)) proposedAt.set(record, cluster.nowMs)
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
  const restartLater = (node: SimNode, msMax: number) =>
    cluster.at(cluster.nowMs + faults.int(msMax + 1), 'restart', () => cluster.restart(node))
  const electionTimeoutMs = plan.cluster.config.electionTimeoutMs ?? 1000
  const actions: Record<FaultKind, () => void> = {
    crash: () => {
      const node = randomUp()
      if (node === undefined) return
      cluster.crash(node, faults)
      restartLater(node, plan.faultGapMs * 3)
    },
    crashLeader: () => {
      const leader = cluster.leader()
      if (leader === undefined) return
      cluster.crash(leader, faults)
      restartLater(leader, plan.faultGapMs * 3)
    },
    // Elections are where votes must be durable: crash a node in the middle of one, restart it soon.
    crashElecting: () => {
      const electing = cluster.nodes.filter((n) => {
        const s = n.raft?.status()
        return s !== undefined && (s.role === 'prospective' || s.role === 'candidate' || s.votedId !== null)
      })
      const node = electing.length > 0 ? electing[faults.int(electing.length)] : randomUp()
      if (node === undefined) return
      cluster.crash(node, faults)
      restartLater(node, electionTimeoutMs)
    },
    partition: () => {
      const [a, b] = split()
      const oneWay = faults.nextFloat() < 0.3
      for (const x of a)
        for (const y of b) {
          cluster.block(x, y)
          if (!oneWay) cluster.block(y, x)
        }
      cluster.log(`PARTITION ${a.join(',')} ${oneWay ? '->|' : '|'} ${b.join(',')}`)
    },
    isolateLeader: () => {
      const leader = cluster.leader()
      if (leader === undefined) return
      const direction = faults.int(3) // 0: both ways, 1: only inbound cut, 2: only outbound cut
      for (const id of ids) {
        if (id === leader.id) continue
        if (direction !== 2) cluster.block(id, leader.id)
        if (direction !== 1) cluster.block(leader.id, id)
      }
      cluster.log(`ISOLATE leader ${leader.id} (${['both', 'inbound', 'outbound'][direction]})`)
    },
    heal: () => {
      cluster.heal()
      cluster.log('HEAL')
    },
    resign: () => cluster.resign(),
    network: () => {
      cluster.network = faultNetwork(faults, plan.timeScale)
      cluster.log(`NETWORK ${JSON.stringify(cluster.network)}`)
    },
    restartAll: () => {
      for (const node of crashed()) cluster.restart(node)
    },
    // KIP-595's commit rule matters when a leader dies before its first entry is replicated: arm
    // a trap that crashes the next leader a few round trips after it is elected.
    crashNextLeader: () => {
      trapArmed = true
    },
  }
  let trapArmed = false
  cluster.onLeaderElected = (leader) => {
    if (!trapArmed || cluster.nowMs >= quietAtMs) return
    trapArmed = false
    const delayMs = faults.int(4 * (cluster.network.delayMsMax + plan.cluster.fsyncMsMax) + 1)
    const incarnation = leader.incarnation
    cluster.at(cluster.nowMs + delayMs, 'crash new leader', () => {
      if (leader.incarnation !== incarnation) return
      cluster.log(`TRAP crashes new leader ${leader.id}`)
      cluster.crash(leader, faults)
      restartLater(leader, plan.faultGapMs * 3)
    })
  }
  const weights = Object.entries(FAULT_WEIGHTS) as [FaultKind, number][]
  const totalWeight = weights.reduce((sum, [, w]) => sum + w, 0)
  const fault = () => {
    if (cluster.nowMs >= quietAtMs) return
    let roll = faults.int(totalWeight)
    for (const [kind, weight] of weights) {
      roll -= weight
      if (roll < 0) {
        actions[kind]()
        break
      }
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

  /** Time to replicate `entries` on a calm network, one round trip per full fetch. */
  const catchUpMs = (entries: bigint) => {
    const roundTripMs = 2 * CALM_NETWORK.delayMsMax + plan.cluster.fsyncMsMax + 2
    const fetchEntriesMax = plan.cluster.config.fetchEntriesMax ?? 4096
    return Math.ceil((Number(entries) / fetchEntriesMax) * roundTripMs)
  }
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
    cluster.start()
    cluster.runUntil(quietAtMs)
    // The bound: elections, plus replicating the longest log to the voters furthest behind at a
    // round trip per fetch of at most fetchEntriesMax entries (the leader's log may hold many
    // uncommitted entries that a majority must fetch before anything new commits).
    let longest = 0n
    let shortest: bigint | null = null
    for (const node of cluster.nodes) {
      const end = node.raft?.log.endOffset ?? node.disk.syncedEndOffset
      if (end > longest) longest = end
      if (node.isVoter && (shortest === null || end < shortest)) shortest = end
    }
    const livenessBoundMs = plan.livenessBoundMs + catchUpMs(longest - (shortest ?? 0n))
    cluster.runUntil(quietAtMs + livenessBoundMs, () => recoveredAtMs !== null)
    if (recoveredAtMs === null) {
      const leader = cluster.leader()
      return result(false, {
        invariant: 'Liveness',
        message: `no new entry committed within ${livenessBoundMs} ms after faults stopped (leader: ${leader?.id ?? 'none'})`,
        atMs: cluster.nowMs,
      })
    }
    // Catching up takes a round trip per fetch of at most fetchEntriesMax entries.
    let backlog = 0n
    for (const node of cluster.nodes) {
      const behind = (convergeTo as unknown as bigint) - node.sm.applied
      if (behind > backlog) backlog = behind
    }
    const deadline = (recoveredAtMs as number) + plan.convergenceBoundMs + catchUpMs(backlog)
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
