// A recording TCP proxy for the Kafka protocol: forwards every byte unchanged between clients and one
// broker on 127.0.0.1, and on the side splits both directions into frames (int32 size prefix) and
// pairs each request with its response by correlation id. It never rewrites, reorders or drops bytes.
//
// Kafka's Metadata and FindCoordinator answers carry the broker's advertised host:port, so the broker
// must advertise this proxy's port (tools/kafka/kafka.ts `advertisedPort`) or clients would leave the
// proxy after bootstrap.
import { createConnection, createServer, type Server, type Socket } from 'node:net'

const host = '127.0.0.1'

/** A frame larger than this (bytes, without the size prefix) is treated as garbage: stop parsing. */
const frameBytesMax = 64 * 1024 * 1024

/** One request frame, and the response frame with the same correlation id if one came. */
export interface Exchange {
  /** Which accepted connection (1, 2, ...) carried it. */
  connection: number
  /** Position among all requests seen by this proxy (0, 1, ...). */
  sequence: number
  /** The label given to `RecordingProxy.setLabel` when the connection was accepted (e.g. the client's name). */
  connectionLabel: string
  /** The label current when the request arrived (e.g. the scenario step). */
  requestLabel: string
  apiKey: number
  apiVersion: number
  correlationId: number
  clientId: string | null
  /** The request frame without its 4-byte size prefix, exactly as the client sent it. */
  request: Buffer
  /** The response frame without its size prefix, exactly as the broker sent it; null if none came. */
  response: Buffer | null
}

export interface ProxyOptions {
  /** The port to listen on (0: a free one); the broker must advertise it. */
  listenPort: number
  /** The broker's real listener port on 127.0.0.1. */
  targetPort: number
}

export interface RecordingProxy {
  port: number
  /** Every request seen so far, in arrival order, responses filled in as they come. */
  exchanges: Exchange[]
  /** Sets the connection label for connections accepted from now on, and the request label. */
  setLabel(connectionLabel: string, requestLabel: string): void
  /** Sets the request label only. */
  setRequestLabel(requestLabel: string): void
  /** Destroys all open connections (both sides). */
  closeConnections(): void
  /** Stops listening and closes everything. */
  stop(): Promise<void>
}

/** Splits a byte stream into Kafka frames (the payload after each int32 size prefix). */
class FrameSplitter {
  private pending: Buffer[] = []
  private pendingBytes = 0
  private broken = false
  private readonly onFrame: (frame: Buffer) => void

  constructor(onFrame: (frame: Buffer) => void) {
    this.onFrame = onFrame
  }

  push(chunk: Buffer): void {
    if (this.broken) return
    this.pending.push(chunk)
    this.pendingBytes += chunk.length
    for (;;) {
      if (this.pendingBytes < 4) return
      const head = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending)
      this.pending = [head]
      const size = head.readInt32BE(0)
      if (size < 0 || size > frameBytesMax) {
        this.broken = true
        this.pending = []
        return
      }
      if (head.length < 4 + size) return
      // Copy: the proxy forwards `chunk` to the other socket, whose buffer must stay untouched.
      this.onFrame(Buffer.from(head.subarray(4, 4 + size)))
      const rest = head.subarray(4 + size)
      this.pending = rest.length > 0 ? [rest] : []
      this.pendingBytes = rest.length
    }
  }
}

function parseRequestHeader(frame: Buffer): {
  apiKey: number
  apiVersion: number
  correlationId: number
  clientId: string | null
} | null {
  if (frame.length < 10) return null
  const clientIdLength = frame.readInt16BE(8)
  if (clientIdLength >= 0 && frame.length < 10 + clientIdLength) return null
  return {
    apiKey: frame.readInt16BE(0),
    apiVersion: frame.readInt16BE(2),
    correlationId: frame.readInt32BE(4),
    // The request header's clientId is a classic nullable string even in flexible versions (KIP-482).
    clientId: clientIdLength < 0 ? null : frame.toString('utf8', 10, 10 + clientIdLength),
  }
}

/** Starts a recording proxy from 127.0.0.1:`listenPort` to 127.0.0.1:`targetPort`. */
export function startProxy(options: ProxyOptions): Promise<RecordingProxy> {
  const exchanges: Exchange[] = []
  const sockets = new Set<Socket>()
  let connectionLabel = ''
  let requestLabel = ''
  let connections = 0

  const server: Server = createServer((client) => {
    const connection = ++connections
    const label = connectionLabel
    const inFlight = new Map<number, Exchange>()
    const upstream = createConnection({ host, port: options.targetPort })
    sockets.add(client)
    sockets.add(upstream)
    client.setNoDelay(true)
    upstream.setNoDelay(true)

    const requests = new FrameSplitter((frame) => {
      const header = parseRequestHeader(frame)
      if (header === null) return
      const exchange: Exchange = {
        connection,
        sequence: exchanges.length,
        connectionLabel: label,
        requestLabel,
        ...header,
        request: frame,
        response: null,
      }
      exchanges.push(exchange)
      inFlight.set(header.correlationId, exchange)
    })
    const responses = new FrameSplitter((frame) => {
      if (frame.length < 4) return
      const correlationId = frame.readInt32BE(0)
      const exchange = inFlight.get(correlationId)
      if (exchange === undefined) return
      inFlight.delete(correlationId)
      exchange.response = frame
    })

    // Bytes are forwarded as they arrive; the splitters only read them.
    client.on('data', (chunk) => {
      requests.push(chunk)
      if (!upstream.write(chunk)) client.pause()
    })
    upstream.on('drain', () => client.resume())
    upstream.on('data', (chunk) => {
      responses.push(chunk)
      if (!client.write(chunk)) upstream.pause()
    })
    client.on('drain', () => upstream.resume())
    const close = (): void => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('end', () => upstream.end())
    upstream.on('end', () => client.end())
    client.on('close', close)
    upstream.on('close', close)
    client.on('error', close)
    upstream.on('error', close)
  })

  return new Promise((done, fail) => {
    server.once('error', fail)
    server.listen(options.listenPort, host, () => {
      const address = server.address()
      if (address === null || typeof address === 'string') throw new Error('proxy: no port')
      const closeConnections = (): void => {
        for (const socket of sockets) socket.destroy()
        sockets.clear()
      }
      done({
        port: address.port,
        exchanges,
        setLabel(connection, request) {
          connectionLabel = connection
          requestLabel = request
        },
        setRequestLabel(request) {
          requestLabel = request
        },
        closeConnections,
        stop: () =>
          new Promise((closed) => {
            closeConnections()
            server.close(() => closed())
          }),
      })
    })
  })
}
