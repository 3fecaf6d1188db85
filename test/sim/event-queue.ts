/** A deterministic priority queue of simulation events: by time, then by insertion order. */

interface Slot<T> {
  readonly atMs: number
  readonly seq: number
  readonly event: T
}

function before<T>(a: Slot<T>, b: Slot<T>): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq)
}

/** A binary min-heap; equal times pop in push order, so a seed always replays the same run. */
export class EventQueue<T> {
  readonly #heap: Slot<T>[] = []
  #seq = 0

  get size(): number {
    return this.#heap.length
  }

  push(atMs: number, event: T): void {
    const heap = this.#heap
    const slot: Slot<T> = { atMs, seq: this.#seq++, event }
    let i = heap.length
    heap.push(slot)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(slot, heap[parent]!)) break
      heap[i] = heap[parent]!
      i = parent
    }
    heap[i] = slot
  }

  peekMs(): number | undefined {
    return this.#heap[0]?.atMs
  }

  pop(): { atMs: number; event: T } | undefined {
    const heap = this.#heap
    const top = heap[0]
    if (top === undefined) return undefined
    const last = heap.pop()!
    if (heap.length > 0) {
      let i = 0
      for (;;) {
        const left = 2 * i + 1
        if (left >= heap.length) break
        const right = left + 1
        const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left
        if (!before(heap[child]!, last)) break
        heap[i] = heap[child]!
        i = child
      }
      heap[i] = last
    }
    return { atMs: top.atMs, event: top.event }
  }
}
