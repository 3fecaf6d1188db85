/**
 * The handlers a node serves, by api key. ApiVersions is derived from here, never hand-listed, so
 * what a node advertises is exactly what it can answer.
 */
import type { ApiVersionsResponseData } from '../protocol/index.ts'
import type { Handler } from './handler.ts'

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
      if (h !== undefined)
        out.push({ apiKey: h.api.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion })
    }
    return out
  }
}
