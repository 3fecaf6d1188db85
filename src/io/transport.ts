/**
 * The Transport port: outgoing byte streams to other nodes. `NodeTransport` uses TCP (node:net);
 * a simulation supplies its own. Framing and Kafka's protocol live above this, in `client/`.
 */
import { connect as netConnect, type Socket } from 'node:net'

/**
 * A byte stream to a peer. Callbacks run on the event loop; `onClose` runs exactly once. A chunk
 * given to `onData` is lent: valid only until that callback returns (`NodeTransport` reads every
 * socket read into one buffer per connection), so a reader copies what it keeps.
 */
export interface TransportConnection {
  /** Queues bytes; returns false when the peer is not keeping up (wait for `onDrain`). */
  write(pieces: readonly Buffer[]): boolean
  close(): void
  onData(fn: (chunk: Buffer) => void): void
  onDrain(fn: () => void): void
  onClose(fn: (error: Error | null) => void): void
}

export interface Transport {
  /** Opens a stream; rejects if it cannot within `timeoutMs`. */
  connect(
    address: { host: string; port: number },
    options: { timeoutMs: number },
  ): Promise<TransportConnection>
}

/** Bytes a connection's socket reads at most at once, into the one buffer it reuses. */
export const SOCKET_READ_BYTES = 64 * 1024

/** A connected socket (node:net's or node:tls's) as a TransportConnection. */
export class SocketConnection implements TransportConnection {
  readonly #socket: Socket
  /** The listeners of the socket's reads (into its reused buffer: `onread`). */
  readonly #dataFns: Array<(chunk: Buffer) => void>
  #closeFns: Array<(error: Error | null) => void> = []
  #closed = false
  #error: Error | null = null

  /** `mapError`: what `onClose` reports for a socket error (TLS names its alerts). */
  constructor(
    socket: Socket,
    dataFns: Array<(chunk: Buffer) => void>,
    mapError: (e: Error) => Error = (e) => e,
  ) {
    this.#socket = socket
    this.#dataFns = dataFns
    socket.setNoDelay(true)
    socket.on('error', (e) => {
      this.#error = mapError(e)
    })
    socket.on('close', () => {
      this.#closed = true
      for (const fn of this.#closeFns) fn(this.#error)
      this.#closeFns = []
    })
  }

  write(pieces: readonly Buffer[]): boolean {
    if (this.#closed) return false
    if (pieces.length === 1) return this.#socket.write(pieces[0]!)
    this.#socket.cork()
    let ok = true
    for (const p of pieces) ok = this.#socket.write(p)
    this.#socket.uncork()
    return ok
  }

  close(): void {
    this.#socket.destroy()
  }

  onData(fn: (chunk: Buffer) => void): void {
    this.#dataFns.push(fn)
  }

  onDrain(fn: () => void): void {
    this.#socket.on('drain', fn)
  }

  onClose(fn: (error: Error | null) => void): void {
    if (this.#closed) queueMicrotask(() => fn(this.#error))
    else this.#closeFns.push(fn)
  }
}

/** TCP through node:net. */
export const nodeTransport: Transport = {
  connect(address, options) {
    return new Promise((resolve, reject) => {
      // Every read lands in one buffer per connection instead of a new 64 KiB Buffer per read:
      // a follower receives each replicated byte on these (docs/performance.md).
      const dataFns: Array<(chunk: Buffer) => void> = []
      const readBuffer = Buffer.allocUnsafeSlow(SOCKET_READ_BYTES)
      const socket = netConnect({
        host: address.host,
        port: address.port,
        onread: {
          buffer: readBuffer,
          callback: (bytes: number) => {
            const chunk = readBuffer.subarray(0, bytes)
            for (const fn of dataFns) fn(chunk)
            return true
          },
        },
      })
      const timer = setTimeout(() => {
        socket.destroy()
        reject(
          new Error(`connect to ${address.host}:${address.port} timed out after ${options.timeoutMs} ms`),
        )
      }, options.timeoutMs)
      socket.once('connect', () => {
        clearTimeout(timer)
        socket.removeAllListeners('error')
        resolve(new SocketConnection(socket, dataFns))
      })
      socket.once('error', (e) => {
        clearTimeout(timer)
        reject(e)
      })
    })
  },
}
