/**
 * One client connection: frames in, responses out, in request order. Like Kafka, a connection's
 * requests are handled one at a time, with one exception: consecutive Produce requests overlap.
 * Each starts (decodes and appends, in arrival order) while the ones before it wait for their acks
 * (the fsync with acks=all), so one group-commit fsync covers them all; responses still leave in
 * request order. Any other request waits until everything before it was answered.
 */
import type { Socket } from 'node:net'
import type { Clock, TimerHandle } from '../io/index.ts'
import { FrameError, FrameReader } from '../protocol/index.ts'
import type { ReadBuffers } from '../storage/index.ts'
import { correlationIdOf, type DispatchResult } from './dispatcher.ts'
import type { FrameHandler } from './sasl-authenticator.ts'

/** The api key of a request frame (its first two bytes). Produce is 0. */
const PRODUCE_API_KEY = 0
/**
 * Produce frames from this size that span socket reads are assembled in a buffer of the node's
 * pool (`frameBuffers`) rather than a new one: the pool's granule, below which a frame is cheap.
 */
const POOLED_FRAME_BYTES_MIN = 64 * 1024

/** A request being handled; its response is written once every earlier one was. */
interface InFlight {
  readonly frame: Buffer
  readonly produce: boolean
  /** Set when the handler finished: the response, or the error it threw. */
  outcome: { readonly result: DispatchResult } | { readonly error: unknown } | null
}

/** How long a gracefully closed socket may take to flush before it is destroyed. */
const GRACEFUL_CLOSE_MS = 1000

/** Per-connection limits, with Kafka's config names where Kafka has one. */
export interface ConnectionLimits {
  /** `socket.request.max.bytes`: a larger frame closes the connection before it is buffered. */
  readonly requestBytesMax: number
  /** Frames read ahead and waiting their turn; past it the socket stops being read. */
  readonly inFlightRequestsMax: number
  /** Bytes of frames read ahead and waiting; past it the socket stops being read. */
  readonly inFlightBytesMax: number
  /** `connections.max.idle.ms`: a connection with no traffic for this long is closed; negative: never. */
  readonly connectionsIdleMsMax: number
}

export interface ConnectionEvents {
  /** A connection closed because of what its peer sent (malformed frame, unknown api, ...). */
  readonly onProtocolError: (connectionId: number, reason: string) => void
  /** A handler threw: a bug. The connection closes; the node goes on. */
  readonly onHandlerError: (connectionId: number, error: unknown) => void
  readonly onClose: (connection: Connection) => void
}

export class Connection {
  readonly id: number
  readonly clientAddress: string
  readonly #socket: Socket
  readonly #dispatcher: FrameHandler
  readonly #limits: ConnectionLimits
  readonly #clock: Clock
  readonly #events: ConnectionEvents
  readonly #listenerName: string
  readonly #frames: FrameReader
  readonly #frameBuffers: ReadBuffers | undefined
  /** The memory of frames assembled in `#frameBuffers` and not yet released. */
  readonly #pooledFrames = new Set<ArrayBufferLike>()
  readonly #queue: Buffer[] = []
  /** Bytes of the frames queued or in flight (their responses not yet written). */
  #queuedBytes = 0
  /** Requests started and not yet answered, in request order: one, or consecutive Produces. */
  readonly #inFlight: InFlight[] = []
  #closed = false
  /** The socket is paused because the queue is full. */
  #readerPaused = false
  /** Shutting down: no new frames are taken, queued ones are still answered. */
  #readingStopped = false
  #idleTimer: TimerHandle | null = null
  #destroyTimer: TimerHandle | null = null
  #lastActivityMs: number
  #drainWaiters: Array<() => void> = []

  constructor(
    socket: Socket,
    id: number,
    options: {
      /** The node's dispatcher, or a gate in front of it (SASL listeners). */
      dispatcher: FrameHandler
      limits: ConnectionLimits
      clock: Clock
      events: ConnectionEvents
      listenerName: string
      /** Told the size of every socket read (the node's `ReadGcPacer`). */
      onRead?: (bytes: number) => void
      /**
       * Where Produce frames of 64 KiB and more that span socket reads are assembled (the node's
       * pool). The connection holds such a frame until its request was answered and the response
       * written (or dropped); the log retains the bytes it appends (`PartitionLogOptions.pool`).
       * Produce only: its records go to logs that retain them, while other requests' decoded bytes
       * (a JoinGroup's metadata, say) may be kept as views for longer.
       */
      frameBuffers?: ReadBuffers
    },
  ) {
    this.id = id
    this.#socket = socket
    this.clientAddress = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`
    this.#dispatcher = options.dispatcher
    this.#limits = options.limits
    this.#clock = options.clock
    this.#events = options.events
    this.#listenerName = options.listenerName
    const pool = options.frameBuffers
    this.#frameBuffers = pool
    this.#frames = new FrameReader({
      frameBytesMax: options.limits.requestBytesMax,
      ...(pool === undefined
        ? {}
        : {
            spanBuffer: (size: number, chunk: Buffer, at: number) => {
              if (size < POOLED_FRAME_BYTES_MIN || chunk.length - at < 2) return undefined
              if (chunk.readInt16BE(at) !== PRODUCE_API_KEY) return undefined
              const buf = pool.acquire(size)
              this.#pooledFrames.add(buf.buffer)
              return buf
            },
          }),
    })
    this.#lastActivityMs = this.#clock.monotonicMs()
    socket.setNoDelay(true)
    const onRead = options.onRead
    socket.on(
      'data',
      onRead === undefined
        ? (chunk: Buffer) => this.#onData(chunk)
        : (chunk: Buffer) => {
            this.#onData(chunk)
            onRead(chunk.length)
          },
    )
    socket.on('error', () => this.close())
    socket.on('close', () => {
      if (this.#destroyTimer !== null) this.#clock.clearTimer(this.#destroyTimer)
      this.close()
    })
    socket.on('drain', () => this.#pump())
    this.#armIdleTimer()
  }

  get closed(): boolean {
    return this.#closed
  }

  /** When the connection last read a request or wrote a response (the clock's monotonic ms). */
  get lastActivityMs(): number {
    return this.#lastActivityMs
  }

  /** True while a request is queued or being handled. */
  get busy(): boolean {
    return this.#inFlight.length > 0 || this.#queue.length > 0
  }

  #onData(chunk: Buffer): void {
    this.#lastActivityMs = this.#clock.monotonicMs()
    try {
      this.#frames.push(chunk)
    } catch (e) {
      this.#protocolError(e)
      return
    }
    this.#readFrames()
  }

  /** Moves frames from the reader into the queue while there is room, then handles them. */
  #readFrames(): void {
    while (!this.#closed && !this.#readingStopped) {
      if (
        this.#queue.length + this.#inFlight.length >= this.#limits.inFlightRequestsMax ||
        this.#queuedBytes >= this.#limits.inFlightBytesMax
      ) {
        if (!this.#readerPaused) {
          this.#readerPaused = true
          this.#socket.pause()
        }
        break
      }
      let frame: Buffer | null
      try {
        frame = this.#frames.next()
      } catch (e) {
        this.#protocolError(e)
        return
      }
      if (frame === null) {
        if (this.#readerPaused) {
          this.#readerPaused = false
          this.#socket.resume()
        }
        break
      }
      this.#queue.push(frame)
      this.#queuedBytes += frame.length
    }
    this.#pump()
  }

  #protocolError(e: unknown): void {
    if (e instanceof FrameError) {
      this.#events.onProtocolError(this.id, e.message)
      this.close()
      return
    }
    throw e
  }

  /**
   * Starts queued frames while the socket accepts writes: the next one when nothing is in flight,
   * or a Produce after Produces only.
   */
  #pump(): void {
    while (!this.#closed && !this.#socket.writableNeedDrain) {
      const frame = this.#queue[0]
      if (frame === undefined) {
        this.#resolveDrained()
        return
      }
      const produce = frame.length >= 2 && frame.readInt16BE(0) === PRODUCE_API_KEY
      const inFlight = this.#inFlight
      if (inFlight.length > 0 && !(produce && inFlight[inFlight.length - 1]!.produce)) return
      this.#queue.shift()
      const entry: InFlight = { frame, produce, outcome: null }
      inFlight.push(entry)
      this.#dispatcher
        .dispatch(frame, {
          connectionId: this.id,
          clientAddress: this.clientAddress,
          listenerName: this.#listenerName,
        })
        .then(
          (result) => {
            entry.outcome = { result }
            if (this.#closed) this.#dropped(entry)
            else this.#answer()
          },
          (error: unknown) => {
            entry.outcome = { error }
            if (this.#closed) this.#dropped(entry)
            else this.#answer()
          },
        )
    }
  }

  /** Writes the responses that are ready, in request order, then takes the next frames. */
  #answer(): void {
    if (this.#closed) return
    const inFlight = this.#inFlight
    let corked = false
    while (inFlight.length > 0 && inFlight[0]!.outcome !== null) {
      const { frame, outcome } = inFlight.shift()!
      this.#queuedBytes -= frame.length
      const pooled = this.#pooledFrames.has(frame.buffer)
      if (pooled && (!('result' in outcome!) || outcome.result.kind !== 'response')) this.#releaseFrame(frame)
      if ('error' in outcome!) {
        if (corked) this.#socket.uncork()
        this.#events.onHandlerError(this.id, outcome.error)
        this.close()
        return
      }
      const result = outcome!.result
      if (result.kind === 'close') {
        if (corked) this.#socket.uncork()
        const cid = correlationIdOf(frame)
        this.#events.onProtocolError(this.id, `${result.reason} (correlation id ${cid ?? '?'})`)
        if (result.frame === undefined) {
          this.close()
          return
        }
        for (const piece of result.frame) this.#socket.write(piece)
        this.close(true)
        return
      }
      if (result.kind === 'response') {
        if (!corked) {
          this.#socket.cork()
          corked = true
        }
        const pieces = result.frame
        const last = pieces.length - 1
        for (let i = 0; i < last; i++) this.#socket.write(pieces[i]!)
        // Called once the bytes are with the kernel, or the write failed or was cancelled.
        const done = result.done
        const written = pooled
          ? () => {
              done?.()
              this.#releaseFrame(frame)
            }
          : done
        this.#socket.write(pieces[last]!, written === undefined ? undefined : () => written())
      }
    }
    if (corked) {
      this.#socket.uncork()
      this.#lastActivityMs = this.#clock.monotonicMs()
    }
    if (this.#readerPaused && !this.#readingStopped) this.#readFrames()
    else this.#pump()
  }

  /**
   * A request answered but never to be written (its connection closed): its response's memory and
   * its frame are free. Called once per request, after its handler is done.
   */
  #dropped(entry: InFlight): void {
    const outcome = entry.outcome
    if (outcome !== null && 'result' in outcome && outcome.result.kind === 'response') outcome.result.done?.()
    this.#releaseFrame(entry.frame)
  }

  /** The connection's hold on a pooled frame ends (a no-op for any other frame, or a second time). */
  #releaseFrame(frame: Buffer): void {
    if (this.#pooledFrames.delete(frame.buffer)) this.#frameBuffers!.release(frame)
  }

  #armIdleTimer(): void {
    const idleMs = this.#limits.connectionsIdleMsMax
    // A negative value turns idle expiry off, as in Kafka's Selector.
    if (idleMs < 0) return
    const due = this.#lastActivityMs + idleMs - this.#clock.monotonicMs()
    this.#idleTimer = this.#clock.setTimer(Math.max(due, 1), () => {
      this.#idleTimer = null
      if (this.#closed) return
      if (!this.busy && this.#clock.monotonicMs() - this.#lastActivityMs >= idleMs) {
        this.close()
        return
      }
      this.#armIdleTimer()
    })
  }

  #resolveDrained(): void {
    if (this.busy) return
    const waiters = this.#drainWaiters
    this.#drainWaiters = []
    for (const w of waiters) w()
  }

  /** Resolves once nothing is queued or being handled (or the connection closed). */
  drained(): Promise<void> {
    if (!this.busy || this.#closed) return Promise.resolve()
    return new Promise((resolve) => this.#drainWaiters.push(resolve))
  }

  /** Stops reading new requests; what is queued still gets answered. */
  stopReading(): void {
    this.#readingStopped = true
    this.#socket.pause()
  }

  /**
   * Closes the connection. `graceful` flushes what was written before closing (a shutdown);
   * otherwise the socket is destroyed at once (a protocol error).
   */
  close(graceful = false): void {
    if (this.#closed) return
    this.#closed = true
    if (this.#idleTimer !== null) this.#clock.clearTimer(this.#idleTimer)
    for (const frame of this.#queue) this.#releaseFrame(frame)
    const partial = this.#frames.abandonPartial()
    if (partial !== null) this.#releaseFrame(partial)
    this.#queue.length = 0
    // A request still being handled is dropped once its handler is done (`#pump`).
    for (const entry of this.#inFlight) if (entry.outcome !== null) this.#dropped(entry)
    this.#inFlight.length = 0
    this.#queuedBytes = 0
    if (graceful) {
      this.#socket.end()
      // A peer that never reads must not hold the shutdown: destroy after a short grace.
      this.#destroyTimer = this.#clock.setTimer(GRACEFUL_CLOSE_MS, () => this.#socket.destroy())
    } else {
      this.#socket.destroy()
    }
    const waiters = this.#drainWaiters
    this.#drainWaiters = []
    for (const w of waiters) w()
    this.#events.onClose(this)
  }
}
