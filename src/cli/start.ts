/**
 * `weir start`: one node from a server.properties file and flags, in the foreground, until SIGTERM
 * or SIGINT stops it cleanly. With no options: a single-node cluster (broker and controller) on
 * 127.0.0.1:9092 with its data in ./.weir/data.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import {
  type BootstrapScram,
  CLUSTER_ID_KEY,
  jsonSink,
  LOGGER_NAMES,
  NodeLogs,
  parseBootstrapScram,
  textSink,
  tuneMallocForBroker,
  tuneV8ForBroker,
  WeirNode,
} from '../broker/index.ts'
import { applyOverrides, parseHostPort, parseOverrides, parseProperties } from '../config/index.ts'
import { controlledDelay, NodeDisk, SlowDisk, systemClock, type TimerHandle } from '../io/index.ts'

export const DEFAULT_DATA_DIR = '.weir/data'

export const START_USAGE = `Usage: weir start [options]

Starts one Weir node in the foreground (broker and controller by default).

Options:
  --config FILE        server.properties (Kafka's format and key names)
  --data-dir DIR       log directory (log.dirs); default ${DEFAULT_DATA_DIR}
  --listen HOST:PORT   client listener; the controller listens on PORT+1; default 127.0.0.1:9092
  --node-id N          node.id; default 1
  --set KEY=VALUE      any config key (repeatable); wins over --config
  --cluster-id ID      the cluster id for new directories (every node of a cluster the same)
  --add-scram CRED     a SCRAM credential a new cluster starts with (repeatable), as
                       kafka-storage format --add-scram: 'SCRAM-SHA-512=[name=admin,password=...]'
                       (also iterations=N); ignored once the cluster's metadata exists
  --quiet              print only errors
  -h, --help           this help

Environment (tests only):
  WEIR_TEST_SLOW_DISK_FILE=PATH   delay every disk write and fsync by the milliseconds written in
                                  PATH (re-read every 200 ms; 0 or missing: no delay). For fault
                                  tests (test/faults); never in production.
`

/** Builds the static config layer from flags: --config, then shorthand flags, then --set. */
export function startConfig(
  argv: readonly string[],
  cwd: string,
): { config: Map<string, string>; quiet: boolean; bootstrapScram: BootstrapScram[] } | 'help' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      config: { type: 'string' },
      'data-dir': { type: 'string' },
      listen: { type: 'string' },
      'node-id': { type: 'string' },
      set: { type: 'string', multiple: true },
      'cluster-id': { type: 'string' },
      'add-scram': { type: 'string', multiple: true },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  })
  if (values.help) return 'help'
  const config =
    values.config === undefined
      ? new Map<string, string>()
      : parseProperties(readFileSync(values.config, 'utf8'))
  const fromFile = values.config !== undefined
  if (values['node-id'] !== undefined) config.set('node.id', values['node-id'])
  const nodeId = config.get('node.id') ?? '1'
  if (values['data-dir'] !== undefined || (!fromFile && !config.has('log.dirs'))) {
    config.set('log.dirs', resolve(cwd, values['data-dir'] ?? DEFAULT_DATA_DIR))
  }
  if (values.listen !== undefined) {
    const hp = parseHostPort(values.listen)
    if (hp === undefined) throw new Error(`--listen ${values.listen} is not HOST:PORT`)
    const controllerPort = hp.port + 1
    config.set('listeners', `PLAINTEXT://${hp.host}:${hp.port},CONTROLLER://${hp.host}:${controllerPort}`)
    if (!config.has('controller.quorum.voters'))
      config.set('controller.quorum.voters', `${nodeId}@${hp.host}:${controllerPort}`)
  } else if (!fromFile && !config.has('controller.quorum.voters')) {
    config.set('controller.quorum.voters', `${nodeId}@127.0.0.1:9093`)
  }
  if (values['cluster-id'] !== undefined) config.set(CLUSTER_ID_KEY, values['cluster-id'])
  if (!fromFile) {
    // As Kafka's own config/server.properties for a single combined node: internal topics of one replica.
    for (const key of [
      'offsets.topic.replication.factor',
      'transaction.state.log.replication.factor',
      'transaction.state.log.min.isr',
    ]) {
      if (!config.has(key)) config.set(key, '1')
    }
  }
  const overridden = applyOverrides(config, parseOverrides(values.set ?? []))
  const bootstrapScram = (values['add-scram'] ?? []).map(parseBootstrapScram)
  return { config: new Map(overridden), quiet: values.quiet === true, bootstrapScram }
}

export async function runStart(argv: readonly string[]): Promise<number> {
  const started = performance.now()
  let parsed: ReturnType<typeof startConfig>
  try {
    parsed = startConfig(argv, process.cwd())
  } catch (e) {
    process.stderr.write(`weir start: ${(e as Error).message}\n\n${START_USAGE}`)
    return 2
  }
  if (parsed === 'help') {
    process.stdout.write(START_USAGE)
    return 0
  }
  const { config, quiet, bootstrapScram } = parsed
  // Before the node allocates: the process is the broker's alone (not for embedded nodes).
  tuneV8ForBroker()
  tuneMallocForBroker()
  // An invalid log.format is refused by the node's config checks, in the text format.
  const logs = new NodeLogs(
    config.get('log.format') === 'json'
      ? jsonSink(Number(config.get('node.id') ?? 1), quiet)
      : textSink(quiet),
  )
  const log = logs.logger(LOGGER_NAMES.root)
  // Signals are handled from the first moment, so that a SIGTERM that arrives during start-up or
  // right as the ready line is printed still stops the node cleanly (instead of the default action),
  // and a second signal during shutdown does not kill it halfway.
  let requested: string | null = null
  let onSignal: ((signal: string) => void) | null = null
  const signal = (name: string) => {
    if (onSignal !== null) onSignal(name)
    else requested ??= name
  }
  process.on('SIGTERM', () => signal('SIGTERM'))
  process.on('SIGINT', () => signal('SIGINT'))
  let node: WeirNode
  try {
    const slowDiskFile = process.env.WEIR_TEST_SLOW_DISK_FILE
    const disk =
      slowDiskFile === undefined || slowDiskFile === ''
        ? undefined
        : new SlowDisk(new NodeDisk(), controlledDelay(slowDiskFile))
    if (disk !== undefined)
      log('warn', `test-only slow disk: delays from ${slowDiskFile} (WEIR_TEST_SLOW_DISK_FILE)`)
    node = await WeirNode.start({
      staticConfig: config,
      logs,
      bootstrapScram,
      ...(disk === undefined ? {} : { disk }),
    })
    // A signal before the node is ready (e.g. a broker holding its clients' connections while its
    // controller quorum is unreachable) stops it at once instead of waiting for ready.
    const early = await Promise.race([
      node.ready().then(() => null),
      new Promise<string>((resolve) => {
        if (requested !== null) resolve(requested)
        else onSignal = resolve
      }),
    ])
    onSignal = null
    if (early !== null) {
      log('info', `${early}: shutting down before ready`)
      try {
        await node.stop()
      } catch (e) {
        log('error', `shutdown: ${(e as Error).message}`)
        process.exit(1)
      }
      return 0
    }
  } catch (e) {
    process.stderr.write(`weir start: ${(e as Error).message}\n`)
    return 1
  }
  const client = node.addresses().filter((a) => !node.config.controllerListenerNames.includes(a.name))
  const bootstrap = client.map((a) => `${a.host}:${a.port}`).join(',')
  process.stdout.write(
    `Weir ${node.config.broker ? 'broker' : ''}${node.config.broker && node.config.controller ? '+' : ''}${node.config.controller ? 'controller' : ''} node ${node.config.nodeId} ready in ${Math.round(performance.now() - started)} ms\n` +
      (bootstrap !== '' ? `  bootstrap: ${bootstrap}\n` : '') +
      `  data dir:  ${node.config.logDirs.join(',')}\n` +
      `  cluster:   ${node.clusterId}\n`,
  )
  // Diagnostics: the replicated write path's counters every N ms (docs/performance.md).
  const statsMs = Number(process.env.WEIR_REPLICATION_STATS_MS ?? 0)
  let statsTimer: TimerHandle | null = null
  if (statsMs > 0) {
    const loop = monitorEventLoopDelay({ resolution: 1 })
    loop.enable()
    // Garbage collection by kind (perf_hooks constants NODE_PERFORMANCE_GC_*): count, ms, max ms.
    const gcKinds = new Map([
      [1, 'gcMinorMs'],
      [4, 'gcMajorMs'],
      [8, 'gcIncrementalMs'],
      [16, 'gcWeakCallbacksMs'],
    ])
    const gc = new Map<string, { n: number; ms: number; msMax: number }>()
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const code = (e as { detail?: { kind?: number } }).detail?.kind ?? 0
        const kind = gcKinds.get(code) ?? `gc${code}Ms`
        const g = gc.get(kind) ?? { n: 0, ms: 0, msMax: 0 }
        g.n++
        g.ms += e.duration
        g.msMax = Math.max(g.msMax, e.duration)
        gc.set(kind, g)
      }
    }).observe({ entryTypes: ['gc'] })
    const every = () => {
      statsTimer = systemClock.setTimer(statsMs, () => {
        const stats = node.replicationStats() ?? {}
        stats.eventLoopDelayMs = {
          n: 1,
          mean: Math.round(loop.mean / 1e4) / 100,
          max: Math.round(loop.max / 1e4) / 100,
        }
        loop.reset()
        for (const [kind, g] of gc) stats[kind] = { n: g.n, mean: g.ms / g.n, p50: 0, max: g.msMax }
        gc.clear()
        const m = process.memoryUsage()
        stats.memoryMiB = {
          heapUsed: Math.round(m.heapUsed / 2 ** 20),
          heapTotal: Math.round(m.heapTotal / 2 ** 20),
          arrayBuffers: Math.round(m.arrayBuffers / 2 ** 20),
          rss: Math.round(m.rss / 2 ** 20),
        }
        log('info', `replication stats: ${JSON.stringify(stats)}`)
        every()
      })
    }
    every()
  }
  const stopped = await new Promise<boolean>((resolveStop) => {
    let stopping = false
    const stop = (signal: string) => {
      if (stopping) return
      stopping = true
      if (statsTimer !== null) systemClock.clearTimer(statsTimer)
      log('info', `${signal}: shutting down`)
      node.stop().then(
        () => resolveStop(true),
        (e: unknown) => {
          log('error', `shutdown: ${(e as Error).message}`)
          resolveStop(false)
        },
      )
    }
    onSignal = stop
    if (requested !== null) stop(requested)
  })
  // A stop that failed (a log dir gone or failing) can leave listeners and timers open, and the
  // process would never end: exit as after a crash; the next start recovers the logs.
  if (!stopped) process.exit(1)
  return 0
}
