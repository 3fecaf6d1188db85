/**
 * A SASL listener's gate between one connection's frames and its dispatcher, as Kafka's
 * SaslServerAuthenticator: before authentication only ApiVersions and SaslHandshake are served; a
 * SaslHandshake v0 is followed by the mechanism's raw tokens (size-prefixed, without Kafka's
 * request header), a v1 by SaslAuthenticate requests. Any other request before the handshake
 * closes the connection; after a v1 handshake, it is answered with its api's error response carrying
 * ILLEGAL_SASL_STATE, as a failed authentication. A failed authentication is answered after
 * `connection.failed.authentication.delay.ms` and the connection then closes. Once authenticated,
 * requests reach the dispatcher with the principal; KIP-368: a SaslHandshake starts a
 * re-authentication, and a request after the session's lifetime closes the connection.
 */
import type { Clock } from '../io/index.ts'
import {
  type Api,
  ApiKey,
  apis,
  DecodeError,
  decodeRequest,
  EncodeError,
  ErrorCode,
  encodeResponse,
  type MetadataRequestData,
  type MetadataResponseData,
  type ProduceRequestData,
  type ProduceResponseData,
  readRequestPrefix,
} from '../protocol/index.ts'
import {
  formatPrincipal,
  type KafkaPrincipal,
  type SaslFailure,
  type SaslServer,
  type SaslStep,
  samePrincipal,
  userPrincipal,
} from '../security/index.ts'
import type { ConnectionInfo, DispatchResult } from './dispatcher.ts'
import { defineHandler, type Handler } from './handler.ts'

/** What a connection's frames go to: a `Dispatcher`, or a gate in front of one. */
export interface FrameHandler {
  dispatch(frame: Buffer, conn: ConnectionInfo): Promise<DispatchResult>
}

/** A SASL listener's settings, shared by its connections. */
export interface SaslListenerOptions {
  /** `sasl.enabled.mechanisms` that have a server, in SaslHandshake's order. */
  readonly mechanisms: readonly string[]
  /** A new server for one exchange, or the failure for a mechanism that is not enabled. */
  readonly newServer: (mechanism: string) => SaslServer | SaslFailure
  readonly clock: Clock
  /** `connection.failed.authentication.delay.ms`. */
  readonly failedAuthenticationDelayMs: number
  /** Called once the listener stopped: ends what the mechanisms keep running (JWKS refreshes). */
  readonly close?: () => void
}

type State =
  | { readonly kind: 'handshake' }
  | { readonly kind: 'authenticate'; readonly server: SaslServer; readonly raw: boolean }
  | { readonly kind: 'authenticated' }

const API_NAMES: ReadonlyMap<number, string> = new Map(Object.values(apis).map((a) => [a.apiKey, a.name]))

/** One connection's authentication. */
export class SaslAuthenticator implements FrameHandler {
  readonly #inner: FrameHandler
  readonly #options: SaslListenerOptions
  #state: State = { kind: 'handshake' }
  #principal: KafkaPrincipal | null = null
  /** Wall time (ms) after which the session has expired (KIP-368), or null for none. */
  #sessionExpiryMs: number | null = null

  constructor(inner: FrameHandler, options: SaslListenerOptions) {
    this.#inner = inner
    this.#options = options
  }

  get principal(): KafkaPrincipal | null {
    return this.#principal
  }

  async dispatch(frame: Buffer, conn: ConnectionInfo): Promise<DispatchResult> {
    const state = this.#state
    if (state.kind === 'authenticate' && state.raw) return this.#rawToken(state.server, frame)
    const apiKey = apiKeyOf(frame)
    if (state.kind === 'authenticated') {
      if (apiKey === ApiKey.SaslHandshake) return this.#handshake(frame, true)
      if (this.#sessionExpiryMs !== null && this.#options.clock.nowMs() > this.#sessionExpiryMs) {
        return { kind: 'close', reason: 'the SASL session expired without re-authentication (KIP-368)' }
      }
      return this.#inner.dispatch(frame, { ...conn, principal: this.#principal! })
    }
    if (state.kind === 'handshake') {
      if (apiKey === ApiKey.ApiVersions) return this.#inner.dispatch(frame, conn)
      if (apiKey === ApiKey.SaslHandshake) return this.#handshake(frame, false)
      return {
        kind: 'close',
        reason: `Unexpected Kafka request of type ${apiName(apiKey)} during SASL handshake.`,
      }
    }
    if (apiKey !== ApiKey.SaslAuthenticate) {
      const message = `Unexpected Kafka request of type ${apiName(apiKey)} during SASL authentication.`
      return this.#failed(illegalSaslStateResponse(frame, message), message)
    }
    return this.#authenticate(state.server, frame)
  }

  async #handshake(frame: Buffer, reauthenticating: boolean): Promise<DispatchResult> {
    const decoded = decode(frame)
    if (decoded === null || decoded.api.apiKey !== ApiKey.SaslHandshake) {
      return { kind: 'close', reason: 'malformed SaslHandshake request' }
    }
    const { version, correlationId } = decoded
    const mechanism = (decoded.body as { mechanism: string }).mechanism
    const mechanisms = [...this.#options.mechanisms]
    const server = this.#options.mechanisms.includes(mechanism) ? this.#options.newServer(mechanism) : null
    if (server === null || 'kind' in server) {
      const response = encodeResponse(apis.SaslHandshake, version, correlationId, {
        errorCode: ErrorCode.UnsupportedSaslMechanism,
        mechanisms,
      })
      return this.#failed(response, `Unsupported SASL mechanism ${mechanism}`)
    }
    if (reauthenticating && version === 0) {
      return { kind: 'close', reason: 'a re-authentication needs SaslHandshake v1 or later' }
    }
    this.#state = { kind: 'authenticate', server, raw: version === 0 }
    return {
      kind: 'response',
      frame: encodeResponse(apis.SaslHandshake, version, correlationId, {
        errorCode: ErrorCode.None,
        mechanisms,
      }),
    }
  }

  async #authenticate(server: SaslServer, frame: Buffer): Promise<DispatchResult> {
    const decoded = decode(frame)
    if (decoded === null || decoded.api.apiKey !== ApiKey.SaslAuthenticate) {
      return { kind: 'close', reason: 'malformed SaslAuthenticate request' }
    }
    const { version, correlationId } = decoded
    const step = await server.evaluate((decoded.body as { authBytes: Buffer }).authBytes)
    const answer = (body: Parameters<typeof apis.SaslAuthenticate.writeResponse>[1]) =>
      encodeResponse(apis.SaslAuthenticate, version, correlationId, body)
    if (step.kind === 'failure') {
      return this.#failed(
        answer({ errorCode: step.errorCode, errorMessage: step.message }),
        `authentication with ${server.mechanism} failed: ${step.reason}`,
      )
    }
    if (step.kind === 'challenge') return { kind: 'response', frame: answer({ authBytes: step.challenge }) }
    const refusal = this.#complete(step)
    if (refusal !== null) {
      return this.#failed(
        answer({ errorCode: ErrorCode.SaslAuthenticationFailed, errorMessage: refusal }),
        refusal,
      )
    }
    return {
      kind: 'response',
      frame: answer({
        authBytes: step.challenge,
        ...(version >= 1 ? { sessionLifetimeMs: BigInt(step.sessionLifetimeMs) } : {}),
      }),
    }
  }

  /** A raw token after SaslHandshake v0: answered with the raw challenge; a failure closes. */
  async #rawToken(server: SaslServer, token: Buffer): Promise<DispatchResult> {
    const step: SaslStep = await server.evaluate(token)
    if (step.kind === 'failure') {
      return this.#failed(null, `authentication with ${server.mechanism} failed: ${step.reason}`)
    }
    if (step.kind === 'complete') {
      const refusal = this.#complete(step)
      if (refusal !== null) return this.#failed(null, refusal)
    }
    const size = Buffer.alloc(4)
    size.writeInt32BE(step.challenge.length)
    return { kind: 'response', frame: [size, step.challenge] }
  }

  /** Takes a completed exchange's principal and lifetime; the refusal of a changed principal. */
  #complete(step: Extract<SaslStep, { kind: 'complete' }>): string | null {
    const principal = userPrincipal(step.principal)
    const previous = this.#principal
    if (previous !== null && !samePrincipal(previous, principal)) {
      return `Cannot change principals during re-authentication from ${formatPrincipal(previous)}: ${formatPrincipal(principal)}`
    }
    this.#principal = principal
    this.#sessionExpiryMs =
      step.sessionLifetimeMs > 0 ? this.#options.clock.nowMs() + step.sessionLifetimeMs : null
    this.#state = { kind: 'authenticated' }
    return null
  }

  /**
   * Kafka's delayed close on a failed authentication: after the delay, the failure's response (if
   * any) is written and the connection closes. `reason` goes to the log: it holds no secret.
   */
  async #failed(response: Buffer[] | null, reason: string): Promise<DispatchResult> {
    const delayMs = this.#options.failedAuthenticationDelayMs
    if (delayMs > 0) {
      await new Promise<void>((resolve) => this.#options.clock.setTimer(delayMs, resolve))
    }
    return response === null
      ? { kind: 'close', reason: `Failed authentication: ${reason}` }
      : { kind: 'close', reason: `Failed authentication: ${reason}`, frame: response }
  }
}

interface ErrorBody {
  readonly errorCode?: number
  readonly errorMessage?: string
  readonly responses?: readonly ProduceResponseData.TopicProduceResponseIn[]
  readonly topics?: readonly MetadataResponseData.MetadataResponseTopicIn[]
}

/**
 * Kafka's `request.getErrorResponse(IllegalSaslStateException)` for a request that came when only
 * SaslAuthenticate may: Produce and Metadata name the error on each partition or topic the request
 * named; any other api's response carries it as its top-level error code (and message, where its
 * version has one), or is its empty response for an api without one. Null when the request does
 * not decode.
 */
function illegalSaslStateResponse(frame: Buffer, message: string): Buffer[] | null {
  const decoded = decode(frame)
  if (decoded === null) return null
  const errorCode = ErrorCode.IllegalSaslState
  // Every response's fields are optional on encode: each is written where the api has it.
  const api = decoded.api as Api<unknown, never, unknown, ErrorBody>
  const bodies: ErrorBody[] =
    decoded.api.apiKey === ApiKey.Produce
      ? [{ responses: produceErrors(decoded.body as ProduceRequestData.ProduceRequest, errorCode) }]
      : decoded.api.apiKey === ApiKey.Metadata
        ? [
            {
              errorCode,
              topics: metadataErrors(decoded.body as MetadataRequestData.MetadataRequest, errorCode),
            },
          ]
        : [{ errorCode, errorMessage: message }, { errorCode }]
  for (const body of bodies) {
    try {
      return encodeResponse(api, decoded.version, decoded.correlationId, body)
    } catch (e) {
      if (!(e instanceof EncodeError)) throw e
    }
  }
  return null
}

/** ProduceRequest.getErrorResponse: every partition of the request, with the error. */
function produceErrors(
  request: ProduceRequestData.ProduceRequest,
  errorCode: number,
): ProduceResponseData.TopicProduceResponseIn[] {
  return request.topicData.map((t) => ({
    name: t.name,
    partitionResponses: t.partitionData.map((p) => ({ index: p.index, errorCode })),
  }))
}

/** MetadataRequest.getErrorResponse: every topic of the request, with the error. */
function metadataErrors(
  request: MetadataRequestData.MetadataRequest,
  errorCode: number,
): MetadataResponseData.MetadataResponseTopicIn[] {
  return (request.topics ?? []).map((t) => ({
    errorCode,
    name: t.name,
    topicId: t.topicId,
    isInternal: false,
  }))
}

function apiKeyOf(frame: Buffer): number {
  return frame.length >= 2 ? frame.readInt16BE(0) : -1
}

function apiName(apiKey: number): string {
  return API_NAMES.get(apiKey) ?? `api key ${apiKey}`
}

function decode(frame: Buffer): { api: Api; body: unknown; version: number; correlationId: number } | null {
  try {
    const decoded = decodeRequest(frame)
    if (decoded.kind !== 'ok') return null
    return {
      api: decoded.api,
      body: decoded.body,
      version: decoded.header.requestApiVersion,
      correlationId: readRequestPrefix(frame).correlationId,
    }
  } catch (e) {
    if (e instanceof DecodeError) return null
    throw e
  }
}

/**
 * SaslHandshake and SaslAuthenticate in a SASL listener's registry, so that ApiVersions advertises
 * them. The gate answers both itself; these answer only a request that reaches the dispatcher
 * without a gate (ILLEGAL_SASL_STATE, as Kafka's KafkaApis).
 */
export function saslApiHandlers(): Handler[] {
  return [
    defineHandler(apis.SaslHandshake, {}, () => ({ errorCode: ErrorCode.IllegalSaslState, mechanisms: [] })),
    defineHandler(apis.SaslAuthenticate, {}, () => ({
      errorCode: ErrorCode.IllegalSaslState,
      errorMessage: 'Unexpected SaslAuthenticate request',
    })),
  ]
}
