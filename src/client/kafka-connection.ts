/**
 * A Kafka-protocol connection to one node: requests out with correlation ids, responses matched
 * back, bounded in-flight requests, per-request timeouts on the Clock port. Used by nodes talking
 * to each other and by the `weir` command; it knows nothing of what the requests mean.
 */
import {
  type Clock,
  type Random,
  systemRandom,
  type TimerHandle,
  TlsHandshakeError,
  type Transport,
  type TransportConnection,
} from '../io/index.ts'
import {
  type Api,
  apis,
  DecodeError,
  decodeResponse,
  ErrorCode,
  encodeRequest,
  errorInfo,
  FrameError,
  FrameReader,
} from '../protocol/index.ts'
import {
  createSaslClient,
  type SaslClientCredentials,
  SaslClientError,
  type SaslMechanism,
} from '../security/index.ts'

/** The connection closed or failed; every request on it fails with this. */
export class ConnectionError extends Error {
  override name = 'ConnectionError'
}

/**
 * SASL authentication failed (wrong credentials, a mechanism the listener does not enable): the
 * connection is closed. The message is the server's (Kafka's never holds a password) or names the step.
 */
export class SaslAuthenticationError extends ConnectionError {
  override name = 'SaslAuthenticationError'
  readonly errorCode: number

  constructor(message: string, errorCode: number) {
    super(message)
    this.errorCode = errorCode
  }
}

/** The TLS handshake failed (a certificate that does not verify or match, a refused protocol). */
export class SslAuthenticationError extends ConnectionError {
  override name = 'SslAuthenticationError'
}

/** A request got no response within its timeout; the connection is closed (Kafka does the same). */
export class RequestTimeoutError extends ConnectionError {
  override name = 'RequestTimeoutError'
}

export interface KafkaConnectionOptions {
  readonly clientId: string
  readonly clock: Clock
  readonly transport: Transport
  /** `request.timeout.ms` */
  readonly requestTimeoutMs: number
  /** `max.in.flight.requests.per.connection`: more wait in a queue. */
  readonly inFlightRequestsMax: number
  /** Largest response frame accepted. */
  readonly responseBytesMax: number
  /** `socket.connection.setup.timeout.ms` */
  readonly connectTimeoutMs: number
  /**
   * Where a response to `requestHeld` of at least `HELD_FRAME_BYTES_MIN` that spans socket reads is
   * assembled (the node's read-buffer pool), instead of a new buffer per response.
   */
  readonly frameBuffers?: FrameBuffers
  /**
   * SASL_PLAINTEXT and SASL_SSL (`ClientSecurity.sasl`): `open` authenticates with SaslHandshake v1
   * and SaslAuthenticate before handing the connection out, and retires it before the session
   * lifetime the server answers runs out (KIP-368), so its user opens a fresh one.
   */
  readonly sasl?: SaslClientCredentials | null
  /** The SCRAM client nonce and the retirement jitter; default `systemRandom`. */
  readonly random?: Random
}

/** A pool that lends buffers and takes them back (storage's `ReadBufferPool` is one). */
export interface FrameBuffers {
  acquire(length: number): Buffer
  /** The buffer behind `bytes` (a view of it is enough) goes back; a no-op for bytes it did not lend. */
  release(bytes: Uint8Array): void
}

/** Below this a response is copied out of the socket's reads as usual: pooling it saves nothing. */
export const HELD_FRAME_BYTES_MIN = 64 * 1024

/** A response body whose bytes may be lent by `frameBuffers`: `release` once done with them. */
export interface HeldResponse<Res> {
  readonly body: Res
  /** Gives the response's buffer back (once; later calls do nothing). Views of it are invalid after. */
  release(): void
}

interface Pending {
  readonly correlationId: number
  readonly api: Api<unknown, never, unknown, never>
  readonly version: number
  readonly resolve: (body: unknown) => void
  readonly reject: (e: Error) => void
  timer: TimerHandle | null
  /** `requestHeld`: its response may be assembled in `frameBuffers`, and resolves as a `HeldResponse`. */
  readonly held: boolean
}

interface Queued {
  readonly frame: Buffer[]
  readonly pending: Pending
  readonly timeoutMs: number
}

/** The versions a peer serves, from its ApiVersions response. */
export type PeerVersions = ReadonlyMap<number, { readonly minVersion: number; readonly maxVersion: number }>

/**
 * A response body. KIP-511: a broker that does not serve the ApiVersions version asked answers
 * UNSUPPORTED_VERSION in v0, so a body that does not parse at the version asked is read as v0.
 */
function decodeResponseOf(api: Api<unknown, never, unknown, never>, version: number, frame: Buffer): unknown {
  try {
    return decodeResponse(api, version, frame).body
  } catch (e) {
    if (!(e instanceof DecodeError) || api.apiKey !== apis.ApiVersions.apiKey || version === 0) throw e
    const v0 = decodeResponse(api, 0, frame).body as { errorCode: number }
    if (v0.errorCode === ErrorCode.None) throw e
    return v0
  }
}

export class KafkaConnection {
  readonly address: { readonly host: string; readonly port: number }
  readonly #conn: TransportConnection
  readonly #options: KafkaConnectionOptions
  readonly #frames: FrameReader
  readonly #inFlight = new Map<number, Pending>()
  readonly #queue: Queued[] = []
  #nextCorrelationId = 1
  #closedError: ConnectionError | null = null
  #peerVersions: PeerVersions | null = null
  /**
   * The SASL session nears its end: `closed` tells its users to open another; requests already
   * given are answered, and the connection closes once idle.
   */
  #retiring = false
  #retireTimer: TimerHandle | null = null

  private constructor(
    address: { host: string; port: number },
    conn: TransportConnection,
    options: KafkaConnectionOptions,
  ) {
    this.address = address
    this.#conn = conn
    this.#options = options
    // Transport chunks are lent (io/transport.ts): frames are copied out of them, into a pooled
    // buffer for a large response to `requestHeld` (its correlation id leads the frame).
    const buffers = options.frameBuffers
    this.#frames = new FrameReader({
      frameBytesMax: options.responseBytesMax,
      lentChunks: true,
      ...(buffers === undefined
        ? {}
        : {
            spanBuffer: (size: number, chunk: Buffer, at: number) =>
              size >= HELD_FRAME_BYTES_MIN &&
              chunk.length - at >= 4 &&
              this.#inFlight.get(chunk.readInt32BE(at))?.held === true
                ? buffers.acquire(size)
                : undefined,
          }),
    })
    conn.onData((chunk) => this.#onData(chunk))
    conn.onDrain(() => this.#flushQueue())
    conn.onClose((e) => {
      const message = `connection to ${this.#label()} closed${e ? `: ${e.message}` : ''}`
      this.#fail(
        e instanceof TlsHandshakeError ? new SslAuthenticationError(message) : new ConnectionError(message),
      )
    })
  }

  /** Connects, then asks ApiVersions so `versionFor` can pick versions both sides serve. */
  static async open(
    address: { host: string; port: number },
    options: KafkaConnectionOptions,
  ): Promise<KafkaConnection> {
    let conn: TransportConnection
    try {
      conn = await options.transport.connect(address, { timeoutMs: options.connectTimeoutMs })
    } catch (e) {
      const message = `cannot connect to ${address.host}:${address.port}: ${(e as Error).message}`
      throw e instanceof TlsHandshakeError
        ? new SslAuthenticationError(message)
        : new ConnectionError(message)
    }
    const c = new KafkaConnection(address, conn, options)
    try {
      await c.#negotiate()
      if (options.sasl != null) await c.#authenticate(options.sasl)
    } catch (e) {
      c.close() // a negotiation that failed without failing the connection must not leave it open
      throw e
    }
    return c
  }

  #label(): string {
    return `${this.address.host}:${this.address.port}`
  }

  /** Closed, or retiring at the end of its SASL session: open another one. */
  get closed(): boolean {
    return this.#closedError !== null || this.#retiring
  }

  get peerVersions(): PeerVersions {
    return this.#peerVersions ?? new Map()
  }

  async #negotiate(): Promise<void> {
    const ours = apis.ApiVersions.maxVersion
    let response = await this.request(apis.ApiVersions, ours, {
      clientSoftwareName: 'weir',
      clientSoftwareVersion: '0.1.0',
    })
    if (response.errorCode !== ErrorCode.None) {
      // KIP-511: the peer answered in v0 with its range; retry with the highest version it knows.
      const theirs = response.apiKeys.find((k) => k.apiKey === apis.ApiVersions.apiKey)
      if (theirs === undefined) throw new ConnectionError(`${this.#label()} does not serve ApiVersions`)
      response = await this.request(apis.ApiVersions, Math.min(ours, theirs.maxVersion), {
        clientSoftwareName: 'weir',
        clientSoftwareVersion: '0.1.0',
      })
    }
    this.#peerVersions = new Map(
      response.apiKeys.map((k) => [k.apiKey, { minVersion: k.minVersion, maxVersion: k.maxVersion }]),
    )
  }

  /**
   * SaslHandshake v1 names the mechanism, then SaslAuthenticate carries the mechanism's messages
   * until it completes (Kafka's SaslClientAuthenticator). A failure closes the connection.
   */
  async #authenticate(credentials: SaslClientCredentials): Promise<void> {
    const mechanism: SaslMechanism = credentials.mechanism
    const handshakeVersion = this.versionFor(apis.SaslHandshake)
    const authenticateVersion = this.versionFor(apis.SaslAuthenticate)
    if (handshakeVersion === undefined || handshakeVersion < 1 || authenticateVersion === undefined) {
      throw new SaslAuthenticationError(
        `${this.#label()} serves no SaslHandshake v1 and SaslAuthenticate: is its listener SASL?`,
        ErrorCode.IllegalSaslState,
      )
    }
    const handshake = await this.request(apis.SaslHandshake, handshakeVersion, { mechanism })
    if (handshake.errorCode !== ErrorCode.None) {
      throw new SaslAuthenticationError(
        `SASL mechanism ${mechanism} is not enabled on ${this.#label()} (it enables ${handshake.mechanisms.join(', ') || 'none'})`,
        handshake.errorCode,
      )
    }
    const options = this.#options
    const client = createSaslClient(credentials, {
      random: options.random ?? systemRandom,
      nowMs: () => options.clock.nowMs(),
    })
    let challenge: Buffer | null = null
    let lifetimeMs = 0n
    for (;;) {
      let response: Buffer | null
      try {
        response = client.respond(challenge)
      } catch (e) {
        if (!(e instanceof SaslClientError)) throw e
        throw new SaslAuthenticationError(
          `SASL ${mechanism} authentication to ${this.#label()} failed: ${e.message}`,
          ErrorCode.SaslAuthenticationFailed,
        )
      }
      if (response === null) break
      const answer = await this.request(apis.SaslAuthenticate, authenticateVersion, { authBytes: response })
      if (answer.errorCode !== ErrorCode.None) {
        const why = answer.errorMessage ?? errorInfo(answer.errorCode)?.name ?? `error ${answer.errorCode}`
        throw new SaslAuthenticationError(
          `SASL ${mechanism} authentication to ${this.#label()} failed: ${why}`,
          answer.errorCode,
        )
      }
      challenge = answer.authBytes
      lifetimeMs = answer.sessionLifetimeMs
    }
    if (lifetimeMs > 0n) {
      // Kafka's client re-authenticates at 85-95% of the lifetime; this one retires the connection
      // there instead, and its user opens a fresh, freshly authenticated, one.
      const random = options.random ?? systemRandom
      const atMs = Math.max(1, Math.floor(Number(lifetimeMs) * (0.85 + 0.1 * random.nextFloat())))
      this.#retireTimer = options.clock.setTimer(atMs, () => {
        this.#retireTimer = null
        this.#retiring = true
        this.#closeIfRetiredAndIdle()
      })
    }
  }

  #closeIfRetiredAndIdle(): void {
    if (
      this.#retiring &&
      this.#inFlight.size === 0 &&
      this.#queue.length === 0 &&
      this.#closedError === null
    ) {
      this.#fail(new ConnectionError(`connection to ${this.#label()} retired: its SASL session ends`))
    }
  }

  /** The highest version of `api` both sides serve, or undefined when there is none. */
  versionFor(api: Api<unknown, never, unknown, never>): number | undefined {
    const theirs = this.#peerVersions?.get(api.apiKey)
    if (theirs === undefined) return undefined
    const max = Math.min(theirs.maxVersion, api.maxVersion)
    return max >= Math.max(theirs.minVersion, api.minVersion) ? max : undefined
  }

  /** Sends a request and resolves with the decoded response body. */
  request<Res, ReqIn>(
    api: Api<unknown, ReqIn, Res, never>,
    version: number,
    body: ReqIn,
    options: { timeoutMs?: number } = {},
  ): Promise<Res> {
    return this.#request(api, version, body, options, false) as Promise<Res>
  }

  /**
   * As `request`, but the body's byte fields may be views of a buffer lent by `frameBuffers`: the
   * caller releases it once done with them (a log that keeps appended bytes retains them itself).
   */
  requestHeld<Res, ReqIn>(
    api: Api<unknown, ReqIn, Res, never>,
    version: number,
    body: ReqIn,
    options: { timeoutMs?: number } = {},
  ): Promise<HeldResponse<Res>> {
    return this.#request(api, version, body, options, true) as Promise<HeldResponse<Res>>
  }

  #request<Res, ReqIn>(
    api: Api<unknown, ReqIn, Res, never>,
    version: number,
    body: ReqIn,
    options: { timeoutMs?: number },
    held: boolean,
  ): Promise<unknown> {
    if (this.#closedError !== null) return Promise.reject(this.#closedError)
    const correlationId = this.#nextCorrelationId
    this.#nextCorrelationId = (this.#nextCorrelationId % 0x7fffffff) + 1
    let frame: Buffer[]
    try {
      frame = encodeRequest(
        api,
        { requestApiVersion: version, correlationId, clientId: this.#options.clientId },
        body,
      )
    } catch (e) {
      return Promise.reject(e)
    }
    return new Promise<unknown>((resolve, reject) => {
      const pending: Pending = {
        correlationId,
        api: api as unknown as Api<unknown, never, unknown, never>,
        version,
        resolve,
        reject,
        timer: null,
        held,
      }
      this.#queue.push({ frame, pending, timeoutMs: options.timeoutMs ?? this.#options.requestTimeoutMs })
      this.#flushQueue()
    })
  }

  /** Sends a request that gets no response (Produce with acks=0). */
  send<ReqIn>(api: Api<unknown, ReqIn, unknown, never>, version: number, body: ReqIn): void {
    if (this.#closedError !== null) throw this.#closedError
    const correlationId = this.#nextCorrelationId
    this.#nextCorrelationId = (this.#nextCorrelationId % 0x7fffffff) + 1
    this.#conn.write(
      encodeRequest(
        api,
        { requestApiVersion: version, correlationId, clientId: this.#options.clientId },
        body,
      ),
    )
  }

  #flushQueue(): void {
    while (this.#queue.length > 0 && this.#inFlight.size < this.#options.inFlightRequestsMax) {
      const q = this.#queue.shift()!
      const p = q.pending
      this.#inFlight.set(p.correlationId, p)
      p.timer = this.#options.clock.setTimer(q.timeoutMs, () => {
        p.timer = null
        this.#fail(
          new RequestTimeoutError(
            `${p.api.name} to ${this.#label()} got no response within ${q.timeoutMs} ms`,
          ),
        )
      })
      this.#conn.write(q.frame)
    }
  }

  #onData(chunk: Buffer): void {
    try {
      this.#frames.push(chunk)
      for (let frame = this.#frames.next(); frame !== null; frame = this.#frames.next()) this.#onFrame(frame)
    } catch (e) {
      if (e instanceof FrameError || e instanceof DecodeError) {
        this.#fail(new ConnectionError(`bad response from ${this.#label()}: ${e.message}`))
        return
      }
      throw e
    }
  }

  #onFrame(frame: Buffer): void {
    if (frame.length < 4) throw new DecodeError('response shorter than its header')
    const correlationId = frame.readInt32BE(0)
    const p = this.#inFlight.get(correlationId)
    if (p === undefined) {
      this.#options.frameBuffers?.release(frame) // none is lent to such a frame today: defensive
      throw new DecodeError(`response with unknown correlation id ${correlationId}`)
    }
    this.#inFlight.delete(correlationId)
    if (p.timer !== null) this.#options.clock.clearTimer(p.timer)
    let body: unknown
    try {
      body = decodeResponseOf(p.api, p.version, frame)
    } catch (e) {
      this.#options.frameBuffers?.release(frame)
      // The request is out of #inFlight already: settle it here, or it would wait forever.
      const error =
        e instanceof DecodeError
          ? new ConnectionError(`bad ${p.api.name} response from ${this.#label()}: ${e.message}`)
          : (e as Error)
      p.reject(error)
      throw e
    }
    if (p.held) {
      const buffers = this.#options.frameBuffers
      let held = buffers !== undefined
      p.resolve({
        body,
        release: () => {
          if (held) buffers!.release(frame)
          held = false
        },
      } satisfies HeldResponse<unknown>)
    } else p.resolve(body)
    this.#flushQueue()
    this.#closeIfRetiredAndIdle()
  }

  #fail(error: ConnectionError): void {
    if (this.#closedError !== null) return
    this.#closedError = error
    if (this.#retireTimer !== null) this.#options.clock.clearTimer(this.#retireTimer)
    this.#retireTimer = null
    this.#conn.close()
    // A response being assembled in a lent buffer goes back (a no-op for any other).
    const partial = this.#frames.abandonPartial()
    if (partial !== null) this.#options.frameBuffers?.release(partial)
    for (const p of this.#inFlight.values()) {
      if (p.timer !== null) this.#options.clock.clearTimer(p.timer)
      p.reject(error)
    }
    this.#inFlight.clear()
    for (const q of this.#queue.splice(0)) q.pending.reject(error)
  }

  close(): void {
    this.#fail(new ConnectionError(`connection to ${this.#label()} closed by us`))
  }
}
