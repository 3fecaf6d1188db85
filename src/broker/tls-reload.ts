/**
 * KIP-226 for TLS listeners: a dynamic `listener.name.<l>.ssl.*` config of this broker (its BROKER
 * resource, or the cluster default) replaces the listener's key store, trust store, protocols or
 * ciphers without a restart. New connections get the new context, open ones keep theirs. As
 * Kafka's DynamicBrokerConfig, a change to this broker's own resource is validated before it is
 * sent (the stores are read and a TLS context made from them); a context that fails when the change
 * arrives anyway (a file removed since) is logged and the previous one stays.
 */
import { createSecureContext } from 'node:tls'
import type { BrokerConfigLayers, ConfigLayer } from '../config/index.ts'
import type { Listener } from '../server/index.ts'
import { ListenerSecurityError, type ListenerSecuritySources, listenerTlsOf } from './listener-security.ts'
import type { ListenerSpec } from './node-config.ts'

/** A key a dynamic TLS change is made of: `listener.name.<l>.ssl.<key>`. */
const LISTENER_SSL_KEY = /^listener\.name\.[^.]+\.ssl\./

export interface TlsListener {
  readonly spec: ListenerSpec
  readonly listener: Listener
}

export class TlsReload {
  readonly #listeners: readonly TlsListener[]
  readonly #sources: ListenerSecuritySources
  readonly #layers: () => BrokerConfigLayers
  readonly #log: (level: 'info' | 'warn', message: string) => void
  /** Each listener's TLS keys as last applied, to act only on a change. */
  readonly #applied = new Map<string, string>()

  constructor(
    listeners: readonly TlsListener[],
    sources: ListenerSecuritySources,
    layers: () => BrokerConfigLayers,
    log: (level: 'info' | 'warn', message: string) => void,
  ) {
    this.#listeners = listeners
    this.#sources = sources
    this.#layers = layers
    this.#log = log
    for (const l of listeners) this.#applied.set(l.spec.name, signature(l.spec, sources.staticBroker))
  }

  /**
   * A change to this broker's own configs: null when it touches no listener's TLS or every
   * listener it touches still makes a TLS context; otherwise why not (no secret in it).
   */
  validate(changes: ReadonlyMap<string, string | null>): string | null {
    if (![...changes.keys()].some((k) => LISTENER_SSL_KEY.test(k))) return null
    const layers = this.#layers()
    const own = new Map(layers.dynamicBroker ?? [])
    for (const [k, v] of changes) {
      if (v === null) own.delete(k)
      else own.set(k, v)
    }
    const merged = mergedLayer({ ...layers, dynamicBroker: own })
    for (const l of this.#listeners) {
      if (signature(l.spec, merged) === this.#applied.get(l.spec.name)) continue
      const problem = this.#context(l.spec, merged).problem
      if (problem !== null) return `Validation of dynamic config update of SSLFactory failed: ${problem}`
    }
    return null
  }

  /** Applies the image's dynamic TLS configs to the listeners whose keys changed. */
  apply(): void {
    const merged = mergedLayer(this.#layers())
    for (const l of this.#listeners) {
      const sig = signature(l.spec, merged)
      if (sig === this.#applied.get(l.spec.name)) continue
      this.#applied.set(l.spec.name, sig)
      const { options, problem } = this.#context(l.spec, merged)
      if (options === null) {
        this.#log('warn', `listener ${l.spec.name}: the new TLS configs are not applied: ${problem}`)
        continue
      }
      l.listener.setSecureContext(options)
      this.#log('info', `listener ${l.spec.name}: new TLS connections use the updated key and trust stores`)
    }
  }

  #context(
    spec: ListenerSpec,
    staticBroker: ConfigLayer,
  ):
    | { options: ReturnType<typeof listenerTlsOf>['options']; problem: null }
    | { options: null; problem: string } {
    try {
      const { options } = listenerTlsOf(spec, { ...this.#sources, staticBroker })
      createSecureContext(options)
      return { options, problem: null }
    } catch (e) {
      if (e instanceof ListenerSecurityError) return { options: null, problem: e.message }
      // OpenSSL's reason (a wrong password is "mac verify failure"), never the password itself.
      const code = (e as { code?: string }).code
      return {
        options: null,
        problem: `listener ${spec.name}: ${e instanceof Error ? e.message : String(e)}${code === undefined ? '' : ` (${code})`}`,
      }
    }
  }
}

/** The static layer with the cluster default and then this broker's dynamic configs over it. */
function mergedLayer(layers: BrokerConfigLayers): ConfigLayer {
  return new Map([
    ...(layers.staticBroker ?? []),
    ...(layers.dynamicDefault ?? []),
    ...(layers.dynamicBroker ?? []),
  ])
}

/** A listener's TLS keys and their values in `layer`, as one comparable text. */
function signature(spec: ListenerSpec, layer: ConfigLayer): string {
  const prefix = `listener.name.${spec.name.toLowerCase()}.ssl.`
  return JSON.stringify([...layer].filter(([k]) => k.startsWith(prefix) || k.startsWith('ssl.')).sort())
}
