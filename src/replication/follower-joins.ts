/**
 * Partitions that became led here (or that a reassignment gave a new replica) and that a follower
 * has yet to fetch, by follower: until a fetch of that follower names them (or JOIN_WAIT_MS
 * passed), its fetches are answered at once rather than parked, and the one parked when they
 * became led is woken (`watchersOf`).
 * Otherwise a follower's long poll for its other partitions, sent before it knew of the new one,
 * held every acks=all write to it for up to replica.fetch.wait.max.ms (a new topic's first
 * writes on 3 nodes: p99 300-400 ms at 20,000 records/s; docs/performance.md, "Known bottlenecks").
 */
import type { Clock } from '../io/index.ts'
import type { BrokerId } from '../model/index.ts'
import { partitionKey } from '../storage/index.ts'
import { Watchers } from './delayed-operations.ts'

/**
 * How long a partition newly led here (or given new replicas) keeps its followers' fetches from
 * parking until they name it: replica.fetch.wait.max.ms's default, past which a plain long poll
 * would have ended.
 */
const JOIN_WAIT_MS = 500

export class FollowerJoins {
  readonly #nodeId: BrokerId
  readonly #clock: Clock
  /** Per follower: partition key -> monotonic ms until which it is awaited. */
  readonly #joining = new Map<BrokerId, Map<string, number>>()
  /** Per follower: woken when a partition it is to fetch becomes led here. */
  readonly #followerWatchers = new Map<BrokerId, Watchers>()

  constructor(nodeId: BrokerId, clock: Clock) {
    this.#nodeId = nodeId
    this.#clock = clock
  }

  /** `key` is led here from now on, or has new replicas: they are to fetch it. */
  await(key: string, replicas: readonly BrokerId[]): void {
    const untilMs = this.#clock.monotonicMs() + JOIN_WAIT_MS
    for (const r of replicas) {
      if (r === this.#nodeId) continue
      let m = this.#joining.get(r)
      if (m === undefined) {
        m = new Map()
        this.#joining.set(r, m)
      }
      m.set(key, untilMs)
      this.#followerWatchers.get(r)?.wake()
    }
  }

  /**
   * Whether `replicaId` has a partition to start fetching here that `specs` do not name (those they
   * name, and those waited for too long, are forgotten).
   */
  pending(
    replicaId: BrokerId,
    specs: readonly { readonly topic: string; readonly partition: number }[],
  ): boolean {
    const m = this.#joining.get(replicaId)
    if (m === undefined) return false
    for (const s of specs) if (m.size > 0) m.delete(partitionKey(s.topic, s.partition))
    const nowMs = this.#clock.monotonicMs()
    for (const [key, untilMs] of m) if (untilMs <= nowMs) m.delete(key)
    if (m.size === 0) {
      this.#joining.delete(replicaId)
      return false
    }
    return true
  }

  /** What a parked fetch of `replicaId` watches to wake when a partition it is to fetch becomes led here. */
  watchersOf(replicaId: BrokerId): Watchers {
    let w = this.#followerWatchers.get(replicaId)
    if (w === undefined) {
      w = new Watchers()
      this.#followerWatchers.set(replicaId, w)
    }
    return w
  }
}
