/**
 * The whole-cluster simulation's world: one seeded event queue drives simulated time, each node's
 * clock (with its own rate: clock skew of timers), and a network that drops, delays, reorders and
 * partitions messages. Everything asynchronous in the brokers settles between two events: after
 * each event the loop waits until the microtask queue is empty (nothing in the simulation touches
 * real time, real timers or real I/O, so that point is deterministic).
 */
import type { Clock, TimerHandle } from '../../../src/io/index.ts'
import { SeededRandom } from '../../../src/io/random.ts'
import { EventQueue } from '../event-queue.ts'

export interface NetworkProfile {
  /** Probability that a message is lost. */
  dropRate: number
  delayMsMin: number
  delayMsMax: number
  /** Probability of a much longer delay (up to `longDelayMsMax`), which reorders messages. */
  longDelayRate: number
  longDelayMsMax: number
}

export const CALM_NETWORK: NetworkProfile = {
  dropRate: 0,
  delayMsMin: 1,
  delayMsMax: 3,
  longDelayRate: 0,
  longDelayMsMax: 0,
}

/** A node of the network: it may crash (its incarnation changes) and be partitioned. */
export interface SimEndpoint {
  readonly id: number
  readonly up: boolean
  readonly incarnation: number
}

interface Call {
  readonly label: string
  /** Returns false when the event turned out to be a no-op (a cancelled timer, a dead node's). */
  readonly fn: () => boolean | undefined
}

/** Resolves once the microtask queue is empty (a macrotask turn; no time passes in the simulation). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

export class SimWorld {
  nowMs = 0
  events = 0
  messagesSent = 0
  messagesDropped = 0
  network: NetworkProfile
  readonly trace: string[] = []
  readonly traceOn: boolean
  /** Directed links that drop everything, as "from>to". */
  readonly blocked = new Set<string>()
  readonly endpoints = new Map<number, SimEndpoint>()
  /** An error raised inside asynchronous simulation code, thrown by the loop after the event. */
  failure: unknown = null
  /** Called after every event that did something, once everything it started has settled. */
  afterEvent: (() => void) | null = null
  readonly #queue = new EventQueue<Call>()
  readonly #net: SeededRandom
  /** A running hash of the trace-worthy happenings, for the determinism test. */
  #hash = 0x811c9dc5

  constructor(seed: number, network: NetworkProfile, trace: boolean) {
    this.#net = new SeededRandom(BigInt(seed) + (3n << 40n))
    this.network = network
    this.traceOn = trace
  }

  get traceHash(): string {
    return (this.#hash >>> 0).toString(16).padStart(8, '0')
  }

  log(line: string): void {
    const text = `${this.nowMs.toFixed(1).padStart(9)} ${line}`
    for (let i = 0; i < text.length; i++) this.#hash = Math.imul(this.#hash ^ text.charCodeAt(i), 0x01000193)
    if (this.traceOn) this.trace.push(text)
  }

  /** Run `fn` at simulated time `atMs` (never before now). */
  at(atMs: number, label: string, fn: () => boolean | undefined): void {
    this.#queue.push(Math.max(atMs, this.nowMs), { label, fn })
  }

  /** Process events up to `untilMs`; returns early when `stop()` says so. */
  async runUntil(untilMs: number, stop: () => boolean = () => false): Promise<void> {
    for (;;) {
      const next = this.#queue.peekMs()
      if (next === undefined || next > untilMs) break
      const { atMs, event } = this.#queue.pop()!
      this.nowMs = atMs
      if (event.fn() === false) continue
      this.events++
      await settle()
      if (this.failure !== null) throw this.failure
      this.afterEvent?.()
      if (stop()) return
    }
    if (this.nowMs < untilMs) this.nowMs = untilMs
  }

  /**
   * Awaits `p` while events run (a read waiting on a write a slow disk holds), for at most
   * `limitMs` of simulated time; throws if it is still pending then.
   */
  async drive<T>(p: Promise<T>, limitMs = 60_000): Promise<T> {
    let done = false
    const watched = p.finally(() => {
      done = true
    })
    await settle()
    if (!done) await this.runUntil(this.nowMs + limitMs, () => done)
    if (!done) throw new Error(`still pending after ${limitMs} ms of simulated time`)
    return watched
  }

  /** A promise that resolves after `ms` of simulated time (slow disks hold their fsyncs on it). */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) =>
      this.at(this.nowMs + ms, 'sleep', () => {
        resolve()
        return true
      }),
    )
  }

  /** Record the first error of asynchronous code (the run stops after the current event). */
  fail(error: unknown): void {
    if (this.failure === null) this.failure = error
  }

  block(from: number, to: number): void {
    this.blocked.add(`${from}>${to}`)
  }

  heal(): void {
    this.blocked.clear()
  }

  /**
   * Send a message from `from` (in its current incarnation) to `to`: lost with the network's drop
   * rate or across a partition, else delivered after a delay — unless either end crashed meanwhile.
   */
  send(from: number, to: number, deliver: () => void, onLost?: () => void): void {
    this.messagesSent++
    const sender = this.endpoints.get(from)!
    const receiver = this.endpoints.get(to)!
    if (!sender.up || this.blocked.has(`${from}>${to}`)) {
      this.messagesDropped++
      return
    }
    if (this.#net.nextFloat() < this.network.dropRate) {
      this.messagesDropped++
      // Over TCP a lost message breaks its connection: the requester sees it fail soon after.
      if (onLost !== undefined)
        this.at(this.nowMs + this.network.delayMsMax * 2 + 1, 'connection reset', () => {
          onLost()
          return true
        })
      return
    }
    const net = this.network
    let delayMs = net.delayMsMin + this.#net.nextFloat() * (net.delayMsMax - net.delayMsMin)
    if (this.#net.nextFloat() < net.longDelayRate) delayMs += this.#net.nextFloat() * net.longDelayMsMax
    const fromIncarnation = sender.incarnation
    const toIncarnation = receiver.incarnation
    this.at(this.nowMs + delayMs, 'deliver', () => {
      if (
        !receiver.up ||
        receiver.incarnation !== toIncarnation ||
        sender.incarnation !== fromIncarnation ||
        this.blocked.has(`${from}>${to}`)
      ) {
        this.messagesDropped++
        return false
      }
      deliver()
      return true
    })
  }

  /**
   * A request from `from` answered by `handle` on `to`, through the network both ways; rejects
   * after `timeoutMs` on the caller's clock when the request or its answer is lost.
   */
  rpc<T>(from: number, to: number, clock: Clock, timeoutMs: number, handle: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let done = false
      const timer = clock.setTimer(timeoutMs, () => {
        if (done) return
        done = true
        reject(new Error(`request from ${from} to ${to} timed out`))
      })
      const reset = () => {
        if (done) return
        done = true
        clock.clearTimer(timer)
        reject(new Error(`connection from ${from} to ${to} lost`))
      }
      this.send(
        from,
        to,
        () => {
          const answer = (fn: () => void) =>
            this.send(
              to,
              from,
              () => {
                if (done) return
                done = true
                clock.clearTimer(timer)
                fn()
              },
              reset,
            )
          handle().then(
            (value) => answer(() => resolve(value)),
            (error: unknown) => answer(() => reject(error)),
          )
        },
        reset,
      )
    })
  }
}

interface NodeTimer {
  cancelled: boolean
}

/**
 * A node's Clock: monotonic time runs at `rate` times simulated time (clock skew stretches or
 * shrinks every timer), and timers of an earlier incarnation never fire.
 */
export class NodeClock implements Clock {
  readonly #world: SimWorld
  readonly #node: SimEndpoint
  readonly #rate: number
  readonly #wallOffsetMs: number

  constructor(world: SimWorld, node: SimEndpoint, rate: number, wallOffsetMs: number) {
    this.#world = world
    this.#node = node
    this.#rate = rate
    this.#wallOffsetMs = wallOffsetMs
  }

  nowMs(): number {
    return Math.floor(this.#wallOffsetMs + this.monotonicMs())
  }

  monotonicMs(): number {
    return this.#world.nowMs * this.#rate
  }

  setTimer(delayMs: number, fn: () => void): TimerHandle {
    const timer: NodeTimer = { cancelled: false }
    const incarnation = this.#node.incarnation
    const node = this.#node
    const world = this.#world
    world.at(world.nowMs + Math.max(0, delayMs) / this.#rate, 'timer', () => {
      if (timer.cancelled || !node.up || node.incarnation !== incarnation) return false
      timer.cancelled = true
      fn()
      return true
    })
    return timer as unknown as TimerHandle
  }

  clearTimer(handle: TimerHandle): void {
    ;(handle as unknown as NodeTimer).cancelled = true
  }
}
