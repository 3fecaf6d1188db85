/**
 * Connections from this broker to the others (this one too) on their `inter.broker.listener.name`
 * endpoint with the inter-broker security, one per broker, opened on first use and dropped on a
 * failure: the transaction coordinator's markers and the partition leaders' transaction
 * verifications share the shape, as Kafka's inter-broker send threads.
 */
import { type ClientSecurity, connectionSecurity, KafkaConnection } from '../client/index.ts'
import type { Clock, Transport } from '../io/index.ts'
import type { MetadataImage } from '../metadata/index.ts'
import type { BrokerId } from '../model/index.ts'

export interface BrokerConnectionsOptions {
  readonly image: () => MetadataImage
  /** `inter.broker.listener.name`; null: the broker's first registered endpoint. */
  readonly listenerName: string | null
  readonly security?: ClientSecurity
  readonly clock: Clock
  readonly transport: Transport
  readonly requestTimeoutMs: number
  readonly clientId: string
}

export class BrokerConnections {
  readonly #o: BrokerConnectionsOptions
  readonly #conns = new Map<BrokerId, Promise<KafkaConnection>>()
  #closed = false

  constructor(options: BrokerConnectionsOptions) {
    this.#o = options
  }

  async get(broker: BrokerId): Promise<KafkaConnection> {
    if (this.#closed) throw new Error('the connections are closed')
    const held = this.#conns.get(broker)
    if (held !== undefined) {
      const c = await held.catch(() => null)
      if (c !== null && !c.closed) return c
      this.#conns.delete(broker)
    }
    const b = this.#o.image().brokers.get(broker)
    const endpoint =
      this.#o.listenerName === null
        ? b?.endpoints[0]
        : b?.endpoints.find((e) => e.name === this.#o.listenerName)
    if (endpoint === undefined) throw new Error(`broker ${broker} has no endpoint registered`)
    const opening = KafkaConnection.open(
      { host: endpoint.host, port: endpoint.port },
      {
        clientId: this.#o.clientId,
        clock: this.#o.clock,
        ...connectionSecurity(this.#o.security, this.#o.transport),
        requestTimeoutMs: this.#o.requestTimeoutMs,
        inFlightRequestsMax: 5,
        responseBytesMax: 1024 * 1024,
        connectTimeoutMs: Math.min(this.#o.requestTimeoutMs, 10_000),
      },
    )
    this.#conns.set(broker, opening)
    return opening
  }

  drop(broker: BrokerId): void {
    const held = this.#conns.get(broker)
    this.#conns.delete(broker)
    void held?.then((c) => c.close()).catch(() => {})
  }

  close(): void {
    this.#closed = true
    for (const broker of [...this.#conns.keys()]) this.drop(broker)
  }
}
