/**
 * Incremental fetch sessions (KIP-227): a client names its partitions once, then sends only what
 * changed; the broker answers only partitions with something new. Pure bookkeeping: the Fetch
 * handler reads the logs, this decides which partitions a request covers and which to answer.
 */
import type { Random } from '../io/index.ts'
import { TopicName, type Uuid } from '../model/index.ts'
import { ErrorCode, type FetchRequestData, type FetchResponseData } from '../protocol/index.ts'

/** KIP-227 epochs: 0 starts a session, -1 ends one (or asks for none). */
export const INITIAL_EPOCH = 0
export const FINAL_EPOCH = -1

export interface FetchSessionLimits {
  /** `max.incremental.fetch.session.cache.slots` */
  readonly slotsMax: number
  /** `min.incremental.fetch.session.eviction.ms`: a session idle this long may be evicted. */
  readonly evictionMs: number
}

/** One partition a fetch covers: what the client asked for. */
export interface FetchPartitionRequest {
  readonly topic: TopicName
  readonly topicId: Uuid
  readonly partition: number
  readonly fetchOffset: bigint
  readonly logStartOffset: bigint
  readonly maxBytes: number
  readonly currentLeaderEpoch: number
  readonly lastFetchedEpoch: number
}

interface CachedPartition extends FetchPartitionRequest {
  /** What the last response told the client; a change must be sent even without new records. */
  highWatermark: bigint
  lastStableOffset: bigint
  logStartOffsetSent: bigint
}

export interface FetchSession {
  readonly id: number
  epoch: number
  readonly privileged: boolean
  /** By key; Map order is the order partitions are served in (rotated for fairness). */
  readonly partitions: Map<string, CachedPartition>
  lastUsedMs: number
  /** Whether the session keys partitions by topic id (Fetch v13+) or by name. */
  readonly usesTopicIds: boolean
}

export type FetchContext =
  /** No session: the request lists every partition; answer all of them. */
  | { readonly kind: 'sessionless'; readonly partitions: readonly FetchPartitionRequest[] }
  /** A new session (or none could be made: `session` null): answer all partitions. */
  | {
      readonly kind: 'full'
      readonly session: FetchSession | null
      readonly partitions: readonly FetchPartitionRequest[]
    }
  /** An existing session: the partitions are the session's; answer only those with news. */
  | {
      readonly kind: 'incremental'
      readonly session: FetchSession
      readonly partitions: readonly FetchPartitionRequest[]
    }
  | { readonly kind: 'error'; readonly errorCode: ErrorCode }

function keyOf(usesTopicIds: boolean, topic: string, topicId: string, partition: number): string {
  return usesTopicIds ? `${topicId}:${partition}` : `${topic}:${partition}`
}

/** The partitions a request names, with topic names resolved for v13+ (ids) by `nameOf`. */
export function requestedPartitions(
  req: FetchRequestData.FetchRequest,
  version: number,
  nameOf: (topicId: Uuid) => TopicName | undefined,
): FetchPartitionRequest[] {
  const out: FetchPartitionRequest[] = []
  for (const t of req.topics) {
    const topic = version >= 13 ? (nameOf(t.topicId) ?? TopicName('')) : t.topic
    for (const p of t.partitions) {
      out.push({
        topic,
        topicId: t.topicId,
        partition: p.partition,
        fetchOffset: p.fetchOffset,
        logStartOffset: p.logStartOffset,
        maxBytes: p.partitionMaxBytes,
        currentLeaderEpoch: p.currentLeaderEpoch,
        lastFetchedEpoch: p.lastFetchedEpoch,
      })
    }
  }
  return out
}

export class FetchSessionCache {
  readonly #limits: FetchSessionLimits
  readonly #random: Random
  readonly #sessions = new Map<number, FetchSession>()

  constructor(limits: FetchSessionLimits, random: Random) {
    this.#limits = limits
    this.#random = random
  }

  get size(): number {
    return this.#sessions.size
  }

  /**
   * Decides what a Fetch request covers. `privileged` marks follower replicas, whose sessions
   * outrank consumers' when the cache is full.
   */
  context(
    req: FetchRequestData.FetchRequest,
    version: number,
    options: { nowMs: number; privileged: boolean; nameOf: (topicId: Uuid) => TopicName | undefined },
  ): FetchContext {
    const usesTopicIds = version >= 13
    const requested = requestedPartitions(req, version, options.nameOf)
    if (version < 7 || (req.sessionId === 0 && req.sessionEpoch === FINAL_EPOCH)) {
      return { kind: 'sessionless', partitions: requested }
    }
    if (req.sessionEpoch === FINAL_EPOCH) {
      // Close the session; this request is a full, sessionless one.
      this.#sessions.delete(req.sessionId)
      return { kind: 'sessionless', partitions: requested }
    }
    if (req.sessionEpoch === INITIAL_EPOCH) {
      if (req.sessionId !== 0) this.#sessions.delete(req.sessionId)
      const session = this.#create(requested, usesTopicIds, options.nowMs, options.privileged)
      return { kind: 'full', session, partitions: requested }
    }
    const session = this.#sessions.get(req.sessionId)
    if (session === undefined) return { kind: 'error', errorCode: ErrorCode.FetchSessionIdNotFound }
    if (session.epoch !== req.sessionEpoch || session.usesTopicIds !== usesTopicIds) {
      return { kind: 'error', errorCode: ErrorCode.InvalidFetchSessionEpoch }
    }
    for (const p of requested) {
      const key = keyOf(usesTopicIds, p.topic, p.topicId, p.partition)
      const cached = session.partitions.get(key)
      if (cached === undefined) {
        session.partitions.set(key, {
          ...p,
          highWatermark: -1n,
          lastStableOffset: -1n,
          logStartOffsetSent: -1n,
        })
      } else {
        session.partitions.set(key, { ...cached, ...p })
      }
    }
    for (const f of req.forgottenTopicsData) {
      const topic = usesTopicIds ? (options.nameOf(f.topicId) ?? '') : f.topic
      for (const partition of f.partitions)
        session.partitions.delete(keyOf(usesTopicIds, topic, f.topicId, partition))
    }
    session.epoch = nextEpoch(session.epoch)
    session.lastUsedMs = options.nowMs
    return { kind: 'incremental', session, partitions: [...session.partitions.values()] }
  }

  #create(
    partitions: readonly FetchPartitionRequest[],
    usesTopicIds: boolean,
    nowMs: number,
    privileged: boolean,
  ): FetchSession | null {
    if (partitions.length === 0 && !privileged) return null
    if (this.#sessions.size >= this.#limits.slotsMax && !this.#evictOne(nowMs, privileged)) return null
    let id: number
    do id = 1 + this.#random.int(0x7ffffffe)
    while (this.#sessions.has(id))
    const session: FetchSession = {
      id,
      epoch: nextEpoch(INITIAL_EPOCH),
      privileged,
      partitions: new Map(),
      lastUsedMs: nowMs,
      usesTopicIds,
    }
    for (const p of partitions) {
      session.partitions.set(keyOf(usesTopicIds, p.topic, p.topicId, p.partition), {
        ...p,
        highWatermark: -1n,
        lastStableOffset: -1n,
        logStartOffsetSent: -1n,
      })
    }
    this.#sessions.set(id, session)
    return session
  }

  /** KIP-227 eviction: a stale session goes first; else a follower may displace a consumer. */
  #evictOne(nowMs: number, privileged: boolean): boolean {
    let victim: FetchSession | null = null
    for (const s of this.#sessions.values()) {
      const stale = nowMs - s.lastUsedMs >= this.#limits.evictionMs
      const displaceable = stale || (privileged && !s.privileged)
      if (displaceable && (victim === null || s.lastUsedMs < victim.lastUsedMs)) victim = s
    }
    if (victim === null) return false
    this.#sessions.delete(victim.id)
    return true
  }
}

function nextEpoch(epoch: number): number {
  return epoch >= 0x7fffffff ? 1 : epoch + 1
}

/** Whether a partition's answer must go out in an incremental response, updating the cache. */
function mustRespond(cached: CachedPartition, answer: FetchResponseData.PartitionDataIn): boolean {
  let must = false
  const records = answer.records
  if (records != null && records.length > 0) must = true
  if ((answer.errorCode ?? ErrorCode.None) !== ErrorCode.None) must = true
  if (answer.highWatermark !== undefined && answer.highWatermark !== cached.highWatermark) {
    cached.highWatermark = answer.highWatermark
    must = true
  }
  if (answer.lastStableOffset !== undefined && answer.lastStableOffset !== cached.lastStableOffset) {
    cached.lastStableOffset = answer.lastStableOffset
    must = true
  }
  if (answer.logStartOffset !== undefined && answer.logStartOffset !== cached.logStartOffsetSent) {
    cached.logStartOffsetSent = answer.logStartOffset
    must = true
  }
  if (answer.divergingEpoch !== undefined || answer.snapshotId !== undefined) must = true
  return must
}

/**
 * Given each covered partition's answer (same order as `context.partitions`), returns the ones the
 * response carries. Full and sessionless contexts send all; incremental ones only partitions with
 * news, and move partitions that returned records to the back of the session so that next time
 * the others are served first (fairness under `fetch.max.bytes`).
 */
export function selectResponsePartitions(
  context: Exclude<FetchContext, { kind: 'error' }>,
  answers: ReadonlyArray<{
    readonly partition: FetchPartitionRequest
    readonly data: FetchResponseData.PartitionDataIn
  }>,
): Array<{ readonly partition: FetchPartitionRequest; readonly data: FetchResponseData.PartitionDataIn }> {
  const session = context.kind === 'sessionless' ? null : context.session
  if (session === null) return [...answers]
  const out: typeof answers extends ReadonlyArray<infer A> ? A[] : never = []
  for (const a of answers) {
    const key = keyOf(session.usesTopicIds, a.partition.topic, a.partition.topicId, a.partition.partition)
    const cached = session.partitions.get(key)
    if (cached === undefined) continue
    const must = mustRespond(cached, a.data)
    if (context.kind === 'full' || must) out.push(a)
    const records = a.data.records
    if (context.kind === 'incremental' && records != null && records.length > 0) {
      session.partitions.delete(key)
      session.partitions.set(key, cached)
    }
  }
  return out
}
