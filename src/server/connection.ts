/**
 * One client connection: frames in, responses out, in order. Like Kafka, a connection's requests
 * are handled one at a time (pipelined requests wait their turn), so responses keep request order.
 */
import type { Socket } from 'node:net'
import type { Clock, TimerHandle } from '../io/index.ts'
import { FrameError, FrameReader } from '../protocol/index.ts'
import { correlationIdOf, type Dispatcher } from './dispatcher.ts'

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
  /** `connections.max.idle.ms`: a connection with no traffic for this long is closed. */
  readonly connectionsMaxIdleMs: number
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
  readonly #dispatcher: Dispatcher
  readonly #limits: ConnectionLimits
  readonly #clock: Clock
  readonly #events: ConnectionEvents
  readonly #listenerName: string
  readonly #frames: FrameReader
  readonly #queue: Buffer[] = []
  #queuedBytes = 0
  #processing = false
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
      dispatcher: Dispatcher
      limits: ConnectionLimits
      clock: Clock
      events: ConnectionEvents
      listenerName: string
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
    this.#frames = new FrameReader({ frameBytesMax: options.limits.requestBytesMax })
    this.#lastActivityMs = this.#clock.monotonicMs()
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
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

  /** True while a request is queued or being handled. */
  get busy(): boolean {
    return this.#processing || this.#queue.length > 0
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
        this.#queue.length >= this.#limits.inFlightRequestsMax ||
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

  /** Handles queued frames one at a time while the socket accepts writes. */
  #pump(): void {
    if (this.#processing || this.#closed) return
    if (this.#socket.writableNeedDrain) return
    const frame = this.#queue.shift()
    if (frame === undefined) {
      this.#resolveDrained()
      return
    }
    this.#queuedBytes -= frame.length
    this.#processing = true
    void this.#handle(frame)
  }

  async #handle(frame: Buffer): Promise<void> {
    try {
      const result = await this.#dispatcher.dispatch(frame, {
        connectionId: this.id,
        clientAddress: this.clientAddress,
        listenerName: this.#listenerName,
      })
      if (this.#closed) return
      if (result.kind === 'close') {
        const cid = correlationIdOf(frame)
        this.#events.onProtocolError(this.id, `${result.reason} (correlation id ${cid ?? '?'})`)
        this.close()
        return
      }
      if (result.kind === 'response') {
        this.#socket.cork()
        for (const piece of result.frame) this.#socket.write(piece)
        this.#socket.uncork()
        this.#lastActivityMs = this.#clock.monotonicMs()
      }
    } catch (e) {
      this.#events.onHandlerError(this.id, e)
      this.close()
      return
    } finally {
      this.#processing = false
    }
    if (this.#readerPaused && !this.#readingStopped) this.#readFrames()
    else this.#pump()
  }

  #armIdleTimer(): void {
    const idleMs = this.#limits.connectionsMaxIdleMs
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
    this.#queue.length = 0
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
