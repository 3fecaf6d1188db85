/**
 * The transaction coordinator shell, as Kafka's TransactionCoordinator, TransactionStateManager and
 * TransactionMarkerChannelManager around the pure state machine (`transaction-state.ts`): the
 * metadata of each transactional id of the `__transaction_state` partitions this broker leads,
 * loaded from the log on election (COORDINATOR_LOAD_IN_PROGRESS until then); each transition written
 * through the log port (acks=all) and completed, or dropped, once the write answers; the markers of
 * a prepared commit or abort sent through the marker port and retried on the Clock until every
 * partition has one, then the completion written; the timers that abort timed-out transactions and
 * expire idle transactional ids. No transaction logic of its own.
 */
import type { Clock, TimerHandle } from '../io/index.ts'
import { assert } from '../model/index.ts'
import { DecodeError, ErrorCode, encodeBatch } from '../protocol/index.ts'
import { decodeKeyedBatches } from './coordinator-records.ts'
import type { CoordinatorStatus } from './group-coordinator.ts'
import { partitionForTransactionalId } from './java-hash.ts'
import { LoadWaiters } from './load-waiters.ts'
import type { OffsetsLog } from './offsets-log.ts'
import {
  decodeTransactionLogRecord,
  encodeTransactionLogKey,
  encodeTransactionLogValue,
  TRANSACTION_STATES,
  type TransactionState,
  type TxnPartition,
} from './transaction-records.ts'
import {
  addOffsetsToTxn,
  addPartitionsToTxn,
  completeAfterMarkers,
  completeTransition,
  endTxn,
  expireTransaction,
  expireTransactionalId,
  failTransition,
  initProducerId,
  metadataFromRecord,
  type TransactionMetadata,
  type TxnContext,
  type TxnOutcome,
} from './transaction-state.ts'

export interface TransactionCoordinatorConfig {
  /** transaction.max.timeout.ms */
  readonly transactionTimeoutMsMax: number
  /** transaction.abort.timed.out.transaction.cleanup.interval.ms */
  readonly abortTimedOutIntervalMs: number
  /** transaction.remove.expired.transaction.cleanup.interval.ms */
  readonly removeExpiredIntervalMs: number
  /** transactional.id.expiration.ms */
  readonly transactionalIdExpirationMs: number
  /** The cluster's finalized transaction.version (0: TransactionLogValue v0, EndTxn v4 rules). */
  readonly transactionVersionLevel: number
  /** Wait before a marker or a completion is tried again (Kafka's retry.backoff.ms). */
  readonly retryBackoffMs: number
}

/** One transaction's marker for its partitions, as WriteTxnMarkers v1 carries it. */
export interface TxnMarker {
  readonly producerId: bigint
  readonly producerEpoch: number
  /** The leader epoch of the `__transaction_state` partition that wrote the prepare record. */
  readonly coordinatorEpoch: number
  /** True: COMMIT; false: ABORT. */
  readonly committed: boolean
  readonly partitions: readonly TxnPartition[]
}

/**
 * Writes markers to partition leaders: one attempt, each partition's answer by `txnPartitionKey`.
 * NONE: written; UNKNOWN_TOPIC_OR_PARTITION: the topic is gone from this broker's metadata (the
 * channel's own check, not a leader's answer, which may only mean it did not host the partition
 * yet): dropped; TRANSACTION_COORDINATOR_FENCED or INVALID_PRODUCER_EPOCH: a newer coordinator
 * took the transaction over: sending stops, as Kafka's; anything else (a missing answer too) is
 * tried again after the backoff.
 */
export interface TxnMarkerChannel {
  writeMarkers(marker: TxnMarker): Promise<ReadonlyMap<string, ErrorCode>>
}

export function txnPartitionKey(p: TxnPartition): string {
  return `${p.topic}:${p.partition}`
}

export interface TransactionCoordinatorOptions {
  readonly config: TransactionCoordinatorConfig
  /** transaction.state.log.num.partitions (the topic's count once it exists). */
  readonly partitionCount: number
  readonly log: OffsetsLog
  readonly markers: TxnMarkerChannel
  readonly clock: Clock
  /** A producer id never handed out before (the broker's ProducerIdManager). */
  readonly newProducerId: () => Promise<{ readonly producerId: bigint } | { readonly errorCode: ErrorCode }>
  readonly logger?: (level: 'info' | 'warn' | 'error', message: string) => void
  /** Bytes asked per read while loading (Kafka's transaction.state.log.load.buffer.size). Default 5 MiB. */
  readonly loadBufferBytes?: number
  /** As `GroupCoordinatorOptions.leadsPartition`: COORDINATOR_LOAD_IN_PROGRESS rather than NOT_COORDINATOR. */
  readonly leadsPartition?: (partition: number) => boolean
}

const LOAD_BUFFER_BYTES_DEFAULT = 5 * 1024 * 1024

/**
 * How long AddPartitionsToTxn and AddOffsetsToTxn wait for the id's previous transaction to finish
 * completing (its markers, then the completion written) before answering CONCURRENT_TRANSACTIONS.
 * The next transaction's first request usually arrives while the last one's markers are written:
 * waiting for them answers it as soon as they are, instead of after the backoff of a client (100 ms)
 * or of a leader verifying a transaction version 2 produce (20 ms, then again).
 */
export const COMPLETION_WAIT_MS = 50

interface Shard {
  readonly partition: number
  /** The partition's leader epoch: the coordinator epoch of the markers it sends. */
  readonly epoch: number
  readonly txns: Map<string, TransactionMetadata>
  state: 'loading' | 'active' | 'closed'
  readonly timers: Set<TimerHandle>
  /** Per transactional id, requests waiting for its transaction to finish completing. */
  readonly settling: Map<string, Array<() => void>>
}

/** A transition is being written, or a prepared transaction waits for its markers. */
function completing(m: TransactionMetadata | undefined): boolean {
  return (
    m !== undefined && (m.pendingState !== null || m.state === 'PrepareCommit' || m.state === 'PrepareAbort')
  )
}

/** An answer of InitProducerId and EndTxn. */
export interface TxnIdAnswer {
  readonly errorCode: ErrorCode
  readonly producerId: bigint
  readonly producerEpoch: number
}

/** What DescribeTransactions shows of one transactional id. */
export interface DescribedTransaction {
  readonly errorCode: ErrorCode
  readonly transactionalId: string
  readonly state: TransactionState | ''
  readonly timeoutMs: number
  readonly startTimeMs: number
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly partitions: readonly TxnPartition[]
}

/** ListTransactions' filters: empty lists, and a negative duration, filter nothing. */
export interface ListTransactionsFilter {
  readonly states: readonly string[]
  readonly producerIds: readonly bigint[]
  /** v1: only transactions running longer than this many ms; -1: all. */
  readonly durationMs: number
}

const NOTHING: TxnOutcome = { kind: 'answer', errorCode: ErrorCode.None, producerId: -1n, producerEpoch: -1 }

/** Thrown by the context's producer id port when no id was fetched beforehand (see `#decide`). */
class NeedProducerId extends Error {}

export class TransactionCoordinator {
  readonly partitionCount: number
  readonly #o: TransactionCoordinatorOptions
  readonly #clock: Clock
  readonly #logger: (level: 'info' | 'warn' | 'error', message: string) => void
  readonly #shards = new Map<number, Shard>()
  readonly #loadWaiters: LoadWaiters
  readonly #timers: TimerHandle[] = []
  #closed = false

  constructor(options: TransactionCoordinatorOptions) {
    assert(options.partitionCount >= 1, 'transaction.state.log.num.partitions must be at least 1')
    this.partitionCount = options.partitionCount
    this.#o = options
    this.#clock = options.clock
    this.#logger = options.logger ?? (() => {})
    this.#loadWaiters = new LoadWaiters(options.clock)
    this.#every(options.config.abortTimedOutIntervalMs, () => this.abortTimedOutTransactions())
    this.#every(options.config.removeExpiredIntervalMs, () => this.expireTransactionalIds())
  }

  partitionFor(transactionalId: string): number {
    return partitionForTransactionalId(transactionalId, this.partitionCount)
  }

  statusOf(transactionalId: string): CoordinatorStatus {
    const partition = this.partitionFor(transactionalId)
    const shard = this.#shards.get(partition)
    if (shard === undefined) return this.#notHere(partition)
    return shard.state === 'active' ? ErrorCode.None : ErrorCode.CoordinatorLoadInProgress
  }

  /** As `GroupCoordinator.whenLoaded`, for transactional ids. */
  whenLoaded(transactionalIds: readonly string[], timeoutMs: number): Promise<void> {
    const loading = () =>
      !this.#closed &&
      transactionalIds.some((id) => this.statusOf(id) === ErrorCode.CoordinatorLoadInProgress)
    return this.#loadWaiters.wait(loading, timeoutMs)
  }

  wakeLoadWaiters(): void {
    this.#loadWaiters.wake()
  }

  partitions(): { partition: number; epoch: number; state: 'loading' | 'active' }[] {
    return [...this.#shards.values()].map((s) => ({
      partition: s.partition,
      epoch: s.epoch,
      state: s.state === 'active' ? 'active' : 'loading',
    }))
  }

  /** The metadata of a transactional id loaded here (tests, admin). */
  metadataOf(transactionalId: string): TransactionMetadata | undefined {
    const shard = this.#shards.get(this.partitionFor(transactionalId))
    return shard?.state === 'active' ? shard.txns.get(transactionalId) : undefined
  }

  /**
   * This broker became the leader of `partition` in `epoch`: load its transactional ids (the last
   * value of each; a tombstone removes it), then serve them and resend the markers of the
   * transactions found prepared. A newer epoch replaces an older.
   */
  async onElection(partition: number, epoch: number): Promise<void> {
    assert(partition >= 0 && partition < this.partitionCount, `no __transaction_state partition ${partition}`)
    if (this.#closed) return
    const current = this.#shards.get(partition)
    if (current !== undefined) {
      if (current.epoch >= epoch) return
      this.#unload(current)
    }
    const shard: Shard = {
      partition,
      epoch,
      txns: new Map(),
      state: 'loading',
      timers: new Set(),
      settling: new Map(),
    }
    this.#shards.set(partition, shard)
    this.wakeLoadWaiters()
    while (shard.state === 'loading') {
      const failure = await this.#load(shard)
      if (failure === null) break
      this.#logger(
        'error',
        `loading __transaction_state-${partition} failed: ${failure}; retrying in ${this.#o.config.retryBackoffMs} ms`,
      )
      shard.txns.clear()
      await this.#sleep(shard, this.#o.config.retryBackoffMs)
    }
    if (shard.state !== 'loading') return
    shard.state = 'active'
    this.wakeLoadWaiters()
    this.#logger(
      'info',
      `loaded __transaction_state-${partition} (epoch ${epoch}): ${shard.txns.size} transactional ids`,
    )
    // Failover: a transaction prepared by the previous leader gets its markers from this one.
    for (const m of shard.txns.values()) {
      if (m.state === 'PrepareCommit' || m.state === 'PrepareAbort') void this.#sendMarkers(shard, m)
    }
  }

  onResignation(partition: number, epoch?: number): void {
    const shard = this.#shards.get(partition)
    if (shard === undefined) return
    if (epoch !== undefined && epoch < shard.epoch) return
    this.#unload(shard)
  }

  /** Null once loaded, else why the load failed (it is retried). */
  async #load(shard: Shard): Promise<string | null> {
    const maxBytes = this.#o.loadBufferBytes ?? LOAD_BUFFER_BYTES_DEFAULT
    try {
      const bounds = this.#o.log.bounds(shard.partition)
      if (bounds === null) return `partition ${shard.partition} is not hosted here`
      let offset = bounds.logStartOffset
      while (offset < bounds.highWatermark) {
        const r = await this.#o.log.read(shard.partition, offset, maxBytes)
        if (shard.state !== 'loading') return null
        if (r.errorCode !== ErrorCode.None) return `read at offset ${offset} failed with error ${r.errorCode}`
        const decoded = decodeKeyedBatches(r.records, decodeTransactionLogRecord)
        if (decoded.nextOffset === null) break
        for (const { offset: at, record } of decoded.records) {
          if (at >= bounds.highWatermark) break
          if ('kind' in record) continue
          if (record.value === null) shard.txns.delete(record.transactionalId)
          else
            shard.txns.set(record.transactionalId, metadataFromRecord(record.transactionalId, record.value))
        }
        offset = decoded.nextOffset
      }
      return null
    } catch (e) {
      if (e instanceof DecodeError) return e.message
      throw e
    }
  }

  #unload(shard: Shard): void {
    if (shard.state === 'closed') return
    shard.state = 'closed'
    for (const t of shard.timers) this.#clock.clearTimer(t)
    shard.timers.clear()
    // Waiting requests go on, to find the coordinator gone.
    for (const waiters of [...shard.settling.values()]) for (const w of [...waiters]) w()
    if (this.#shards.get(shard.partition) === shard) this.#shards.delete(shard.partition)
    this.wakeLoadWaiters()
  }

  close(): void {
    this.#closed = true
    for (const t of this.#timers) this.#clock.clearTimer(t)
    for (const shard of [...this.#shards.values()]) this.#unload(shard)
    this.wakeLoadWaiters()
  }

  #notHere(partition: number): CoordinatorStatus {
    return this.#o.leadsPartition?.(partition) === true
      ? ErrorCode.CoordinatorLoadInProgress
      : ErrorCode.NotCoordinator
  }

  #shardOf(transactionalId: string): Shard | CoordinatorStatus {
    const partition = this.partitionFor(transactionalId)
    const shard = this.#shards.get(partition)
    if (shard === undefined) return this.#notHere(partition)
    return shard.state === 'active' ? shard : ErrorCode.CoordinatorLoadInProgress
  }

  /** The id's shard once its transaction is not completing (COMPLETION_WAIT_MS at most), or its error. */
  async #settledShardOf(transactionalId: string): Promise<Shard | CoordinatorStatus> {
    const shard = this.#shardOf(transactionalId)
    if (typeof shard === 'number') return shard
    await this.#whenSettled(shard, transactionalId, COMPLETION_WAIT_MS)
    return this.#shardOf(transactionalId)
  }

  /** Resolves after `ms` on the Clock; early if the shard unloads (its timers are cleared: never). */
  #sleep(shard: Shard, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = this.#clock.setTimer(ms, () => {
        shard.timers.delete(t)
        resolve()
      })
      shard.timers.add(t)
    })
  }

  /**
   * Resolves once the id's transaction is not completing (see `completing`), after `ms` at most, or
   * when the shard unloads.
   */
  #whenSettled(shard: Shard, id: string, ms: number): Promise<void> {
    if (shard.state !== 'active' || !completing(shard.txns.get(id))) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.#clock.clearTimer(timer)
        shard.timers.delete(timer)
        const waiters = shard.settling.get(id)
        const at = waiters?.indexOf(done) ?? -1
        if (at >= 0) waiters!.splice(at, 1)
        if (waiters?.length === 0) shard.settling.delete(id)
        resolve()
      }
      const timer = this.#clock.setTimer(ms, done)
      shard.timers.add(timer)
      const waiters = shard.settling.get(id)
      if (waiters === undefined) shard.settling.set(id, [done])
      else waiters.push(done)
    })
  }

  /** The id's transition was written (or failed): wake who waits for it to settle, if it has. */
  #settled(shard: Shard, id: string): void {
    const waiters = shard.settling.get(id)
    if (waiters === undefined || completing(shard.txns.get(id))) return
    for (const w of [...waiters]) w()
  }

  #every(ms: number, run: () => void): void {
    const arm = () => {
      if (this.#closed) return
      const t = this.#clock.setTimer(ms, () => {
        this.#timers.splice(this.#timers.indexOf(t), 1)
        run()
        arm()
      })
      this.#timers.push(t)
    }
    arm()
  }

  // ----------------------------------------------------------------------------- transitions

  #context(producerId: bigint | null): TxnContext {
    return {
      transactionTimeoutMsMax: this.#o.config.transactionTimeoutMsMax,
      transactionVersionLevel: this.#o.config.transactionVersionLevel,
      newProducerId: () => {
        if (producerId === null) throw new NeedProducerId()
        return producerId
      },
    }
  }

  /**
   * Runs a pure request against the id's current metadata. The state machine asks for a new
   * producer id synchronously; the broker's come from the controller asynchronously, so a request
   * that needs one is decided again with an id fetched beforehand.
   */
  async #decide(
    decide: (ctx: TxnContext) => TxnOutcome,
  ): Promise<TxnOutcome | { readonly kind: 'failed'; readonly errorCode: ErrorCode }> {
    try {
      return decide(this.#context(null))
    } catch (e) {
      if (!(e instanceof NeedProducerId)) throw e
    }
    const r = await this.#o.newProducerId()
    if ('errorCode' in r) return { kind: 'failed', errorCode: r.errorCode }
    return decide(this.#context(r.producerId))
  }

  /**
   * Writes the transition of a 'write' outcome and completes it (or drops it) once written; a
   * written prepare sends its markers. Answers the error of the write, as Kafka maps append errors.
   */
  async #write(shard: Shard, id: string, out: Extract<TxnOutcome, { kind: 'write' }>): Promise<ErrorCode> {
    shard.txns.set(id, out.metadata)
    const value = out.transit.state === 'Dead' ? null : out.transit
    let errorCode: ErrorCode
    try {
      const batch = encodeBatch({
        records: [
          {
            key: encodeTransactionLogKey(id),
            value: encodeTransactionLogValue(value, this.#o.config.transactionVersionLevel),
            timestamp: BigInt(this.#clock.nowMs()),
          },
        ],
      })
      const r = await this.#o.log.append(shard.partition, batch)
      errorCode = r.errorCode
      if (r.errorCode !== ErrorCode.None) {
        this.#logger(
          'warn',
          `append to __transaction_state-${shard.partition} failed with error ${r.errorCode}`,
        )
      }
    } catch (e) {
      this.#logger(
        'error',
        `append to __transaction_state-${shard.partition} failed: ${(e as Error).message}`,
      )
      errorCode = ErrorCode.KafkaStorageError
    }
    if (shard.state === 'closed' || this.#shards.get(shard.partition) !== shard)
      return ErrorCode.NotCoordinator
    const current = shard.txns.get(id)
    if (current === undefined || current.pendingState !== out.transit.state) return ErrorCode.NotCoordinator
    if (errorCode !== ErrorCode.None) {
      shard.txns.set(id, failTransition(current, out.epochFence))
      this.#settled(shard, id)
      return appendErrorToClient(errorCode)
    }
    if (out.transit.state === 'Dead') {
      shard.txns.delete(id)
      this.#settled(shard, id)
      return ErrorCode.None
    }
    const done = completeTransition(current, out.transit)
    shard.txns.set(id, done)
    if (done.state === 'PrepareCommit' || done.state === 'PrepareAbort') void this.#sendMarkers(shard, done)
    else this.#settled(shard, id)
    return ErrorCode.None
  }

  /**
   * Sends the markers of a prepared transaction until each partition has one (or is gone), retried
   * after the backoff, then writes its completion (retried the same way). Stops when the partition
   * unloads: the next leader resends them on load.
   */
  async #sendMarkers(shard: Shard, prepared: TransactionMetadata): Promise<void> {
    const id = prepared.transactionalId
    const still = () => {
      const m = shard.txns.get(id)
      return shard.state === 'active' &&
        m !== undefined &&
        m.state === prepared.state &&
        m.producerId === prepared.producerId &&
        m.producerEpoch === prepared.producerEpoch
        ? m
        : null
    }
    let left = [...prepared.partitions]
    while (left.length > 0) {
      let answers: ReadonlyMap<string, ErrorCode>
      try {
        answers = await this.#o.markers.writeMarkers({
          producerId: prepared.producerId,
          producerEpoch: prepared.producerEpoch,
          coordinatorEpoch: shard.epoch,
          committed: prepared.state === 'PrepareCommit',
          partitions: left,
        })
      } catch (e) {
        this.#logger('warn', `markers of ${id} failed: ${(e as Error).message}`)
        answers = new Map()
      }
      if (still() === null) return
      const fenced = [...answers.values()].find(
        (e) => e === ErrorCode.TransactionCoordinatorFenced || e === ErrorCode.InvalidProducerEpoch,
      )
      if (fenced !== undefined) {
        this.#logger('warn', `markers of ${id} stopped: a partition answered error ${fenced}`)
        return
      }
      left = left.filter((p) => {
        const errorCode = answers.get(txnPartitionKey(p))
        if (errorCode === ErrorCode.UnknownTopicOrPartition) {
          this.#logger('info', `marker of ${id} for ${txnPartitionKey(p)} dropped: the topic is gone`)
        }
        return errorCode !== ErrorCode.None && errorCode !== ErrorCode.UnknownTopicOrPartition
      })
      if (left.length > 0) {
        await this.#sleep(shard, this.#o.config.retryBackoffMs)
        if (still() === null) return
      }
    }
    for (;;) {
      const m = still()
      if (m === null) return
      const out = completeAfterMarkers(m, this.#clock.nowMs())
      if (out.kind !== 'write') return
      const errorCode = await this.#write(shard, id, out)
      if (errorCode === ErrorCode.None || errorCode === ErrorCode.NotCoordinator) return
      await this.#sleep(shard, this.#o.config.retryBackoffMs)
    }
  }

  /** A request's outcome carried out: its answer, or the write and then the answer after it. */
  async #carryOut(
    shard: Shard,
    id: string,
    decide: (m: TransactionMetadata | null, ctx: TxnContext) => TxnOutcome,
    answerAfterWrite: (
      written: TransactionMetadata | undefined,
      out: Extract<TxnOutcome, { kind: 'write' }>,
    ) => TxnIdAnswer,
  ): Promise<TxnIdAnswer> {
    const out = await this.#decide((ctx) => decide(shard.txns.get(id) ?? null, ctx))
    if (out.kind === 'failed') return { errorCode: out.errorCode, producerId: -1n, producerEpoch: -1 }
    if (out.kind === 'answer') return out
    // Unloaded while a producer id was fetched.
    if (shard.state !== 'active')
      return { errorCode: ErrorCode.NotCoordinator, producerId: -1n, producerEpoch: -1 }
    const errorCode = await this.#write(shard, id, out)
    if (errorCode !== ErrorCode.None) return { errorCode, producerId: -1n, producerEpoch: -1 }
    return answerAfterWrite(shard.txns.get(id), out)
  }

  // ----------------------------------------------------------------------------- the APIs

  /** InitProducerId with a transactional id (the handler checked the id is set). */
  async initProducerId(req: {
    transactionalId: string
    transactionTimeoutMs: number
    expected: { producerId: bigint; producerEpoch: number } | null
  }): Promise<TxnIdAnswer> {
    const shard = this.#shardOf(req.transactionalId)
    if (typeof shard === 'number') return { errorCode: shard, producerId: -1n, producerEpoch: -1 }
    return this.#carryOut(
      shard,
      req.transactionalId,
      (m, ctx) => initProducerId(m, req, this.#clock.nowMs(), ctx),
      (written, out) =>
        out.errorCodeAfterWrite !== ErrorCode.None
          ? { errorCode: out.errorCodeAfterWrite, producerId: -1n, producerEpoch: -1 }
          : {
              errorCode: ErrorCode.None,
              producerId: written?.producerId ?? out.transit.producerId,
              producerEpoch: written?.producerEpoch ?? out.transit.producerEpoch,
            },
    )
  }

  /** AddPartitionsToTxn (a client's, v3 and below or the v4+ form): one error for all partitions. */
  async addPartitionsToTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    partitions: readonly TxnPartition[]
  }): Promise<ErrorCode> {
    if (req.transactionalId === '') return ErrorCode.InvalidRequest
    const shard = await this.#settledShardOf(req.transactionalId)
    if (typeof shard === 'number') return shard
    const r = await this.#carryOut(
      shard,
      req.transactionalId,
      (m) => addPartitionsToTxn(m, req, this.#clock.nowMs()),
      () => ({ errorCode: ErrorCode.None, producerId: -1n, producerEpoch: -1 }),
    )
    return r.errorCode
  }

  /**
   * A verifyOnly entry of AddPartitionsToTxn v4+: each partition's NONE when the transaction of
   * this producer id and epoch has it, else TRANSACTION_ABORTABLE as Kafka 4's coordinator (the
   * leader tells clients that predate it INVALID_TXN_STATE), or the id's error for all.
   */
  verifyPartitionsInTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    partitions: readonly TxnPartition[]
  }): ErrorCode[] {
    const shard = this.#shardOf(req.transactionalId)
    const all = (e: ErrorCode) => req.partitions.map(() => e)
    if (typeof shard === 'number') return all(shard)
    const m = shard.txns.get(req.transactionalId)
    if (m === undefined || m.producerId !== req.producerId) return all(ErrorCode.InvalidProducerIdMapping)
    if (m.producerEpoch !== req.producerEpoch) return all(ErrorCode.ProducerFenced)
    if (m.pendingState !== null) return all(ErrorCode.ConcurrentTransactions)
    return req.partitions.map((p) =>
      m.state === 'Ongoing' && m.partitions.some((q) => q.topic === p.topic && q.partition === p.partition)
        ? ErrorCode.None
        : ErrorCode.TransactionAbortable,
    )
  }

  /** AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction. */
  async addOffsetsToTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    offsetsPartition: number
  }): Promise<ErrorCode> {
    if (req.transactionalId === '') return ErrorCode.InvalidRequest
    const shard = await this.#settledShardOf(req.transactionalId)
    if (typeof shard === 'number') return shard
    const r = await this.#carryOut(
      shard,
      req.transactionalId,
      (m) => addOffsetsToTxn(m, req, this.#clock.nowMs()),
      () => ({ errorCode: ErrorCode.None, producerId: -1n, producerEpoch: -1 }),
    )
    return r.errorCode
  }

  /**
   * EndTxn, answered once the prepare record is written (as Kafka 4.0): the markers follow. A
   * version 2 request (EndTxn v5+) is answered with the bumped producer id and epoch.
   */
  async endTxn(req: {
    transactionalId: string
    producerId: bigint
    producerEpoch: number
    committed: boolean
    clientTransactionVersion: number
  }): Promise<TxnIdAnswer> {
    if (req.transactionalId === '')
      return { errorCode: ErrorCode.InvalidRequest, producerId: -1n, producerEpoch: -1 }
    const shard = this.#shardOf(req.transactionalId)
    if (typeof shard === 'number') return { errorCode: shard, producerId: -1n, producerEpoch: -1 }
    const v2 = req.clientTransactionVersion >= 2
    return this.#carryOut(
      shard,
      req.transactionalId,
      (m, ctx) => endTxn(m, req, this.#clock.nowMs(), ctx),
      (_written, out) =>
        v2
          ? {
              errorCode: ErrorCode.None,
              producerId: out.transit.producerId,
              producerEpoch: out.transit.producerEpoch,
            }
          : { errorCode: ErrorCode.None, producerId: -1n, producerEpoch: -1 },
    )
  }

  /** Aborts, under a fenced epoch, every transaction past its timeout (the timer runs it too). */
  abortTimedOutTransactions(): void {
    const now = this.#clock.nowMs()
    for (const shard of this.#shards.values()) {
      if (shard.state !== 'active') continue
      for (const m of [...shard.txns.values()]) {
        // An overflowing epoch needs a new producer id: `#decide` fetches one, so the metadata is
        // checked again before the abort is written.
        void this.#decide((ctx) => expireTransaction(m, now, ctx) ?? NOTHING).then((out) => {
          if (out.kind !== 'write' || shard.state !== 'active' || shard.txns.get(m.transactionalId) !== m)
            return
          this.#logger(
            'info',
            `aborting transaction ${m.transactionalId}: past its ${m.txnTimeoutMs} ms timeout`,
          )
          return this.#write(shard, m.transactionalId, out)
        })
      }
    }
  }

  /** Writes the tombstone of every transactional id idle past transactional.id.expiration.ms. */
  expireTransactionalIds(): void {
    const now = this.#clock.nowMs()
    for (const shard of this.#shards.values()) {
      if (shard.state !== 'active') continue
      for (const m of [...shard.txns.values()]) {
        const out = expireTransactionalId(m, now, this.#o.config.transactionalIdExpirationMs)
        if (out?.kind === 'write') void this.#write(shard, m.transactionalId, out)
      }
    }
  }

  /** DescribeTransactions of each id: TRANSACTIONAL_ID_NOT_FOUND for one not known here. */
  describeTransactions(ids: readonly string[]): DescribedTransaction[] {
    return ids.map((transactionalId) => {
      const shard = this.#shardOf(transactionalId)
      const m = typeof shard === 'number' ? undefined : shard.txns.get(transactionalId)
      if (m === undefined) {
        return {
          errorCode: typeof shard === 'number' ? shard : ErrorCode.TransactionalIdNotFound,
          transactionalId,
          state: '',
          timeoutMs: 0,
          startTimeMs: -1,
          producerId: -1n,
          producerEpoch: -1,
          partitions: [],
        }
      }
      return {
        errorCode: ErrorCode.None,
        transactionalId,
        state: m.state,
        timeoutMs: m.txnTimeoutMs,
        startTimeMs: m.txnStartTimestampMs,
        producerId: m.producerId,
        producerEpoch: m.producerEpoch,
        partitions: m.partitions,
      }
    })
  }

  /**
   * ListTransactions over every partition loaded here: COORDINATOR_LOAD_IN_PROGRESS while one
   * still loads; the state filters no state has come back as unknown.
   */
  listTransactions(filter: ListTransactionsFilter): {
    errorCode: ErrorCode
    unknownStateFilters: string[]
    transactions: { transactionalId: string; producerId: bigint; state: TransactionState }[]
  } {
    const unknownStateFilters = filter.states.filter(
      (s) => !TRANSACTION_STATES.includes(s as TransactionState),
    )
    const states = new Set(filter.states)
    const producerIds = new Set(filter.producerIds)
    const now = this.#clock.nowMs()
    let errorCode: ErrorCode = ErrorCode.None
    const transactions: { transactionalId: string; producerId: bigint; state: TransactionState }[] = []
    for (const shard of this.#shards.values()) {
      if (shard.state !== 'active') {
        errorCode = ErrorCode.CoordinatorLoadInProgress
        continue
      }
      for (const m of shard.txns.values()) {
        if (states.size > 0 && !states.has(m.state)) continue
        if (producerIds.size > 0 && !producerIds.has(m.producerId)) continue
        // Kafka's duration filter: transactions that started longer ago than it (counted from the
        // start time as stored, -1 for none).
        if (filter.durationMs >= 0 && now - m.txnStartTimestampMs <= filter.durationMs) continue
        transactions.push({ transactionalId: m.transactionalId, producerId: m.producerId, state: m.state })
      }
    }
    return { errorCode, unknownStateFilters, transactions }
  }
}

/** Kafka's TransactionStateManager mapping of a failed append to the error the client is told. */
function appendErrorToClient(errorCode: ErrorCode): ErrorCode {
  switch (errorCode) {
    case ErrorCode.UnknownTopicOrPartition:
    case ErrorCode.NotEnoughReplicas:
    case ErrorCode.NotEnoughReplicasAfterAppend:
    case ErrorCode.RequestTimedOut:
      return ErrorCode.CoordinatorNotAvailable
    case ErrorCode.NotLeaderOrFollower:
    case ErrorCode.KafkaStorageError:
      return ErrorCode.NotCoordinator
    default:
      return ErrorCode.UnknownServerError
  }
}
