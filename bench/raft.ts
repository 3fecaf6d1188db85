/**
 * Raft core figures (never pass/fail): committed records/s on an in-process 3-voter quorum, and the
 * simulated election time after a leader kill at default timeouts. `node bench/raft.ts [--records N] [--kills N]`
 */
import { SeededRandom } from '../src/io/random.ts'
import type { NodeId } from '../src/model/index.ts'
import { type RaftMessage, RaftNode } from '../src/raft/index.ts'
import { CALM_NETWORK, SimCluster } from '../test/sim/sim-cluster.ts'

function argNumber(name: string, fallback: number): number {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}

/** Commit `total` records through a 3-voter quorum, `batch` per propose; returns records/s. */
function throughput(total: number, batch: number, recordBytes: number): { perSecond: number; ms: number } {
  const voters = [1, 2, 3] as NodeId[]
  const start = performance.now()
  /** Every node's clock: wall time since start, plus `skewMs` of simulated time for the election. */
  let skewMs = 0
  const now = () => skewMs + (performance.now() - start)
  const nodes = new Map<NodeId, RaftNode>()
  for (const id of voters) {
    nodes.set(
      id,
      new RaftNode({
        config: { nodeId: id, voters, uncommittedEntriesMax: 65_536 },
        random: new SeededRandom(id),
        nowMs: 0,
      }),
    )
  }
  const inbox: RaftMessage[] = []
  const pump = () => {
    for (let rounds = 0; rounds < 1_000_000; rounds++) {
      let moved = false
      for (const node of nodes.values()) {
        while (node.hasReady()) {
          const ready = node.ready()
          inbox.push(...ready.messages) // persisted in memory: nothing to do
          node.advance(ready)
          moved = true
        }
      }
      if (inbox.length === 0 && !moved) return
      const t = now()
      for (const m of inbox.splice(0)) {
        const to = nodes.get(m.to)!
        to.tick(t)
        to.step(m)
      }
    }
  }
  const leaderNow = () => [...nodes.values()].find((node) => node.status().role === 'leader')
  // Elect a leader: let simulated time pass in 50 ms steps until one wins.
  while (leaderNow() === undefined) {
    skewMs += 50
    for (const node of nodes.values()) node.tick(now())
    pump()
  }
  const leader = leaderNow()!
  const record = new Uint8Array(recordBytes)
  const begin = performance.now()
  const target = leader.status().logEndOffset + BigInt(total)
  let proposed = 0
  while (leader.status().highWatermark < target) {
    while (proposed < total) {
      const result = leader.propose(Array.from({ length: Math.min(batch, total - proposed) }, () => record))
      if (result.kind !== 'appended') break
      proposed += Math.min(batch, total - proposed)
      if (result.kind === 'appended' && proposed % (batch * 64) === 0) break // let replication run
    }
    leader.tick(now())
    pump()
  }
  const ms = performance.now() - begin
  return { perSecond: (total / ms) * 1000, ms }
}

/** Kill the leader of a 3-voter quorum with default timeouts; simulated ms to a new leader and commit. */
function electionAfterKill(seed: number, loaded: boolean): { electedMs: number; committedMs: number } {
  const cluster = new SimCluster({
    seed,
    voters: 3,
    observers: 0,
    config: {},
    network: CALM_NETWORK,
    fsyncMsMax: 1,
    clockDrift: 0,
    snapshotEveryEntries: null,
    snapshotPaddingBytes: 0,
    trace: false,
  })
  const random = new SeededRandom(seed + 1_000_000)
  let counter = 0
  const propose = () => {
    cluster.propose(() => [`r${counter++}`])
    cluster.at(cluster.nowMs + 10, 'propose', propose)
  }
  cluster.start()
  if (loaded) cluster.at(0, 'propose', propose)
  cluster.runUntil(10_000)
  const leader = cluster.leader()
  if (leader === undefined) throw new Error(`bench: no leader after 10 s (seed ${seed})`)
  cluster.runUntil(10_000 + random.int(1000)) // kill at a random point of the leader's activity
  const oldEpoch = leader.raft!.status().epoch
  const killedAt = cluster.nowMs
  cluster.crash(leader, random)
  let electedAt: number | null = null
  let committedAt: number | null = null
  const oldEnd = cluster.checker.committedEnd
  cluster.runUntil(killedAt + 30_000, () => {
    const next = cluster.leader()
    if (electedAt === null && next !== undefined && next.raft!.status().epoch > oldEpoch)
      electedAt = cluster.nowMs
    if (electedAt !== null && cluster.checker.committedEnd > oldEnd) committedAt = cluster.nowMs
    return committedAt !== null
  })
  if (electedAt === null || committedAt === null) throw new Error(`bench: no new leader (seed ${seed})`)
  return { electedMs: (electedAt as number) - killedAt, committedMs: (committedAt as number) - killedAt }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

function main(): void {
  const total = argNumber('--records', 200_000)
  const kills = argNumber('--kills', 200)
  console.log(`raft bench: ${total} committed records per run, 3 voters in process (no fsync)`)
  throughput(20_000, 100, 64) // warm-up
  for (const batch of [1, 10, 100]) {
    const { perSecond, ms } = throughput(total, batch, 64)
    console.log(
      `  ${String(batch).padStart(3)} records/propose, 64 B each: ${Math.round(perSecond).toLocaleString('en')} records/s committed (${ms.toFixed(0)} ms)`,
    )
  }
  for (const loaded of [false, true]) {
    const elected: number[] = []
    const committed: number[] = []
    for (let seed = 1; seed <= kills; seed++) {
      const r = electionAfterKill(seed, loaded)
      elected.push(r.electedMs)
      committed.push(r.committedMs)
    }
    elected.sort((a, b) => a - b)
    committed.sort((a, b) => a - b)
    const line = (xs: number[]) =>
      `p50 ${percentile(xs, 50)} ms, p90 ${percentile(xs, 90)} ms, p99 ${percentile(xs, 99)} ms, max ${xs.at(-1)} ms`
    console.log(
      `election after a leader kill, ${loaded ? 'under load (a record every 10 ms)' : 'idle'}, ${kills} runs, default timeouts:`,
    )
    console.log(`  new leader elected:   ${line(elected)}`)
    console.log(`  first commit after:   ${line(committed)}`)
  }
}

main()
