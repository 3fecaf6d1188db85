/**
 * Requests answered and their latency, by API, as plain numbers on the request path
 * (plain-metrics.ts): with prom-client's labelled Counter.inc and Histogram.observe, which hash
 * their labels on every call (~1 us together for each request), many small Produce requests cost
 * 9% of a node's produce throughput (bench/metrics.ts). Here a request costs a Map lookup, a bucket
 * search and three additions.
 */
import type { Registry, RegistryContentType } from 'prom-client'
import { type Help, type MetricValue, PlainHistogram, registerPlain } from './plain-metrics.ts'

export class RequestMetrics {
  readonly #bounds: readonly number[]
  readonly #byApi = new Map<string, PlainHistogram>()

  /** `bounds`: the histogram's upper bounds in ms, ascending. */
  constructor(bounds: readonly number[]) {
    this.#bounds = bounds
  }

  observe(api: string, ms: number): void {
    let h = this.#byApi.get(api)
    if (h === undefined) {
      h = new PlainHistogram(this.#bounds)
      this.#byApi.set(api, h)
    }
    h.observe(ms)
  }

  /** Registers the counter (`name` ends with `_total`) and the histogram, labelled `request`. */
  register(registry: Registry<RegistryContentType>, counter: Help, histogram: Help): void {
    const byApi = this.#byApi
    registerPlain(registry, {
      ...counter,
      type: 'counter',
      values: () => [...byApi].map(([request, h]) => ({ labels: { request }, value: h.count })),
    })
    registerPlain(registry, {
      ...histogram,
      type: 'histogram',
      values: () => {
        const out: MetricValue[] = []
        for (const [request, h] of byApi) out.push(...h.values(histogram.name, { request }))
        return out
      },
    })
  }
}
