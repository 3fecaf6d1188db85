/**
 * Requests answered and their latency, by API, as plain numbers on the request path and handed to
 * the node's prom-client registry as two metrics of its own shape (what prom-client's `get()`
 * returns), read when scraped. prom-client's labelled Counter.inc and Histogram.observe hash
 * their labels on every call (~1 us together for each request): with many small Produce requests
 * that was 9% of a node's produce throughput (bench/metrics.ts). Here a request costs a Map lookup,
 * a bucket search and three additions.
 */
import type { Metric, Registry, RegistryContentType } from 'prom-client'

interface ApiStats {
  count: number
  sum: number
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  readonly buckets: Float64Array
}

interface MetricValue {
  readonly labels: Record<string, string | number>
  readonly value: number
  readonly metricName?: string
}

export class RequestMetrics {
  readonly #bounds: readonly number[]
  readonly #byApi = new Map<string, ApiStats>()

  /** `bounds`: the histogram's upper bounds in ms, ascending. */
  constructor(bounds: readonly number[]) {
    this.#bounds = bounds
  }

  observe(api: string, ms: number): void {
    let s = this.#byApi.get(api)
    if (s === undefined) {
      s = { count: 0, sum: 0, buckets: new Float64Array(this.#bounds.length + 1) }
      this.#byApi.set(api, s)
    }
    s.count++
    s.sum += ms
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && ms > bounds[i]!) i++
    s.buckets[i]!++
  }

  /** Registers the counter (`name` ends with `_total`) and the histogram, labelled `request`. */
  register(registry: Registry<RegistryContentType>, counter: Help, histogram: Help): void {
    const byApi = this.#byApi
    const bounds = this.#bounds
    registry.registerMetric(
      asMetric({
        ...counter,
        type: 'counter',
        values: () => [...byApi].map(([request, s]) => ({ labels: { request }, value: s.count })),
      }),
    )
    registry.registerMetric(
      asMetric({
        ...histogram,
        type: 'histogram',
        values: () => {
          const out: MetricValue[] = []
          for (const [request, s] of byApi) {
            let acc = 0
            for (let i = 0; i <= bounds.length; i++) {
              acc += s.buckets[i]!
              out.push({
                labels: { request, le: i < bounds.length ? bounds[i]! : '+Inf' },
                value: acc,
                metricName: `${histogram.name}_bucket`,
              })
            }
            out.push({ labels: { request }, value: s.sum, metricName: `${histogram.name}_sum` })
            out.push({ labels: { request }, value: s.count, metricName: `${histogram.name}_count` })
          }
          return out
        },
      }),
    )
  }
}

interface Help {
  readonly name: string
  readonly help: string
}

/**
 * A metric in the shape prom-client's Registry reads (`name`, `help`, `type`, `get()`; it renames
 * a counter's `name` for OpenMetrics, so `name` stays a plain field). Not a prom-client class, so
 * the cast.
 */
function asMetric(m: Help & { type: 'counter' | 'histogram'; values: () => MetricValue[] }): Metric {
  const metric = {
    name: m.name,
    help: m.help,
    type: m.type,
    aggregator: 'sum',
    get: async () => ({
      name: metric.name,
      help: m.help,
      type: m.type,
      aggregator: 'sum',
      values: m.values(),
    }),
  }
  return metric as unknown as Metric
}
