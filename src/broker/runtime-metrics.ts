/**
 * The process's own metrics (CPU, memory, descriptors, heap, event-loop delay, GC pauses) under the
 * names of prom-client's `collectDefaultMetrics`, so dashboards made for Node services read them.
 * Not through `collectDefaultMetrics` itself: it installs a GC observer and an event-loop monitor
 * for every registry and never removes them, so each node of a process (`startCluster`) added its
 * own and a test suite kept every one it ever started; and a `PerformanceObserver` for 'gc' costs
 * each collection ~100 us of CPU (Node builds an entry object and calls into JavaScript for it),
 * against ~30 us for `v8.GCProfiler`, which records in C++ until read (3,000 minor collections,
 * 8 rounds; a small-batch produce run collects ~170 times per 1,000,000 records).
 *
 * Here the continuous parts are one monitor per process, shared by its nodes and stopped with the
 * last: the event-loop delay sampled once per loop iteration (`samplePerIteration`, C++ hooks, no
 * timer) and the GC profiler, folded into plain histograms when scraped and every 10 s. Everything
 * else is read when scraped.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { type ELDHistogram, monitorEventLoopDelay } from 'node:perf_hooks'
import { GCProfiler, getHeapSpaceStatistics, getHeapStatistics } from 'node:v8'
import type { Registry, RegistryContentType } from 'prom-client'
import { type MetricValue, PlainHistogram, registerPlain } from './plain-metrics.ts'

/** prom-client's GC buckets, in seconds. */
const GC_BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5]

/** prom-client's `kind` label for V8's collection types, as `v8.GCProfiler` names them. */
const GC_KINDS: ReadonlyMap<string, string> = new Map([
  ['Scavenge', 'minor'],
  ['MinorMarkSweep', 'minor'],
  ['MarkSweepCompact', 'major'],
  ['IncrementalMarking', 'incremental'],
  ['ProcessWeakCallbacks', 'weakcb'],
])

/**
 * How often the GC profiler's records are folded into the histograms (and at every scrape): it
 * holds a record of ~1.5 KB per collection until then, so an unscraped node's stay bounded.
 */
const GC_FOLD_MS = 10_000

/**
 * The event-loop delay is reported over windows of this length (Kafka's metrics window is two
 * samples of 30 s): the last whole window, or the current one until a window has passed. Not reset
 * by a scrape, as prom-client's is, since several nodes' registries read one monitor.
 */
const EVENT_LOOP_WINDOW_MS = 30_000

interface DelayStats {
  readonly count: number
  readonly min: number
  readonly max: number
  readonly mean: number
  readonly stddev: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
}

/** The process's event-loop delay histogram and GC pauses, kept while some node uses them. */
class RuntimeMonitor {
  readonly #eventLoop: ELDHistogram = monitorEventLoopDelay({ samplePerIteration: true })
  #lastWindow: DelayStats | null = null
  /** The current window's statistics while one scrape reads them (`eventLoopDelay`). */
  #scraped: DelayStats | null = null
  readonly #rotate = setInterval(() => {
    this.#lastWindow = this.#current()
    this.#eventLoop.reset()
  }, EVENT_LOOP_WINDOW_MS).unref()
  /** By prom-client's kind label. */
  readonly #gc = new Map(
    [...new Set(GC_KINDS.values())].map((kind) => [kind, new PlainHistogram(GC_BUCKETS)]),
  )
  #profiler = new GCProfiler()
  #stopped = false
  readonly #fold = setInterval(() => this.#foldGc(), GC_FOLD_MS).unref()

  constructor() {
    this.#eventLoop.enable()
    this.#profiler.start()
  }

  /** GC pauses in seconds by kind, up to now. */
  gc(): ReadonlyMap<string, PlainHistogram> {
    this.#foldGc()
    return this.#gc
  }

  #foldGc(): void {
    // A scrape of a node that has just stopped may still come: a stopped monitor starts nothing.
    if (this.#stopped) return
    const done = this.#profiler.stop()
    this.#profiler = new GCProfiler()
    this.#profiler.start()
    for (const s of done?.statistics ?? []) {
      const kind = GC_KINDS.get(s.gcType)
      // `cost` is in microseconds.
      if (kind !== undefined) this.#gc.get(kind)!.observe(s.cost / 1e6)
    }
  }

  /**
   * Event-loop delays in nanoseconds, over the last window. Until a window has passed, the current
   * one's, computed once for the seven gauges of a scrape: the histogram's mean and standard
   * deviation walk all its buckets (~0.8 ms together; seven times over, a scrape cost ~7 ms).
   */
  eventLoopDelay(): DelayStats {
    if (this.#lastWindow !== null) return this.#lastWindow
    if (this.#scraped === null) {
      this.#scraped = this.#current()
      setImmediate(() => {
        this.#scraped = null
      })
    }
    return this.#scraped
  }

  #current(): DelayStats {
    const h = this.#eventLoop
    if (h.count === 0) return { count: 0, min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 }
    return {
      count: h.count,
      min: h.min,
      max: h.max,
      mean: h.mean,
      stddev: h.stddev,
      p50: h.percentile(50),
      p90: h.percentile(90),
      p99: h.percentile(99),
    }
  }

  stop(): void {
    this.#stopped = true
    clearInterval(this.#rotate)
    clearInterval(this.#fold)
    this.#eventLoop.disable()
    this.#profiler.stop()
  }
}

let shared: { monitor: RuntimeMonitor; users: number } | null = null

/**
 * Registers the process metrics on `registry`; the returned function unregisters this use of the
 * shared monitor (the monitor stops with its last user).
 */
export function registerRuntimeMetrics(registry: Registry<RegistryContentType>): () => void {
  if (shared === null) shared = { monitor: new RuntimeMonitor(), users: 0 }
  shared.users++
  const { monitor } = shared
  let released = false
  const gauge = (name: string, help: string, values: () => MetricValue[] | Promise<MetricValue[]>) =>
    registerPlain(registry, { name, help, type: 'gauge', values })
  const counter = (name: string, help: string, value: () => number) =>
    registerPlain(registry, { name, help, type: 'counter', values: () => [{ labels: {}, value: value() }] })
  const one = (value: number): MetricValue[] => [{ labels: {}, value }]

  counter(
    'process_cpu_user_seconds_total',
    'User CPU time spent in seconds.',
    () => process.cpuUsage().user / 1e6,
  )
  counter(
    'process_cpu_system_seconds_total',
    'System CPU time spent in seconds.',
    () => process.cpuUsage().system / 1e6,
  )
  counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', () => {
    const u = process.cpuUsage()
    return (u.user + u.system) / 1e6
  })
  const startSeconds = Math.round(Date.now() / 1000 - process.uptime())
  gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () =>
    one(startSeconds),
  )
  gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () =>
    one(process.memoryUsage.rss()),
  )
  gauge('process_open_fds', 'Number of open file descriptors.', () => one(fdsOpen()))
  gauge('process_max_fds', 'Maximum number of open file descriptors.', () => one(fdsMax()))
  gauge('nodejs_eventloop_lag_seconds', 'Lag of event loop in seconds.', async () => {
    // The time a callback queued now waits for the loop: the delay a request arriving sees.
    const start = process.hrtime.bigint()
    await new Promise((resolve) => setImmediate(resolve))
    return one(Number(process.hrtime.bigint() - start) / 1e9)
  })
  const lag = (stat: Exclude<keyof DelayStats, 'count'>, help: string) =>
    gauge(
      `nodejs_eventloop_lag_${stat}_seconds`,
      `${help} (the event loop's iterations, over ${EVENT_LOOP_WINDOW_MS / 1000} s)`,
      () => one(monitor.eventLoopDelay()[stat] / 1e9),
    )
  lag('min', 'The minimum recorded event loop delay')
  lag('max', 'The maximum recorded event loop delay')
  lag('mean', 'The mean of the recorded event loop delays')
  lag('stddev', 'The standard deviation of the recorded event loop delays')
  lag('p50', 'The 50th percentile of the recorded event loop delays')
  lag('p90', 'The 90th percentile of the recorded event loop delays')
  lag('p99', 'The 99th percentile of the recorded event loop delays')
  gauge('nodejs_active_resources_total', 'Number of active resources keeping the event loop alive.', () =>
    one(process.getActiveResourcesInfo().length),
  )
  gauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', () =>
    one(getHeapStatistics().total_heap_size),
  )
  gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', () =>
    one(getHeapStatistics().used_heap_size),
  )
  gauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', () =>
    one(getHeapStatistics().external_memory),
  )
  const spaces = (pick: (s: ReturnType<typeof getHeapSpaceStatistics>[number]) => number) => () =>
    getHeapSpaceStatistics().map((s) => ({
      labels: { space: s.space_name.replace(/_space$/, '') },
      value: pick(s),
    }))
  gauge(
    'nodejs_heap_space_size_total_bytes',
    'Process heap space size total from Node.js in bytes.',
    spaces((s) => s.space_size),
  )
  gauge(
    'nodejs_heap_space_size_used_bytes',
    'Process heap space size used from Node.js in bytes.',
    spaces((s) => s.space_used_size),
  )
  gauge(
    'nodejs_heap_space_size_available_bytes',
    'Process heap space size available from Node.js in bytes.',
    spaces((s) => s.space_available_size),
  )
  const [major, minor, patch] = process.versions.node.split('.').map(Number)
  gauge('nodejs_version_info', 'Node.js version info.', () => [
    { labels: { version: process.version, major: major!, minor: minor!, patch: patch! }, value: 1 },
  ])
  registerPlain(registry, {
    name: 'nodejs_gc_duration_seconds',
    help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
    type: 'histogram',
    values: () => [...monitor.gc()].flatMap(([kind, h]) => h.values('nodejs_gc_duration_seconds', { kind })),
  })
  return () => {
    if (released || shared === null) return
    released = true
    if (--shared.users === 0) {
      shared.monitor.stop()
      shared = null
    }
  }
}

function fdsOpen(): number {
  try {
    return readdirSync('/proc/self/fd').length - 1 // less the directory being read
  } catch {
    return Number.NaN
  }
}

function fdsMax(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    return line === undefined ? Number.NaN : Number(line.split(/\s+/)[3])
  } catch {
    return Number.NaN
  }
}
