/**
 * Producer state of one partition, as Kafka's ProducerStateManager: per producer id its epoch, the
 * last five batches (sequence range and offsets), so a retried batch is answered with its original
 * offsets and a gap or a stale epoch is refused, the coordinator epoch of its last marker and its
 * open transaction; the open transactions ordered by first offset (Kafka's `ongoingTxns`) and the
 * completed ones whose marker is not yet below the high watermark (`unreplicatedTxns`), which
 * together give the first unstable offset. Pure; persisted by snapshots.
 */
import { assert } from '../model/index.ts'
import { ErrorCode } from '../protocol/index.ts'

/** Kafka keeps this many recent batches per producer for duplicate detection. */
export const BATCHES_PER_PRODUCER_MAX = 5
const INT32_MAX = 2 ** 31 - 1
const NO_EPOCH = -1
const NO_SEQUENCE = -1

/** What a batch header tells about its producer: the fields producer state needs. */
export interface ProducerBatchInfo {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly baseSequence: number
  readonly lastOffsetDelta: number
  readonly maxTimestamp: bigint
  readonly isTransactional: boolean
}

export interface BatchMetadata {
  readonly firstSeq: number
  readonly lastSeq: number
  readonly firstOffset: bigint
  readonly lastOffset: bigint
  readonly timestamp: bigint
}

export interface ProducerEntry {
  readonly producerId: bigint
  readonly epoch: number
  /** Oldest first; at most BATCHES_PER_PRODUCER_MAX. */
  readonly batches: readonly BatchMetadata[]
  readonly coordinatorEpoch: number
  /** First offset of the open transaction, or -1. */
  readonly currentTxnFirstOffset: bigint
  /** Wall-clock time of the last append (for `producer.id.expiration.ms`). */
  readonly lastUpdatedMs: number
}

/** A transaction a marker ended (Kafka's CompletedTxn). */
export interface CompletedTxn {
  readonly producerId: bigint
  readonly firstOffset: bigint
  /** The marker's offset. */
  readonly lastOffset: bigint
  readonly aborted: boolean
  /** The last stable offset once it completed: an aborted transaction's `.txnindex` entry keeps it. */
  readonly lastStableOffset: bigint
}

/** A COMMIT or ABORT marker's producer fields. */
export interface MarkerInfo {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly coordinatorEpoch: number
  readonly committed: boolean
}

export type ProducerCheck =
  | { readonly kind: 'append' }
  /** A retry of a batch already in the log: answer with its original offsets, append nothing. */
  | { readonly kind: 'duplicate'; readonly batch: BatchMetadata }
  | { readonly kind: 'error'; readonly errorCode: ErrorCode; readonly message: string }

function lastSeqOf(info: ProducerBatchInfo): number {
  // Sequences wrap at Int32.MAX_VALUE.
  const last = info.baseSequence + info.lastOffsetDelta
  return last > INT32_MAX ? last - INT32_MAX - 1 : last
}

function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === INT32_MAX)
}

export class ProducerStateManager {
  readonly #producers = new Map<bigint, ProducerEntry>()
  /**
   * Producer id to the first offset of its open transaction, in first-offset order (a transaction
   * opens at the log end, so insertion keeps the order; a snapshot's are sorted on load).
   */
  readonly #ongoing = new Map<bigint, bigint>()
  /** Completed transactions whose marker is not yet below the high watermark, in marker order. */
  #unreplicated: { producerId: bigint; firstOffset: bigint; lastOffset: bigint }[] = []
  /**
   * Kafka's VerificationGuard (KIP-890): per producer, the token of the verification its first
   * transactional batch here waits on; a marker voids it, so a batch verified before the
   * transaction ended cannot open a hanging one after it.
   */
  readonly #guards = new Map<bigint, object>()

  get size(): number {
    return this.#producers.size
  }

  get(producerId: bigint): ProducerEntry | undefined {
    return this.#producers.get(producerId)
  }

  entries(): IterableIterator<ProducerEntry> {
    return this.#producers.values()
  }

  /**
   * Checks a batch before the leader appends it (Kafka's duplicate check, then
   * `ProducerAppendInfo.checkSequence` and the epoch fence, then the transaction state). A
   * coordinator's batch (`origin` coordinator: a transactional offset commit) gets neither the
   * duplicate nor the sequence check, as Kafka's `AppendOrigin.COORDINATOR`. Batches without a
   * producer id pass.
   */
  check(
    info: ProducerBatchInfo,
    origin: 'client' | 'coordinator' = 'client',
    guard?: object | null,
  ): ProducerCheck {
    if (info.producerId < 0n) return { kind: 'append' }
    const entry = this.#producers.get(info.producerId)
    if (guard !== undefined && info.isTransactional && !this.#verified(info, entry, guard)) {
      return {
        kind: 'error',
        errorCode: ErrorCode.InvalidTxnState,
        message: `Record was not part of an ongoing transaction (producer ${info.producerId} at epoch ${info.producerEpoch})`,
      }
    }
    if (entry === undefined) {
      // Unknown producer (new, or its state expired with retention): any sequence is accepted.
      return { kind: 'append' }
    }
    if (info.producerEpoch < entry.epoch) {
      return {
        kind: 'error',
        errorCode: ErrorCode.InvalidProducerEpoch,
        message: `Epoch of producer ${info.producerId} is ${info.producerEpoch}, which is smaller than the last seen epoch ${entry.epoch}`,
      }
    }
    if (origin === 'coordinator') return this.#checkTxnState(info, entry)
    const lastSeq = lastSeqOf(info)
    if (info.producerEpoch === entry.epoch) {
      const dup = entry.batches.find((b) => b.firstSeq === info.baseSequence && b.lastSeq === lastSeq)
      if (dup !== undefined) return { kind: 'duplicate', batch: dup }
    }
    if (info.producerEpoch !== entry.epoch) {
      if (info.baseSequence !== 0 && entry.epoch !== NO_EPOCH) {
        return {
          kind: 'error',
          errorCode: ErrorCode.OutOfOrderSequenceNumber,
          message: `Invalid sequence number for new epoch of producer ${info.producerId} at epoch ${info.producerEpoch}: ${info.baseSequence} (request epoch), 0 (expected)`,
        }
      }
      return this.#checkTxnState(info, entry)
    }
    const currentLast = entry.batches.at(-1)?.lastSeq ?? NO_SEQUENCE
    if (currentLast !== NO_SEQUENCE && !inSequence(currentLast, info.baseSequence)) {
      return {
        kind: 'error',
        errorCode: ErrorCode.OutOfOrderSequenceNumber,
        message: `Out of order sequence number for producer ${info.producerId} at epoch ${info.producerEpoch}: ${info.baseSequence} (incoming seq. number), ${currentLast} (current end sequence number)`,
      }
    }
    return this.#checkTxnState(info, entry)
  }

  /**
   * Kafka's `maybeStartTransactionVerification`: null when the producer's transaction of this
   * epoch is open here (its batch needs no verification), else the guard its batch must carry
   * once the coordinator said the partition is in the transaction.
   */
  startVerification(producerId: bigint, producerEpoch: number): object | null {
    if (this.#ongoingAt(producerId, producerEpoch)) return null
    let g = this.#guards.get(producerId)
    if (g === undefined) {
      g = {}
      this.#guards.set(producerId, g)
    }
    return g
  }

  #ongoingAt(producerId: bigint, producerEpoch: number): boolean {
    const e = this.#producers.get(producerId)
    return e !== undefined && e.currentTxnFirstOffset >= 0n && e.epoch === producerEpoch
  }

  /** A transactional batch under verification: its transaction is open, or its guard still stands. */
  #verified(info: ProducerBatchInfo, entry: ProducerEntry | undefined, guard: object | null): boolean {
    if (entry !== undefined && entry.currentTxnFirstOffset >= 0n && entry.epoch === info.producerEpoch)
      return true
    return guard !== null && this.#guards.get(info.producerId) === guard
  }

  /** Kafka's `appendDataBatch`: a producer with an open transaction writes only transactional batches. */
  #checkTxnState(info: ProducerBatchInfo, entry: ProducerEntry): ProducerCheck {
    if (entry.currentTxnFirstOffset >= 0n && !info.isTransactional) {
      return {
        kind: 'error',
        errorCode: ErrorCode.InvalidTxnState,
        message: `Expected transactional write from producer ${info.producerId} at epoch ${info.producerEpoch}: its transaction is open from offset ${entry.currentTxnFirstOffset}`,
      }
    }
    return { kind: 'append' }
  }

  /**
   * Checks a marker before the leader appends it (Kafka's `ProducerAppendInfo.appendEndTxnMarker`):
   * INVALID_PRODUCER_EPOCH for an epoch older than the producer's, TRANSACTION_COORDINATOR_FENCED
   * for a coordinator epoch older than the last marker's.
   */
  checkMarker(m: MarkerInfo): ProducerCheck {
    const entry = this.#producers.get(m.producerId)
    if (entry === undefined) return { kind: 'append' }
    if (m.producerEpoch < entry.epoch) {
      return {
        kind: 'error',
        errorCode: ErrorCode.InvalidProducerEpoch,
        message: `Epoch of producer ${m.producerId} is ${m.producerEpoch}, which is smaller than the last seen epoch ${entry.epoch}`,
      }
    }
    if (m.coordinatorEpoch < entry.coordinatorEpoch) {
      return {
        kind: 'error',
        errorCode: ErrorCode.TransactionCoordinatorFenced,
        message: `Invalid coordinator epoch for producer ${m.producerId}: ${m.coordinatorEpoch} (zombie), ${entry.coordinatorEpoch} (current)`,
      }
    }
    return { kind: 'append' }
  }

  /**
   * Records a marker at `offset` (appended, replicated or replayed): the producer's open
   * transaction, if any, ends, and stays unstable until the high watermark passes the marker.
   * Returns the transaction it ended, or null when none was open.
   */
  completeTxn(m: MarkerInfo, offset: bigint, nowMs: number): CompletedTxn | null {
    const entry = this.#producers.get(m.producerId)
    const firstOffset = entry?.currentTxnFirstOffset ?? -1n
    this.#guards.delete(m.producerId)
    const sameEpoch = entry !== undefined && entry.epoch === m.producerEpoch
    this.#producers.set(m.producerId, {
      producerId: m.producerId,
      epoch: m.producerEpoch,
      batches: sameEpoch ? entry.batches : [],
      coordinatorEpoch: m.coordinatorEpoch,
      currentTxnFirstOffset: -1n,
      lastUpdatedMs: nowMs,
    })
    if (firstOffset < 0n) return null
    this.#ongoing.delete(m.producerId)
    this.#unreplicated.push({ producerId: m.producerId, firstOffset, lastOffset: offset })
    const next = this.#ongoing.values().next()
    return {
      producerId: m.producerId,
      firstOffset,
      lastOffset: offset,
      aborted: !m.committed,
      lastStableOffset: next.done === true ? offset + 1n : next.value,
    }
  }

  /**
   * The first offset no read_committed consumer may pass yet: the first offset of the oldest open
   * transaction, or of a completed one whose marker is not below `highWatermark` (those below it
   * are forgotten now); null when there is none.
   */
  firstUnstableOffset(highWatermark: bigint): bigint | null {
    while (this.#unreplicated.length > 0 && this.#unreplicated[0]!.lastOffset < highWatermark)
      this.#unreplicated.shift()
    const ongoing = this.#ongoing.values().next()
    let first: bigint | null = ongoing.done === true ? null : ongoing.value
    for (const t of this.#unreplicated) if (first === null || t.firstOffset < first) first = t.firstOffset
    return first
  }

  /** The open transactions, oldest first: producer id and first offset. */
  ongoingTxns(): { producerId: bigint; firstOffset: bigint }[] {
    return [...this.#ongoing].map(([producerId, firstOffset]) => ({ producerId, firstOffset }))
  }

  /**
   * Records an appended batch (on the leader after `check`, on a follower or at recovery for every
   * batch read from the log). `firstOffset` and `lastOffset` are the offsets the log assigned.
   */
  update(info: ProducerBatchInfo, firstOffset: bigint, lastOffset: bigint, nowMs: number): void {
    if (info.producerId < 0n) return
    const entry = this.#producers.get(info.producerId)
    const sameEpoch = entry !== undefined && entry.epoch === info.producerEpoch
    const batch: BatchMetadata = {
      firstSeq: info.baseSequence,
      lastSeq: lastSeqOf(info),
      firstOffset,
      lastOffset,
      timestamp: info.maxTimestamp,
    }
    const batches = sameEpoch ? [...entry.batches, batch].slice(-BATCHES_PER_PRODUCER_MAX) : [batch]
    const open = entry !== undefined && entry.currentTxnFirstOffset >= 0n
    // A transactional batch opens the producer's transaction unless one is open; a batch without
    // the flag leaves an open one as it is (Kafka keeps currentTxnFirstOffset until the marker).
    const txnFirstOffset = open ? entry.currentTxnFirstOffset : info.isTransactional ? firstOffset : -1n
    if (!open && info.isTransactional) {
      this.#ongoing.set(info.producerId, firstOffset)
      this.#guards.delete(info.producerId)
    }
    this.#producers.set(info.producerId, {
      producerId: info.producerId,
      epoch: info.producerEpoch,
      batches,
      coordinatorEpoch: entry?.coordinatorEpoch ?? -1,
      currentTxnFirstOffset: txnFirstOffset,
      lastUpdatedMs: nowMs,
    })
  }

  /** Forgets producers idle for `expirationMs` with no open transaction (`producer.id.expiration.ms`). */
  expire(nowMs: number, expirationMs: number): number {
    let removed = 0
    for (const [id, e] of this.#producers) {
      if (e.currentTxnFirstOffset < 0n && nowMs - e.lastUpdatedMs >= expirationMs) {
        this.#producers.delete(id)
        removed++
      }
    }
    return removed
  }

  /** Drops state of batches at or past `offset` (the log was truncated there): rebuild from the log. */
  truncateTo(offset: bigint): boolean {
    let dirty = false
    for (const [id, e] of this.#producers) {
      const kept = e.batches.filter((b) => b.lastOffset < offset)
      const txnGone = e.currentTxnFirstOffset >= offset
      if (kept.length === e.batches.length && !txnGone) continue
      dirty = true
      const txnFirstOffset = txnGone ? -1n : e.currentTxnFirstOffset
      if (txnGone) this.#ongoing.delete(id)
      if (kept.length === 0 && txnFirstOffset < 0n) this.#producers.delete(id)
      else this.#producers.set(id, { ...e, batches: kept, currentTxnFirstOffset: txnFirstOffset })
    }
    this.#unreplicated = this.#unreplicated.filter((t) => t.lastOffset < offset)
    return dirty
  }

  clear(): void {
    this.#producers.clear()
    this.#ongoing.clear()
    this.#guards.clear()
    this.#unreplicated = []
  }

  /**
   * Kafka's producer snapshot format (`<offset>.snapshot`): int16 version 1, uint32 CRC32C of what
   * follows, int32 count, then per producer: id int64, epoch int16, last sequence int32, last offset
   * int64, offset delta int32, timestamp int64, coordinator epoch int32, txn first offset int64.
   * Kafka keeps only the last batch per producer in a snapshot, and so do we.
   */
  snapshot(crc32c: (data: Buffer) => number): Buffer {
    // Kafka writes every entry; one with no batch (only a marker since its epoch began) has
    // sequence and offsets -1.
    const entries = [...this.#producers.values()]
    const body = Buffer.alloc(4 + entries.length * ENTRY_BYTES)
    let at = body.writeInt32BE(entries.length, 0)
    for (const e of entries) {
      const last = e.batches.at(-1) ?? NO_BATCH
      at = body.writeBigInt64BE(e.producerId, at)
      at = body.writeInt16BE(e.epoch, at)
      at = body.writeInt32BE(last.lastSeq, at)
      at = body.writeBigInt64BE(last.lastOffset, at)
      at = body.writeInt32BE(Number(last.lastOffset - last.firstOffset), at)
      at = body.writeBigInt64BE(last.timestamp, at)
      at = body.writeInt32BE(e.coordinatorEpoch, at)
      at = body.writeBigInt64BE(e.currentTxnFirstOffset, at)
    }
    assert(at === body.length)
    const head = Buffer.alloc(6)
    head.writeInt16BE(SNAPSHOT_VERSION, 0)
    head.writeUInt32BE(crc32c(body) >>> 0, 2)
    return Buffer.concat([head, body])
  }

  /** Loads a snapshot; a corrupt one throws `ProducerSnapshotError` (rebuild from the log instead). */
  static fromSnapshot(data: Buffer, crc32c: (data: Buffer) => number, nowMs: number): ProducerStateManager {
    if (data.length < 10) throw new ProducerSnapshotError('snapshot too short')
    const version = data.readInt16BE(0)
    if (version !== SNAPSHOT_VERSION) throw new ProducerSnapshotError(`snapshot version ${version}`)
    const body = data.subarray(6)
    if (crc32c(body) >>> 0 !== data.readUInt32BE(2)) throw new ProducerSnapshotError('snapshot CRC mismatch')
    const count = body.readInt32BE(0)
    if (count < 0 || body.length !== 4 + count * ENTRY_BYTES)
      throw new ProducerSnapshotError('snapshot length mismatch')
    const psm = new ProducerStateManager()
    let at = 4
    for (let i = 0; i < count; i++) {
      const producerId = body.readBigInt64BE(at)
      const epoch = body.readInt16BE(at + 8)
      const lastSeq = body.readInt32BE(at + 10)
      const lastOffset = body.readBigInt64BE(at + 14)
      const offsetDelta = body.readInt32BE(at + 22)
      const timestamp = body.readBigInt64BE(at + 26)
      const coordinatorEpoch = body.readInt32BE(at + 34)
      const currentTxnFirstOffset = body.readBigInt64BE(at + 38)
      at += ENTRY_BYTES
      const firstSeq = Math.max(0, lastSeq - offsetDelta)
      psm.#producers.set(producerId, {
        producerId,
        epoch,
        batches:
          lastOffset < 0n
            ? []
            : [{ firstSeq, lastSeq, firstOffset: lastOffset - BigInt(offsetDelta), lastOffset, timestamp }],
        coordinatorEpoch,
        currentTxnFirstOffset,
        lastUpdatedMs: nowMs,
      })
    }
    const open = [...psm.#producers.values()].filter((e) => e.currentTxnFirstOffset >= 0n)
    open.sort((a, b) => (a.currentTxnFirstOffset < b.currentTxnFirstOffset ? -1 : 1))
    for (const e of open) psm.#ongoing.set(e.producerId, e.currentTxnFirstOffset)
    return psm
  }
}

const SNAPSHOT_VERSION = 1
const NO_BATCH: BatchMetadata = {
  firstSeq: -1,
  lastSeq: -1,
  firstOffset: -1n,
  lastOffset: -1n,
  timestamp: -1n,
}
const ENTRY_BYTES = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8

export class ProducerSnapshotError extends Error {
  override name = 'ProducerSnapshotError'
}
