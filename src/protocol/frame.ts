/**
 * Kafka's framing over a byte stream: an int32 big-endian size, then that many bytes. Pure: bytes
 * in, frames out; the connection owns the socket and closes it on a `FrameError`.
 */
import { assert } from '../model/index.ts'

/** Kafka's `socket.request.max.bytes` default: 100 MiB. */
export const FRAME_BYTES_MAX_DEFAULT = 104_857_600
/** The size prefix is an int32, so no frame can claim more. */
const FRAME_BYTES_LIMIT = 2 ** 31 - 1
const HEADER_BYTES = 4

/** A size prefix no frame may have. Kafka's `InvalidReceiveException`: the connection must close. */
export class FrameError extends Error {
  override name = 'FrameError'
  /** The size the header claimed. */
  readonly size: number
  readonly frameBytesMax: number

  constructor(size: number, frameBytesMax: number) {
    super(
      size < 0
        ? `invalid frame size ${size}: negative`
        : `invalid frame size ${size}: larger than frameBytesMax ${frameBytesMax}`,
    )
    this.size = size
    this.frameBytesMax = frameBytesMax
  }
}

/**
 * Where a frame that spans chunks is assembled: given the frame's size and the chunk holding its
 * first body bytes (from `at`, at least one), a buffer of at least `size` bytes, or undefined for a
 * new one of the frame's own.
 */
export type SpanBuffer = (size: number, chunk: Buffer, at: number) => Buffer | undefined

/**
 * Splits a byte stream into frames, copying as little as it can. Feed each chunk with `push`, then
 * call `next` until it returns null; only then push the next chunk:
 *
 * ```ts
 * socket.on('data', (chunk) => {
 *   reader.push(chunk)
 *   for (let frame = reader.next(); frame !== null; frame = reader.next()) handle(frame)
 * })
 * ```
 *
 * Pulling frames one at a time lets the caller stop between frames (a full in-flight queue) with
 * nothing parsed ahead: pause the socket, and resume calling `next` later.
 *
 * - A frame whose body lies wholly inside one chunk is returned as a view (`subarray`) of that chunk,
 *   even when its size prefix came in an earlier chunk. The view keeps the whole chunk alive and
 *   sees later writes to it: do not reuse a pushed chunk, and copy a frame kept for long.
 * - A frame whose body spans chunks is assembled into one buffer of its own, allocated once at the
 *   frame's size when its first body bytes arrive, or taken from `spanBuffer` when it gives one
 *   (a pooled buffer; the frame returned is then a view of it).
 * - The size is checked as soon as its 4 bytes are seen, before any body byte is buffered: a
 *   negative size or one above `frameBytesMax` throws `FrameError`, and so does every later call.
 * - A zero-length frame is returned as an empty buffer. Kafka rejects it as a request (it has no
 *   header); that decision belongs to the caller, not to the framing.
 * - Memory between chunks is bounded: at most 4 header bytes and one partly received frame.
 * - With `lentChunks`, a pushed chunk is only valid until `next` has returned null (a socket's
 *   reused read buffer): a frame inside one chunk is returned as a copy of its own instead.
 */
export class FrameReader {
  readonly frameBytesMax: number
  readonly #lentChunks: boolean
  #chunk: Buffer | null = null
  #chunkOffset = 0
  /** The size prefix when it arrives split across chunks. */
  readonly #header = Buffer.alloc(HEADER_BYTES)
  #headerFill = 0
  /** The size of the frame in progress, once its header is complete; -1 between frames. */
  #frameSize = -1
  /** The body of a frame that spans chunks, and how much of it has arrived. */
  #partial: Buffer | null = null
  #partialFill = 0
  #error: FrameError | null = null
  readonly #spanBuffer: SpanBuffer | undefined

  constructor(options: { frameBytesMax?: number; lentChunks?: boolean; spanBuffer?: SpanBuffer } = {}) {
    this.#lentChunks = options.lentChunks ?? false
    this.#spanBuffer = options.spanBuffer
    const frameBytesMax = options.frameBytesMax ?? FRAME_BYTES_MAX_DEFAULT
    assert(
      Number.isInteger(frameBytesMax) && frameBytesMax >= 0 && frameBytesMax <= FRAME_BYTES_LIMIT,
      `frameBytesMax must be an integer in [0, 2^31 - 1], got ${frameBytesMax}`,
    )
    this.frameBytesMax = frameBytesMax
  }

  /** Hand over the next chunk of the stream. The previous chunk must be drained (`next` gave null). */
  push(chunk: Buffer): void {
    assert(this.#chunk === null, 'FrameReader.push: call next() until it returns null first')
    if (chunk.length > 0) {
      this.#chunk = chunk
      this.#chunkOffset = 0
    }
  }

  /**
   * The next complete frame (its body, without the size prefix), or null when the bytes pushed so
   * far hold no further complete frame. Throws `FrameError` on a bad size prefix.
   */
  next(): Buffer | null {
    if (this.#error !== null) throw this.#error
    if (this.#frameSize < 0 && !this.#readHeader()) return null
    const size = this.#frameSize
    const chunk = this.#chunk
    const available = chunk === null ? 0 : chunk.length - this.#chunkOffset

    if (this.#partial === null) {
      if (available >= size) {
        // The whole body is in this chunk: a view, no copy (a copy when the chunk is lent).
        const start = this.#chunkOffset
        const frame =
          chunk === null
            ? Buffer.alloc(0)
            : this.#lentChunks
              ? Buffer.from(chunk.subarray(start, start + size))
              : chunk.subarray(start, start + size)
        this.#consume(size)
        this.#frameSize = -1
        return frame
      }
      if (available === 0) return null
      // The body spans chunks: allocate it once, at its size, outside Node's shared pool so a kept
      // frame pins only its own bytes (or take the caller's buffer). Every byte is written before it
      // is read.
      const given = this.#spanBuffer?.(size, chunk!, this.#chunkOffset)
      if (given !== undefined) assert(given.length >= size, 'spanBuffer gave a buffer shorter than the frame')
      this.#partial = given === undefined ? Buffer.allocUnsafeSlow(size) : given
      this.#partialFill = 0
    }

    const partial = this.#partial
    const take = Math.min(available, size - this.#partialFill)
    if (take > 0) {
      chunk!.copy(partial, this.#partialFill, this.#chunkOffset, this.#chunkOffset + take)
      this.#partialFill += take
      this.#consume(take)
    }
    if (this.#partialFill < size) return null
    this.#partial = null
    this.#partialFill = 0
    this.#frameSize = -1
    return partial.length === size ? partial : partial.subarray(0, size)
  }

  /**
   * Gives up the frame being assembled (the stream is closing): its buffer, so that a buffer from
   * `spanBuffer` can go back where it came from, or null when no frame is partly assembled.
   */
  abandonPartial(): Buffer | null {
    const partial = this.#partial
    this.#partial = null
    this.#partialFill = 0
    return partial
  }

  /**
   * Bytes received but not yet returned in a frame, counting size prefixes. Non-zero when the peer
   * closes means the stream ended inside a frame.
   */
  get bytesPending(): number {
    const inChunk = this.#chunk === null ? 0 : this.#chunk.length - this.#chunkOffset
    const inFrame = this.#frameSize < 0 ? this.#headerFill : HEADER_BYTES + this.#partialFill
    return inChunk + inFrame
  }

  /** Read the size prefix, from the chunk directly when it is whole there. False: need more bytes. */
  #readHeader(): boolean {
    const chunk = this.#chunk
    if (chunk === null) return false
    let size: number
    if (this.#headerFill === 0 && chunk.length - this.#chunkOffset >= HEADER_BYTES) {
      size = chunk.readInt32BE(this.#chunkOffset)
      this.#consume(HEADER_BYTES)
    } else {
      const take = Math.min(HEADER_BYTES - this.#headerFill, chunk.length - this.#chunkOffset)
      chunk.copy(this.#header, this.#headerFill, this.#chunkOffset, this.#chunkOffset + take)
      this.#headerFill += take
      this.#consume(take)
      if (this.#headerFill < HEADER_BYTES) return false
      this.#headerFill = 0
      size = this.#header.readInt32BE(0)
    }
    if (size < 0 || size > this.frameBytesMax) {
      this.#error = new FrameError(size, this.frameBytesMax)
      throw this.#error
    }
    this.#frameSize = size
    return true
  }

  /** Advance through the chunk; drop it once drained so its memory is not held between pushes. */
  #consume(n: number): void {
    this.#chunkOffset += n
    if (this.#chunk !== null && this.#chunkOffset === this.#chunk.length) {
      this.#chunk = null
      this.#chunkOffset = 0
    }
  }
}

/** Prefix `body` with its int32 big-endian size: the inverse of `FrameReader`, one copy. */
export function encodeFrame(body: Uint8Array): Buffer {
  assert(body.length <= FRAME_BYTES_LIMIT, `frame body of ${body.length} bytes exceeds int32`)
  const frame = Buffer.allocUnsafe(HEADER_BYTES + body.length)
  frame.writeInt32BE(body.length, 0)
  frame.set(body, HEADER_BYTES)
  return frame
}
