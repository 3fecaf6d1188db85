/**
 * The bytes a log wrote last, kept in memory by file position, so that fetches near the end of the
 * log (tailing consumers, followers) are answered without a file read. Pure bookkeeping: the bytes
 * are exactly what was handed to the disk for the active segment's file, so serving a range from
 * here is the same as reading it, as long as the range was written (readers bound their reads by
 * the segment's written size, as for the file) and the file was not cut since (a cut clears it).
 */

/** Bytes held by every tail that shares it: past `bytesMax`, tails give up bytes before keeping more. */
export class TailBudget {
  readonly bytesMax: number
  used = 0

  constructor(bytesMax: number) {
    this.bytesMax = bytesMax
  }
}

/**
 * A log directory's budget (`LogManager`): 32 MiB of recent bytes over its partitions. Never shared
 * beyond one node, so that what one node's logs keep (and so which reads reach its disk) does not
 * depend on anything else in the process, such as an earlier simulation.
 */
export const TAIL_BUDGET_BYTES_DEFAULT = 32 * 1024 * 1024
/** Per partition (log): 1 MiB, a few fetches' worth at the rates a tailing consumer keeps up with. */
export const TAIL_BYTES_MAX_DEFAULT = 1024 * 1024
/** Small pieces are copied into slabs of this size (a view would keep a whole socket read alive). */
const SLAB_BYTES = 64 * 1024

interface Piece {
  /** File position of `bytes[0]`. */
  readonly position: number
  readonly bytes: Buffer
  /** What keeping it costs: the memory it keeps alive. */
  readonly cost: number
}

export class WriteTail {
  readonly #budget: TailBudget
  readonly #bytesMax: number
  /** The file (segment) whose bytes are held; a write to another one starts over. */
  #owner: object | null = null
  #pieces: Piece[] = []
  /** File position after the last byte held. */
  #end = 0
  #cost = 0
  #slab: Buffer | null = null
  #slabUsed = 0

  constructor(budget: TailBudget, bytesMax = TAIL_BYTES_MAX_DEFAULT) {
    this.#budget = budget
    this.#bytesMax = bytesMax
  }

  /** Bytes of memory held now. */
  get cost(): number {
    return this.#cost
  }

  /**
   * `buffers` are about to be written at `position` of `owner`'s file. They are kept as views when
   * they are most of their memory (never modify a buffer after handing it to a write), else copied.
   */
  add(owner: object, buffers: readonly Buffer[], position: number): void {
    if (owner !== this.#owner || position !== this.#end) {
      this.clear()
      this.#owner = owner
      this.#end = position
    }
    for (const b of buffers) {
      if (b.length === 0) continue
      let bytes: Buffer
      let cost: number
      if (b.length * 2 >= b.buffer.byteLength) {
        bytes = b
        cost = b.buffer.byteLength
      } else {
        bytes = this.#copy(b)
        cost = b.length
      }
      this.#pieces.push({ position: this.#end, bytes, cost })
      this.#end += b.length
      this.#cost += cost
      this.#budget.used += cost
    }
    while (
      this.#pieces.length > 0 &&
      (this.#cost > this.#bytesMax || this.#budget.used > this.#budget.bytesMax)
    ) {
      const p = this.#pieces.shift()!
      this.#cost -= p.cost
      this.#budget.used -= p.cost
    }
  }

  #copy(b: Buffer): Buffer {
    if (b.length > SLAB_BYTES / 2) return Buffer.from(b)
    if (this.#slab === null || this.#slabUsed + b.length > SLAB_BYTES) {
      this.#slab = Buffer.allocUnsafeSlow(SLAB_BYTES)
      this.#slabUsed = 0
    }
    const at = this.#slabUsed
    b.copy(this.#slab, at)
    this.#slabUsed += b.length
    return this.#slab.subarray(at, at + b.length)
  }

  /**
   * Bytes `[position, position + length)` of `owner`'s file, or null when not all of them are held:
   * a view when they lie in one piece, else a copy.
   */
  get(owner: object, position: number, length: number): Buffer | null {
    const pieces = this.#pieces
    if (owner !== this.#owner || length <= 0 || pieces.length === 0) return null
    if (position < pieces[0]!.position || position + length > this.#end) return null
    // The last piece starting at or before `position`.
    let lo = 0
    let hi = pieces.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (pieces[mid]!.position <= position) lo = mid
      else hi = mid - 1
    }
    const p = pieces[lo]!
    const at = position - p.position
    if (at + length <= p.bytes.length) return p.bytes.subarray(at, at + length)
    const out = Buffer.allocUnsafe(length)
    let filled = 0
    for (let i = lo; filled < length; i++) {
      const q = pieces[i]!
      const from = i === lo ? at : 0
      const n = Math.min(q.bytes.length - from, length - filled)
      q.bytes.copy(out, filled, from, from + n)
      filled += n
    }
    return out
  }

  /** `owner`'s file is cut: nothing held of it is known to be in the file any more. */
  cut(owner: object): void {
    if (owner === this.#owner) this.clear()
  }

  /** Let go of everything. */
  clear(): void {
    this.#budget.used -= this.#cost
    this.#cost = 0
    this.#pieces = []
    this.#owner = null
    this.#end = 0
    this.#slab = null
    this.#slabUsed = 0
  }
}
