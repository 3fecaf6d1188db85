/**
 * The node's reusable buffers, for the two kinds of bytes that would otherwise be a new ArrayBuffer
 * per request, freed only at a GC:
 *
 * - fetch reads of log data the write tail does not hold (a consumer reading old data): without the
 *   pool every such read allocated up to `max.partition.fetch.bytes` (10 MB for kcat's defaults in
 *   bench:peers), and a consuming broker's RSS carried several dead fetch buffers;
 * - produce frames that span socket reads (the connection assembles them in a pooled buffer): each
 *   was a new buffer of up to 1 MB that the log's write and its write tail kept alive past a young
 *   collection, so that V8 ran a full mark-compact per ~10 MB produced (docs/performance.md,
 *   "Memory").
 *
 * A lent buffer can have several holders (a produce frame: the connection until its response is
 * written, the log until the bytes are written, the write tail while it keeps them, each fetch
 * response that sends them): each holder but the first `retain`s it and every holder `release`s it
 * once; it is free again after the last release. Pure bookkeeping: no I/O, no timers.
 */
import { assert } from '../model/index.ts'

/**
 * Where a read gets its buffer, and gives it back. The caller that asked for pooled reads owns
 * what the read returns: it must hand every returned buffer (or any view of it) to `release`
 * exactly once, after the last use of those bytes (for a fetch: once the socket write completed).
 */
export interface ReadBuffers {
  /** A buffer of at least `length` bytes (its contents undefined), with one holder: the caller. */
  acquire(length: number): Buffer
  /**
   * One more holder of the lent buffer behind `bytes` (a view of it is enough), who must `release`
   * it once too. False, and nothing to release, for bytes the pool did not lend (a socket read, an
   * empty buffer, a fallback allocation).
   */
  retain(bytes: Uint8Array): boolean
  /**
   * One holder of the buffer behind `bytes` (the buffer `acquire` returned, or a view of it) is
   * done with it; after the last, it can be lent again. A no-op for bytes the pool did not lend.
   */
  release(bytes: Uint8Array): void
}

/**
 * The largest free buffer lent for `length` bytes: twice as large, or one granule more. A larger
 * one (a 10 MB read's, asked for a 1 MB frame) stays free, and a new one is allocated instead, so
 * that a small holder kept long (a write tail) does not pin a large buffer.
 */
function fitMax(length: number): number {
  return Math.max(2 * length, length + READ_BUFFER_GRANULE_BYTES)
}

/** A lent buffer and how many holders it has. */
class Lent {
  readonly buf: Buffer
  refs = 1
  constructor(buf: Buffer) {
    this.buf = buf
  }
}

/**
 * 64 MiB: room for what the write tails of a log directory may keep of produce frames (their
 * budget, 32 MiB) beside three kcat-sized reads of old data (10 MB each) at once, or thirty of a
 * Java consumer's 1 MB. It holds only what was lent at once (and trims what then goes unused).
 */
export const READ_BUFFER_POOL_BYTES_DEFAULT = 64 * 1024 * 1024
/** Pooled buffers are allocated in multiples of this, so that reads of nearby sizes share them. */
export const READ_BUFFER_GRANULE_BYTES = 64 * 1024

/**
 * A bounded pool of read buffers:
 *
 * - `acquire(n)` lends the smallest free buffer of at least `n` bytes (and at most twice `n`, or one
 *   granule more); when none fits, it allocates
 *   one of `n` rounded up to 64 KiB, first dropping free buffers (largest first) if the pool would
 *   otherwise hold more than `bytesMax`; when the lent buffers alone leave no room, it returns a
 *   plain allocation that the pool does not track (the read still works, as before the pool).
 * - A lent buffer is never lent again before its last holder released it, so a read never writes into bytes a
 *   socket write is still sending.
 * - The pool never holds more than `bytesMax` bytes (free plus lent). Free buffers stay for the
 *   next reads until `trimIdle` finds them unused since its previous call, or room is needed.
 *
 * ```ts
 * const pool = new ReadBufferPool({ bytesMax: 32 << 20 })
 * const buf = pool.acquire(1_000_000) // a 1 MiB (1,048,576-byte) buffer
 * const records = buf.subarray(0, 700_000)
 * socket.write(records, () => pool.release(records)) // then it can be lent again
 * ```
 */
export class ReadBufferPool implements ReadBuffers {
  readonly bytesMax: number
  /** Free buffers, shortest first. */
  readonly #free: Buffer[] = []
  /** Lent buffers by their memory, so that a view releases the buffer it came from. */
  readonly #lent = new Map<ArrayBufferLike, Lent>()
  /** Buffers lent since the last `trimIdle`. */
  readonly #usedSinceTrim = new Set<Buffer>()
  #heldBytes = 0
  #lentBytes = 0
  #fallbacks = 0

  constructor(options: { readonly bytesMax?: number } = {}) {
    const bytesMax = options.bytesMax ?? READ_BUFFER_POOL_BYTES_DEFAULT
    assert(Number.isSafeInteger(bytesMax) && bytesMax >= 0, `bytesMax must be >= 0, got ${bytesMax}`)
    this.bytesMax = bytesMax
  }

  /** Bytes of the buffers the pool holds, free and lent: never above `bytesMax`. */
  get heldBytes(): number {
    return this.#heldBytes
  }

  /** Bytes of the buffers lent and not yet released. */
  get lentBytes(): number {
    return this.#lentBytes
  }

  /** Reads that got a plain allocation because the lent buffers filled the pool. */
  get fallbacks(): number {
    return this.#fallbacks
  }

  acquire(length: number): Buffer {
    assert(Number.isSafeInteger(length) && length >= 0, `acquire: bad length ${length}`)
    const free = this.#free
    let i = 0
    while (i < free.length && free[i]!.length < length) i++
    let buf: Buffer
    if (i < free.length && free[i]!.length <= fitMax(length)) {
      buf = free.splice(i, 1)[0]!
    } else {
      const size = Math.ceil(Math.max(length, 1) / READ_BUFFER_GRANULE_BYTES) * READ_BUFFER_GRANULE_BYTES
      while (this.#heldBytes + size > this.bytesMax && free.length > 0) {
        this.#heldBytes -= free.pop()!.length
      }
      if (this.#heldBytes + size > this.bytesMax) {
        this.#fallbacks++
        return Buffer.allocUnsafeSlow(length)
      }
      // Outside Node's shared 8 KiB pool: its memory is this buffer's alone, the key of `#lent`.
      buf = Buffer.allocUnsafeSlow(size)
      this.#heldBytes += size
    }
    this.#lent.set(buf.buffer, new Lent(buf))
    this.#lentBytes += buf.length
    this.#usedSinceTrim.add(buf)
    return buf
  }

  /**
   * Drops the free buffers not lent since the previous call, so that memory a burst of reads of
   * old data needed goes back once they stop (the node calls it every few seconds). Returns the
   * bytes dropped.
   */
  trimIdle(): number {
    const used = this.#usedSinceTrim
    let dropped = 0
    const free = this.#free
    for (let i = free.length - 1; i >= 0; i--) {
      const buf = free[i]!
      if (used.has(buf)) continue
      free.splice(i, 1)
      dropped += buf.length
    }
    this.#heldBytes -= dropped
    used.clear()
    for (const lent of this.#lent.values()) used.add(lent.buf)
    return dropped
  }

  retain(bytes: Uint8Array): boolean {
    const lent = this.#lent.get(bytes.buffer)
    if (lent === undefined) return false
    lent.refs++
    return true
  }

  /** True when `bytes` are a view of a buffer lent now (tests and assertions). */
  isLent(bytes: Uint8Array): boolean {
    return this.#lent.has(bytes.buffer)
  }

  release(bytes: Uint8Array): void {
    const lent = this.#lent.get(bytes.buffer)
    if (lent === undefined) return
    if (--lent.refs > 0) return
    const buf = lent.buf
    this.#lent.delete(bytes.buffer)
    this.#lentBytes -= buf.length
    const free = this.#free
    let i = free.length
    while (i > 0 && free[i - 1]!.length > buf.length) i--
    free.splice(i, 0, buf)
  }
}
