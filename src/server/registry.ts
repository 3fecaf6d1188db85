/**
 * The handlers a node serves, by api key. ApiVersions is derived from here, never hand-listed, so
 * what a node advertises is what it can answer (one exception, `ADVERTISED_VERSION_MIN`).
 */
import { ApiKey, type ApiVersionsResponseData } from '../protocol/index.ts'
import type { Handler } from './handler.ts'

/**
 * KAFKA-18659: Kafka 4.0 advertises Produce from v0 although it refuses v0-2, because librdkafka
 * (kcat, confluent-kafka) silently stops compressing, and drops other features, for a broker whose
 * Produce range does not start at 0. Weir does the same; a Produce v0-2 request still closes the
 * connection as any version the handler does not serve.
 */
const ADVERTISED_VERSION_MIN: ReadonlyMap<number, number> = new Map([[ApiKey.Produce, 0]])

export class HandlerRegistry {
  readonly #byKey: Array<Handler | undefined> = []

  /** Adds handlers; registering an api key twice is a programmer error. */
  register(...handlers: Handler[]): this {
    for (const h of handlers) {
      if (this.#byKey[h.api.apiKey] !== undefined) throw new Error(`${h.api.name} is registered twice`)
      this.#byKey[h.api.apiKey] = h
    }
    return this
  }

  get(apiKey: number): Handler | undefined {
    return apiKey >= 0 ? this.#byKey[apiKey] : undefined
  }

  /** The ApiVersions entries: each registered API with the versions its handler serves, by key. */
  apiVersions(): ApiVersionsResponseData.ApiVersion[] {
    const out: ApiVersionsResponseData.ApiVersion[] = []
    for (const h of this.#byKey) {
      if (h !== undefined) {
        const minVersion = Math.min(h.minVersion, ADVERTISED_VERSION_MIN.get(h.api.apiKey) ?? h.minVersion)
        out.push({ apiKey: h.api.apiKey, minVersion, maxVersion: h.maxVersion })
      }
    }
    return out
  }
}
