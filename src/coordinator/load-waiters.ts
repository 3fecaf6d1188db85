/**
 * Requests waiting for a coordinator partition to finish loading (`whenLoaded` of the group and
 * transaction coordinators): each waits until its condition clears or its timeout, on the Clock.
 */
import type { Clock } from '../io/index.ts'

export class LoadWaiters {
  readonly #clock: Clock
  readonly #checks = new Set<() => void>()

  constructor(clock: Clock) {
    this.#clock = clock
  }

  /** Resolves once `loading()` is false (checked at each `wake`), or after `timeoutMs` (default: never). */
  wait(loading: () => boolean, timeoutMs = Number.POSITIVE_INFINITY): Promise<void> {
    if (timeoutMs <= 0 || !loading()) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.#checks.delete(check)
        if (timer !== null) this.#clock.clearTimer(timer)
        resolve()
      }
      const check = () => {
        if (!loading()) done()
      }
      const timer = Number.isFinite(timeoutMs) ? this.#clock.setTimer(timeoutMs, done) : null
      this.#checks.add(check)
    })
  }

  /** Re-checks every waiter (a partition's load state, or the metadata, changed). */
  wake(): void {
    for (const check of [...this.#checks]) check()
  }
}
