/**
 * A node's HTTP listeners (`http.listeners`): Prometheus metrics and health checks for
 * orchestrators and load balancers, and the web console (console/, which bounds its own bodies).
 * Metrics and health: GET (and HEAD) only, no request bodies; unknown paths are 404,
 * other methods 405; connections, header size and time are bounded so a misbehaving scraper cannot
 * hold the node's memory or sockets.
 *
 *   GET /metrics           Prometheus text 0.0.4, or OpenMetrics 1.0 when the Accept header asks
 *   GET /v1/health/live    200 while the process serves HTTP at all
 *   GET /v1/health/ready   200 once the node serves clients (metadata caught up), else 503
 *   /console/              the web console (`http.console.enable`)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { ConsoleHttp } from '../console/index.ts'
import type { ListenerTls } from '../server/index.ts'

/** One `http.listeners` entry: `http://host:port` or `https://host:port`. */
export interface HttpListenerSpec {
  readonly scheme: 'http' | 'https'
  readonly host: string
  readonly port: number
}

/**
 * The name an HTTPS listener's TLS keys take, as a Kafka listener's: `listener.name.http.ssl.*`
 * first, then the broker's own `ssl.*` (the keystore its Kafka listeners use).
 */
export const HTTP_LISTENER_NAME = 'HTTP'

export class HttpListenersError extends Error {
  override name = 'HttpListenersError'
}

/** Parses `http.listeners` (comma-separated `http://host:port`); throws HttpListenersError. */
export function parseHttpListeners(value: string): HttpListenerSpec[] {
  const out: HttpListenerSpec[] = []
  for (const raw of value.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    const m = /^(https?):\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]]*):(\d{1,5})$/.exec(entry)
    if (m === null) throw new HttpListenersError(`http.listeners: '${entry}' is not http(s)://host:port`)
    const port = Number(m[3])
    if (port > 65_535) throw new HttpListenersError(`http.listeners: port ${port} is out of range`)
    const host = m[2]!.replace(/^\[|\]$/g, '')
    out.push({ scheme: m[1] as 'http' | 'https', host: host === '' ? '0.0.0.0' : host, port })
  }
  return out
}

export interface HttpRoutes {
  /** The exposition for `/metrics`. */
  readonly metrics: (openMetrics: boolean) => Promise<{ contentType: string; body: string }>
  /** Whether the node serves clients. */
  readonly ready: () => boolean
  /** The web console (`/console/`, and `/` leads there), or null when it is off. */
  readonly console: ConsoleHttp | null
  /**
   * With `http.metrics.authenticate`: whether a request to /metrics or a health check carries
   * Kafka credentials the cluster accepts; null when they are open.
   */
  readonly authenticate: ((req: IncomingMessage) => Promise<boolean>) | null
}

/** Concurrent connections one HTTP listener accepts; more are refused by the kernel's backlog. */
export const HTTP_CONNECTIONS_MAX = 64
/** Bounds on what a client may send: headers (bytes) and the time to send them. */
const HEADER_BYTES_MAX = 8192
const HEADERS_TIMEOUT_MS = 10_000
const REQUEST_TIMEOUT_MS = 30_000
const IDLE_TIMEOUT_MS = 60_000

export class HttpListener {
  readonly #server: Server
  readonly #routes: HttpRoutes

  private constructor(server: Server, routes: HttpRoutes) {
    this.#server = server
    this.#routes = routes
  }

  /** Binds `spec` (with `tls` for https); rejects when the address cannot be bound. */
  static async open(spec: HttpListenerSpec, routes: HttpRoutes, tls?: ListenerTls): Promise<HttpListener> {
    const bounds = {
      maxHeaderSize: HEADER_BYTES_MAX,
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: 5_000,
    }
    if (spec.scheme === 'https' && tls === undefined) throw new HttpListenersError('https needs TLS settings')
    const server =
      spec.scheme === 'https'
        ? createHttpsServer({
            ...bounds,
            ...tls!.options,
            requestCert: tls!.clientAuth !== 'none',
            rejectUnauthorized: tls!.clientAuth === 'required',
          })
        : createServer(bounds)
    server.maxConnections = HTTP_CONNECTIONS_MAX
    server.setTimeout(IDLE_TIMEOUT_MS)
    const listener = new HttpListener(server, routes)
    server.on('request', (req, res) => listener.#serve(req, res))
    server.on('clientError', (_e, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
      else socket.destroy()
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(spec.port, spec.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    return listener
  }

  /** The bound address (the real port when `http.listeners` asked for 0). */
  get address(): { host: string; port: number } {
    const a = this.#server.address() as AddressInfo
    return { host: a.address, port: a.port }
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    // The console reads its own (bounded) request bodies.
    if (this.#routes.console?.handle(req, res) === true) return
    const path = (req.url ?? '/').split('?')[0]!
    const known = path === '/metrics' || path === '/v1/health/live' || path === '/v1/health/ready'
    // A body is never read: its bytes are drained so that keep-alive stays in step, up to a bound.
    let bodyBytes = 0
    req.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length
      if (bodyBytes > HEADER_BYTES_MAX) req.destroy()
    })
    if (!known) {
      send(res, 404, 'text/plain; charset=utf-8', 'not found\n')
      return
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD')
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n')
      return
    }
    const authenticate = this.#routes.authenticate
    if (authenticate === null) this.#answer(req, res, path)
    else
      authenticate(req).then(
        (ok) => {
          if (ok) this.#answer(req, res, path)
          else {
            res.setHeader('WWW-Authenticate', 'Basic realm="Weir", charset="UTF-8"')
            send(res, 401, 'text/plain; charset=utf-8', 'log in with a Kafka user name and password\n')
          }
        },
        (e: unknown) =>
          send(res, 503, 'text/plain; charset=utf-8', `cannot check credentials: ${(e as Error).message}\n`),
      )
  }

  #answer(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (path === '/v1/health/live') {
      send(res, 200, JSON_TYPE, '{"status":"live"}\n')
      return
    }
    if (path === '/v1/health/ready') {
      if (this.#routes.ready()) send(res, 200, JSON_TYPE, '{"status":"ready"}\n')
      else send(res, 503, JSON_TYPE, '{"status":"not ready"}\n')
      return
    }
    const openMetrics = (req.headers.accept ?? '').includes('application/openmetrics-text')
    this.#routes.metrics(openMetrics).then(
      (m) => send(res, 200, m.contentType, m.body),
      (e: unknown) =>
        send(res, 500, 'text/plain; charset=utf-8', `metrics failed: ${(e as Error).message}\n`),
    )
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve())
      this.#server.closeAllConnections()
    })
  }
}

const JSON_TYPE = 'application/json'

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  if (res.headersSent || res.destroyed) return
  res.statusCode = status
  res.setHeader('Content-Type', contentType)
  res.setHeader('Cache-Control', 'no-store')
  res.end(res.req.method === 'HEAD' ? undefined : body)
}
