/**
 * Follower replication (KIP-595-style fetch from the leader with `lastFetchedEpoch`): one fetcher
 * per (leader broker, fetcher id) fetches every partition this broker follows from that leader,
 * appends the returned batches as they are, applies the leader's high watermark and log start,
 * truncates on the leader's divergence answers (KIP-101/279 through epochs, never blindly to the
 * high watermark) and backs off on errors. Network only through the `LeaderLink` port.
 */
import type { Clock, TimerHandle } from '../io/index.ts'
import { assert, type BrokerId, type TopicName, type Uuid } from '../model/index.ts'
import { ErrorCode, LOG_OVERHEAD } from '../protocol/index.ts'
import { UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET } from './leader-epoch-cache.ts'
import type { Partition } from './partition.ts'
import type { ReplicationStats } from './replication-stats.ts'

/** One partition of a replica fetch. */
export interface ReplicaFetchPartition {
  readonly topic: TopicName
  readonly topicId: Uuid
  readonly partition: number
  readonly currentLeaderEpoch: number
  readonly fetchOffset: bigint
  readonly lastFetchedEpoch: number
  readonly logStartOffset: bigint
  readonly maxBytes: number
}

export interface ReplicaFetchRequest {
  readonly replicaId: BrokerId
  readonly brokerEpoch: bigint
  readonly maxWaitMs: number
  readonly minBytes: number
  readonly maxBytes: number
  readonly partitions: readonly ReplicaFetchPartition[]
}

/** The leader's answer for one partition. */
export interface ReplicaFetchAnswer {
  readonly errorCode: ErrorCode
  readonly highWatermark: bigint
  readonly logStartOffset: bigint
  /** Set when the follower's last fetched epoch diverges from the leader's log. */
  readonly divergingEpoch: { readonly epoch: number; readonly endOffset: bigint } | null
  readonly records: Buffer
}

/** The leader's answers to one fetch, in the order of the request's partitions. */
export interface ReplicaFetchResponse {
  readonly answers: ReplicaFetchAnswer[]
  /**
   * The answers' records may be views of a buffer lent by the node's pool: the fetcher calls this
   * once it has appended them (the log retains what it keeps) or dropped them. Once.
   */
  release(): void
}

/** A connection to one leader broker, as the fetcher needs it. */
export interface LeaderLink {
  /** Rejects when the leader could not be reached. */
  fetch(req: ReplicaFetchRequest): Promise<ReplicaFetchResponse>
  /** The leader's log start and end offsets (ListOffsets earliest and latest, as a replica). */
  offsets(
    partitions: ReadonlyArray<{ topic: TopicName; partition: number; currentLeaderEpoch: number }>,
  ): Promise<Array<{ errorCode: ErrorCode; logStartOffset: bigint; logEndOffset: bigint }>>
  close(): void
}

export interface ReplicaFetcherSettings {
  /** `replica.fetch.max.bytes`: per partition. */
  readonly fetchBytesMax: number
  /** `replica.fetch.response.max.bytes` */
  readonly responseBytesMax: number
  /** `replica.fetch.min.bytes` */
  readonly fetchBytesMin: number
  /** `replica.fetch.wait.max.ms` */
  readonly fetchWaitMsMax: number
  /** `replica.fetch.backoff.ms` */
  readonly backoffMs: number
  /** `num.replica.fetchers` */
  readonly numFetchers: number
}

interface FetchState {
  readonly p: Partition
  readonly leaderEpoch: number
  /** Monotonic ms before which the partition is not fetched (after an error). */
  delayedUntilMs: number
  /** FENCED_LEADER_EPOCH: this broker's metadata is behind; nothing until it is re-assigned. */
  fenced: boolean
  /** NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION answers in a row (the retry doubles). */
  notLeaderRetries: number
}

/**
 * How soon a partition is fetched again after UNKNOWN_LEADER_EPOCH (the leader's metadata lags), and
 * first after NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION (doubling from there).
 */
export const METADATA_LAG_RETRY_MS = 10

function offsetMin(a: bigint, b: bigint): bigint {
  return a < b ? a : b
}

function keyOf(p: { topic: string; partition: number }): string {
  return `${p.topic}-${p.partition}`
}

/** The whole batches at the start of `records` (a response may end with a partial one). */
export function wholeBatches(records: Buffer): Buffer {
  let at = 0
  while (at + LOG_OVERHEAD <= records.length) {
    const size = LOG_OVERHEAD + records.readInt32BE(at + 8)
    if (size <= LOG_OVERHEAD || at + size > records.length) break
    at += size
  }
  return at === records.length ? records : records.subarray(0, at)
}

/** Fetches from one leader for the partitions assigned to it. */
export class ReplicaFetcher {
  readonly leader: BrokerId
  readonly #nodeId: BrokerId
  readonly #brokerEpoch: () => bigint
  readonly #clock: Clock
  readonly #settings: ReplicaFetcherSettings
  readonly #link: LeaderLink
  readonly #log: (level: 'info' | 'warn' | 'error', message: string) => void
  readonly #stats: ReplicationStats | null
  readonly #states = new Map<string, FetchState>()
  #running = false
  #stopped = false
  #wake: (() => void) | null = null
  #timer: TimerHandle | null = null
  /** The processing of the current response: removal waits for it (no append after a role change). */
  #processing: Promise<void> = Promise.resolve()

  constructor(options: {
    leader: BrokerId
    nodeId: BrokerId
    brokerEpoch: () => bigint
    clock: Clock
    settings: ReplicaFetcherSettings
    link: LeaderLink
    log?: (level: 'info' | 'warn' | 'error', message: string) => void
    stats?: ReplicationStats
  }) {
    this.leader = options.leader
    this.#nodeId = options.nodeId
    this.#brokerEpoch = options.brokerEpoch
    this.#clock = options.clock
    this.#settings = options.settings
    this.#link = options.link
    this.#log = options.log ?? (() => {})
    this.#stats = options.stats ?? null
  }

  get size(): number {
    return this.#states.size
  }

  /** Starts (or keeps) fetching `p` from this leader in `leaderEpoch`. */
  add(p: Partition, leaderEpoch: number): void {
    const k = keyOf(p)
    const s = this.#states.get(k)
    if (s !== undefined && s.p === p && s.leaderEpoch === leaderEpoch) return
    this.#states.set(k, { p, leaderEpoch, delayedUntilMs: 0, fenced: false, notLeaderRetries: 0 })
    this.#start()
    this.#poke()
  }

  /** Stops fetching `p`; resolves once no response for it is being applied. */
  async remove(p: { topic: string; partition: number }): Promise<void> {
    this.#states.delete(keyOf(p))
    await this.#processing
  }

  #start(): void {
    if (this.#running || this.#stopped) return
    this.#running = true
    void this.#run()
      .catch((e: unknown) => {
        this.#log(
          'error',
          `replica fetcher for leader ${this.leader} failed: ${(e as Error).stack ?? String(e)}`,
        )
      })
      .finally(() => {
        this.#running = false
      })
  }

  #poke(): void {
    const w = this.#wake
    this.#wake = null
    w?.()
  }

  /** Waits until `poke` or `ms` passed (or forever when ms is null). */
  #sleep(ms: number | null): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = resolve
      if (ms !== null) {
        this.#timer = this.#clock.setTimer(Math.max(1, ms), () => {
          this.#timer = null
          if (this.#wake === resolve) this.#wake = null
          resolve()
        })
      }
    }).finally(() => {
      if (this.#timer !== null) this.#clock.clearTimer(this.#timer)
      this.#timer = null
    })
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const now = this.#clock.monotonicMs()
      const ready: FetchState[] = []
      let nextMs: number | null = null
      for (const s of this.#states.values()) {
        if (s.fenced) continue
        if (s.delayedUntilMs > now) nextMs = Math.min(nextMs ?? Number.POSITIVE_INFINITY, s.delayedUntilMs)
        else ready.push(s)
      }
      if (ready.length === 0) {
        await this.#sleep(nextMs === null ? null : nextMs - now)
        continue
      }
      const specs: ReplicaFetchPartition[] = ready.map((s) => ({
        topic: s.p.topic,
        topicId: s.p.topicId,
        partition: s.p.partition,
        currentLeaderEpoch: s.leaderEpoch,
        fetchOffset: s.p.logEndOffset,
        lastFetchedEpoch: s.p.state.epochs.latestEpoch,
        logStartOffset: s.p.logStartOffset,
        maxBytes: this.#settings.fetchBytesMax,
      }))
      let response: ReplicaFetchResponse
      const sentMs = this.#clock.monotonicMs()
      try {
        response = await this.#link.fetch({
          replicaId: this.#nodeId,
          brokerEpoch: this.#brokerEpoch(),
          maxWaitMs: this.#settings.fetchWaitMsMax,
          minBytes: this.#settings.fetchBytesMin,
          maxBytes: this.#settings.responseBytesMax,
          partitions: specs,
        })
      } catch (e) {
        if (this.#stopped) return
        this.#log('warn', `fetch from leader ${this.leader} failed: ${(e as Error).message}`)
        const until = this.#clock.monotonicMs() + this.#settings.backoffMs
        for (const s of ready) s.delayedUntilMs = until
        continue
      }
      if (this.#stopped) {
        response.release()
        return
      }
      const answers = response.answers
      const answeredMs = this.#clock.monotonicMs()
      const work = this.#apply(ready, specs, answers)
      this.#processing = work.catch(() => {})
      await work.finally(() => response.release())
      if (this.#stats !== null) {
        let bytes = 0
        for (const a of answers) bytes += a.records.length
        this.#stats.fetcherRoundMs.add(answeredMs - sentMs)
        this.#stats.fetcherApplyMs.add(this.#clock.monotonicMs() - answeredMs)
        this.#stats.fetcherBytes.add(bytes)
        this.#stats.totals.replicationBytesIn += bytes
      }
    }
  }

  async #apply(
    ready: readonly FetchState[],
    specs: readonly ReplicaFetchPartition[],
    answers: readonly ReplicaFetchAnswer[],
  ): Promise<void> {
    for (const [i, s] of ready.entries()) {
      const a = answers[i]
      const spec = specs[i]!
      // Still ours, in the same epoch, and not truncated meanwhile.
      if (a === undefined || this.#states.get(keyOf(s.p)) !== s) continue
      if (s.p.role !== 'follower' || s.p.logEndOffset !== spec.fetchOffset) continue
      try {
        await this.#applyOne(s, spec, a)
      } catch (e) {
        this.#log('warn', `replica ${keyOf(s.p)}: ${(e as Error).message}`)
        s.delayedUntilMs = this.#clock.monotonicMs() + this.#settings.backoffMs
      }
    }
  }

  async #applyOne(s: FetchState, spec: ReplicaFetchPartition, a: ReplicaFetchAnswer): Promise<void> {
    const p = s.p
    if (a.errorCode !== ErrorCode.NotLeaderOrFollower && a.errorCode !== ErrorCode.UnknownTopicOrPartition)
      s.notLeaderRetries = 0
    switch (a.errorCode) {
      case ErrorCode.None: {
        if (a.divergingEpoch !== null) {
          await this.#truncateOnDivergence(s, a.divergingEpoch)
          return
        }
        const records = wholeBatches(a.records)
        if (records.length > 0) {
          const r = await p.appendAsFollower(records)
          if (r.errorCode !== ErrorCode.None) {
            this.#log(
              'warn',
              `replica ${keyOf(p)}: append at ${spec.fetchOffset} failed: ${r.errorCode} ${r.errorMessage ?? ''}`,
            )
            s.delayedUntilMs = this.#clock.monotonicMs() + this.#settings.backoffMs
            return
          }
          // The batches started at the fetch offset (#apply checked the log still ends there), so
          // the next fetch starts past it: only truncation moves a follower's fetch offset back.
          assert(
            p.logEndOffset > spec.fetchOffset,
            "a follower's append left its log end at the fetch offset",
          )
        }
        p.updateFollowerHighWatermark(a.highWatermark)
        if (a.logStartOffset >= 0n) await p.maybeIncrementLogStartOffset(a.logStartOffset)
        return
      }
      case ErrorCode.OffsetOutOfRange:
        await this.#handleOutOfRange(s)
        return
      case ErrorCode.FencedLeaderEpoch:
        // The leader is in a newer epoch than this broker's metadata: wait to be re-assigned.
        this.#log('info', `replica ${keyOf(p)}: epoch ${s.leaderEpoch} is fenced by leader ${this.leader}`)
        s.fenced = true
        return
      case ErrorCode.UnknownLeaderEpoch:
        // The leader has not applied the election that made it leader yet (this broker's
        // metadata is ahead): a matter of milliseconds. Ask again soon rather than after the full
        // backoff, which would hold every acks=all write of a new leader for a second after a
        // failover (the new ISR waits for this follower's next fetch).
        s.delayedUntilMs =
          this.#clock.monotonicMs() + Math.min(this.#settings.backoffMs, METADATA_LAG_RETRY_MS)
        return
      case ErrorCode.NotLeaderOrFollower:
      case ErrorCode.UnknownTopicOrPartition:
        // This broker's metadata names that leader in this epoch, so either the leader has not
        // applied it or opened the partition yet (a topic just created: milliseconds), or it moved
        // on and this broker's metadata will re-assign the partition. Ask again after
        // METADATA_LAG_RETRY_MS, doubling up to the backoff, since every acks=all write to a new
        // topic waits for this follower: the full backoff (a second) held them for that second
        // whenever a follower's first fetch beat the leader's reconciliation (about half of the
        // 3-node bench:peers rounds), and a 50 ms start still held them 150 ms when the leader
        // took that long to open the new log.
        s.delayedUntilMs =
          this.#clock.monotonicMs() +
          Math.min(this.#settings.backoffMs, METADATA_LAG_RETRY_MS * 2 ** s.notLeaderRetries)
        s.notLeaderRetries = Math.min(s.notLeaderRetries + 1, 16)
        return
      default:
        // KAFKA_STORAGE_ERROR and the rest: back off until metadata catches up.
        s.delayedUntilMs = this.#clock.monotonicMs() + this.#settings.backoffMs
    }
  }

  /**
   * Kafka's `getOffsetTruncationState`: where to cut given the leader's (epoch, end offset) for the
   * epoch this replica last fetched. When the leader names an epoch this log does not end the same
   * way, cut to this log's end of the epoch below and ask again (the next fetch carries the new
   * last epoch); the loop ends at the common prefix.
   */
  async #truncateOnDivergence(s: FetchState, d: { epoch: number; endOffset: bigint }): Promise<void> {
    const p = s.p
    const end = p.logEndOffset
    let offset: bigint
    if (d.endOffset === UNDEFINED_EPOCH_OFFSET) {
      s.delayedUntilMs = this.#clock.monotonicMs() + this.#settings.backoffMs
      return
    }
    if (d.epoch === UNDEFINED_EPOCH) offset = offsetMin(d.endOffset, end)
    else {
      const mine = p.state.epochs.endOffsetFor(d.epoch, end)
      if (mine.endOffset === UNDEFINED_EPOCH_OFFSET) offset = offsetMin(d.endOffset, end)
      else if (mine.epoch !== d.epoch) offset = offsetMin(mine.endOffset, end)
      else offset = offsetMin(d.endOffset, mine.endOffset)
    }
    // An epoch of this log ends at most at its end (the latest at the end, the others where the
    // next starts), so divergence only ever cuts the log back.
    assert(offset <= end, 'a divergence truncation past the log end')
    const epochBefore = p.state.epochs.latestEpoch
    if (offset < end)
      this.#log(
        'info',
        `replica ${keyOf(p)}: truncating from ${end} to ${offset} (leader epoch ${d.epoch} ends at ${d.endOffset})`,
      )
    await p.truncateTo(offset)
    // Nothing changed (no log to cut, no epoch entry past it): fetching again at once would spin.
    if (p.logEndOffset === end && p.state.epochs.latestEpoch === epochBefore)
      s.delayedUntilMs = this.#clock.monotonicMs() + this.#settings.backoffMs
  }

  /**
   * OFFSET_OUT_OF_RANGE (Kafka's `fetchOffsetAndTruncate`): behind the leader's end is impossible
   * with epochs unless the leader lost data (an unclean election): cut to its end. Otherwise this
   * log's last epoch or end is not in the leader's log any more: start afresh at the leader's start.
   */
  async #handleOutOfRange(s: FetchState): Promise<void> {
    const p = s.p
    const [o] = await this.#link.offsets([
      { topic: p.topic, partition: p.partition, currentLeaderEpoch: s.leaderEpoch },
    ])
    if (o === undefined || o.errorCode !== ErrorCode.None) {
      s.delayedUntilMs = this.#clock.monotonicMs() + this.#settings.backoffMs
      return
    }
    if (this.#states.get(keyOf(p)) !== s || p.role !== 'follower') return
    const end = p.logEndOffset
    if (o.logEndOffset < end) {
      this.#log(
        'warn',
        `replica ${keyOf(p)}: leader ${this.leader} ends at ${o.logEndOffset}, before this log's end ${end}: truncating`,
      )
      await p.truncateTo(o.logEndOffset)
      return
    }
    this.#log(
      'info',
      `replica ${keyOf(p)}: restarting at the leader's log start ${o.logStartOffset} (was ${p.logStartOffset}-${end})`,
    )
    await p.truncateFullyAndStartAt(o.logStartOffset)
  }

  /**
   * Stops fetching and closes the link; resolves once no response is being applied (a fetch in
   * flight is abandoned: its answer is dropped).
   */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#poke()
    this.#link.close()
    await this.#processing
  }
}

export interface ReplicaFetcherManagerOptions {
  readonly nodeId: BrokerId
  /** This broker's epoch, carried in fetches (KIP-841); -1 before registration. */
  readonly brokerEpoch: () => bigint
  readonly clock: Clock
  readonly settings: ReplicaFetcherSettings
  /** A link to a leader (it connects lazily and reconnects after failures). */
  readonly connect: (leader: BrokerId) => LeaderLink
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void
  readonly stats?: ReplicationStats
}

/** One fetcher per (leader, fetcher id), as Kafka's ReplicaFetcherManager. */
export class ReplicaFetcherManager {
  readonly #o: ReplicaFetcherManagerOptions
  readonly #fetchers = new Map<string, ReplicaFetcher>()
  /** Partition key -> the fetcher it is assigned to. */
  readonly #assigned = new Map<string, ReplicaFetcher>()
  #closed = false

  constructor(options: ReplicaFetcherManagerOptions) {
    this.#o = options
  }

  /** Kafka's `getFetcherId`: a partition always goes to the same fetcher of its leader. */
  #fetcherId(topic: string, partition: number): number {
    let h = 0
    for (let i = 0; i < topic.length; i++) h = (Math.imul(31, h) + topic.charCodeAt(i)) | 0
    return Math.abs((Math.imul(31, h) + partition) | 0) % Math.max(1, this.#o.settings.numFetchers)
  }

  /** Fetches `p` from `leader` in `leaderEpoch` (moving it off another leader's fetcher). */
  async assign(p: Partition, leader: BrokerId, leaderEpoch: number): Promise<void> {
    if (this.#closed) return
    const k = keyOf(p)
    const fk = `${leader}/${this.#fetcherId(p.topic, p.partition)}`
    const current = this.#assigned.get(k)
    if (current !== undefined && current.leader !== leader) await this.unassign(p)
    let f = this.#fetchers.get(fk)
    if (f === undefined) {
      f = new ReplicaFetcher({
        leader,
        nodeId: this.#o.nodeId,
        brokerEpoch: this.#o.brokerEpoch,
        clock: this.#o.clock,
        settings: this.#o.settings,
        link: this.#o.connect(leader),
        ...(this.#o.log === undefined ? {} : { log: this.#o.log }),
        ...(this.#o.stats === undefined ? {} : { stats: this.#o.stats }),
      })
      this.#fetchers.set(fk, f)
    }
    this.#assigned.set(k, f)
    f.add(p, leaderEpoch)
  }

  /** Stops fetching `p`; resolves once nothing more of a response is applied to it. */
  async unassign(p: { topic: string; partition: number }): Promise<void> {
    const k = keyOf(p)
    const f = this.#assigned.get(k)
    if (f === undefined) return
    this.#assigned.delete(k)
    const removed = f.remove(p)
    if (f.size === 0) {
      for (const [fk, x] of this.#fetchers) if (x === f) this.#fetchers.delete(fk)
      await removed
      await f.stop()
      return
    }
    await removed
  }

  async close(): Promise<void> {
    this.#closed = true
    const all = [...this.#fetchers.values()]
    this.#fetchers.clear()
    this.#assigned.clear()
    await Promise.all(all.map((f) => f.stop()))
  }
}
