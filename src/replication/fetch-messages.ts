/**
 * Fetch on the leader or a follower (Kafka's `ReplicaManager.fetchMessages`: `readFromLog` within
 * the response's byte budget, then the delayed fetch): consumers read up to the high watermark,
 * followers up to the log end and report their fetch state; a fetch short of `minBytes` parks
 * until appends or high-watermark moves bring enough, and reads again.
 */
import type { Clock } from '../io/index.ts'
import { BrokerId, type TopicName } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import type { ReadBuffers } from '../storage/index.ts'
import type { DelayedOperations, WaitOutcome, Watchers } from './delayed-operations.ts'
import type { FollowerJoins } from './follower-joins.ts'
import type { IsrProposals } from './isr-proposals.ts'
import type { Partition, ReadOutcome, ReadParams } from './partition.ts'
import { readError } from './read-outcome.ts'
import { type ReplicaSelectorKind, selectReadReplica } from './read-replica-selector.ts'
import type { ReplicaReconciler } from './replica-reconciler.ts'
import type { ReplicationStats } from './replication-stats.ts'

/** Kafka's replica ids of requests that are not from a follower. */
export const CONSUMER_REPLICA_ID = -1
export const DEBUGGING_REPLICA_ID = -2

export interface FetchSpec {
  readonly topic: TopicName
  readonly partition: number
  readonly fetchOffset: bigint
  readonly maxBytes: number
  readonly currentLeaderEpoch: number
  readonly lastFetchedEpoch: number
}

export interface FetchParams {
  /** -1 for consumers; a broker id for followers. */
  readonly replicaId: number
  readonly maxWaitMs: number
  readonly minBytes: number
  /** The response's byte budget (`fetch.max.bytes` already applied). */
  readonly maxBytes: number
  /** 0 read_uncommitted, 1 read_committed. */
  readonly isolationLevel: number
  /**
   * A consumer's client metadata (Fetch v11+): its rack, '' when none. Present, the consumer may
   * read from a follower (up to that follower's high watermark) and be pointed at one (KIP-392).
   */
  readonly clientRack?: string
  /** A follower's broker epoch (Fetch v15+ replicaState), -1 when not sent. */
  readonly replicaEpoch?: bigint
  /**
   * Where file reads get their buffers (storage's `ReadBufferPool`): the caller releases every
   * returned `records` to it once the response is written. Reads a long poll discards are
   * released here.
   */
  readonly readBuffers?: ReadBuffers
}

/** What the fetch path reads of the replica manager (made once, with it). */
export interface FetchContext {
  readonly nodeId: BrokerId
  readonly clock: Clock
  readonly delayed: DelayedOperations
  readonly stats: ReplicationStats
  /** The longest a fetch may wait for bytes, whatever it asks. */
  readonly fetchWaitMsMax: number
  /** `replica.selector.class` (KIP-392): null answers no preferred read replica. */
  readonly replicaSelector: ReplicaSelectorKind | null
  readonly replicas: ReplicaReconciler
  readonly isr: IsrProposals
  readonly joins: FollowerJoins
}

/** A partition a parked fetch watches, with the role and epoch it had when the fetch parked. */
interface Watched {
  readonly s: FetchSpec
  readonly p: Partition
  readonly epoch: number
  readonly role: string
}

function upToOf(params: FetchParams): ReadParams['upTo'] {
  if (params.replicaId >= 0) return 'logEndOffset'
  return params.isolationLevel === 1 ? 'lastStableOffset' : 'highWatermark'
}

/**
 * Reads the partitions in order within the response budget (Kafka's `readFromLog`): each gets at
 * most its own max bytes and what is left of the budget; until some partition returned bytes, the
 * first batch is returned whole even when larger.
 */
async function readAll(
  c: FetchContext,
  specs: readonly FetchSpec[],
  params: FetchParams,
): Promise<ReadOutcome[]> {
  const out: ReadOutcome[] = []
  try {
    return await readInto(c, out, specs, params)
  } catch (e) {
    // The caller never sees these: what they hold of the pool goes back here.
    for (const r of out) params.readBuffers?.release(r.records)
    throw e
  }
}

async function readInto(
  c: FetchContext,
  out: ReadOutcome[],
  specs: readonly FetchSpec[],
  params: FetchParams,
): Promise<ReadOutcome[]> {
  const upTo = upToOf(params)
  let budget = params.maxBytes
  let atLeastOneBatch = true
  for (const s of specs) {
    const p = c.replicas.getPartition(s.topic, s.partition)
    if (p === undefined) {
      out.push(readError(c.replicas.unhosted(s.topic, s.partition)))
      continue
    }
    if (p.log.offlineCause !== null) {
      out.push(readError(ErrorCode.KafkaStorageError))
      continue
    }
    const preferred = preferredReadReplica(c, p, s, params)
    if (preferred !== null) {
      out.push(preferred)
      continue
    }
    const r = await p.read({
      fetchOffset: s.fetchOffset,
      maxBytes: Math.max(0, Math.min(s.maxBytes, budget)),
      currentLeaderEpoch: s.currentLeaderEpoch,
      lastFetchedEpoch: s.lastFetchedEpoch,
      upTo,
      // As Kafka's FetchParams.fetchOnlyLeader: followers, and consumers without client metadata.
      fetchOnlyFromLeader:
        params.replicaId >= 0 ||
        (params.replicaId !== DEBUGGING_REPLICA_ID && params.clientRack === undefined),
      atLeastOneBatch,
      ...(params.readBuffers === undefined ? {} : { buffers: params.readBuffers }),
    })
    if (r.records.length > 0) {
      atLeastOneBatch = false
      budget = Math.max(0, budget - r.records.length)
    }
    if (params.replicaId >= 0 && r.errorCode === ErrorCode.None && r.divergingEpoch === null) {
      const replicaId = BrokerId(params.replicaId)
      p.updateFollowerFetchState(replicaId, s.fetchOffset, params.replicaEpoch ?? -1n)
      c.isr.maybeExpandIsr(p, replicaId)
    }
    out.push(r)
  }
  return out
}

/**
 * KIP-392 (Kafka's findPreferredReadReplica): a leader asked by a consumer with client metadata
 * answers, instead of records, the in-sync follower `replica.selector.class` prefers for it, with
 * its own high watermark and log start; null to read here.
 */
function preferredReadReplica(
  c: FetchContext,
  p: Partition,
  s: FetchSpec,
  params: FetchParams,
): ReadOutcome | null {
  const kind = c.replicaSelector
  if (kind === null || params.replicaId !== CONSUMER_REPLICA_ID || params.clientRack === undefined)
    return null
  const image = c.replicas.image
  if (!p.isLeader || image === null) return null
  const brokers = image.brokers
  const states = p.followerStates()
  const followers = p.isr.flatMap((id) => {
    const f = states.get(id)
    return id === c.nodeId || f === undefined
      ? []
      : [
          {
            id,
            rack: brokers.get(id)?.rack ?? null,
            logEndOffset: f.logEndOffset,
            lastFetchMs: f.lastFetchMs,
          },
        ]
  })
  const chosen = selectReadReplica(kind, {
    leader: { id: c.nodeId, rack: brokers.get(c.nodeId)?.rack ?? null },
    followers,
    fetchOffset: s.fetchOffset,
    clientRack: params.clientRack,
  })
  if (chosen === null) return null
  return {
    errorCode: ErrorCode.None,
    highWatermark: p.highWatermark,
    lastStableOffset: p.lastStableOffset,
    logStartOffset: p.logStartOffset,
    logEndOffset: p.logEndOffset,
    records: Buffer.alloc(0),
    divergingEpoch: null,
    preferredReadReplica: chosen,
  }
}

/**
 * A fetch: read at once; answer when there are at least `minBytes`, an error, or no wait asked;
 * otherwise wait (woken by appends and high-watermark moves on the partitions, never polling)
 * until enough bytes are estimated to be there, a partition changed leadership, or `maxWaitMs`
 * passed, and read again.
 */
export async function fetchMessages(
  c: FetchContext,
  specs: readonly FetchSpec[],
  params: FetchParams,
): Promise<ReadOutcome[]> {
  const serving = c.replicas.whenServed(specs)
  if (serving !== null) await serving
  const readStartMs = c.clock.monotonicMs()
  const first = await readAll(c, specs, params)
  const follower = params.replicaId >= 0
  if (follower) c.stats.followerReadMs.add(c.clock.monotonicMs() - readStartMs)
  const maxWaitMs = Math.min(params.maxWaitMs, c.fetchWaitMsMax)
  const bytes = bytesIfAnswered(c, specs, params, first, maxWaitMs)
  if (bytes >= 0) {
    if (follower) c.stats.followerFetchBytes.add(bytes)
    countBytesOut(c, params, first)
    return first
  }
  const watched: Watched[] = []
  for (const s of specs) {
    const p = c.replicas.getPartition(s.topic, s.partition)
    if (p !== undefined) watched.push({ s, p, epoch: p.leaderEpoch, role: p.role })
  }
  const watchers: Watchers[] = watched.map((w) => w.p.watchers)
  if (follower) watchers.push(c.joins.watchersOf(BrokerId(params.replicaId)))
  // The first reads are not answered (fewer than minBytes): read again after the wait.
  for (const r of first) params.readBuffers?.release(r.records)
  const parkedMs = c.clock.monotonicMs()
  const outcome = await c.delayed.wait(watchers, wakeCheck(c, watched, specs, params), maxWaitMs, 'fetch')
  const again = await readAll(c, specs, params)
  if (follower) recordFollowerParked(c, watched, again, parkedMs, outcome)
  countBytesOut(c, params, again)
  return again
}

/** BytesOut (consumers) or ReplicationBytesOut (followers); a debugging replica's reads are neither. */
function countBytesOut(c: FetchContext, params: FetchParams, answer: readonly ReadOutcome[]): void {
  if (params.replicaId === DEBUGGING_REPLICA_ID) return
  let bytes = 0
  for (const r of answer) bytes += r.records.length
  if (params.replicaId >= 0) c.stats.totals.replicationBytesOut += bytes
  else c.stats.totals.bytesOut += bytes
}

/**
 * The bytes of the first reads when they are the answer (no wait asked, nothing asked, at least
 * `minBytes`, an error, or the follower has a partition to start fetching elsewhere); -1 when the
 * fetch is to park.
 */
function bytesIfAnswered(
  c: FetchContext,
  specs: readonly FetchSpec[],
  params: FetchParams,
  first: readonly ReadOutcome[],
  maxWaitMs: number,
): number {
  let bytes = 0
  let error = false
  for (const r of first) {
    bytes += r.records.length
    if (r.errorCode !== ErrorCode.None || r.divergingEpoch !== null || r.preferredReadReplica !== undefined)
      error = true
  }
  const answered =
    maxWaitMs <= 0 ||
    specs.length === 0 ||
    bytes >= params.minBytes ||
    error ||
    (params.replicaId >= 0 && c.joins.pending(BrokerId(params.replicaId), specs))
  return answered ? bytes : -1
}

/**
 * Whether a parked fetch is to read again: a watched partition changed (no longer hosted, another
 * epoch or role, the fetch offset out of its log), enough bytes are estimated to be there, or the
 * follower has a partition to start fetching.
 */
function wakeCheck(
  c: FetchContext,
  watched: readonly Watched[],
  specs: readonly FetchSpec[],
  params: FetchParams,
): () => boolean {
  const upTo = upToOf(params)
  const follower = params.replicaId >= 0
  const replicaId = BrokerId(params.replicaId)
  return () => {
    let available = 0
    for (const w of watched) {
      const { p, s } = w
      if (
        c.replicas.getPartition(p.topic, p.partition) !== p ||
        p.leaderEpoch !== w.epoch ||
        p.role !== w.role
      )
        return true
      if (s.fetchOffset < p.logStartOffset || s.fetchOffset > p.logEndOffset) return true
      const b = p.bytesAvailable(s.fetchOffset, upTo)
      if (b === null) return true
      available += Math.min(b, s.maxBytes)
      if (available >= params.minBytes) return true
    }
    return follower && c.joins.pending(replicaId, specs)
  }
}

/** A follower's parked fetch's counters: parked time, expiry, wake after the append, bytes. */
function recordFollowerParked(
  c: FetchContext,
  watched: readonly Watched[],
  again: readonly ReadOutcome[],
  parkedMs: number,
  outcome: WaitOutcome,
): void {
  const nowMs = c.clock.monotonicMs()
  c.stats.followerParkedMs.add(nowMs - parkedMs)
  if (outcome === 'expired') c.stats.followerParkedExpired++
  let appendMs = 0
  for (const w of watched) appendMs = Math.max(appendMs, w.p.lastAppendMs)
  if (outcome === 'completed' && appendMs >= parkedMs) c.stats.followerWakeAfterAppendMs.add(nowMs - appendMs)
  let b = 0
  for (const r of again) b += r.records.length
  c.stats.followerFetchBytes.add(b)
}
