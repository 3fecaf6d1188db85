/**
 * The web console over HTTP: the page under `/console/` and its JSON API under `/console/api/`,
 * served by a node's HTTP listener or by `weir console`. It acts on the cluster only through the
 * Kafka protocol. When the cluster authenticates (a SASL listener), every request carries HTTP Basic
 * credentials that the console authenticates to the cluster with, one client per principal, so the
 * cluster's ACLs decide what each user sees and does; the console itself keeps no secret beyond the
 * clients' connections.
 *
 * Bounded: request bodies (1 MiB), API requests per client address (a burst of 100, then 50 a
 * second; more are answered 429), API requests in progress (16; more are answered 503), cached
 * principals (32, idle ones closed after 10 minutes). POST bodies must be JSON (a cross-site form
 * cannot send that without the browser asking first), and a request from another origin is refused.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  type ClientSecurity,
  ClusterClient,
  ConnectionError,
  KafkaError,
  type OffsetResetSpec,
  SaslAuthenticationError,
  SslAuthenticationError,
} from '../client/index.ts'
import type { Clock, Transport } from '../io/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import {
  ConsoleInputError,
  editConfigs,
  group,
  groups,
  newTopic,
  overview,
  PAGE_DEFAULT,
  PAGE_MAX,
  type Page,
  produce,
  RECORDS_MAX,
  records,
  resetOffsets,
  topic,
  topics,
  troubledPartitions,
} from './console-api.ts'
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_JS } from './page.ts'

/** SASL mechanisms the console can log in with from a user name and password. */
export type PasswordMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'

export interface ConsoleOptions {
  readonly bootstrap: readonly string[]
  /**
   * How connections to the cluster are secured. With `credentials` set, its SASL part is replaced
   * by each user's; otherwise it is used as it is (a SASL identity of the operator's choosing).
   */
  readonly security: ClientSecurity
  /** Set when users log in: the SASL mechanism their HTTP Basic credentials are used with. */
  readonly credentials: PasswordMechanism | null
  readonly clock: Clock
  readonly transport: Transport
}

export const CONSOLE_BODY_BYTES_MAX = 1024 * 1024
export const CONSOLE_REQUESTS_IN_PROGRESS_MAX = 16
/** API requests one client address may make: a bucket of this many, refilled at this many a second. */
export const CONSOLE_REQUESTS_BURST = 100
export const CONSOLE_REQUESTS_PER_SECOND = 50
/** Client addresses whose buckets are remembered; the least recently seen is forgotten beyond. */
const ADDRESSES_MAX = 1024
const PRINCIPALS_MAX = 32
const IDLE_CLIENT_MS = 10 * 60_000
const REALM = 'Basic realm="Weir console", charset="UTF-8"'

interface CachedClient {
  readonly client: ClusterClient
  lastUsedMs: number
}

class HttpError extends Error {
  readonly status: number
  readonly code: string
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

export class ConsoleHttp {
  readonly #o: ConsoleOptions
  readonly #clients = new Map<string, CachedClient>()
  /** Per client address: tokens left and when they were counted (Map order: least recent first). */
  readonly #buckets = new Map<string, { tokens: number; atMs: number }>()
  #inProgress = 0

  constructor(options: ConsoleOptions) {
    this.#o = options
  }

  /** Serves `req` when its path is the console's (true), else leaves it to the caller (false). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://console')
    const path = url.pathname
    if (path === '/' || path === '/console') {
      if (!readOnlyMethod(req, res)) return true
      res.statusCode = 302
      res.setHeader('Location', '/console/')
      res.end()
      return true
    }
    if (!path.startsWith('/console/')) return false
    headers(res)
    const asset = ASSETS.get(path)
    if (asset !== undefined) {
      if (!readOnlyMethod(req, res)) return true
      res.setHeader('Content-Type', asset.type)
      res.setHeader('Cache-Control', 'no-cache')
      res.end(req.method === 'HEAD' ? undefined : asset.body)
      return true
    }
    if (!path.startsWith('/console/api/')) {
      sendJson(res, 404, { error: 'NOT_FOUND', message: 'no such page' })
      return true
    }
    if (!this.#admit(req.socket.remoteAddress ?? '')) {
      res.setHeader('Retry-After', '1')
      sendJson(res, 429, {
        error: 'TOO_MANY_REQUESTS',
        message: 'too many console requests from this address',
      })
      req.resume()
      return true
    }
    if (this.#inProgress >= CONSOLE_REQUESTS_IN_PROGRESS_MAX) {
      res.setHeader('Retry-After', '1')
      sendJson(res, 503, { error: 'BUSY', message: 'too many console requests in progress' })
      req.resume()
      return true
    }
    this.#inProgress++
    this.#api(req, res, url)
      .catch((e: unknown) => this.#fail(req, res, e))
      .finally(() => this.#inProgress--)
    return true
  }

  async #api(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    let route: string[]
    try {
      route = url.pathname.slice('/console/api'.length).split('/').map(decodeURIComponent)
    } catch {
      throw new ConsoleInputError('the path is not valid percent-encoding')
    }
    const method = req.method ?? 'GET'
    const origin = req.headers.origin
    if (origin !== undefined && originHost(origin) !== req.headers.host)
      throw new HttpError(403, 'FORBIDDEN', 'requests from another origin are refused')
    if (method !== 'POST') req.resume()
    const body = method === 'POST' ? await readJson(req) : null
    const client = this.#client(req)
    const q = url.searchParams
    const page = pageOf(q)
    const [, a, b, c, d, e] = route
    let result: unknown
    const get = method === 'GET' || method === 'HEAD'
    const allow = (methods: string, ok: boolean) => {
      if (!ok) {
        res.setHeader('Allow', methods)
        throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed here`)
      }
    }
    if (a === 'cluster' && b === undefined) {
      allow('GET, HEAD', get)
      result = await overview(client)
    } else if (a === 'partitions' && b === undefined) {
      allow('GET, HEAD', get)
      const state = q.get('state') ?? 'under-replicated'
      if (state !== 'under-replicated' && state !== 'offline')
        throw new ConsoleInputError('state is under-replicated or offline')
      result = await troubledPartitions(client, state, page)
    } else if (a === 'topics' && b === undefined) {
      allow('GET, HEAD, POST', get || method === 'POST')
      result = get
        ? await topics(client, { text: q.get('q') ?? '', internal: q.get('internal') === 'true' }, page)
        : await newTopic(client, {
            name: text(body, 'name'),
            partitions: integer(body, 'partitions', -1),
            replicationFactor: integer(body, 'replicationFactor', -1),
            configs: stringMap(body, 'configs'),
          })
    } else if (a === 'topics' && b !== undefined && c === undefined) {
      allow('GET, HEAD', get)
      result = await topic(client, b, page)
    } else if (a === 'topics' && b !== undefined && c === 'configs' && d === undefined) {
      allow('POST', method === 'POST')
      result = await editConfigs(client, b, stringMap(body, 'set'), stringList(body, 'delete'))
    } else if (a === 'topics' && b !== undefined && c === 'records' && d === undefined) {
      allow('POST', method === 'POST')
      result = await produce(client, {
        topic: b,
        partition: field(body, 'partition') === undefined ? null : integer(body, 'partition', 0),
        key: optionalText(body, 'key'),
        value: optionalText(body, 'value'),
        headers: Object.entries(stringMap(body, 'headers')).map(([key, value]) => ({
          key,
          value: Buffer.from(value),
        })),
      })
    } else if (
      a === 'topics' &&
      b !== undefined &&
      c === 'partitions' &&
      d !== undefined &&
      e === 'records'
    ) {
      allow('GET, HEAD', get)
      const partition = queryInt(d, 'partition')
      const limit = Math.min(queryInt(q.get('limit') ?? '50', 'limit'), RECORDS_MAX)
      const time = q.get('time')
      result = await records(client, {
        topic: b,
        partition,
        from:
          time !== null && time !== ''
            ? { timestampMs: BigInt(timeOf(time)) }
            : { offset: BigInt(queryInt(q.get('offset') ?? '0', 'offset')) },
        limit,
      })
    } else if (a === 'groups' && b === undefined) {
      allow('GET, HEAD', get)
      result = await groups(client, q.get('q') ?? '', page)
    } else if (a === 'groups' && b !== undefined && c === undefined) {
      allow('GET, HEAD', get)
      result = await group(client, b)
    } else if (a === 'groups' && b !== undefined && c === 'offsets' && d === undefined) {
      allow('POST', method === 'POST')
      const to = text(body, 'to')
      const spec: OffsetResetSpec | null =
        to === 'earliest' || to === 'latest'
          ? { to }
          : to === 'offset'
            ? { to, offset: BigInt(integer(body, 'offset', 0)) }
            : to === 'datetime'
              ? { to, timestampMs: BigInt(timeOf(text(body, 'datetime'))) }
              : to === 'shift'
                ? { to, by: BigInt(integer(body, 'by', 0, true)) }
                : null
      if (spec === null) throw new ConsoleInputError('to is earliest, latest, offset, datetime or shift')
      result = await resetOffsets(client, b, text(body, 'topic'), spec, field(body, 'execute') === true)
    } else throw new HttpError(404, 'NOT_FOUND', 'no such API')
    sendJson(res, 200, result)
  }

  /** Takes a token from the address's bucket; false when it is empty. */
  #admit(address: string): boolean {
    const now = this.#o.clock.monotonicMs()
    const b = this.#buckets.get(address) ?? { tokens: CONSOLE_REQUESTS_BURST, atMs: now }
    b.tokens = Math.min(
      CONSOLE_REQUESTS_BURST,
      b.tokens + ((now - b.atMs) * CONSOLE_REQUESTS_PER_SECOND) / 1000,
    )
    b.atMs = now
    this.#buckets.delete(address)
    this.#buckets.set(address, b)
    if (this.#buckets.size > ADDRESSES_MAX) this.#buckets.delete(this.#buckets.keys().next().value!)
    if (b.tokens < 1) return false
    b.tokens -= 1
    return true
  }

  /** The client for this request's principal (HTTP Basic), or the one client without logins. */
  #client(req: IncomingMessage): ClusterClient {
    const now = this.#o.clock.nowMs()
    for (const [k, c] of this.#clients)
      if (now - c.lastUsedMs > IDLE_CLIENT_MS) {
        c.client.close()
        this.#clients.delete(k)
      }
    let security = this.#o.security
    let key = ''
    if (this.#o.credentials !== null) {
      const login = basicCredentials(req.headers.authorization)
      if (login === null)
        throw new HttpError(401, 'LOGIN_REQUIRED', 'log in with your Kafka user name and password')
      security = { ...security, sasl: { mechanism: this.#o.credentials, ...login } }
      key = principalKey(login)
    }
    const cached = this.#clients.get(key)
    if (cached !== undefined) {
      cached.lastUsedMs = now
      return cached.client
    }
    if (this.#clients.size >= PRINCIPALS_MAX) {
      const oldest = [...this.#clients].sort((x, y) => x[1].lastUsedMs - y[1].lastUsedMs)[0]!
      oldest[1].client.close()
      this.#clients.delete(oldest[0])
    }
    const client = new ClusterClient({
      bootstrap: this.#o.bootstrap,
      clientId: 'weir-console',
      clock: this.#o.clock,
      transport: this.#o.transport,
      retryTimeoutMs: 10_000,
      requestTimeoutMs: 10_000,
      security,
    })
    this.#clients.set(key, { client, lastUsedMs: now })
    return client
  }

  #fail(req: IncomingMessage, res: ServerResponse, e: unknown): void {
    if (e instanceof SslAuthenticationError) {
      sendJson(res, 502, {
        error: 'SSL_HANDSHAKE_FAILED',
        message: `the console could not connect to the cluster over TLS (its truststore: ssl.truststore.*): ${e.message}`,
      })
      return
    }
    if (e instanceof SaslAuthenticationError) {
      // A failed login is not kept: the next request authenticates again.
      this.#forget(req)
      challenge(req, res)
      sendJson(res, 401, { error: 'SASL_AUTHENTICATION_FAILED', message: e.message })
      return
    }
    if (e instanceof HttpError) {
      if (e.status === 401) challenge(req, res)
      sendJson(res, e.status, { error: e.code, message: e.message })
    } else if (e instanceof ConsoleInputError)
      sendJson(res, 400, { error: 'INVALID_REQUEST', message: e.message })
    else if (e instanceof KafkaError)
      sendJson(res, statusOf(e.code), { error: e.errorName, message: e.message })
    else if (e instanceof ConnectionError)
      sendJson(res, 503, { error: 'UNREACHABLE', message: `cannot reach the cluster: ${e.message}` })
    else sendJson(res, 500, { error: 'INTERNAL', message: (e as Error)?.message ?? String(e) })
  }

  /** Whether users log in (the cluster authenticates through SASL). */
  get logsIn(): boolean {
    return this.#o.credentials !== null
  }

  /**
   * Whether `req` carries credentials the cluster accepts (a SASL login with them, cached as the
   * console's own clients are); true when users do not log in. For `http.metrics.authenticate`.
   */
  async authenticated(req: IncomingMessage): Promise<boolean> {
    if (this.#o.credentials === null) return true
    if (basicCredentials(req.headers.authorization) === null) return false
    try {
      await this.#client(req).refresh({ topics: [] })
      return true
    } catch (e) {
      if (!(e instanceof SaslAuthenticationError)) throw e
      this.#forget(req)
      return false
    }
  }

  #forget(req: IncomingMessage): void {
    const login = basicCredentials(req.headers.authorization)
    if (login === null) return
    const key = principalKey(login)
    this.#clients.get(key)?.client.close()
    this.#clients.delete(key)
  }

  close(): void {
    for (const c of this.#clients.values()) c.client.close()
    this.#clients.clear()
  }
}

const ASSETS = new Map<string, { type: string; body: string }>([
  ['/console/', { type: 'text/html; charset=utf-8', body: CONSOLE_HTML }],
  ['/console/app.js', { type: 'text/javascript; charset=utf-8', body: CONSOLE_JS }],
  ['/console/app.css', { type: 'text/css; charset=utf-8', body: CONSOLE_CSS }],
])

/**
 * The Basic challenge, for tools such as curl; the page (which sends X-Weir-Console) asks with its
 * own form instead of the browser's dialog.
 */
function challenge(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers['x-weir-console'] === undefined) res.setHeader('WWW-Authenticate', REALM)
}

function headers(res: ServerResponse): void {
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
  )
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.setHeader('Referrer-Policy', 'no-referrer')
  res.setHeader('X-Frame-Options', 'DENY')
}

function readOnlyMethod(req: IncomingMessage, res: ServerResponse): boolean {
  req.resume()
  if (req.method === 'GET' || req.method === 'HEAD') return true
  res.setHeader('Allow', 'GET, HEAD')
  sendJson(res, 405, { error: 'METHOD_NOT_ALLOWED', message: `${req.method} is not allowed here` })
  return false
}

/** Kafka errors as HTTP statuses: the page shows Kafka's name either way. */
function statusOf(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.TopicAuthorizationFailed:
    case ErrorCode.GroupAuthorizationFailed:
    case ErrorCode.ClusterAuthorizationFailed:
      return 403
    case ErrorCode.UnknownTopicOrPartition:
    case ErrorCode.GroupIdNotFound:
      return 404
    case ErrorCode.TopicAlreadyExists:
    case ErrorCode.NonEmptyGroup:
      return 409
    case ErrorCode.InvalidTopicException:
    case ErrorCode.InvalidPartitions:
    case ErrorCode.InvalidReplicationFactor:
    case ErrorCode.InvalidConfig:
    case ErrorCode.InvalidRequest:
    case ErrorCode.PolicyViolation:
    case ErrorCode.RecordListTooLarge:
    case ErrorCode.MessageTooLarge:
      return 400
    default:
      return 502
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  if (res.headersSent || res.destroyed) return
  const body = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))
  res.statusCode = status
  res.setHeader('Content-Type', 'application/json')
  res.setHeader('Cache-Control', 'no-store')
  res.end(res.req.method === 'HEAD' ? undefined : body)
}

/** A cached client's key: a digest, so the map holds no password in clear. */
function principalKey(login: { username: string; password: string }): string {
  return createHash('sha256').update(`${login.username}\u0000${login.password}`).digest('hex')
}

function originHost(origin: string): string | null {
  try {
    return new URL(origin).host
  } catch {
    return null
  }
}

/** `Authorization: Basic base64(user:password)`, or null without one. */
function basicCredentials(header: string | undefined): { username: string; password: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '')
  if (m === null) return null
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8')
  const i = decoded.indexOf(':')
  if (i <= 0) return null
  return { username: decoded.slice(0, i), password: decoded.slice(i + 1) }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') {
    req.resume()
    throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send application/json')
  }
  const declared = Number(req.headers['content-length'] ?? '0')
  if (declared > CONSOLE_BODY_BYTES_MAX) {
    req.resume()
    throw new HttpError(413, 'TOO_LARGE', `bodies are at most ${CONSOLE_BODY_BYTES_MAX} bytes`)
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > CONSOLE_BODY_BYTES_MAX) {
      req.resume()
      throw new HttpError(413, 'TOO_LARGE', `bodies are at most ${CONSOLE_BODY_BYTES_MAX} bytes`)
    }
    chunks.push(chunk)
  }
  let value: unknown
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new ConsoleInputError('the body is not JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ConsoleInputError('the body is not a JSON object')
  return value as Record<string, unknown>
}

function field(body: Record<string, unknown> | null, name: string): unknown {
  return body === null || !Object.hasOwn(body, name) ? undefined : body[name]
}

function text(body: Record<string, unknown> | null, name: string): string {
  const v = field(body, name)
  if (typeof v !== 'string' || v === '') throw new ConsoleInputError(`${name} is required text`)
  return v
}

function optionalText(body: Record<string, unknown> | null, name: string): Buffer | null {
  const v = field(body, name)
  if (v === undefined || v === null) return null
  if (typeof v !== 'string') throw new ConsoleInputError(`${name} is text or null`)
  return Buffer.from(v)
}

function integer(
  body: Record<string, unknown> | null,
  name: string,
  fallback: number,
  signed = false,
): number {
  const v = field(body, name)
  if (v === undefined || v === null || v === '') return fallback
  const n = typeof v === 'string' ? Number(v) : v
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || (!signed && n < fallback))
    throw new ConsoleInputError(`${name} is an integer${signed ? '' : ` >= ${fallback}`}`)
  return n
}

function stringMap(body: Record<string, unknown> | null, name: string): Record<string, string> {
  const v = field(body, name)
  if (v === undefined || v === null) return {}
  if (typeof v !== 'object' || Array.isArray(v)) throw new ConsoleInputError(`${name} is an object of texts`)
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string') throw new ConsoleInputError(`${name}.${k} is text`)
    out[k] = x
  }
  return out
}

function stringList(body: Record<string, unknown> | null, name: string): string[] {
  const v = field(body, name)
  if (v === undefined || v === null) return []
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw new ConsoleInputError(`${name} is a list of texts`)
  return v as string[]
}

function pageOf(q: URLSearchParams): Page {
  return {
    offset: queryInt(q.get('offset') ?? '0', 'offset'),
    limit: Math.min(Math.max(queryInt(q.get('limit') ?? String(PAGE_DEFAULT), 'limit'), 1), PAGE_MAX),
  }
}

function queryInt(value: string, name: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new ConsoleInputError(`${name} is an integer >= 0`)
  return Number(value)
}

/** A time as ms since the epoch or ISO 8601. */
function timeOf(value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value)
  if (!Number.isFinite(ms)) throw new ConsoleInputError(`'${value}' is not a time (ISO 8601 or ms)`)
  return ms
}
