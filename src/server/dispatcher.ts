/**
 * One request frame in, one response frame (or nothing, or "close the connection") out. No
 * sockets: `dispatch` is also how tests inject frames into a node.
 */
import {
  type Api,
  ApiKey,
  apis,
  DecodeError,
  decodeRequest,
  EncodeError,
  ErrorCode,
  encodeResponse,
  readRequestPrefix,
} from '../protocol/index.ts'
import { ANONYMOUS_PRINCIPAL, type KafkaPrincipal, type StandardAuthorizer } from '../security/index.ts'
import { NO_RESPONSE, type RequestContext } from './handler.ts'
import type { HandlerRegistry } from './registry.ts'

/**
 * A registry handler's api with its response type erased to `unknown`: the handler was defined
 * against that api (`defineHandler`), so what it returned is that api's response.
 */
type ErasedApi = Api<unknown, never, unknown, unknown>

export type DispatchResult =
  /**
   * A response frame with its size prefix, as pieces for a vectored write. `done`, when present,
   * must be called once the pieces are written (the socket write's callback) or dropped.
   */
  | { readonly kind: 'response'; readonly frame: Buffer[]; readonly done?: () => void }
  /** The request is answered by silence (Produce with acks=0). */
  | { readonly kind: 'none' }
  /**
   * The connection must close: the bytes were malformed or the request cannot be answered. With
   * `frame`, that response is written first (a failed authentication's answer).
   */
  | { readonly kind: 'close'; readonly reason: string; readonly frame?: Buffer[] }

export interface ConnectionInfo {
  readonly connectionId: number
  readonly clientAddress: string
  readonly listenerName: string
  /** Who the peer authenticated as; absent: `User:ANONYMOUS` (PLAINTEXT, TLS without a certificate). */
  readonly principal?: KafkaPrincipal
}

export interface DispatcherOptions {
  /** The node's current authorizer, read once per request; absent or null: no ACL checks. */
  readonly authorizer?: () => StandardAuthorizer | null
  /**
   * Told of every request its handler answered (or chose not to answer), with the milliseconds from
   * decoding to the response encoded: the node's request metrics. `now` is the node's monotonic clock.
   */
  readonly observe?: { readonly now: () => number; readonly answered: (api: string, ms: number) => void }
}

export class Dispatcher {
  readonly registry: HandlerRegistry
  readonly #authorizer: () => StandardAuthorizer | null
  readonly #observe: DispatcherOptions['observe']

  constructor(registry: HandlerRegistry, options: DispatcherOptions = {}) {
    this.registry = registry
    this.#authorizer = options.authorizer ?? (() => null)
    this.#observe = options.observe
  }

  async dispatch(frame: Buffer, conn: ConnectionInfo): Promise<DispatchResult> {
    let decoded: ReturnType<typeof decodeRequest>
    try {
      decoded = decodeRequest(frame)
    } catch (e) {
      if (e instanceof DecodeError) return { kind: 'close', reason: `malformed request: ${e.message}` }
      throw e
    }
    if (decoded.kind === 'unknown-api') {
      return { kind: 'close', reason: `unknown api key ${decoded.prefix.apiKey}` }
    }
    const { apiKey, apiVersion, correlationId } =
      decoded.kind === 'ok'
        ? {
            apiKey: decoded.api.apiKey,
            apiVersion: decoded.header.requestApiVersion,
            correlationId: decoded.header.correlationId,
          }
        : decoded.prefix
    const handler = this.registry.get(apiKey)
    const served =
      handler !== undefined && apiVersion >= handler.minVersion && apiVersion <= handler.maxVersion
    if (!served || decoded.kind !== 'ok') {
      // KIP-511: an ApiVersions request of a version the broker does not know is answered in v0
      // with UNSUPPORTED_VERSION and the supported ranges, so the client can pick a version.
      if (apiKey === ApiKey.ApiVersions) {
        return {
          kind: 'response',
          frame: encodeResponse(apis.ApiVersions, 0, correlationId, {
            errorCode: ErrorCode.UnsupportedVersion,
            apiKeys: this.registry.apiVersions(),
          }),
        }
      }
      const name = decoded.api.name
      return {
        kind: 'close',
        reason:
          handler === undefined
            ? `${name} is not served here`
            : `${name} v${apiVersion} is not a served version`,
      }
    }
    let after: Array<() => void> | null = null
    const ctx: RequestContext = {
      header: decoded.header,
      apiVersion,
      connectionId: conn.connectionId,
      clientAddress: conn.clientAddress,
      listenerName: conn.listenerName,
      principal: conn.principal ?? ANONYMOUS_PRINCIPAL,
      authorizer: this.#authorizer(),
      afterResponse: (fn) => {
        after ??= []
        after.push(fn)
      },
    }
    const done = (): void => {
      const fns = after
      after = null
      if (fns !== null) for (const fn of fns) fn()
    }
    const observe = this.#observe
    const startedMs = observe?.now() ?? 0
    let result: unknown
    try {
      result = await handler.handle(decoded.body, ctx)
    } catch (e) {
      done()
      throw e
    }
    if (result === NO_RESPONSE) {
      done()
      observe?.answered(handler.api.name, observe.now() - startedMs)
      return { kind: 'none' }
    }
    try {
      const frame = encodeResponse(handler.api as ErasedApi, apiVersion, correlationId, result)
      observe?.answered(handler.api.name, observe.now() - startedMs)
      return after === null ? { kind: 'response', frame } : { kind: 'response', frame, done }
    } catch (e) {
      done()
      if (e instanceof EncodeError)
        return { kind: 'close', reason: `${handler.api.name} response: ${e.message}` }
      throw e
    }
  }
}

/** The correlation id of a frame, for logging a request that could not be decoded. */
export function correlationIdOf(frame: Buffer): number | undefined {
  try {
    return readRequestPrefix(frame).correlationId
  } catch {
    return undefined
  }
}
