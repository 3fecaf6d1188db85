/**
 * Counters of the replicated write path, kept by the replica manager and its fetchers: how many
 * produce requests and follower fetches, their sizes, how long parked follower fetches and delayed
 * acks=all produces wait and what they wait for. Pure bookkeeping (times come from the Clock); the
 * broker reads and resets them (`take()`), e.g. for `WEIR_REPLICATION_STATS_MS`.
 */

/** Values kept per tally between two `take()`s for the median (the count, sum and max go on). */
export const TALLY_SAMPLES_MAX = 4096

/** Count, sum, max and median of one quantity. */
export class Tally {
  count = 0
  sum = 0
  max = 0
  readonly #samples: number[] = []

  add(v: number): void {
    this.count++
    this.sum += v
    if (v > this.max) this.max = v
    if (this.#samples.length < TALLY_SAMPLES_MAX) this.#samples.push(v)
  }

  reset(): void {
    this.#samples.length = 0
    this.count = 0
    this.sum = 0
    this.max = 0
  }

  /** `{ n, mean, p50, max }`, rounded to 0.01 (the median of the first TALLY_SAMPLES_MAX values). */
  summary(): { n: number; mean: number; p50: number; max: number } {
    const r = (x: number) => Math.round(x * 100) / 100
    const sorted = [...this.#samples].sort((a, b) => a - b)
    return {
      n: this.count,
      mean: this.count === 0 ? 0 : r(this.sum / this.count),
      p50: r(sorted[sorted.length >> 1] ?? 0),
      max: r(this.max),
    }
  }
}

/**
 * Cumulative counts of the data path, as Kafka's BrokerTopicMetrics (all topics) and ReplicaManager
 * meters count them; never reset (the node's /metrics exports them as counters).
 */
export class DataPathTotals {
  /** Records appended as leader by clients and coordinators (MessagesInPerSec). */
  messagesIn = 0
  /** Their batch bytes (BytesInPerSec). */
  bytesIn = 0
  /** Records bytes answered to consumers' fetches (BytesOutPerSec). */
  bytesOut = 0
  /** Records bytes a follower appended from its leader (ReplicationBytesInPerSec). */
  replicationBytesIn = 0
  /** Records bytes answered to followers' fetches (ReplicationBytesOutPerSec). */
  replicationBytesOut = 0
  /** ISR shrinks and expansions this node led, once the controller accepted them (IsrShrinksPerSec, IsrExpandsPerSec). */
  isrShrinks = 0
  isrExpands = 0
}

export class ReplicationStats {
  /** Never reset by `take()`. */
  readonly totals = new DataPathTotals()
  /** As leader: records bytes of each acks=all produce request (all partitions together). */
  readonly produceAllBytes = new Tally()
  /** As leader: ms from the end of an acks=all produce's appends to its answer. */
  readonly produceAllWaitMs = new Tally()
  /** As leader: ms from an append to the flush (fsync) it asked for completing (flush.on.ack). */
  readonly leaderFlushMs = new Tally()
  /** As leader: ms from the high watermark covering a delayed produce to its answer. */
  readonly produceAfterHwMs = new Tally()
  /** As leader: records bytes of each follower fetch answer. */
  readonly followerFetchBytes = new Tally()
  /** As leader: ms to read a follower fetch's answer from the log (the first read). */
  readonly followerReadMs = new Tally()
  /** As leader: ms a follower fetch was parked (waited for bytes). */
  readonly followerParkedMs = new Tally()
  /** As leader: ms from the append that had the bytes a parked follower fetch waited for to its wake. */
  readonly followerWakeAfterAppendMs = new Tally()
  /** As leader: parked follower fetches that ran out their wait with nothing. */
  followerParkedExpired = 0
  /** As follower: ms from sending a fetch to its answer. */
  readonly fetcherRoundMs = new Tally()
  /** As follower: ms to apply an answer (appends included). */
  readonly fetcherApplyMs = new Tally()
  /** As follower: records bytes per answer. */
  readonly fetcherBytes = new Tally()

  /** A plain summary of every counter; resets them. */
  take(): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(this)) {
      if (v instanceof DataPathTotals) continue
      if (v instanceof Tally) {
        out[k] = v.summary()
        v.reset()
      } else out[k] = v
    }
    this.followerParkedExpired = 0
    return out
  }
}
