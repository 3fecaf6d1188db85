/**
 * A TCP listener speaking Kafka's protocol: admits each accepted connection by its
 * `ConnectionQuotas` (closing one over a limit before reading it), hands each to a `Connection`, and shuts down gracefully (stop accepting, answer what is in flight, close).
 * A node binds its listeners first (so a port 0 is known) and serves them once its handlers are
 * registered, as Kafka's `enableRequestProcessing`: connections accepted before `serve()` are held
 * unread, so no peer ever sees a half-registered node (an ApiVersions answer without the APIs it
 * will serve, or a request closed as "not served here").
 */
import { createServer, type Server, type Socket } from 'node:net'
import {
  createServer as createTlsServer,
  type TLSSocket,
  type TlsOptions,
  type Server as TlsServer,
} from 'node:tls'
import type { Clock, TimerHandle } from '../io/index.ts'
import {
  type KafkaPrincipal,
  type SslPrincipalMapper,
  SslPrincipalMappingError,
  sslPrincipal,
} from '../security/index.ts'
import type { ReadBuffers } from '../storage/index.ts'
import { Connection, type ConnectionLimits } from './connection.ts'
import { ConnectionQuotas } from './connection-quotas.ts'
import type { ConnectionInfo, Dispatcher, DispatchResult } from './dispatcher.ts'
import type { ReadGcPacer } from './read-gc-pacer.ts'
import { type FrameHandler, SaslAuthenticator, type SaslListenerOptions } from './sasl-authenticator.ts'

/** `ssl.client.auth`. */
export type SslClientAuth = 'none' | 'requested' | 'required'

/** An SSL or SASL_SSL listener's TLS: node:tls's server options and how a client certificate maps. */
export interface ListenerTls {
  /** The key, certificate chain, trusted CAs, protocols and ciphers (`tls.createServer`'s options). */
  readonly options: TlsOptions
  readonly clientAuth: SslClientAuth
  /** `ssl.principal.mapping.rules`. */
  readonly principalMapper: SslPrincipalMapper
}

export interface ListenerOptions {
  readonly listenerName: string
  readonly host: string
  /** 0 picks a free port. */
  readonly port: number
  readonly dispatcher: Dispatcher
  readonly clock: Clock
  readonly limits: ConnectionLimits & {
    /** This listener's `max.connections`: further connections are closed as soon as they are accepted. */
    readonly connectionsMax: number
  }
  /**
   * The counts and limits this listener shares with the node's others (broker-wide
   * `max.connections`, `max.connections.per.ip`); absent: its own, with only `limits.connectionsMax`.
   */
  readonly quotas?: ConnectionQuotas
  /** Where connection-level events are reported. */
  readonly log: (level: 'warn' | 'error', message: string) => void
  /** Hold accepted connections unread until `serve()`; otherwise serve from `start()`. */
  readonly held?: boolean
  /** Told every socket read of every connection (shared by a node's listeners). */
  readonly readGc?: ReadGcPacer
  /** Where connections assemble large produce frames (the node's pool; `ConnectionOptions.frameBuffers`). */
  readonly frameBuffers?: ReadBuffers
  /** SSL and SASL_SSL: TLS on every connection; absent: plain TCP. */
  readonly tls?: ListenerTls
  /** SASL_PLAINTEXT and SASL_SSL: every connection authenticates first. */
  readonly sasl?: SaslListenerOptions
}

/** Requests of a TLS client reach the dispatcher with the principal of its certificate. */
class PrincipalDispatcher implements FrameHandler {
  readonly #inner: FrameHandler
  readonly #principal: KafkaPrincipal

  constructor(inner: FrameHandler, principal: KafkaPrincipal) {
    this.#inner = inner
    this.#principal = principal
  }

  dispatch(frame: Buffer, conn: ConnectionInfo): Promise<DispatchResult> {
    return this.#inner.dispatch(frame, { ...conn, principal: this.#principal })
  }
}

export class Listener {
  readonly #options: ListenerOptions
  readonly #server: Server
  readonly #connections = new Set<Connection>()
  #nextConnectionId = 1
  #address: { host: string; port: number } | null = null
  #serving: boolean
  /** Sockets accepted before `serve()`, paused; each handed to a `Connection` by `serve()`. */
  readonly #held = new Set<Socket>()
  /** TLS clients' certificate principals, until their connection is made. */
  readonly #principals = new WeakMap<Socket, KafkaPrincipal>()

  readonly #quotas: ConnectionQuotas

  constructor(options: ListenerOptions) {
    this.#options = options
    this.#serving = options.held !== true
    this.#quotas =
      options.quotas ??
      new ConnectionQuotas({
        connectionsMax: Number.MAX_SAFE_INTEGER,
        connectionsPerIpMax: Number.MAX_SAFE_INTEGER,
        connectionsPerIpOverrides: new Map(),
        protectedListener: null,
      })
    this.#quotas.addListener(options.listenerName, options.limits.connectionsMax)
    this.#quotas.onLeastRecentlyUsed(options.listenerName, () => this.#leastRecentlyUsed())
    this.#server = options.tls === undefined ? this.#tcpServer() : this.#tlsServer(options.tls)
    this.#admitFirst(this.#server)
  }

  /**
   * Puts the quotas in front of the server's own handling of a new TCP connection (a TLS server's
   * handshake included): a refused socket is destroyed before anything reads it, and an admitted
   * one is counted until it closes.
   */
  #admitFirst(server: Server): void {
    const handlers = server.listeners('connection') as Array<(socket: Socket) => void>
    server.removeAllListeners('connection')
    server.on('connection', (socket: Socket) => {
      const { listenerName, log } = this.#options
      const address = socket.remoteAddress ?? '?'
      const refusal = this.#quotas.admit(listenerName, address)
      if (refusal !== null) {
        log('warn', `closing a connection from ${address} on ${listenerName}: ${refusal} reached`)
        socket.destroy()
        return
      }
      socket.once('close', () => this.#quotas.release(listenerName, address))
      for (const handler of handlers) handler.call(server, socket)
    })
  }

  #tcpServer(): Server {
    return createServer({ noDelay: true, pauseOnConnect: false }, (socket) => this.#accept(socket))
  }

  /**
   * TLS: a connection is accepted once its handshake completed. `requested` asks for a certificate
   * and verifies one that is sent (Java's wantClientAuth); `required` refuses a client without one.
   */
  #tlsServer(tls: ListenerTls): Server {
    const server = createTlsServer(
      {
        ...tls.options,
        requestCert: tls.clientAuth !== 'none',
        rejectUnauthorized: tls.clientAuth === 'required',
      },
      (socket) => this.#acceptTls(socket, tls),
    )
    server.on('tlsClientError', (error, socket) => {
      const code = (error as { code?: string }).code ?? error.name
      this.#options.log('warn', `TLS handshake with ${socket.remoteAddress ?? '?'} failed: ${code}`)
      socket.destroy()
    })
    return server
  }

  #acceptTls(socket: TLSSocket, tls: ListenerTls): void {
    const certificate = socket.getPeerCertificate()
    const presented = certificate !== null && certificate.raw !== undefined
    if (presented && !socket.authorized) {
      this.#options.log(
        'warn',
        `closing a TLS connection from ${socket.remoteAddress}: its certificate is not trusted (${String(socket.authorizationError)})`,
      )
      socket.destroy()
      return
    }
    try {
      this.#principals.set(socket, sslPrincipal(tls.principalMapper, presented ? certificate.raw : null))
    } catch (e) {
      if (!(e instanceof SslPrincipalMappingError)) throw e
      this.#options.log('warn', `closing a TLS connection from ${socket.remoteAddress}: ${e.message}`)
      socket.destroy()
      return
    }
    this.#accept(socket)
  }

  /**
   * KIP-226: new TLS connections use these key, certificate and trust options (validated by the
   * caller); open ones keep theirs.
   */
  setSecureContext(options: TlsOptions): void {
    if (this.#options.tls === undefined) throw new Error(`listener ${this.#options.listenerName} has no TLS`)
    ;(this.#server as TlsServer).setSecureContext(options)
  }

  /** The open connection that was active least recently, to close for the inter-broker listener. */
  #leastRecentlyUsed(): { activeMs: number; close: () => void } | null {
    let oldest: Connection | null = null
    for (const c of this.#connections)
      if (oldest === null || c.lastActivityMs < oldest.lastActivityMs) oldest = c
    if (oldest === null) return null
    const connection = oldest
    return {
      activeMs: connection.lastActivityMs,
      close: () => {
        this.#options.log(
          'warn',
          `closing connection ${connection.id} from ${connection.clientAddress} on ${this.#options.listenerName}, the least recently used: max.connections reached and the inter-broker listener took a connection`,
        )
        connection.close()
      },
    }
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
    return this.#connections.size + this.#held.size
  }

  /** Starts handling requests, those of the connections held so far first. Idempotent. */
  serve(): void {
    if (this.#serving) return
    this.#serving = true
    for (const socket of this.#held) {
      socket.removeAllListeners('error')
      socket.removeAllListeners('close')
      this.#handOver(socket)
      socket.resume()
    }
    this.#held.clear()
  }

  #accept(socket: Socket): void {
    if (!this.#serving) {
      socket.pause()
      this.#held.add(socket)
      socket.on('error', () => socket.destroy())
      socket.once('close', () => this.#held.delete(socket))
      return
    }
    this.#handOver(socket)
  }

  #handOver(socket: Socket): void {
    const { limits, log, readGc, frameBuffers } = this.#options
    const connection = new Connection(socket, this.#nextConnectionId++, {
      dispatcher: this.#frameHandler(socket),
      limits,
      clock: this.#options.clock,
      listenerName: this.#options.listenerName,
      ...(readGc === undefined ? {} : { onRead: (bytes: number) => readGc.read(bytes) }),
      ...(frameBuffers === undefined ? {} : { frameBuffers }),
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

  /** The dispatcher, behind the SASL gate on SASL listeners, with a TLS client's principal on SSL. */
  #frameHandler(socket: Socket): FrameHandler {
    const { dispatcher, sasl } = this.#options
    if (sasl !== undefined) return new SaslAuthenticator(dispatcher, sasl)
    const principal = this.#principals.get(socket)
    return principal === undefined ? dispatcher : new PrincipalDispatcher(dispatcher, principal)
  }

  /**
   * Stops accepting, lets every connection finish the requests it has read (up to `graceMs` of
   * the clock), then closes them all.
   */
  async stop(graceMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()))
    for (const socket of this.#held) socket.destroy()
    this.#held.clear()
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
    this.#options.sasl?.close?.()
    await closed
  }
}
