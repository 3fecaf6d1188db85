/**
 * One transactional id's metadata and its state machine, as Kafka's TransactionMetadata and the
 * request checks of its TransactionCoordinator. Pure: each request is a function of the current
 * metadata, the request and the wall-clock time it arrived, and answers with a Kafka error code or a
 * transition to persist in `__transaction_state`. A transition is prepared (the metadata holds it as
 * its pending state, so requests meanwhile get CONCURRENT_TRANSACTIONS), then completed once written
 * (`completeTransition`) or dropped when the write failed (`failTransition`). New producer ids come
 * from the caller's port.
 */

import { ErrorCode } from '../protocol/index.ts'
import type { PersistedTransaction, TransactionState, TxnPartition } from './transaction-records.ts'

/** Kafka's RecordBatch.NO_PRODUCER_EPOCH. */
export const NO_PRODUCER_EPOCH = -1
const NO_PRODUCER_ID = -1n
const EPOCH_MAX = 32767
/** The topic AddOffsetsToTxn adds a partition of. */
export const OFFSETS_TOPIC = '__consumer_offsets'

/** The states each state may be entered from (Kafka's validPreviousStates). */
export const VALID_PREVIOUS_STATES: Readonly<Record<TransactionState, readonly TransactionState[]>> = {
  Empty: ['Empty', 'CompleteCommit', 'CompleteAbort'],
  Ongoing: ['Ongoing', 'Empty', 'CompleteCommit', 'CompleteAbort'],
  PrepareCommit: ['Ongoing'],
  // Kafka 4: transaction version 2 may abort with no partition added, from Empty or a completed one.
  PrepareAbort: ['Ongoing', 'PrepareEpochFence', 'Empty', 'CompleteCommit', 'CompleteAbort'],
  CompleteCommit: ['PrepareCommit'],
  CompleteAbort: ['PrepareAbort'],
  Dead: ['Empty', 'CompleteAbort', 'CompleteCommit'],
  PrepareEpochFence: ['Ongoing'],
}

/** A transition to persist: the record's value, plus the last epoch kept only in memory. */
export interface TxnTransit extends PersistedTransaction {
  readonly lastProducerEpoch: number
}

export interface TransactionMetadata {
  readonly transactionalId: string
  readonly producerId: bigint
  /** The producer id before the last rotation (KIP-360 retries), or -1. */
  readonly previousProducerId: bigint
  /** The producer id the transaction completes with when its epoch overflowed (transaction.version 2), or -1. */
  readonly nextProducerId: bigint
  readonly producerEpoch: number
  /** The epoch before the last bump, or -1: a retried InitProducerId or EndTxn of it is accepted. */
  readonly lastProducerEpoch: number
  readonly txnTimeoutMs: number
  readonly state: TransactionState
  /** Sorted by topic, then partition; no duplicates. */
  readonly partitions: readonly TxnPartition[]
  /** Wall-clock ms the transaction started, or -1. */
  readonly txnStartTimestampMs: number
  readonly txnLastUpdateTimestampMs: number
  /** The client's transaction.version of the last transition: 2 bumps the epoch on every EndTxn (KIP-890). */
  readonly clientTransactionVersion: number
  /** The state of the transition being written, or null. */
  readonly pendingState: TransactionState | null
  /** An epoch fence whose write failed: the next fence reuses its epoch instead of bumping again. */
  readonly hasFailedEpochFence: boolean
}

/** What a request leads to. */
export type TxnOutcome =
  /** Answer at once; nothing to write. `producerId`/`producerEpoch` are set when the answer carries them. */
  | {
      readonly kind: 'answer'
      readonly errorCode: ErrorCode
      readonly producerId: bigint
      readonly producerEpoch: number
    }
  /**
   * Write `transit`, keeping `metadata` (its pending state set) meanwhile; once written, complete it
   * and answer `errorCodeAfterWrite` (CONCURRENT_TRANSACTIONS after an epoch fence InitProducerId caused).
   */
  | {
      readonly kind: 'write'
      readonly metadata: TransactionMetadata
      readonly transit: TxnTransit
      readonly errorCodeAfterWrite: ErrorCode
      /** An abort under a fenced epoch: a failed write of it is remembered (`failTransition`). */
      readonly epochFence: boolean
    }

/** What the coordinator supplies to requests. */
export interface TxnContext {
  /** `transaction.max.timeout.ms`. */
  readonly transactionTimeoutMsMax: number
  /** The finalized transaction.version of the cluster, used for aborts the coordinator starts itself. */
  readonly transactionVersionLevel: number
  /** A producer id never handed out before (the producer id port). */
  readonly newProducerId: () => bigint
}

export function isEpochExhausted(epoch: number): boolean {
  return epoch >= EPOCH_MAX - 1
}

function answer(
  errorCode: ErrorCode,
  producerId = NO_PRODUCER_ID,
  producerEpoch = NO_PRODUCER_EPOCH,
): TxnOutcome {
  return { kind: 'answer', errorCode, producerId, producerEpoch }
}

/**
 * Prepares a transition as Kafka's prepareTransitionTo: the new state must be reachable from the
 * current one and nothing may be pending. A violation is a bug of the caller, never a client's doing.
 */
function prepare(
  m: TransactionMetadata,
  t: Omit<TxnTransit, 'previousProducerId'> & { readonly previousProducerId?: bigint },
  errorCodeAfterWrite: ErrorCode = ErrorCode.None,
): TxnOutcome {
  if (m.pendingState !== null) throw new Error(`transition to ${t.state} while ${m.pendingState} is pending`)
  if (!VALID_PREVIOUS_STATES[t.state].includes(m.state))
    throw new Error(`no transition ${m.state} -> ${t.state}`)
  if (t.producerId < 0n || (t.state !== 'Dead' && t.producerEpoch < 0))
    throw new Error('negative producer id or epoch')
  return {
    kind: 'write',
    metadata: { ...m, pendingState: t.state },
    transit: { ...t, previousProducerId: m.producerId },
    errorCodeAfterWrite,
    epochFence: false,
  }
}

/** The fields a transition keeps unless it changes them (Kafka's TransitionData). */
function same(m: TransactionMetadata, state: TransactionState, now: number) {
  return {
    state,
    producerId: m.producerId,
    nextProducerId: m.nextProducerId,
    producerEpoch: m.producerEpoch,
    lastProducerEpoch: m.lastProducerEpoch,
    txnTimeoutMs: m.txnTimeoutMs,
    partitions: m.partitions,
    txnStartTimestampMs: m.txnStartTimestampMs,
    txnLastUpdateTimestampMs: now,
    clientTransactionVersion: m.clientTransactionVersion,
  }
}

/** The metadata Kafka creates for a transactional id it has not seen, before its first epoch bump. */
export function newTransactionMetadata(
  transactionalId: string,
  producerId: bigint,
  txnTimeoutMs: number,
  now: number,
): TransactionMetadata {
  return {
    transactionalId,
    producerId,
    previousProducerId: NO_PRODUCER_ID,
    nextProducerId: NO_PRODUCER_ID,
    producerEpoch: NO_PRODUCER_EPOCH,
    lastProducerEpoch: NO_PRODUCER_EPOCH,
    txnTimeoutMs,
    state: 'Empty',
    partitions: [],
    txnStartTimestampMs: -1,
    txnLastUpdateTimestampMs: now,
    clientTransactionVersion: 0,
    pendingState: null,
    hasFailedEpochFence: false,
  }
}

/** The metadata of a record loaded from `__transaction_state` (the last epoch is not persisted). */
export function metadataFromRecord(transactionalId: string, v: PersistedTransaction): TransactionMetadata {
  return {
    ...v,
    transactionalId,
    partitions: sortPartitions(v.partitions),
    lastProducerEpoch: NO_PRODUCER_EPOCH,
    pendingState: null,
    hasFailedEpochFence: false,
  }
}

export interface InitProducerIdInput {
  readonly transactionalId: string
  readonly transactionTimeoutMs: number
  /** KIP-360: the producer id and epoch a producer recovering from an error still holds. */
  readonly expected: { readonly producerId: bigint; readonly producerEpoch: number } | null
}

/**
 * InitProducerId of a transactional producer (`current`: the id's metadata, null if unknown). The
 * caller keeps `metadata` of a write even if the write fails, as Kafka caches a new id's metadata
 * before writing it.
 */
export function initProducerId(
  current: TransactionMetadata | null,
  req: InitProducerIdInput,
  now: number,
  ctx: TxnContext,
): TxnOutcome {
  if (req.transactionalId === '') return answer(ErrorCode.InvalidRequest)
  if (req.transactionTimeoutMs <= 0 || req.transactionTimeoutMs > ctx.transactionTimeoutMsMax) {
    return answer(ErrorCode.InvalidTransactionTimeout)
  }
  const m =
    current ?? newTransactionMetadata(req.transactionalId, ctx.newProducerId(), req.transactionTimeoutMs, now)
  if (m.pendingState !== null) return answer(ErrorCode.ConcurrentTransactions)
  const exp = req.expected
  if (
    exp !== null &&
    !(
      m.producerEpoch === NO_PRODUCER_EPOCH ||
      exp.producerId === m.producerId ||
      (exp.producerId === m.previousProducerId && isEpochExhausted(exp.producerEpoch))
    )
  ) {
    return answer(ErrorCode.ProducerFenced)
  }
  switch (m.state) {
    case 'PrepareCommit':
    case 'PrepareAbort':
      return answer(ErrorCode.ConcurrentTransactions)
    case 'Ongoing':
      // Abort the open transaction under a fenced epoch; the client retries and bumps again.
      return (
        fenceAndAbort(m, now, ctx, ErrorCode.ConcurrentTransactions) ??
        answer(ErrorCode.ConcurrentTransactions)
      )
    case 'Dead':
    case 'PrepareEpochFence':
      // Never a current state: Dead metadata is removed, a fence is never completed.
      return answer(ErrorCode.InvalidTxnState)
  }
  const reset = {
    ...same(m, 'Empty', now),
    txnTimeoutMs: req.transactionTimeoutMs,
    partitions: [],
    txnStartTimestampMs: -1,
  }
  if (isEpochExhausted(m.producerEpoch) && (exp === null || exp.producerEpoch === m.producerEpoch)) {
    return prepare(m, {
      ...reset,
      producerId: ctx.newProducerId(),
      producerEpoch: 0,
      lastProducerEpoch: exp !== null ? m.producerEpoch : NO_PRODUCER_EPOCH,
    })
  }
  let epoch: number
  let lastEpoch: number
  if (exp === null) [epoch, lastEpoch] = [m.producerEpoch + 1, NO_PRODUCER_EPOCH]
  else if (m.producerEpoch === NO_PRODUCER_EPOCH || exp.producerEpoch === m.producerEpoch) {
    ;[epoch, lastEpoch] = [m.producerEpoch + 1, m.producerEpoch]
  } else if (exp.producerEpoch === m.lastProducerEpoch)
    [epoch, lastEpoch] = [m.producerEpoch, m.lastProducerEpoch]
  else return answer(ErrorCode.ProducerFenced)
  // An exhausted epoch with another expected epoch: Kafka fails the request internally; refuse it.
  if (isEpochExhausted(m.producerEpoch) && epoch > m.producerEpoch) return answer(ErrorCode.ProducerFenced)
  return prepare(m, {
    ...reset,
    producerId: m.producerId,
    producerEpoch: epoch,
    lastProducerEpoch: lastEpoch,
  })
}

export interface AddPartitionsInput {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly partitions: readonly TxnPartition[]
  /** The client's transaction version the transition records (Kafka 4); 0 when left out. */
  readonly clientTransactionVersion?: number
}

/** AddPartitionsToTxn from a producer (v3 and below); one error code for all its partitions. */
export function addPartitionsToTxn(
  m: TransactionMetadata | null,
  req: AddPartitionsInput,
  now: number,
): TxnOutcome {
  if (m === null || m.producerId !== req.producerId) return answer(ErrorCode.InvalidProducerIdMapping)
  if (m.producerEpoch !== req.producerEpoch) return answer(ErrorCode.ProducerFenced)
  if (m.pendingState !== null || m.state === 'PrepareCommit' || m.state === 'PrepareAbort') {
    return answer(ErrorCode.ConcurrentTransactions)
  }
  const partitions = sortPartitions([...m.partitions, ...req.partitions])
  if (m.state === 'Ongoing' && partitions.length === m.partitions.length) return answer(ErrorCode.None)
  if (!VALID_PREVIOUS_STATES.Ongoing.includes(m.state)) return answer(ErrorCode.InvalidTxnState)
  const starts = m.state === 'Empty' || m.state === 'CompleteCommit' || m.state === 'CompleteAbort'
  return prepare(m, {
    ...same(m, 'Ongoing', now),
    partitions,
    txnStartTimestampMs: starts ? now : m.txnStartTimestampMs,
    clientTransactionVersion: req.clientTransactionVersion ?? 0,
  })
}

/** AddOffsetsToTxn: adds the `__consumer_offsets` partition of the group, as Kafka does. */
export function addOffsetsToTxn(
  m: TransactionMetadata | null,
  req: Omit<AddPartitionsInput, 'partitions'> & { readonly offsetsPartition: number },
  now: number,
): TxnOutcome {
  return addPartitionsToTxn(
    m,
    { ...req, partitions: [{ topic: OFFSETS_TOPIC, partition: req.offsetsPartition }] },
    now,
  )
}

export interface EndTxnInput {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly committed: boolean
  /** 2 for EndTxn v5 and above (KIP-890: every EndTxn bumps the epoch), else 0. */
  readonly clientTransactionVersion: number
}

/**
 * EndTxn from a producer. Once written, Kafka answers version 2 with the written metadata's producer
 * id and epoch (the bumped epoch the producer goes on with), version 1 with none (-1, -1).
 */
export function endTxn(
  m: TransactionMetadata | null,
  req: EndTxnInput,
  now: number,
  ctx: TxnContext,
): TxnOutcome {
  if (m === null) return answer(ErrorCode.InvalidProducerIdMapping)
  return endTransaction(m, req, true, now, ctx)
}

/**
 * EndTxn as Kafka 4's coordinator: the request's transaction version picks the rules. Version 1
 * keeps one epoch for the producer's session; version 2 bumps it on every EndTxn, answers a retry
 * (the epoch one below) without a write, and may abort with no partition added (from Empty or a
 * completed transaction), which a producer does to bump its epoch.
 */
function endTransaction(
  m: TransactionMetadata,
  req: EndTxnInput,
  isFromClient: boolean,
  now: number,
  ctx: TxnContext,
): TxnOutcome {
  const { producerId, producerEpoch, committed } = req
  const fencing = m.pendingState === 'PrepareEpochFence'
  const v2 = req.clientTransactionVersion >= 2
  const retryOnOverflow =
    v2 &&
    !fencing &&
    m.previousProducerId === producerId &&
    producerEpoch === EPOCH_MAX - 1 &&
    m.producerEpoch === 0
  const retryOnEpochBump = v2 && !fencing && m.producerEpoch === producerEpoch + 1
  const isRetry = retryOnEpochBump || retryOnOverflow
  let validEpoch: boolean
  if (!v2 || fencing) {
    validEpoch = (!isFromClient || producerEpoch === m.producerEpoch) && producerEpoch >= m.producerEpoch
  } else if (m.state === 'PrepareCommit' || m.state === 'PrepareAbort') validEpoch = retryOnEpochBump
  else if (m.state === 'CompleteCommit' || m.state === 'CompleteAbort') {
    validEpoch = isRetry || producerEpoch === m.producerEpoch
  } else validEpoch = producerEpoch === m.producerEpoch
  if (m.producerId !== producerId && !retryOnOverflow) return answer(ErrorCode.InvalidProducerIdMapping)
  if (!validEpoch) return answer(ErrorCode.ProducerFenced)
  if (m.pendingState !== null && !fencing) return answer(ErrorCode.ConcurrentTransactions)
  const complete = (state: 'PrepareCommit' | 'PrepareAbort', noPartitionAdded: boolean): TxnOutcome => {
    // A fence writes PrepareAbort under the fenced epoch in place of its own pending state.
    const base: TransactionMetadata = fencing
      ? { ...m, pendingState: null, producerEpoch, lastProducerEpoch: NO_PRODUCER_EPOCH }
      : m
    // Epoch 32767 is only ever the coordinator's fencing epoch: no client holds it, and it cannot
    // be bumped, so a fence there aborts under it without the version 2 bump.
    if (v2 && !fencing && base.producerEpoch >= EPOCH_MAX) return answer(ErrorCode.ProducerFenced)
    const bump = v2 && base.producerEpoch < EPOCH_MAX
    const nextProducerId =
      bump && !fencing && isEpochExhausted(m.producerEpoch) ? ctx.newProducerId() : NO_PRODUCER_ID
    return prepare(base, {
      ...same(base, state, now),
      nextProducerId,
      producerEpoch: bump ? base.producerEpoch + 1 : base.producerEpoch,
      lastProducerEpoch: bump ? base.producerEpoch : base.lastProducerEpoch,
      // Nothing was added, so the transaction starts now (Kafka's noPartitionAdded).
      partitions: noPartitionAdded ? [] : base.partitions,
      txnStartTimestampMs: noPartitionAdded ? now : base.txnStartTimestampMs,
      clientTransactionVersion: bump ? req.clientTransactionVersion : 0,
    })
  }
  const done = answer(ErrorCode.None, m.producerId, m.producerEpoch)
  const invalid = answer(ErrorCode.InvalidTxnState)
  switch (m.state) {
    case 'Ongoing':
      return complete(committed ? 'PrepareCommit' : 'PrepareAbort', false)
    case 'PrepareCommit':
      return committed ? answer(ErrorCode.ConcurrentTransactions) : invalid
    case 'PrepareAbort':
      return committed ? invalid : answer(ErrorCode.ConcurrentTransactions)
    case 'CompleteCommit':
      if (!v2) return committed ? done : invalid
      if (committed) return isRetry ? done : invalid
      return isRetry ? invalid : complete('PrepareAbort', true)
    case 'CompleteAbort':
      if (!v2) return committed ? invalid : done
      if (committed) return invalid
      return isRetry ? done : complete('PrepareAbort', true)
    case 'Empty':
      return v2 && !committed ? complete('PrepareAbort', true) : invalid
    default:
      // Dead and PrepareEpochFence are never current states.
      return invalid
  }
}

/**
 * Fences the producer of an Ongoing transaction (a bumped epoch the client never saw) and aborts
 * the transaction under it, as Kafka's prepareFenceProducerEpoch followed by its own EndTxn(abort).
 * Null when the epoch cannot be bumped or a transition is pending.
 */
function fenceAndAbort(
  m: TransactionMetadata,
  now: number,
  ctx: TxnContext,
  errorCodeAfterWrite: ErrorCode,
): TxnOutcome | null {
  if (m.state !== 'Ongoing' || m.pendingState !== null || m.producerEpoch >= EPOCH_MAX) return null
  const fencedEpoch = m.hasFailedEpochFence ? m.producerEpoch : m.producerEpoch + 1
  const fenced: TransactionMetadata = { ...m, pendingState: 'PrepareEpochFence' }
  const out = endTransaction(
    fenced,
    {
      producerId: m.producerId,
      producerEpoch: fencedEpoch,
      committed: false,
      clientTransactionVersion: ctx.transactionVersionLevel,
    },
    false,
    now,
    ctx,
  )
  return out.kind === 'write' ? { ...out, errorCodeAfterWrite, epochFence: true } : null
}

/** The abort of an Ongoing transaction past its timeout (from its start), with an epoch fence; else null. */
export function expireTransaction(m: TransactionMetadata, now: number, ctx: TxnContext): TxnOutcome | null {
  if (m.state !== 'Ongoing' || m.pendingState !== null) return null
  if (!(m.txnStartTimestampMs + m.txnTimeoutMs < now)) return null
  return fenceAndAbort(m, now, ctx, ErrorCode.None)
}

/**
 * The completion once every partition's marker is written: PrepareCommit -> CompleteCommit,
 * PrepareAbort -> CompleteAbort; under transaction.version 2 an overflowed epoch moves to the next
 * producer id at epoch 0.
 */
export function completeAfterMarkers(m: TransactionMetadata, now: number): TxnOutcome {
  if (m.pendingState !== null) return answer(ErrorCode.ConcurrentTransactions)
  if (m.state !== 'PrepareCommit' && m.state !== 'PrepareAbort') return answer(ErrorCode.InvalidTxnState)
  const rotate = m.clientTransactionVersion >= 2 && m.nextProducerId !== NO_PRODUCER_ID
  return prepare(
    { ...m, hasFailedEpochFence: false },
    {
      ...same(m, m.state === 'PrepareCommit' ? 'CompleteCommit' : 'CompleteAbort', now),
      producerId: rotate ? m.nextProducerId : m.producerId,
      producerEpoch: rotate ? 0 : m.producerEpoch,
      // The last epoch stays what the client last saw (the one before an overflow).
      nextProducerId: NO_PRODUCER_ID,
      partitions: [],
    },
  )
}

/**
 * The expiry of a transactional id idle for `transactional.id.expiration.ms` with no open
 * transaction: a transition to Dead, written as a tombstone; null when it is not due.
 */
export function expireTransactionalId(
  m: TransactionMetadata,
  now: number,
  expirationMs: number,
): TxnOutcome | null {
  if (m.pendingState !== null || !['Empty', 'CompleteCommit', 'CompleteAbort'].includes(m.state)) return null
  if (m.txnLastUpdateTimestampMs + expirationMs > now) return null
  return prepare(m, { ...same(m, 'Dead', m.txnLastUpdateTimestampMs), partitions: [] })
}

/**
 * Applies a written transition, as Kafka's completeTransitionTo: checks it, then takes every field
 * from it. Throws when `transit` is not the pending transition or breaks its rules: a bug of the
 * caller, which Kafka treats as fatal too.
 */
export function completeTransition(m: TransactionMetadata, transit: TxnTransit): TransactionMetadata {
  const fail = (why: string): never => {
    throw new Error(`transition of ${m.state} to ${transit.state} refused: ${why}`)
  }
  if (m.pendingState !== transit.state) fail(`pending state is ${m.pendingState}`)
  const v2 = transit.clientTransactionVersion >= 2
  const completes = transit.state === 'CompleteCommit' || transit.state === 'CompleteAbort'
  const prepares = transit.state === 'PrepareCommit' || transit.state === 'PrepareAbort'
  let validEpoch: boolean
  if (v2 && completes && transit.producerEpoch === 0) {
    // An overflow: the new producer id at epoch 0, the last epoch kept as the client last saw it.
    validEpoch =
      transit.lastProducerEpoch === m.lastProducerEpoch && transit.previousProducerId === m.producerId
  } else if (v2 && prepares) {
    validEpoch = transit.lastProducerEpoch === m.producerEpoch && transit.producerId === m.producerId
  } else validEpoch = transit.producerEpoch === m.producerEpoch && transit.producerId === m.producerId
  switch (transit.state) {
    case 'Empty': {
      const bump =
        transit.producerEpoch === m.producerEpoch + 1 ||
        (transit.producerEpoch === 0 && transit.producerId !== m.producerId)
      if (
        (m.producerEpoch !== transit.producerEpoch && !bump) ||
        transit.partitions.length > 0 ||
        transit.txnStartTimestampMs !== -1
      ) {
        fail('not an epoch bump of an empty transaction')
      }
      break
    }
    case 'Ongoing':
      if (
        !validEpoch ||
        !m.partitions.every((p) => hasPartition(transit.partitions, p)) ||
        m.txnTimeoutMs !== transit.txnTimeoutMs
      ) {
        fail('partitions, epoch or timeout changed')
      }
      break
    case 'PrepareCommit':
    case 'PrepareAbort': {
      // A version 2 abort with no partition added starts anew.
      const emptyAbort = transit.state === 'PrepareAbort' && v2 && m.state !== 'Ongoing'
      if (
        !validEpoch ||
        !samePartitions(m.partitions, transit.partitions) ||
        m.txnTimeoutMs !== transit.txnTimeoutMs ||
        (m.txnStartTimestampMs !== transit.txnStartTimestampMs && !emptyAbort)
      ) {
        fail('partitions, epoch, timeout or start changed')
      }
      break
    }
    case 'CompleteCommit':
    case 'CompleteAbort':
      if (!validEpoch || m.txnTimeoutMs !== transit.txnTimeoutMs || transit.txnStartTimestampMs === -1) {
        fail('epoch, timeout or start changed')
      }
      break
    default:
      // Dead is never completed: the metadata is removed once its tombstone is written; a fence
      // is replaced by its abort.
      return fail('not a state to complete')
  }
  return {
    ...m,
    ...transit,
    partitions: sortPartitions(transit.partitions),
    pendingState: null,
  }
}

/** Drops a transition whose write failed; a failed epoch fence is remembered (Kafka's hasFailedEpochFence). */
export function failTransition(m: TransactionMetadata, epochFence: boolean): TransactionMetadata {
  return { ...m, pendingState: null, hasFailedEpochFence: m.hasFailedEpochFence || epochFence }
}

/** PRODUCER_FENCED as the request's version knows it: older versions get INVALID_PRODUCER_EPOCH. */
export function fencedErrorFor(
  api: 'InitProducerId' | 'AddPartitionsToTxn' | 'AddOffsetsToTxn' | 'EndTxn',
  version: number,
  errorCode: ErrorCode,
): ErrorCode {
  if (errorCode !== ErrorCode.ProducerFenced) return errorCode
  const first = api === 'InitProducerId' ? 4 : 2
  return version < first ? ErrorCode.InvalidProducerEpoch : errorCode
}

function comparePartitions(a: TxnPartition, b: TxnPartition): number {
  return a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition
}

function sortPartitions(ps: readonly TxnPartition[]): TxnPartition[] {
  const sorted = [...ps].sort(comparePartitions)
  return sorted.filter((p, i) => i === 0 || comparePartitions(sorted[i - 1] as TxnPartition, p) !== 0)
}

function hasPartition(ps: readonly TxnPartition[], p: TxnPartition): boolean {
  return ps.some((q) => comparePartitions(p, q) === 0)
}

function samePartitions(a: readonly TxnPartition[], b: readonly TxnPartition[]): boolean {
  const sb = sortPartitions(b)
  return a.length === sb.length && a.every((p, i) => comparePartitions(p, sb[i] as TxnPartition) === 0)
}
