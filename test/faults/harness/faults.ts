/**
 * Fault injection on a seeded schedule. A schedule is a list of faults, one at a time, each held
 * for a while and then healed, with a quiet gap between them. The seed decides the kinds, the
 * durations, the gaps and every choice among candidates (which node, which side); the candidates
 * themselves (who leads a partition, who is the active controller) are read from the cluster when
 * the fault starts.
 *
 * Kinds:
 * - `kill`: kill -9 a node, restart it from its files when the fault heals.
 * - `pause`: SIGSTOP a node (a paused leader or controller: alive, silent), SIGCONT when healed.
 * - `isolate-leader`: cut every link between a partition leader's node and the others.
 * - `isolate-controller`: the same for the active controller (the quorum leader).
 * - `minority`: cut a minority (floor((n-1)/2) nodes) off from the majority.
 * - `bridge`: two sides that cannot reach each other and one node that reaches both.
 * - `disk-full`: fill a node's data dir (a tmpfs) to ENOSPC; when healed, free it (no restart: the
 *   node recovers the log dir in place)
 *   (a log that failed on a full disk stays offline until then).
 * - `slow-disk`: every disk write and fsync of a node waits 100-500 ms (Weir's test-only SlowDisk on
 *   its Disk port, switched by a control file: this machine has no dm-delay); 0 when healed.
 * - `kill-leader`, `kill-controller`: `kill` aimed at a partition leader's node or at the active
 *   controller (the quorum leader). Only when asked for (`kinds`): a random `kill` hits them too, these
 *   make a short run certain to fail a leader and the controller over.
 * Network kinds need netns mode; disk-full needs tmpfs data dirs. A kind that cannot run here is
 * left out of the schedule (and the table says which kinds ran).
 */
import { KafkaConnection } from '../../../src/client/index.ts'
import { nodeTransport, SeededRandom, systemClock } from '../../../src/io/index.ts'
import type { TopicName } from '../../../src/model/index.ts'
import { apis } from '../../../src/protocol/index.ts'
import type { FaultCluster } from './cluster.ts'

export const FAULT_KINDS = [
  'kill',
  'pause',
  'isolate-leader',
  'isolate-controller',
  'minority',
  'bridge',
  'disk-full',
  'slow-disk',
  'kill-leader',
  'kill-controller',
] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

/** Kinds a schedule draws only when they are named. */
export const TARGETED_KINDS: readonly FaultKind[] = ['kill-leader', 'kill-controller']

export interface PlannedFault {
  readonly kind: FaultKind
  /** Gap before the fault starts, ms. */
  readonly gapMs: number
  /** How long it is held, ms. */
  readonly holdMs: number
  /** Seeded draw used to pick among candidates when the fault starts. */
  readonly pick: number
}

export interface InjectedFault {
  readonly kind: FaultKind
  readonly target: string
  /** ms since the workload started. */
  readonly from: number
  readonly to: number
}

export function faultKindsFor(
  cluster: { network: string; nodes: readonly unknown[] },
  tmpfs: boolean,
): FaultKind[] {
  return FAULT_KINDS.filter((k) => {
    if (k === 'disk-full') return tmpfs
    if (k === 'bridge') return cluster.network === 'netns' && cluster.nodes.length >= 3
    if (k === 'isolate-leader' || k === 'isolate-controller' || k === 'minority')
      return cluster.network === 'netns'
    return true
  })
}

/** A seeded schedule filling `durationMs` (the last fault heals before it ends). */
export function planSchedule(
  seed: number,
  durationMs: number,
  kinds: readonly FaultKind[],
  timing: { gapMs: [number, number]; holdMs: [number, number] } = {
    gapMs: [3_000, 8_000],
    holdMs: [4_000, 12_000],
  },
): PlannedFault[] {
  const random = new SeededRandom(BigInt(seed))
  const between = ([lo, hi]: [number, number]) => lo + random.int(hi - lo + 1)
  const out: PlannedFault[] = []
  let order: FaultKind[] = []
  let t = 0
  for (;;) {
    const gapMs = between(timing.gapMs)
    const holdMs = between(timing.holdMs)
    if (t + gapMs + holdMs > durationMs) break
    // Round-robin over a seeded shuffle, so a short run still sees every kind.
    if (out.length % kinds.length === 0) {
      order = [...kinds]
      for (let i = order.length - 1; i > 0; i--) {
        const j = random.int(i + 1)
        ;[order[i], order[j]] = [order[j]!, order[i]!]
      }
    }
    out.push({ kind: order[out.length % kinds.length]!, gapMs, holdMs, pick: random.nextU32() })
    t += gapMs + holdMs
  }
  return out
}

const connectionOptions = {
  clientId: 'faults-harness',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 3_000,
  inFlightRequestsMax: 4,
  responseBytesMax: 1 << 24,
  connectTimeoutMs: 1_000,
}

async function ask<T>(cluster: FaultCluster, fn: (c: KafkaConnection) => Promise<T>): Promise<T> {
  let last: unknown
  for (const n of cluster.nodes) {
    if (!n.process.running || n.paused) continue
    try {
      const c = await KafkaConnection.open({ host: n.host, port: n.port }, connectionOptions)
      try {
        return await fn(c)
      } finally {
        c.close()
      }
    } catch (e) {
      last = e
    }
  }
  throw new Error(`no node answered: ${(last as Error | undefined)?.message}`)
}

/** The active controller (the quorum leader), or undefined when none is known. */
export async function activeController(cluster: FaultCluster): Promise<number | undefined> {
  try {
    const res = await ask(cluster, (c) =>
      c.request(apis.DescribeQuorum, 1, {
        topics: [{ topicName: '__cluster_metadata' as TopicName, partitions: [{ partitionIndex: 0 }] }],
      }),
    )
    const id = res.topics[0]?.partitions[0]?.leaderId
    return id === undefined || id < 0 ? undefined : id
  } catch {
    return undefined
  }
}

/** Partition leaders of `topic` by partition. */
export async function partitionLeaders(cluster: FaultCluster, topic: string): Promise<Map<number, number>> {
  const res = await ask(cluster, (c) =>
    c.request(apis.Metadata, 12, { topics: [{ name: topic as TopicName, topicId: undefined as never }] }),
  )
  const out = new Map<number, number>()
  for (const p of res.topics[0]?.partitions ?? []) if (p.leaderId >= 0) out.set(p.partitionIndex, p.leaderId)
  return out
}

export class FaultInjector {
  readonly cluster: FaultCluster
  readonly topic: string
  readonly #log: (line: string) => void
  readonly injected: InjectedFault[] = []

  constructor(cluster: FaultCluster, topic: string, log: (line: string) => void) {
    this.cluster = cluster
    this.topic = topic
    this.#log = log
  }

  /** Runs the schedule; `now` is the workload's clock. Heals everything at the end. */
  async run(schedule: readonly PlannedFault[], now: () => number): Promise<void> {
    for (const f of schedule) {
      await sleep(f.gapMs)
      const from = now()
      const { target, heal } = await this.#start(f)
      this.#log(`${(from / 1000).toFixed(1)}s fault ${f.kind} ${target} for ${f.holdMs} ms`)
      await sleep(f.holdMs)
      await heal()
      const to = now()
      this.injected.push({ kind: f.kind, target, from, to })
      this.#log(`${(to / 1000).toFixed(1)}s healed ${f.kind} ${target}`)
    }
  }

  async #start(f: PlannedFault): Promise<{ target: string; heal: () => Promise<void> }> {
    const c = this.cluster
    const ids = c.nodes.map((n) => n.id)
    const pickOf = <T>(xs: readonly T[]): T => xs[f.pick % xs.length]!
    const others = (id: number) => ids.filter((x) => x !== id)
    switch (f.kind) {
      case 'kill': {
        const id = pickOf(ids)
        await c.kill(id)
        return { target: `node ${id}`, heal: () => c.restart(id) }
      }
      case 'kill-leader': {
        const leaders = await partitionLeaders(c, this.topic).catch(() => new Map<number, number>())
        const partition = f.pick % Math.max(1, leaders.size)
        const id = leaders.get(partition) ?? pickOf(ids)
        await c.kill(id)
        return { target: `node ${id} (leader of p${partition})`, heal: () => c.restart(id) }
      }
      case 'kill-controller': {
        const id = (await activeController(c)) ?? pickOf(ids)
        await c.kill(id)
        return { target: `node ${id} (active controller)`, heal: () => c.restart(id) }
      }
      case 'pause': {
        const id = pickOf(ids)
        c.pause(id)
        return { target: `node ${id}`, heal: async () => c.resume(id) }
      }
      case 'isolate-leader': {
        const leaders = await partitionLeaders(c, this.topic).catch(() => new Map<number, number>())
        const partition = f.pick % Math.max(1, leaders.size)
        const id = leaders.get(partition) ?? pickOf(ids)
        c.net!.split([[id], others(id)])
        return { target: `node ${id} (leader of p${partition})`, heal: async () => c.net!.heal() }
      }
      case 'isolate-controller': {
        const id = (await activeController(c)) ?? pickOf(ids)
        c.net!.split([[id], others(id)])
        return { target: `node ${id} (active controller)`, heal: async () => c.net!.heal() }
      }
      case 'minority': {
        const size = Math.max(1, Math.floor((ids.length - 1) / 2))
        const start = f.pick % ids.length
        const minority = Array.from({ length: size }, (_, i) => ids[(start + i) % ids.length]!)
        c.net!.split([minority, ids.filter((x) => !minority.includes(x))])
        return { target: `nodes ${minority.join(',')} | rest`, heal: async () => c.net!.heal() }
      }
      case 'bridge': {
        const bridge = pickOf(ids)
        const rest = others(bridge)
        const half = Math.ceil(rest.length / 2)
        const a = rest.slice(0, half)
        const b = rest.slice(half)
        c.net!.split([a, b])
        return { target: `${a.join(',')} | ${b.join(',')} via ${bridge}`, heal: async () => c.net!.heal() }
      }
      case 'slow-disk': {
        const id = pickOf(ids)
        const ms = 100 + (f.pick % 401)
        c.slowDisk(id, ms)
        return { target: `node ${id} (${ms} ms per write and fsync)`, heal: async () => c.slowDisk(id, 0) }
      }
      case 'disk-full': {
        const id = pickOf(ids)
        const node = c.nodes.find((n) => n.id === id)!
        const seen = (what: RegExp) => node.process.output.split('\n').filter((l) => what.test(l)).length
        const before = { offline: seen(/log directory offline/), online: seen(/log directory online again/) }
        const bytes = c.fillDisk(id)
        return {
          target: `node ${id} (${Math.round(bytes / 1024)} KiB filler)`,
          // The log dir went offline on its first failed write; freeing the space is all the heal
          // (Kafka would need a restart): the node's probe re-opens the dir's logs through recovery.
          heal: async () => {
            c.freeDisk(id)
            // Say whether the node took the dir offline and brought it back (without blocking the schedule).
            void (async () => {
              for (let i = 0; i < 60 && seen(/log directory online again/) === before.online; i++)
                await sleep(500)
              const wentOffline = seen(/log directory offline/) > before.offline
              const back = seen(/log directory online again/) > before.online
              this.#log(
                `node ${id}: log dir ${wentOffline ? 'went offline' : 'never went offline'}, ${back ? 'back online without a restart' : 'not back online within 30 s'}`,
              )
            })()
          },
        }
      }
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
