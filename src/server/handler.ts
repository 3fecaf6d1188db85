/**
 * What a request handler is: one API, the versions it serves, and a function from the decoded
 * request to the response body. Handlers never see bytes or sockets.
 */
import type { Api, RequestHeaderData } from '../protocol/index.ts'
import type { KafkaPrincipal, StandardAuthorizer } from '../security/index.ts'

/** Who sent a request, and on which connection. */
export interface RequestContext {
  readonly header: RequestHeaderData.RequestHeader
  /** The version the request was sent with; the response is written in the same version. */
  readonly apiVersion: number
  readonly connectionId: number
  /** The client's address as `host:port`, or `inject` for requests injected without a socket. */
  readonly clientAddress: string
  readonly listenerName: string
  /**
   * Who sent it, for the authorizer: `User:ANONYMOUS` on PLAINTEXT (and TLS without a client
   * certificate), the mapped certificate subject on SSL, the SASL identity on SASL listeners.
   */
  readonly principal: KafkaPrincipal
  /**
   * The node's authorizer as it is when the request arrives (it follows the metadata image's
   * ACLs); null or absent without `authorizer.class.name`: everything is allowed. Handlers ask it
   * through `authorize(ctx)` (authorize.ts).
   */
  readonly authorizer?: StandardAuthorizer | null
  /**
   * Runs `fn` once the response no longer needs memory it refers to: its socket write completed,
   * or it was dropped (no response, a failed handler or encoding, a closed connection). For a
   * Fetch's pooled read buffers. Absent where nobody reports the end of a response: then a handler
   * must not hand out memory that needs it.
   */
  readonly afterResponse?: (fn: () => void) => void
}

/** Returned by a handler that must not answer (Produce with acks=0). */
export const NO_RESPONSE: unique symbol = Symbol('no response')

export type HandlerResult<ResIn> = ResIn | typeof NO_RESPONSE

/** A handler for one API (use `defineHandler` to make one with its types checked). */
export interface Handler {
  readonly api: Api<unknown, never, unknown, never>
  /** The versions served: a sub-range of the API's versions. ApiVersions advertises exactly these. */
  readonly minVersion: number
  readonly maxVersion: number
  readonly handle: (
    request: unknown,
    ctx: RequestContext,
  ) => HandlerResult<unknown> | Promise<HandlerResult<unknown>>
}

export interface HandlerVersions {
  /** Defaults to the API's first version. */
  readonly minVersion?: number
  /** Defaults to the API's last version. */
  readonly maxVersion?: number
}

/**
 * Makes a handler with its request and response types taken from the API:
 *
 * ```ts
 * export const handleListGroups = defineHandler(apis.ListGroups, {}, (req, ctx) => ({ groups: [] }))
 * ```
 */
export function defineHandler<Req, ResIn>(
  api: Api<Req, never, unknown, ResIn>,
  versions: HandlerVersions,
  handle: (request: Req, ctx: RequestContext) => HandlerResult<ResIn> | Promise<HandlerResult<ResIn>>,
): Handler {
  const minVersion = versions.minVersion ?? api.minVersion
  const maxVersion = versions.maxVersion ?? api.maxVersion
  if (minVersion < api.minVersion || maxVersion > api.maxVersion || minVersion > maxVersion) {
    throw new RangeError(
      `${api.name}: versions ${minVersion}-${maxVersion} are outside ${api.minVersion}-${api.maxVersion}`,
    )
  }
  return {
    api: api as unknown as Api<unknown, never, unknown, never>,
    minVersion,
    maxVersion,
    handle: handle as Handler['handle'],
  }
}
