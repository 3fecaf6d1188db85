/**
 * The replicated acks=all path under kcat, counted: a 3-node Weir cluster started with
 * WEIR_REPLICATION_STATS_MS (each node logs `ReplicationStats` every interval), an RF 3 topic per
 * run, kcat producing as bench:peers does, then each node's counters summed over the run and the
 * cluster's CPU seconds.
 *
 *   node bench/peers/repl-probe.ts [--records 300000] [--acks all] [--runs 2] [--nodes 3] [--latency]
 *     [--settle-ms 600] [--config k=v,...]
 *
 * `--acks 1,all`: runs take the listed acks in turn (as bench:peers alternates them on one cluster).
 * `--delete`: each run's topic is deleted after it (the cluster then holds no data from earlier runs).
 * `--drop-caches`: `sync` and drop the clean page cache before each run (root; as bench:peers'
 *   `--drop-caches`, whose comment says why: on this VM new page cache costs a host fault).
 */
import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { WeirCluster } from '../../test/support/cluster.ts'
import { REPO } from '../../test/support/weir-process.ts'
import { kcatProduceArgs } from '../kcat-producer.ts'

const { values: opts } = parseArgs({
  options: {
    records: { type: 'string', default: '300000' },
    acks: { type: 'string', default: 'all' },
    runs: { type: 'string', default: '2' },
    nodes: { type: 'string', default: '3' },
    latency: { type: 'boolean', default: false },
    'settle-ms': { type: 'string', default: '600' },
    'warm-records': { type: 'string', default: '0' },
    delete: { type: 'boolean', default: false },
    'drop-caches': { type: 'boolean', default: false },
    config: { type: 'string', default: '' },
  },
})
const N = Number(opts.records)
const PY = join(REPO, '.cache/compat/pyvenv/bin/python')
const PY_CLIENT = join(REPO, 'bench/broker-client.py')
process.env.WEIR_REPLICATION_STATS_MS = '250'

function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0
  try {
    const f = execFileSync('cat', [`/proc/${pid}/stat`])
      .toString()
      .split(') ')[1]!
      .split(' ')
    return (Number(f[11]) + Number(f[12])) / 100
  } catch {
    return 0
  }
}

/** CPU seconds of this process's waited-for children (cutime + cstime): the client's, after it exits. */
function childrenCpuSeconds(): number {
  const f = execFileSync('cat', [`/proc/${process.pid}/stat`])
    .toString()
    .split(') ')[1]!
    .split(' ')
  return (Number(f[13]) + Number(f[14])) / 100
}

function run(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const c = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] })
    c.on('exit', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${cmd} ${code}`)),
    )
  })
}

/** The median of interval medians, each weighted by its count (an estimate of the run's median). */
function weightedMedian(xs: Array<[number, number]>): number {
  const sorted = [...xs].sort((a, b) => a[0] - b[0])
  const half = sorted.reduce((s, x) => s + x[1], 0) / 2
  let seen = 0
  for (const [v, n] of sorted) {
    seen += n
    if (seen >= half) return v
  }
  return 0
}

const config: Record<string, string> = {}
for (const kv of opts.config.split(',').filter((x) => x !== '')) {
  const [k, v] = kv.split('=')
  config[k!] = v!
}
const NODES = Number(opts.nodes)
const cluster = await WeirCluster.start({ nodes: NODES, prefix: 'weir-repl-probe-', config })
const file = join(tmpdir(), `weir-repl-probe-${N}.txt`)
writeFileSync(file, `${'r'.repeat(100)}\n`.repeat(N))
try {
  // --warm-records N: first N records at acks=1 with kcat to a topic of their own (the page cache
  // then holds what a throughput run wrote, as in bench:peers before its latency runs).
  const warm = Number(opts['warm-records'])
  if (warm > 0) {
    await run(PY, [PY_CLIENT, 'create', cluster.bootstrap, 'probe-warm', '1', String(NODES), ''])
    await new Promise((r) => setTimeout(r, 1500))
    const warmFile = join(tmpdir(), `weir-repl-probe-${warm}.txt`)
    writeFileSync(warmFile, `${'r'.repeat(100)}\n`.repeat(warm))
    await run('kcat', kcatProduceArgs(cluster.bootstrap, 'probe-warm', '1', warmFile))
  }
  const acksList = opts.acks.split(',')
  for (let i = 0; i < Number(opts.runs); i++) {
    const acks = acksList[i % acksList.length]!
    const topic = `probe-${acks}-${i}`
    await run(PY, [PY_CLIENT, 'create', cluster.bootstrap, topic, '1', String(NODES), ''])
    await new Promise((r) => setTimeout(r, 1500))
    if (opts['drop-caches']) {
      await run('sync', [])
      writeFileSync('/proc/sys/vm/drop_caches', '1')
    }
    const marks = cluster.nodes.map((n) => n.process.output.length)
    const cpu0 = cluster.nodes.map((n) => cpuSeconds(n.process.pid))
    const clientCpu0 = childrenCpuSeconds()
    const ms = opts.latency
      ? await run(PY, [PY_CLIENT, 'produce', cluster.bootstrap, topic, String(N), '100', acks, '20000'])
      : await run('kcat', kcatProduceArgs(cluster.bootstrap, topic, acks, file))
    // Followers may still be replicating when an acks=1 producer is done: their CPU counts too.
    await new Promise((r) => setTimeout(r, Number(opts['settle-ms'])))
    const clientCpu = childrenCpuSeconds() - clientCpu0
    const cpus = cluster.nodes.map((n, j) => cpuSeconds(n.process.pid) - cpu0[j]!)
    const cpu = cpus.reduce((a, b) => a + b, 0)
    console.log(
      `run ${i} (acks=${acks}): ${Math.round(N / (ms / 1000))} rec/s, cluster CPU ${cpu.toFixed(2)} s (${cpus.map((c) => c.toFixed(2)).join(' + ')}), client CPU ${clientCpu.toFixed(2)} s, ${(ms / 1000).toFixed(2)} s`,
    )
    for (const [j, n] of cluster.nodes.entries()) {
      const lines = n.process.output
        .slice(marks[j])
        .split('\n')
        .filter((l) => l.includes('replication stats: '))
      const sum: Record<
        string,
        { n: number; total: number; max: number; p50s: Array<[number, number]> } | number
      > = {}
      for (const l of lines) {
        const s = JSON.parse(l.slice(l.indexOf('replication stats: ') + 19)) as Record<string, unknown>
        for (const [k, v] of Object.entries(s)) {
          if (typeof v === 'number') sum[k] = ((sum[k] as number | undefined) ?? 0) + v
          else if (v !== null && typeof v === 'object' && 'n' in v) {
            const t = v as { n: number; mean: number; p50: number; max: number }
            const a = (sum[k] as
              | { n: number; total: number; max: number; p50s: Array<[number, number]> }
              | undefined) ?? {
              n: 0,
              total: 0,
              max: 0,
              p50s: [],
            }
            if (t.n > 0) a.p50s.push([t.p50, t.n])
            a.n += t.n
            a.total += t.mean * t.n
            a.max = Math.max(a.max, t.max)
            sum[k] = a
          } else if (v !== null && typeof v === 'object') {
            // Memory is a level (the largest seen), the rest are counts (summed).
            for (const [k2, v2] of Object.entries(v))
              if (k === 'memoryMiB')
                sum[`${k}.${k2}`] = Math.max((sum[`${k}.${k2}`] as number | undefined) ?? 0, v2 as number)
              else sum[`${k}.${k2}`] = ((sum[`${k}.${k2}`] as number | undefined) ?? 0) + (v2 as number)
          }
        }
      }
      const parts = Object.entries(sum)
        .filter(([, v]) => (typeof v === 'number' ? v !== 0 : v.n !== 0))
        .map(([k, v]) =>
          typeof v === 'number'
            ? `${k}=${v}`
            : `${k}: n=${v.n} mean=${(v.total / v.n).toFixed(2)} p50~${weightedMedian(v.p50s)} max=${v.max}`,
        )
      console.log(`  node ${n.id}:\n    ${parts.join('\n    ')}`)
    }
    if (opts.delete) await run(PY, [PY_CLIENT, 'delete', cluster.bootstrap, topic])
  }
} finally {
  // PROBE_DUMP=dir: each node's whole output (e.g. with NODE_OPTIONS=--trace-gc) to dir/node-N.log.
  const dump = process.env.PROBE_DUMP
  if (dump !== undefined)
    for (const n of cluster.nodes) writeFileSync(join(dump, `node-${n.id}.log`), n.process.output)
  await cluster.stop()
}
