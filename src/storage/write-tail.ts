/**
 * The bytes a log wrote last, kept in memory by file position, so that fetches near the end of the
 * log (tailing consumers, followers) are answered without a file read. Pure bookkeeping: the bytes
 * are exactly what was handed to the disk for the active segment's file, so serving a range from
 * here is the same as reading it, as long as the range was written (readers bound their reads by
 * the segment's written size, as for the file) and the file was not cut since (a cut clears it).
 *
 * Bytes in a buffer lent by the node's pool (`read-buffer-pool.ts`: a produce frame) are held as a
 * holder of that buffer (retained when added, released when given up), and leave the tail only as
 * another holder's view (`get` with the same pool, released by the reader) or as a copy: the pool
 * lends a buffer again once its last holder let go, so nobody may keep a view it did not retain.
 */
import type { ReadBuffers } from './read-buffer-pool.ts'

/**
 * Bytes held by every tail that shares it: past `bytesMax`, the tails written least recently give
 * up their oldest bytes first, then the one writing, so the budget holds the newest bytes of the
 * logs being written rather than whatever idle logs kept (a new partition's tail would otherwise
 * keep nothing once earlier ones had filled it).
 */
export class TailBudget {
  readonly bytesMax: number
  used = 0
  /** Tails holding bytes, least recently written first (a Map keeps insertion order). */
  readonly #tails = new Map<WriteTail, true>()
  /** Segment reads answered from a tail, and reads that went to the file (with their bytes). */
  hits = 0
  misses = 0
  missBytes = 0

  constructor(bytesMax: number) {
    this.bytesMax = bytesMax
  }

  /** `tail` just wrote: it is the most recently written. */
  touched(tail: WriteTail): void {
    this.#tails.delete(tail)
    this.#tails.set(tail, true)
  }

  /** `tail` holds nothing any more. */
  emptied(tail: WriteTail): void {
    this.#tails.delete(tail)
  }

  /** While over the budget, the other tails give up their oldest bytes, least recently written first. */
  makeRoom(writing: WriteTail): void {
    for (const t of this.#tails.keys()) {
      if (this.used <= this.bytesMax) return
      if (t !== writing) t.evictWhileOverBudget()
    }
  }
}

/**
 * A log directory's budget (`LogManager`): 32 MiB of recent bytes over its partitions. Never shared
 * beyond one node, so that what one node's logs keep (and so which reads reach its disk) does not
 * depend on anything else in the process, such as an earlier simulation.
 */
export const TAIL_BUDGET_BYTES_DEFAULT = 32 * 1024 * 1024
/**
 * Per partition (log): 1 MiB, a few fetches' worth at the rates a tailing consumer keeps up with.
 * (8 MiB served 26-80 of ~76 follower fetches of a 3-node kcat run from memory instead of 2-9, at
 * no measurable gain in rec/s or CPU: docs/performance.md.)
 */
export const TAIL_BYTES_MAX_DEFAULT = 1024 * 1024

/**
 * Per partition of a broker's log directory (`LogManager`): 12 MiB, within the directory's budget.
 * An acks=all producer that pipelines (kcat; up to 8 MiB read ahead per connection) keeps the
 * leader's log several MB ahead of its followers: with 1 or 4 MiB most follower fetches of a 3-node
 * kcat run missed the tail (129-208 of ~230 at 4 MiB) and read the page cache instead (1.6 ms mean
 * per fetch against 0.17 ms from the tail); at 12 MiB none did (bench/peers/repl-probe.ts --acks
 * 1,all; docs/performance.md). What it holds is mostly produce frames that an acks=all request
 * keeps alive until it is answered anyway.
 */
export const BROKER_TAIL_BYTES_MAX = 12 * 1024 * 1024

/** The ring's first size (slots, a power of two), small for the many idle logs; it doubles as needed. */
const RING_SLOTS_MIN = 8

export class WriteTail {
  readonly #budget: TailBudget
  #bytesMax: number
  /** The file (segment) whose bytes are held; a write to another one starts over. */
  #owner: object | null = null
  /**
   * The pieces held, a ring of parallel arrays (no object per piece: one is added per appended
   * buffer): piece `i` (from `#head` up to `#next`, counted since the last clear) lives in slot
   * `i & #mask`: its bytes (views, never copies), its file position, and what keeping it costs (the
   * memory, `bytes.buffer`, it keeps alive, counted once for a run of pieces in the same memory,
   * a frame's batches or a socket read's, on the oldest of them held).
   */
  #bytes: (Buffer | undefined)[] = new Array<Buffer | undefined>(RING_SLOTS_MIN)
  #positions = new Float64Array(RING_SLOTS_MIN)
  #costs = new Float64Array(RING_SLOTS_MIN)
  /** 1 where the piece's memory is the pool's and this tail retained it (so releases it once). */
  #retained = new Uint8Array(RING_SLOTS_MIN)
  #mask = RING_SLOTS_MIN - 1
  #head = 0
  #next = 0
  /** File position after the last byte held. */
  #end = 0
  #cost = 0
  /** The pool whose lent buffers this tail retains while it holds views of them. */
  readonly #pool: ReadBuffers | undefined

  constructor(budget: TailBudget, bytesMax = TAIL_BYTES_MAX_DEFAULT, pool?: ReadBuffers) {
    this.#budget = budget
    this.#bytesMax = bytesMax
    this.#pool = pool
  }

  get budget(): TailBudget {
    return this.#budget
  }

  /** Bytes of memory held now. */
  get cost(): number {
    return this.#cost
  }

  /** At most this many bytes of memory held. */
  get bytesMax(): number {
    return this.#bytesMax
  }

  /** A new bound (bytes of memory held); the oldest pieces go at once while over it. */
  setBytesMax(bytesMax: number): void {
    this.#bytesMax = bytesMax
    while (this.#cost > this.#bytesMax && this.#evictOldest()) {}
  }

  /**
   * `buffers` are about to be written at `position` of `owner`'s file. They are kept as they are,
   * views of their memory, never copied: a buffer handed to a write must not change afterwards (the
   * log owns appended bytes; a pooled one is retained). What they cost is the memory they keep
   * alive, which may be more than their bytes (a small batch in a socket read): the bounds count that.
   */
  add(owner: object, buffers: readonly Buffer[], position: number): void {
    if (owner !== this.#owner || position !== this.#end) {
      this.clear()
      this.#owner = owner
      this.#end = position
    }
    let end = this.#end
    let added = 0
    let lastMemory = this.#next > this.#head ? this.#bytes[(this.#next - 1) & this.#mask]!.buffer : null
    for (let i = 0; i < buffers.length; i++) {
      const b = buffers[i]!
      if (b.length === 0) continue
      if (this.#next - this.#head > this.#mask) this.#grow()
      const memory = b.buffer
      const cost = memory === lastMemory ? 0 : memory.byteLength
      lastMemory = memory
      const slot = this.#next & this.#mask
      this.#retained[slot] = this.#pool?.retain(b) === true ? 1 : 0
      this.#bytes[slot] = b
      this.#positions[slot] = end
      this.#costs[slot] = cost
      this.#next++
      end += b.length
      added += cost
    }
    this.#end = end
    this.#cost += added
    this.#budget.used += added
    this.#budget.touched(this)
    while (this.#cost > this.#bytesMax && this.#evictOldest()) {}
    this.#budget.makeRoom(this)
    this.evictWhileOverBudget()
  }

  /** Twice the ring's slots, the pieces held kept in order. */
  #grow(): void {
    const slots = (this.#mask + 1) * 2
    const bytes = new Array<Buffer | undefined>(slots)
    const positions = new Float64Array(slots)
    const costs = new Float64Array(slots)
    const retained = new Uint8Array(slots)
    const mask = slots - 1
    for (let i = this.#head; i < this.#next; i++) {
      const from = i & this.#mask
      const to = i & mask
      bytes[to] = this.#bytes[from]
      positions[to] = this.#positions[from]!
      costs[to] = this.#costs[from]!
      retained[to] = this.#retained[from]!
    }
    this.#bytes = bytes
    this.#positions = positions
    this.#costs = costs
    this.#retained = retained
    this.#mask = mask
  }

  /** Back to the ring's first size once nothing is held (an idle log keeps no large ring). */
  #shrink(): void {
    if (this.#mask < RING_SLOTS_MIN) return
    this.#bytes = new Array<Buffer | undefined>(RING_SLOTS_MIN)
    this.#positions = new Float64Array(RING_SLOTS_MIN)
    this.#costs = new Float64Array(RING_SLOTS_MIN)
    this.#retained = new Uint8Array(RING_SLOTS_MIN)
    this.#mask = RING_SLOTS_MIN - 1
  }

  /** Gives up the oldest pieces while the shared budget is over its bound. */
  evictWhileOverBudget(): void {
    while (this.#budget.used > this.#budget.bytesMax && this.#evictOldest()) {}
  }

  /** Drops the oldest piece held; false when nothing is held. */
  #evictOldest(): boolean {
    const head = this.#head
    if (head >= this.#next) return false
    const slot = head & this.#mask
    const piece = this.#bytes[slot]!
    const memory = piece.buffer
    const cost = this.#costs[slot]!
    this.#bytes[slot] = undefined
    if (this.#retained[slot] === 1) this.#pool!.release(piece)
    this.#head = head + 1
    if (head + 1 < this.#next && this.#bytes[(head + 1) & this.#mask]!.buffer === memory) {
      this.#costs[(head + 1) & this.#mask]! += cost // the memory stays alive through the next piece
    } else {
      this.#cost -= cost
      this.#budget.used -= cost
    }
    if (head + 1 >= this.#next) {
      this.#budget.emptied(this)
      this.#shrink()
    }
    return true
  }

  /**
   * Bytes `[position, position + length)` of `owner`'s file, or null when not all of them are held:
   * a view when they lie in one piece, else a copy (into a buffer from `lend` when given). The
   * caller that passes `lend` releases what it gets to `lend` (a view of a pooled buffer is retained
   * for it when `lend` is this tail's pool, else copied); without `lend`, bytes of a pooled buffer
   * come as a copy, since nobody would hold them for the caller.
   */
  get(owner: object, position: number, length: number, lend?: ReadBuffers): Buffer | null {
    const head = this.#head
    const next = this.#next
    if (owner !== this.#owner || length <= 0 || next === head) return null
    const mask = this.#mask
    const positions = this.#positions
    if (position < positions[head & mask]! || position + length > this.#end) return null
    // The last piece starting at or before `position`.
    let lo = head
    let hi = next - 1
    while (lo < hi) {
      const mid = lo + ((hi - lo + 1) >> 1)
      if (positions[mid & mask]! <= position) lo = mid
      else hi = mid - 1
    }
    const first = this.#bytes[lo & mask]!
    const at = position - positions[lo & mask]!
    if (at + length <= first.length) {
      // Not pooled: a view is safe to keep. Pooled: a view only for a holder that will release it.
      if (this.#retained[lo & mask] === 0) return first.subarray(at, at + length)
      if (lend !== undefined && lend === this.#pool) {
        lend.retain(first)
        return first.subarray(at, at + length)
      }
    }
    const out = lend?.acquire(length) ?? Buffer.allocUnsafe(length)
    let filled = 0
    for (let i = lo; filled < length; i++) {
      const q = this.#bytes[i & mask]!
      const from = i === lo ? at : 0
      const n = Math.min(q.length - from, length - filled)
      q.copy(out, filled, from, from + n)
      filled += n
    }
    return out.length === length ? out : out.subarray(0, length)
  }

  /** `owner`'s file is cut: nothing held of it is known to be in the file any more. */
  cut(owner: object): void {
    if (owner === this.#owner) this.clear()
  }

  /** Let go of everything. */
  clear(): void {
    this.#budget.emptied(this)
    this.#budget.used -= this.#cost
    this.#cost = 0
    if (this.#next > this.#head) {
      const pool = this.#pool
      if (pool !== undefined) {
        for (let i = this.#head; i < this.#next; i++) {
          const slot = i & this.#mask
          if (this.#retained[slot] === 1) pool.release(this.#bytes[slot]!)
        }
      }
      this.#bytes.fill(undefined)
    }
    this.#shrink()
    this.#head = 0
    this.#next = 0
    this.#owner = null
    this.#end = 0
  }
}
