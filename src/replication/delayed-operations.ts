/**
 * Delayed operations (Kafka's purgatory): a produce waiting for the ISR to acknowledge, a fetch
 * waiting for bytes. Each waits on the watchers of the partitions it covers and is re-checked only
 * when one of them changes (no polling), or gives up when its timeout passes on the Clock.
 */
import type { Clock, TimerHandle } from '../io/index.ts'
import { assert } from '../model/index.ts'

/**
 * What changes of one partition wake: appends and high-watermark moves, leadership changes,
 * deletion, log start moves. Waiters re-check their own condition when woken.
 */
export class Watchers {
  /** Made at the first wait: most partitions of a large node are never waited on (~260 B each). */
  #waiters: Set<() => void> | null = null

  get size(): number {
    return this.#waiters?.size ?? 0
  }

  add(fn: () => void): void {
    this.#waiters ??= new Set()
    this.#waiters.add(fn)
  }

  delete(fn: () => void): void {
    this.#waiters?.delete(fn)
  }

  /** Wakes every waiter (each removes itself once complete). */
  wake(): void {
    if (this.#waiters === null || this.#waiters.size === 0) return
    for (const fn of [...this.#waiters]) fn()
  }
}

export interface DelayedOperationsLimits {
  /** Operations waiting at once; past it a new one completes at once with what it has. */
  readonly operationsMax: number
}

/** Why a wait ended. */
export type WaitOutcome = 'completed' | 'expired' | 'shutdown'

/** What waits: the shutdown ends fetches first and lets produces finish their fsync. */
export type DelayedKind = 'produce' | 'fetch'

interface Pending {
  readonly kind: DelayedKind
  readonly finish: (outcome: WaitOutcome) => void
}

export class DelayedOperations {
  readonly #clock: Clock
  readonly #limits: DelayedOperationsLimits
  readonly #pending = new Set<Pending>()
  readonly #ended = new Set<DelayedKind>()
  #shutdown = false

  constructor(clock: Clock, limits: DelayedOperationsLimits) {
    assert(limits.operationsMax > 0, 'operationsMax must be positive')
    this.#clock = clock
    this.#limits = limits
  }

  /** Operations waiting now. */
  get size(): number {
    return this.#pending.size
  }

  /**
   * Waits until `check()` is true, checking it now and again each time one of `watched` wakes, or
   * until `timeoutMs` passes. `completed` when check held; `expired` on timeout, when too many
   * operations wait already, or when `timeoutMs <= 0` and check does not hold; `shutdown` when
   * `completeAll` ended it.
   *
   * ```ts
   * const outcome = await delayed.wait([partition.watchers], () => partition.highWatermark >= required, 30_000)
   * ```
   */
  wait(
    watched: readonly Watchers[],
    check: () => boolean,
    timeoutMs: number,
    kind: DelayedKind = 'fetch',
  ): Promise<WaitOutcome> {
    if (check()) return Promise.resolve('completed')
    if (this.#shutdown || this.#ended.has(kind)) return Promise.resolve('shutdown')
    if (timeoutMs <= 0 || this.#pending.size >= this.#limits.operationsMax) return Promise.resolve('expired')
    return new Promise<WaitOutcome>((resolve) => {
      let timer: TimerHandle | null = null
      let done = false
      const finish = (outcome: WaitOutcome) => {
        if (done) return
        done = true
        for (const w of watched) w.delete(onWake)
        if (timer !== null) this.#clock.clearTimer(timer)
        this.#pending.delete(pending)
        resolve(outcome)
      }
      const onWake = () => {
        if (!done && check()) finish('completed')
      }
      const pending: Pending = { kind, finish }
      this.#pending.add(pending)
      for (const w of watched) w.add(onWake)
      timer = this.#clock.setTimer(timeoutMs, () => {
        timer = null
        finish(check() ? 'completed' : 'expired')
      })
    })
  }

  /** Ends every waiting operation of `kind` now; later ones of that kind end at once. */
  complete(kind: DelayedKind): void {
    this.#ended.add(kind)
    for (const p of [...this.#pending]) if (p.kind === kind) p.finish('shutdown')
  }

  /** Ends every waiting operation now (shutdown); later waits end at once. */
  completeAll(): void {
    this.#shutdown = true
    for (const p of [...this.#pending]) p.finish('shutdown')
  }
}
