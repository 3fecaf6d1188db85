/**
 * The Clock port: wall time, monotonic time and timers. Every module outside io/ gets time only
 * through a `Clock`, so a simulation can swap `systemClock` for a `ManualClock` and replay a seed.
 */
import { assert } from '../model/index.ts'

declare const timerHandleBrand: unique symbol
/** An opaque timer, valid only with the clock that made it. */
export interface TimerHandle {
  readonly [timerHandleBrand]: true
}

export interface Clock {
  /** Wall-clock time in milliseconds since the Unix epoch (Kafka timestamps). May jump, even backwards. */
  nowMs(): number
  /**
   * Monotonic time in milliseconds from an arbitrary origin, possibly fractional. Never decreases;
   * use it for every timeout, deadline and rate (`session.timeout.ms`, request deadlines).
   */
  monotonicMs(): number
  /**
   * Run `fn` once, `delayMs` milliseconds of monotonic time from now. `delayMs` must be finite; a
   * value at or below zero means "as soon as possible" (never synchronously inside `setTimer`).
   */
  setTimer(delayMs: number, fn: () => void): TimerHandle
  /** Cancel a timer. Idempotent: clearing a timer that fired or was cleared already does nothing. */
  clearTimer(handle: TimerHandle): void
}

/** Node's timers take at most a signed int32 of milliseconds; beyond it they fire after 1 ms. */
const NODE_TIMER_DELAY_MS_MAX = 2 ** 31 - 1

function checkDelayMs(delayMs: number): number {
  assert(Number.isFinite(delayMs), `timer delay must be finite, got ${delayMs}`)
  return Math.max(0, delayMs)
}

/** A node timer; `timeout` is replaced while a delay longer than Node's maximum is chained. */
interface SystemTimer {
  timeout: NodeJS.Timeout | null
}

function armSystemTimer(timer: SystemTimer, delayMs: number, fn: () => void): void {
  if (delayMs <= NODE_TIMER_DELAY_MS_MAX) {
    timer.timeout = setTimeout(() => {
      timer.timeout = null
      fn()
    }, delayMs)
    return
  }
  timer.timeout = setTimeout(
    () => armSystemTimer(timer, delayMs - NODE_TIMER_DELAY_MS_MAX, fn),
    NODE_TIMER_DELAY_MS_MAX,
  )
}

/**
 * The real clock: `Date.now()`, `performance.now()` and Node's timers. Delays longer than Node's
 * int32 limit (about 24.8 days) are chained rather than silently shortened to 1 ms.
 */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
  setTimer(delayMs, fn) {
    const timer: SystemTimer = { timeout: null }
    armSystemTimer(timer, checkDelayMs(delayMs), fn)
    return timer as unknown as TimerHandle
  },
  clearTimer(handle) {
    const timer = handle as unknown as SystemTimer
    if (timer.timeout !== null) clearTimeout(timer.timeout)
    timer.timeout = null
  },
}

/** A pending ManualClock timer; `heapIndex` is -1 once it fired or was cleared. */
interface ManualTimer {
  readonly owner: ManualClock
  readonly deadlineMs: number
  readonly seq: number
  readonly fn: () => void
  heapIndex: number
}

function firesBefore(a: ManualTimer, b: ManualTimer): boolean {
  return a.deadlineMs < b.deadlineMs || (a.deadlineMs === b.deadlineMs && a.seq < b.seq)
}

/**
 * A clock that moves only when told, for simulations and tests. Time starts at `nowMs` (wall,
 * default 0) and 0 (monotonic); `advance(ms)` moves both forward and fires every timer that falls
 * due, in order of deadline and then of `setTimer` call, each seeing the clock at its own deadline.
 * Timers set by a callback fire within the same `advance` if they fall due within it. Deterministic:
 * the same calls give the same order.
 *
 * ```ts
 * const clock = new ManualClock()
 * clock.setTimer(10, () => log.push('b'))
 * clock.setTimer(5, () => log.push('a'))
 * clock.advance(10) // log: ['a', 'b'], clock.monotonicMs() === 10
 * ```
 */
export class ManualClock implements Clock {
  #wallMs: number
  #monotonicMs = 0
  #seq = 0
  /** Binary min-heap ordered by `firesBefore`; each timer knows its index so clearing is O(log n). */
  readonly #heap: ManualTimer[] = []

  constructor(options: { nowMs?: number } = {}) {
    const wallMs = options.nowMs ?? 0
    assert(Number.isFinite(wallMs), 'ManualClock: nowMs must be finite')
    this.#wallMs = wallMs
  }

  nowMs(): number {
    return this.#wallMs
  }

  monotonicMs(): number {
    return this.#monotonicMs
  }

  setTimer(delayMs: number, fn: () => void): TimerHandle {
    const timer: ManualTimer = {
      owner: this,
      deadlineMs: this.#monotonicMs + checkDelayMs(delayMs),
      seq: this.#seq++,
      fn,
      heapIndex: this.#heap.length,
    }
    this.#heap.push(timer)
    this.#siftUp(timer.heapIndex)
    return timer as unknown as TimerHandle
  }

  clearTimer(handle: TimerHandle): void {
    const timer = handle as unknown as ManualTimer
    assert(timer.owner === this, 'ManualClock: timer belongs to another clock')
    if (timer.heapIndex >= 0) this.#remove(timer.heapIndex)
  }

  /**
   * Move time forward by `ms` (finite, >= 0) and fire the timers that fall due, in order. If a
   * callback throws, the error propagates: that timer is gone, the clock stays at its deadline,
   * and the remaining timers wait for the next `advance`.
   */
  advance(ms: number): void {
    assert(Number.isFinite(ms) && ms >= 0, `ManualClock: advance needs a finite ms >= 0, got ${ms}`)
    const targetMs = this.#monotonicMs + ms
    for (;;) {
      const first = this.#heap[0]
      if (first === undefined || first.deadlineMs > targetMs) break
      this.#remove(0)
      this.#moveTo(first.deadlineMs)
      first.fn()
    }
    this.#moveTo(targetMs)
  }

  /** Set wall-clock time alone, as an NTP step would (even backwards); monotonic time is unchanged. */
  setNowMs(nowMs: number): void {
    assert(Number.isFinite(nowMs), 'ManualClock: nowMs must be finite')
    this.#wallMs = nowMs
  }

  /** The monotonic deadline of the next pending timer, or null if none: where a simulation jumps. */
  nextDeadlineMs(): number | null {
    return this.#heap[0]?.deadlineMs ?? null
  }

  /** How many timers are pending. */
  get timersPending(): number {
    return this.#heap.length
  }

  #moveTo(monotonicMs: number): void {
    if (monotonicMs <= this.#monotonicMs) return
    this.#wallMs += monotonicMs - this.#monotonicMs
    this.#monotonicMs = monotonicMs
  }

  #remove(index: number): void {
    const heap = this.#heap
    const removed = heap[index]!
    const last = heap.pop()!
    removed.heapIndex = -1
    if (last === removed) return
    heap[index] = last
    last.heapIndex = index
    this.#siftUp(index)
    this.#siftDown(last.heapIndex)
  }

  #siftUp(index: number): void {
    const heap = this.#heap
    const timer = heap[index]!
    while (index > 0) {
      const parentIndex = (index - 1) >> 1
      const parent = heap[parentIndex]!
      if (!firesBefore(timer, parent)) break
      heap[index] = parent
      parent.heapIndex = index
      index = parentIndex
    }
    heap[index] = timer
    timer.heapIndex = index
  }

  #siftDown(index: number): void {
    const heap = this.#heap
    const timer = heap[index]!
    for (;;) {
      const left = 2 * index + 1
      if (left >= heap.length) break
      const right = left + 1
      let child = left
      if (right < heap.length && firesBefore(heap[right]!, heap[left]!)) child = right
      const childTimer = heap[child]!
      if (!firesBefore(childTimer, timer)) break
      heap[index] = childTimer
      childTimer.heapIndex = index
      index = child
    }
    heap[index] = timer
    timer.heapIndex = index
  }
}
