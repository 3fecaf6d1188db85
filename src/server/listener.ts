/**
 * A TCP listener speaking Kafka's protocol: accepts connections up to `max.connections`, hands each
 * to a `Connection`, and shuts down gracefully (stop accepting, answer what is in flight, close).
 */
import { createServer, type Server, type Socket } from 'node:net'
import type { Clock, TimerHandle } from '../io/index.ts'
import { Connection, type ConnectionLimits } from './connection.ts'
import type { Dispatcher } from './dispatcher.ts'

export interface ListenerOptions {
  readonly listenerName: string
  readonly host: string
  /** 0 picks a free port. */
  readonly port: number
  readonly dispatcher: Dispatcher
  readonly clock: Clock
  readonly limits: ConnectionLimits & {
    /** `max.connections`: further connections are closed as soon as they are accepted. */
    readonly connectionsMax: number
  }
  /** Where connection-level events are reported. */
  readonly log: (level: 'warn' | 'error', message: string) => void
}

export class Listener {
  readonly #options: ListenerOptions
  readonly #server: Server
  readonly #connections = new Set<Connection>()
  #nextConnectionId = 1
  #address: { host: string; port: number } | null = null

  constructor(options: ListenerOptions) {
    this.#options = options
    this.#server = createServer({ noDelay: true, pauseOnConnect: false }, (socket) => this.#accept(socket))
  }

  /** Starts listening; resolves with the bound address. */
  async start(): Promise<{ host: string; port: number }> {
    const { host, port } = this.#options
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject)
      this.#server.listen({ host, port }, () => {
        this.#server.off('error', reject)
        resolve()
      })
    })
    const addr = this.#server.address()
    if (addr === null || typeof addr === 'string') throw new Error('listener has no TCP address')
    this.#address = { host: addr.address, port: addr.port }
    return this.#address
  }

  get address(): { host: string; port: number } | null {
    return this.#address
  }

  get connectionCount(): number {
    return this.#connections.size
  }

  #accept(socket: Socket): void {
    const { limits, log } = this.#options
    if (this.#connections.size >= limits.connectionsMax) {
      log(
        'warn',
        `closing a connection from ${socket.remoteAddress}: max.connections ${limits.connectionsMax} reached`,
      )
      socket.destroy()
      return
    }
    const connection = new Connection(socket, this.#nextConnectionId++, {
      dispatcher: this.#options.dispatcher,
      limits,
      clock: this.#options.clock,
      listenerName: this.#options.listenerName,
      events: {
        onProtocolError: (id, reason) =>
          log('warn', `connection ${id} from ${connection.clientAddress} closed: ${reason}`),
        onHandlerError: (id, error) =>
          log(
            'error',
            `connection ${id}: handler failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          ),
        onClose: (c) => this.#connections.delete(c),
      },
    })
    this.#connections.add(connection)
  }

  /**
   * Stops accepting, lets every connection finish the requests it has read (up to `graceMs` of
   * the clock), then closes them all.
   */
  async stop(graceMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()))
    for (const c of this.#connections) c.stopReading()
    const clock = this.#options.clock
    let timer: TimerHandle | null = null
    await Promise.race([
      Promise.all([...this.#connections].map((c) => c.drained())),
      new Promise<void>((resolve) => {
        timer = clock.setTimer(graceMs, resolve)
      }),
    ])
    if (timer !== null) clock.clearTimer(timer)
    for (const c of [...this.#connections]) c.close(true)
    await closed
  }
}
