/**
 * Metrics kept as plain numbers and handed to the node's prom-client registry in the shape its
 * `get()` returns, read when scraped. prom-client's own Counter.inc and Histogram.observe check
 * and hash their labels on every call (~1 us): on the request path, for every log flush and every
 * garbage collection that was a measurable share of a node's produce throughput (bench/metrics.ts).
 * Here an observation is a bucket search and three additions.
 */
import type { Metric, Registry, RegistryContentType } from 'prom-client'

export interface MetricValue {
  readonly labels: Record<string, string | number>
  readonly value: number
  readonly metricName?: string
}

export interface Help {
  readonly name: string
  readonly help: string
}

/** A histogram's counts for one label set. */
export class PlainHistogram {
  count = 0
  sum = 0
  readonly #bounds: readonly number[]
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  readonly #buckets: Float64Array

  /** `bounds`: the upper bounds, ascending. */
  constructor(bounds: readonly number[]) {
    this.#bounds = bounds
    this.#buckets = new Float64Array(bounds.length + 1)
  }

  observe(value: number): void {
    this.count++
    this.sum += value
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    this.#buckets[i]!++
  }

  /** The exposition's series of histogram `name` for these `labels`: cumulative buckets, sum, count. */
  values(name: string, labels: Record<string, string | number>): MetricValue[] {
    const out: MetricValue[] = []
    const bounds = this.#bounds
    let acc = 0
    for (let i = 0; i <= bounds.length; i++) {
      acc += this.#buckets[i]!
      out.push({
        labels: { ...labels, le: i < bounds.length ? bounds[i]! : '+Inf' },
        value: acc,
        metricName: `${name}_bucket`,
      })
    }
    out.push({ labels, value: this.sum, metricName: `${name}_sum` })
    out.push({ labels, value: this.count, metricName: `${name}_count` })
    return out
  }
}

/**
 * Registers a metric read when scraped. Not a prom-client class, so the cast: the registry reads
 * `name`, `help`, `type` and `get()`, and renames a counter's `name` for OpenMetrics, so `name`
 * stays a plain field.
 */
export function registerPlain(
  registry: Registry<RegistryContentType>,
  m: Help & { type: 'counter' | 'gauge' | 'histogram'; values: () => MetricValue[] | Promise<MetricValue[]> },
): void {
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
      values: await m.values(),
    }),
  }
  registry.registerMetric(metric as unknown as Metric)
}
