/**
 * One harness run: start the cluster, make the topic, run the workload while the seeded schedule
 * injects faults, heal everything, read it all back and check. Used by `npm run faults` (main.ts)
 * and by the short CI tests.
 */
import { join } from 'node:path'
import { check, readReplicaFiles, type Verdict } from './checker.ts'
import { FaultCluster, type NetworkMode } from './cluster.ts'
import {
  FaultInjector,
  type FaultKind,
  faultKindsFor,
  type InjectedFault,
  planSchedule,
  TARGETED_KINDS,
} from './faults.ts'
import { formatTable } from './table.ts'
import { createTopic, readAll, Workload } from './workload.ts'

export interface RunOptions {
  readonly seed: number
  /** How long faults are injected, ms (the run takes longer: start, heal, drain, check). */
  readonly durationMs: number
  readonly nodes?: number
  readonly partitions?: number
  /** Default min(3, nodes). */
  readonly replicationFactor?: number
  /** Default min(2, rf - 1), at least 1. */
  readonly insyncReplicasMin?: number
  readonly network?: NetworkMode | 'auto'
  /** Fault kinds to draw from (default: every kind this machine can do). */
  readonly kinds?: readonly FaultKind[]
  readonly timing?: { gapMs: [number, number]; holdMs: [number, number] }
  /** tmpfs size per node for disk-full faults (default 64 MiB as root, else 0: no tmpfs, no disk-full). */
  readonly tmpfsBytes?: number
  /** The nodes' own connections (replication, controllers): PLAINTEXT (default) or SASL_SSL. */
  readonly security?: 'PLAINTEXT' | 'SASL_SSL'
  /** More static configs for every node. */
  readonly config?: Readonly<Record<string, string | number>>
  readonly log?: (line: string) => void
}

export interface RunReport {
  readonly seed: number
  readonly network: NetworkMode
  readonly replicationFactor: number
  readonly injected: InjectedFault[]
  readonly verdict: Verdict
  readonly table: string
  readonly replay: string
  readonly wallMs: number
}

export async function runHarness(options: RunOptions): Promise<RunReport> {
  const began = performance.now()
  const log = options.log ?? (() => {})
  const nodes = options.nodes ?? 3
  const partitions = options.partitions ?? 12
  const rf = options.replicationFactor ?? Math.min(3, nodes)
  const isrMin = options.insyncReplicasMin ?? Math.max(1, Math.min(2, rf - 1))
  // A tmpfs per node needs root (mount); without it there is no disk-full fault.
  const tmpfsBytes = options.tmpfsBytes ?? (process.getuid?.() === 0 ? 64 << 20 : 0)
  const topic = 'faults'
  const cluster = await FaultCluster.start({
    nodes,
    network: options.network ?? 'auto',
    ...(tmpfsBytes > 0 ? { tmpfsBytes } : {}),
    ...(options.security === undefined ? {} : { security: options.security }),
    config: {
      'offsets.topic.replication.factor': Math.min(rf, nodes),
      'offsets.topic.num.partitions': 6,
      'transaction.state.log.replication.factor': Math.min(rf, nodes),
      'min.insync.replicas': isrMin,
      'log.segment.bytes': 1 << 20,
      ...options.config,
    },
  })
  let workload: Workload | null = null
  try {
    log(`cluster: ${nodes} nodes, ${cluster.network}; topic ${topic}: ${partitions} partitions, RF ${rf}`)
    const possible = faultKindsFor(cluster, tmpfsBytes > 0)
    const kinds = (options.kinds ?? possible.filter((k) => !TARGETED_KINDS.includes(k))).filter((k) =>
      possible.includes(k),
    )
    const schedule = planSchedule(options.seed, options.durationMs, kinds, options.timing)
    log(`seed ${options.seed}: ${schedule.length} faults of ${kinds.join(', ')}`)
    const workloadOptions = {
      brokers: cluster.bootstrap,
      topic,
      partitions,
      replicationFactor: rf,
      insyncReplicasMin: isrMin,
      seed: options.seed,
      groupId: 'faults-group',
      log,
    }
    await createTopic(workloadOptions)
    workload = new Workload(workloadOptions)
    await workload.start()
    const injector = new FaultInjector(cluster, topic, log)
    try {
      await injector.run(schedule, () => workload!.now)
      // A last quiet stretch, so every partition shows it is available again after the last fault.
      await new Promise((r) => setTimeout(r, 3_000))
    } finally {
      await cluster.healAll()
    }
    await workload.stopProducing()
    const producingEndedAt = workload.now
    log(`healed; ${workload.acked} writes acknowledged; reading back`)
    const { ends, records } = await readAll(cluster.bootstrap, topic, 120_000)
    const undrained = await workload.drain(ends, 60_000)
    await cluster.stopAll()
    const replicas = new Map<number, Map<number, Map<bigint, string>>>()
    for (const n of cluster.nodes) replicas.set(n.id, readReplicaFiles(join(n.dataDir, 'log'), topic))
    const read = new Map<number, Map<bigint, string[]>>()
    for (const [p, m] of records) read.set(p, new Map([...m].map(([o, vs]) => [o, [...new Set(vs)]])))
    const verdict = check({
      workload: workload.result(),
      read,
      ends,
      undrained,
      replicas,
      producingEndedAt,
      faults: injector.injected,
    })
    const replay = `npm run faults -- --duration ${Math.round(options.durationMs / 1000)} --seed ${options.seed} --nodes ${nodes} --partitions ${partitions} --rf ${rf} --min-isr ${isrMin}${options.kinds === undefined ? '' : ` --kinds ${options.kinds.join(',')}`}${options.security === undefined ? '' : ` --security ${options.security}`}`
    const table = formatTable({ injected: injector.injected, verdict })
    return {
      seed: options.seed,
      network: cluster.network,
      replicationFactor: rf,
      injected: injector.injected,
      verdict,
      table,
      replay,
      wallMs: performance.now() - began,
    }
  } finally {
    await workload?.abort()
    await cluster.destroy()
  }
}
