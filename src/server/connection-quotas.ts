/**
 * Connection counts and limits shared by the listeners of one socket server (a node's broker
 * listeners, or its controller listeners), as Kafka's ConnectionQuotas: `max.connections` per
 * listener (`listener.name.<l>.max.connections`, else the broker-wide value), `max.connections`
 * broker-wide, and `max.connections.per.ip` with `max.connections.per.ip.overrides`. The
 * inter-broker listener is exempt from the broker-wide limit once there is another listener, so
 * that replication keeps its connections while clients use up the rest; a connection it takes
 * over that limit closes the least recently used connection of another listener, as Kafka's
 * Processor does.
 *
 * Kafka's Acceptor stops accepting while a listener or the broker is at its limit (the kernel's
 * backlog holds new connections until a slot frees) and closes a connection over its address's
 * limit. node:net cannot pause accepting, so Weir closes a connection over any limit as soon as it
 * is accepted, before a byte is read or a TLS handshake made; the others are not touched.
 */
import { javaHostAddress } from '../security/index.ts'

/** A node's connection limits (Kafka's config names). */
export interface ConnectionQuotaConfig {
  /** `max.connections`, broker-wide. */
  readonly connectionsMax: number
  /** `max.connections.per.ip`. */
  readonly connectionsPerIpMax: number
  /** `max.connections.per.ip.overrides`, by address as `javaHostAddress` prints it. */
  readonly connectionsPerIpOverrides: ReadonlyMap<string, number>
  /** `inter.broker.listener.name`: exempt from the broker-wide limit; null for none. */
  readonly protectedListener: string | null
}

/** Why a connection was refused: the limit's Kafka name, for the log and the counts. */
export type ConnectionRefusal = 'max.connections' | 'listener max.connections' | 'max.connections.per.ip'

export class ConnectionQuotas {
  readonly #config: ConnectionQuotaConfig
  readonly #listenerMax = new Map<string, number>()
  readonly #listenerCounts = new Map<string, number>()
  readonly #ipCounts = new Map<string, number>()
  /** Each listener's least recently used connection: its last activity and how to close it. */
  readonly #leastRecent = new Map<
    string,
    () => { readonly activeMs: number; readonly close: () => void } | null
  >()
  #total = 0
  /** Connections refused so far, by the limit that refused them. */
  readonly refused = new Map<ConnectionRefusal, number>()

  constructor(config: ConnectionQuotaConfig) {
    this.#config = config
  }

  /** A listener and its `max.connections` (its prefixed value, else the broker-wide one). */
  addListener(listenerName: string, connectionsMax: number): void {
    this.#listenerMax.set(listenerName, connectionsMax)
    this.#listenerCounts.set(listenerName, 0)
  }

  /** How `listenerName` offers its least recently used connection to be closed for a protected one. */
  onLeastRecentlyUsed(
    listenerName: string,
    leastRecent: () => { readonly activeMs: number; readonly close: () => void } | null,
  ): void {
    this.#leastRecent.set(listenerName, leastRecent)
  }

  get total(): number {
    return this.#total
  }

  /** Connections now open from `address` (as the socket reports it). */
  countOf(address: string): number {
    return this.#ipCounts.get(javaHostAddress(address)) ?? 0
  }

  /**
   * Counts a connection just accepted, or refuses it. As Kafka: the listener's limit, then the
   * broker's (unless the listener is protected), then the address's. A counted connection is
   * released by `release` with the same arguments.
   */
  admit(listenerName: string, address: string): ConnectionRefusal | null {
    const listenerCount = this.#listenerCounts.get(listenerName) ?? 0
    const refusal =
      listenerCount >= (this.#listenerMax.get(listenerName) ?? Number.MAX_SAFE_INTEGER)
        ? 'listener max.connections'
        : !this.#protected(listenerName) && this.#total >= this.#config.connectionsMax
          ? 'max.connections'
          : this.#ipCount(address) >= this.limitOf(address)
            ? 'max.connections.per.ip'
            : null
    if (refusal !== null) {
      this.refused.set(refusal, (this.refused.get(refusal) ?? 0) + 1)
      return refusal
    }
    const ip = javaHostAddress(address)
    this.#ipCounts.set(ip, (this.#ipCounts.get(ip) ?? 0) + 1)
    this.#listenerCounts.set(listenerName, listenerCount + 1)
    this.#total++
    if (this.#total > this.#config.connectionsMax && this.#protected(listenerName))
      this.#closeLeastRecent(listenerName)
    return null
  }

  /** Closes the least recently used connection of the listeners other than `protectedName`. */
  #closeLeastRecent(protectedName: string): void {
    let oldest: { readonly activeMs: number; readonly close: () => void } | null = null
    for (const [name, leastRecent] of this.#leastRecent) {
      if (name === protectedName) continue
      const candidate = leastRecent()
      if (candidate !== null && (oldest === null || candidate.activeMs < oldest.activeMs)) oldest = candidate
    }
    oldest?.close()
  }

  release(listenerName: string, address: string): void {
    const ip = javaHostAddress(address)
    const count = this.#ipCounts.get(ip) ?? 0
    if (count <= 1) this.#ipCounts.delete(ip)
    else this.#ipCounts.set(ip, count - 1)
    const listenerCount = this.#listenerCounts.get(listenerName)
    if (listenerCount !== undefined && listenerCount > 0)
      this.#listenerCounts.set(listenerName, listenerCount - 1)
    if (this.#total > 0) this.#total--
  }

  /** The most connections `address` may hold: its override, else `max.connections.per.ip`. */
  limitOf(address: string): number {
    return (
      this.#config.connectionsPerIpOverrides.get(javaHostAddress(address)) ?? this.#config.connectionsPerIpMax
    )
  }

  #ipCount(address: string): number {
    return this.#ipCounts.get(javaHostAddress(address)) ?? 0
  }

  /** Kafka's protectedListener: the inter-broker listener, when it is not the only one. */
  #protected(listenerName: string): boolean {
    return this.#config.protectedListener === listenerName && this.#listenerCounts.size > 1
  }
}
