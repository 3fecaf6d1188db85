/**
 * Produce on the leader (Kafka's `ReplicaManager.appendRecords`: `appendToLocalLog`, then the
 * delayed produce for acks=-1): each entry appended to its partition, concurrently across
 * partitions; acks=all answers once the ISR has every appended batch.
 */
import type { Clock } from '../io/index.ts'
import type { TopicName } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import type { DelayedOperations, WaitOutcome } from './delayed-operations.ts'
import type { LeaderAppendResult, Partition } from './partition.ts'
import type { MarkerInfo } from './producer-state.ts'
import type { ReplicaReconciler } from './replica-reconciler.ts'
import type { ReplicationStats } from './replication-stats.ts'

interface TopicPartitionEntry {
  readonly topic: TopicName
  readonly partition: number
}

export interface ProduceEntry extends TopicPartitionEntry {
  /** Exactly one record batch, as the producer sent it. */
  readonly records: Buffer
  /**
   * KIP-890: set when `transaction.partition.verification.enable`: the guard
   * `ReplicaManager.startTxnVerification` gave (null: the transaction was open then).
   */
  readonly verificationGuard?: object | null
}

export interface ProduceResult {
  readonly errorCode: ErrorCode
  readonly errorMessage: string | null
  /** -1 with an error. */
  readonly baseOffset: bigint
  readonly logAppendTimeMs: number
  readonly logStartOffset: bigint
}

export interface AppendRecordsOptions {
  readonly acks: number
  readonly timeoutMs: number
  /**
   * `client` (default): a producer's batches. `coordinator`: a coordinator's own write (a
   * transactional offset commit), whose producer batches get no duplicate or sequence check, as
   * Kafka's `AppendOrigin.COORDINATOR`.
   */
  readonly origin?: 'client' | 'coordinator'
}

/** What the produce path reads of the replica manager (made once, with it). */
export interface AppendContext {
  readonly clock: Clock
  readonly delayed: DelayedOperations
  readonly stats: ReplicationStats
  readonly replicas: ReplicaReconciler
}

/** One entry's append: its partition (undefined: not hosted), its answer, and for acks=-1 the offset the ISR must pass. */
interface Appended {
  readonly p: Partition | undefined
  readonly r: ProduceResult
  readonly required?: bigint
}

type Waiting = Appended & { readonly p: Partition; readonly required: bigint }

function produceError(
  errorCode: ErrorCode,
  errorMessage: string | null = null,
  logStartOffset = -1n,
): ProduceResult {
  return { errorCode, errorMessage, baseOffset: -1n, logAppendTimeMs: -1, logStartOffset }
}

/**
 * The append errors Kafka answers without the partition's log start offset (ReplicaManager's
 * `UNKNOWN_LOG_APPEND_INFO` cases); every other refusal of a hosted partition carries it.
 */
const ERRORS_WITHOUT_LOG_START: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.UnknownTopicOrPartition,
  ErrorCode.NotLeaderOrFollower,
  ErrorCode.MessageTooLarge,
  ErrorCode.RecordListTooLarge,
  ErrorCode.CorruptMessage,
  ErrorCode.KafkaStorageError,
  ErrorCode.UnknownTopicId,
])

/** A COMMIT or ABORT marker for one partition (WriteTxnMarkers). */
export interface TxnMarkerEntry {
  readonly topic: TopicName
  readonly partition: number
  readonly marker: MarkerInfo
}

type AppendTo<E> = (p: Partition, e: E, acks: number) => Promise<LeaderAppendResult>

async function appendOne<E extends TopicPartitionEntry>(
  replicas: ReplicaReconciler,
  e: E,
  acks: number,
  appendTo: AppendTo<E>,
): Promise<Appended> {
  const p = replicas.getPartition(e.topic, e.partition)
  if (p === undefined) return { p, r: produceError(replicas.unhosted(e.topic, e.partition)) }
  // An offline partition (its log dir failed) is Kafka's HostedPartition.Offline, whatever its role.
  if (p.log.offlineCause !== null) return { p, r: produceError(ErrorCode.KafkaStorageError) }
  const a = await appendTo(p, e, acks)
  if (a.errorCode !== ErrorCode.None || !('firstOffset' in a)) {
    const logStart = ERRORS_WITHOUT_LOG_START.has(a.errorCode) ? -1n : p.log.logStartOffset
    return { p, r: produceError(a.errorCode, 'errorMessage' in a ? a.errorMessage : null, logStart) }
  }
  const r: ProduceResult = {
    errorCode: ErrorCode.None,
    errorMessage: null,
    baseOffset: a.firstOffset,
    logAppendTimeMs: a.logAppendTimeMs,
    logStartOffset: a.logStartOffset,
  }
  return { p, r, required: a.lastOffset + 1n }
}

function appendedOrThrow(o: PromiseSettledResult<Appended>): Appended {
  if (o.status === 'rejected') throw o.reason
  return o.value
}

function resultOf(a: Appended): ProduceResult {
  return a.r
}

function isWaiting(a: Appended): a is Waiting {
  return 'required' in a && a.p !== undefined
}

/**
 * Appends each entry to its partition as leader, concurrently across partitions. With acks=-1 the
 * answer waits until the ISR has every appended batch (the high watermark passes it; with
 * `flush.on.ack` that includes the fsync) or `timeoutMs` passes (REQUEST_TIMED_OUT).
 */
export function appendRecords(
  c: AppendContext,
  entries: readonly ProduceEntry[],
  options: AppendRecordsOptions,
): Promise<ProduceResult[]> {
  let bytes = 0
  for (const e of entries) bytes += e.records.length
  const origin = options.origin ?? 'client'
  const totals = c.stats.totals
  return appendAll(c, entries, options, bytes, async (p, e, acks) => {
    const a = await p.appendAsLeader(e.records, acks, origin, e.verificationGuard)
    if ('duplicate' in a && !a.duplicate) {
      totals.messagesIn += Number(a.lastOffset - a.firstOffset) + 1
      totals.bytesIn += e.records.length
    }
    return a
  })
}

/**
 * Appends each marker to its partition as leader, answered once the ISR has it (acks=-1), as
 * Kafka's WriteTxnMarkers appends with `AppendOrigin.COORDINATOR`.
 */
export function appendTxnMarkers(
  c: AppendContext,
  entries: readonly TxnMarkerEntry[],
  timeoutMs: number,
): Promise<ProduceResult[]> {
  return appendAll(c, entries, { acks: -1, timeoutMs }, 0, (p, e, acks) =>
    p.appendTxnMarkerAsLeader(e.marker, acks),
  )
}

async function appendAll<E extends TopicPartitionEntry>(
  c: AppendContext,
  entries: readonly E[],
  options: { readonly acks: number; readonly timeoutMs: number },
  bytes: number,
  appendTo: AppendTo<E>,
): Promise<ProduceResult[]> {
  const startMs = c.clock.monotonicMs()
  const serving = c.replicas.whenServed(entries, options.timeoutMs)
  if (serving !== null) await serving
  // Every entry settles before an error is thrown: the records are views of the request's frame,
  // which its connection gives back (to the node's pool) once the handler is done, so no append
  // may still be on its way to a log then.
  const settled = await Promise.allSettled(
    entries.map((e) => appendOne(c.replicas, e, options.acks, appendTo)),
  )
  const appended = settled.map(appendedOrThrow)
  if (options.acks !== -1) return appended.map(resultOf)
  const waiting = appended.filter(isWaiting)
  if (waiting.length === 0) return appended.map(resultOf)
  const appendedMs = c.clock.monotonicMs()
  const elapsedMs = appendedMs - startMs
  if (bytes > 0) c.stats.produceAllBytes.add(bytes)
  const outcome = await c.delayed.wait(
    waiting.map((w) => w.p.watchers),
    () => waiting.every((w) => w.p.checkEnoughReplicasReachOffset(w.required).done),
    options.timeoutMs - elapsedMs,
    'produce',
  )
  recordAcksWait(c, waiting, appendedMs, outcome)
  return appended.map((a) => acksResult(a, outcome))
}

/** The acks=all wait's counters: from the append to the answer, and from the high-watermark move. */
function recordAcksWait(
  c: AppendContext,
  waiting: readonly Waiting[],
  appendedMs: number,
  outcome: WaitOutcome,
): void {
  const answeredMs = c.clock.monotonicMs()
  c.stats.produceAllWaitMs.add(answeredMs - appendedMs)
  if (outcome === 'completed') {
    let hwMs = 0
    for (const w of waiting) hwMs = Math.max(hwMs, w.p.lastHighWatermarkMoveMs)
    if (hwMs >= appendedMs) c.stats.produceAfterHwMs.add(answeredMs - hwMs)
  }
}

/** An entry's answer once the acks=all wait ended with `outcome`. */
function acksResult(a: Appended, outcome: WaitOutcome): ProduceResult {
  if (!('required' in a) || a.p === undefined) return a.r
  const c = a.p.checkEnoughReplicasReachOffset(a.required!)
  if (!c.done) {
    return produceError(outcome === 'shutdown' ? ErrorCode.NotLeaderOrFollower : ErrorCode.RequestTimedOut)
  }
  return c.errorCode === ErrorCode.None ? a.r : produceError(c.errorCode)
}
