import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { ErrorCode } from '../protocol/index.ts'
import {
  decodeTransactionLogRecord,
  encodeTransactionLogKey,
  encodeTransactionLogValue,
  type TransactionState,
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
  fencedErrorFor,
  initProducerId,
  metadataFromRecord,
  NO_PRODUCER_EPOCH,
  type TransactionMetadata,
  type TxnContext,
  type TxnOutcome,
  VALID_PREVIOUS_STATES,
} from './transaction-state.ts'

const T0 = 1_700_000_000_000
const P = [{ topic: 't', partition: 0 }]

function context(firstId = 1000n, transactionVersionLevel = 0): TxnContext & { issued: bigint[] } {
  let next = firstId
  const issued: bigint[] = []
  return {
    transactionTimeoutMsMax: 900_000,
    transactionVersionLevel,
    newProducerId: () => {
      issued.push(next)
      return next++
    },
    issued,
  }
}

/** Writes a transition and completes it, as the coordinator does once its record is committed. */
function written(out: TxnOutcome): TransactionMetadata {
  assert.equal(
    out.kind,
    'write',
    JSON.stringify(out, (_, v) => (typeof v === 'bigint' ? `${v}` : v)),
  )
  if (out.kind !== 'write') throw new Error('unreachable')
  return completeTransition(out.metadata, out.transit)
}

function errorOf(out: TxnOutcome): ErrorCode {
  return out.kind === 'answer' ? out.errorCode : out.errorCodeAfterWrite
}

function initialized(ctx: TxnContext, timeoutMs = 60_000): TransactionMetadata {
  return written(
    initProducerId(null, { transactionalId: 'tx', transactionTimeoutMs: timeoutMs, expected: null }, T0, ctx),
  )
}

describe('transaction state machine', () => {
  test('a v0 commit: Empty -> Ongoing -> PrepareCommit -> CompleteCommit, one epoch throughout', () => {
    const ctx = context()
    let m = initialized(ctx)
    assert.deepEqual([m.state, m.producerId, m.producerEpoch], ['Empty', 1000n, 0])
    m = written(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0 + 1))
    assert.deepEqual([m.state, m.txnStartTimestampMs], ['Ongoing', T0 + 1])
    // Adding what is already there answers at once.
    assert.deepEqual(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0 + 2), {
      kind: 'answer',
      errorCode: ErrorCode.None,
      producerId: -1n,
      producerEpoch: -1,
    })
    m = written(addOffsetsToTxn(m, { producerId: 1000n, producerEpoch: 0, offsetsPartition: 7 }, T0 + 3))
    assert.deepEqual(m.partitions, [{ topic: '__consumer_offsets', partition: 7 }, ...P])
    assert.equal(m.txnStartTimestampMs, T0 + 1)
    const end = { producerId: 1000n, producerEpoch: 0, committed: true, clientTransactionVersion: 0 }
    m = written(endTxn(m, end, T0 + 4, ctx))
    assert.deepEqual([m.state, m.producerEpoch], ['PrepareCommit', 0])
    assert.equal(errorOf(endTxn(m, end, T0 + 5, ctx)), ErrorCode.ConcurrentTransactions)
    assert.equal(errorOf(endTxn(m, { ...end, committed: false }, T0 + 5, ctx)), ErrorCode.InvalidTxnState)
    m = written(completeAfterMarkers(m, T0 + 6))
    assert.deepEqual([m.state, m.partitions, m.producerEpoch], ['CompleteCommit', [], 0])
    // A retried EndTxn of a completed commit succeeds; an abort of it does not.
    assert.equal(errorOf(endTxn(m, end, T0 + 7, ctx)), ErrorCode.None)
    assert.equal(errorOf(endTxn(m, { ...end, committed: false }, T0 + 7, ctx)), ErrorCode.InvalidTxnState)
    // The next transaction starts from CompleteCommit.
    m = written(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0 + 8))
    assert.deepEqual([m.state, m.txnStartTimestampMs], ['Ongoing', T0 + 8])
  })

  test('v2 (KIP-890): every EndTxn bumps the epoch; a retry with the old epoch is answered', () => {
    const ctx = context()
    let m = initialized(ctx)
    m = written(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0))
    const end = { producerId: 1000n, producerEpoch: 0, committed: false, clientTransactionVersion: 2 }
    m = written(endTxn(m, end, T0 + 1, ctx))
    assert.deepEqual([m.state, m.producerEpoch, m.lastProducerEpoch], ['PrepareAbort', 1, 0])
    assert.equal(errorOf(endTxn(m, end, T0 + 2, ctx)), ErrorCode.ConcurrentTransactions)
    m = written(completeAfterMarkers(m, T0 + 3))
    assert.deepEqual([m.state, m.producerEpoch], ['CompleteAbort', 1])
    const retry = endTxn(m, end, T0 + 4, ctx)
    assert.deepEqual(retry, {
      kind: 'answer',
      errorCode: ErrorCode.None,
      producerId: 1000n,
      producerEpoch: 1,
    })
    assert.equal(errorOf(endTxn(m, { ...end, producerEpoch: 5 }, T0 + 4, ctx)), ErrorCode.ProducerFenced)
  })

  test('v2 may abort with no partition added, from Empty and from a completed transaction; never commit so', () => {
    const ctx = context()
    let m = initialized(ctx)
    const abort = { producerId: 1000n, producerEpoch: 0, committed: false, clientTransactionVersion: 2 }
    assert.equal(errorOf(endTxn(m, { ...abort, committed: true }, T0, ctx)), ErrorCode.InvalidTxnState)
    // Version 1 has no such abort.
    assert.equal(
      errorOf(endTxn(m, { ...abort, clientTransactionVersion: 0 }, T0, ctx)),
      ErrorCode.InvalidTxnState,
    )
    m = written(endTxn(m, abort, T0 + 5, ctx))
    assert.deepEqual(
      [m.state, m.partitions, m.txnStartTimestampMs, m.producerEpoch],
      ['PrepareAbort', [], T0 + 5, 1],
    )
    m = written(completeAfterMarkers(m, T0 + 6))
    assert.deepEqual([m.state, m.producerEpoch], ['CompleteAbort', 1])
    // The same abort again is a retry (epoch one below): answered, nothing written.
    assert.deepEqual(endTxn(m, abort, T0 + 7, ctx), {
      kind: 'answer',
      errorCode: ErrorCode.None,
      producerId: 1000n,
      producerEpoch: 1,
    })
    // With the current epoch it is a new abort, which bumps again.
    m = written(endTxn(m, { ...abort, producerEpoch: 1 }, T0 + 8, ctx))
    assert.deepEqual([m.state, m.producerEpoch, m.lastProducerEpoch], ['PrepareAbort', 2, 1])
  })

  test('v2 EndTxn at an exhausted epoch completes under a new producer id at epoch 0', () => {
    const ctx = context()
    const m0 = initialized(ctx)
    let m: TransactionMetadata = { ...m0, producerEpoch: 32766 }
    m = written(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 32766, partitions: P }, T0))
    const end = { producerId: 1000n, producerEpoch: 32766, committed: true, clientTransactionVersion: 2 }
    m = written(endTxn(m, end, T0 + 1, ctx))
    assert.deepEqual([m.producerEpoch, m.nextProducerId], [32767, 1001n])
    m = written(completeAfterMarkers(m, T0 + 2))
    assert.deepEqual(
      [m.state, m.producerId, m.producerEpoch, m.previousProducerId, m.lastProducerEpoch],
      ['CompleteCommit', 1001n, 0, 1000n, 32766],
    )
    // The client retrying with the old id and epoch is told it succeeded.
    assert.equal(errorOf(endTxn(m, end, T0 + 3, ctx)), ErrorCode.None)
  })

  test('InitProducerId of an Ongoing transaction fences and aborts it; the old producer is fenced', () => {
    const ctx = context()
    let m = initialized(ctx)
    m = written(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0))
    const init = { transactionalId: 'tx', transactionTimeoutMs: 60_000, expected: null }
    const fence = initProducerId(m, init, T0 + 1, ctx)
    assert.equal(errorOf(fence), ErrorCode.ConcurrentTransactions)
    assert.ok(fence.kind === 'write' && fence.epochFence)
    // Meanwhile everything is CONCURRENT_TRANSACTIONS or fenced.
    assert.equal(errorOf(initProducerId(fence.metadata, init, T0 + 2, ctx)), ErrorCode.ConcurrentTransactions)
    m = written(fence)
    assert.deepEqual([m.state, m.producerEpoch, m.lastProducerEpoch], ['PrepareAbort', 1, NO_PRODUCER_EPOCH])
    for (const out of [
      addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0 + 3),
      endTxn(
        m,
        { producerId: 1000n, producerEpoch: 0, committed: true, clientTransactionVersion: 0 },
        T0 + 3,
        ctx,
      ),
    ]) {
      assert.equal(errorOf(out), ErrorCode.ProducerFenced)
    }
    m = written(completeAfterMarkers(m, T0 + 4))
    m = written(initProducerId(m, init, T0 + 5, ctx))
    assert.deepEqual([m.state, m.producerId, m.producerEpoch], ['Empty', 1000n, 2])
  })

  test('a failed fence write is remembered: the next fence reuses its epoch', () => {
    const ctx = context()
    let m = initialized(ctx)
    m = written(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0))
    const out = expireTransaction(m, T0 + 60_001, ctx)
    assert.ok(out !== null && out.kind === 'write')
    m = failTransition(out.metadata, out.epochFence)
    assert.deepEqual(
      [m.state, m.producerEpoch, m.hasFailedEpochFence, m.pendingState],
      ['Ongoing', 1, true, null],
    )
    const again = expireTransaction(m, T0 + 60_002, ctx)
    assert.ok(again !== null && again.kind === 'write')
    assert.equal(again.transit.producerEpoch, 1)
    m = written(again)
    m = written(completeAfterMarkers(m, T0 + 60_003))
    assert.deepEqual([m.state, m.hasFailedEpochFence], ['CompleteAbort', false])
  })

  test('the timeout counts from the start; under transaction.version 2 the abort bumps again', () => {
    const ctx = context(1000n, 2)
    let m = initialized(ctx, 1000)
    m = written(addPartitionsToTxn(m, { producerId: 1000n, producerEpoch: 0, partitions: P }, T0))
    m = written(
      addPartitionsToTxn(
        m,
        { producerId: 1000n, producerEpoch: 0, partitions: [{ topic: 'u', partition: 1 }] },
        T0 + 900,
      ),
    )
    assert.equal(expireTransaction(m, T0 + 1000, ctx), null)
    m = written(expireTransaction(m, T0 + 1001, ctx) ?? assert.fail('not expired'))
    assert.deepEqual([m.state, m.producerEpoch, m.lastProducerEpoch], ['PrepareAbort', 2, 1])
    assert.equal(expireTransaction(m, T0 + 5000, ctx), null)
  })

  test('InitProducerId: rotation at an exhausted epoch, KIP-360 recovery, bad input', () => {
    const ctx = context()
    const m = { ...initialized(ctx), producerEpoch: 32766 }
    const rotated = written(
      initProducerId(m, { transactionalId: 'tx', transactionTimeoutMs: 10, expected: null }, T0, ctx),
    )
    assert.deepEqual(
      [rotated.producerId, rotated.producerEpoch, rotated.previousProducerId],
      [1001n, 0, 1000n],
    )
    // A retry of that rotation from the producer still holding the old id and epoch gets it again.
    const bumped = written(
      initProducerId(
        rotated,
        {
          transactionalId: 'tx',
          transactionTimeoutMs: 10,
          expected: { producerId: 1001n, producerEpoch: 0 },
        },
        T0,
        ctx,
      ),
    )
    assert.deepEqual([bumped.producerEpoch, bumped.lastProducerEpoch], [1, 0])
    const retried = initProducerId(
      bumped,
      { transactionalId: 'tx', transactionTimeoutMs: 10, expected: { producerId: 1001n, producerEpoch: 0 } },
      T0,
      ctx,
    )
    assert.ok(retried.kind === 'write')
    assert.deepEqual([retried.transit.producerEpoch, retried.transit.lastProducerEpoch], [1, 0])
    const other = {
      transactionalId: 'tx',
      transactionTimeoutMs: 10,
      expected: { producerId: 5n, producerEpoch: 0 },
    }
    assert.equal(errorOf(initProducerId(bumped, other, T0, ctx)), ErrorCode.ProducerFenced)
    assert.equal(
      errorOf(
        initProducerId(bumped, { ...other, expected: { producerId: 1001n, producerEpoch: 7 } }, T0, ctx),
      ),
      ErrorCode.ProducerFenced,
    )
    assert.equal(
      errorOf(initProducerId(null, { ...other, transactionalId: '' }, T0, ctx)),
      ErrorCode.InvalidRequest,
    )
    for (const t of [0, -1, 900_001]) {
      assert.equal(
        errorOf(initProducerId(null, { ...other, transactionTimeoutMs: t }, T0, ctx)),
        ErrorCode.InvalidTransactionTimeout,
      )
    }
  })

  test('unknown ids and mismatched producer ids; transactional id expiry; loaded metadata', () => {
    const ctx = context()
    assert.equal(
      errorOf(addPartitionsToTxn(null, { producerId: 1n, producerEpoch: 0, partitions: P }, T0)),
      ErrorCode.InvalidProducerIdMapping,
    )
    assert.equal(
      errorOf(
        endTxn(
          null,
          { producerId: 1n, producerEpoch: 0, committed: true, clientTransactionVersion: 0 },
          T0,
          ctx,
        ),
      ),
      ErrorCode.InvalidProducerIdMapping,
    )
    const m = initialized(ctx)
    assert.equal(
      errorOf(addPartitionsToTxn(m, { producerId: 1n, producerEpoch: 0, partitions: P }, T0)),
      ErrorCode.InvalidProducerIdMapping,
    )
    assert.equal(
      errorOf(
        endTxn(
          m,
          { producerId: 1000n, producerEpoch: 0, committed: true, clientTransactionVersion: 0 },
          T0,
          ctx,
        ),
      ),
      ErrorCode.InvalidTxnState,
    )
    assert.equal(expireTransactionalId(m, T0 + 99, 100), null)
    const dead = expireTransactionalId(m, T0 + 100, 100)
    assert.ok(dead !== null && dead.kind === 'write')
    assert.equal(dead.transit.state, 'Dead')
    assert.throws(() => completeTransition(dead.metadata, dead.transit))
    const loaded = metadataFromRecord('tx', {
      ...dead.transit,
      state: 'Ongoing',
      partitions: [
        { topic: 't', partition: 0 },
        { topic: 'a', partition: 1 },
        { topic: 't', partition: 0 },
      ],
    })
    assert.deepEqual(loaded.partitions, [{ topic: 'a', partition: 1 }, ...P])
  })

  test('PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for the versions before it existed', () => {
    assert.equal(
      fencedErrorFor('InitProducerId', 3, ErrorCode.ProducerFenced),
      ErrorCode.InvalidProducerEpoch,
    )
    assert.equal(fencedErrorFor('InitProducerId', 4, ErrorCode.ProducerFenced), ErrorCode.ProducerFenced)
    for (const api of ['AddPartitionsToTxn', 'AddOffsetsToTxn', 'EndTxn'] as const) {
      assert.equal(fencedErrorFor(api, 1, ErrorCode.ProducerFenced), ErrorCode.InvalidProducerEpoch)
      assert.equal(fencedErrorFor(api, 2, ErrorCode.ProducerFenced), ErrorCode.ProducerFenced)
      assert.equal(fencedErrorFor(api, 0, ErrorCode.ConcurrentTransactions), ErrorCode.ConcurrentTransactions)
    }
  })
})

/** One step a random run takes: a request from the current or a stale producer, a timer, a write result. */
/** Mostly the current producer: 1 and 2 epochs behind are stale ones. */
const stale = fc.constantFrom(0, 0, 0, 0, 1, 2)
const step = fc.oneof(
  fc.record({ op: fc.constant('init' as const), expected: fc.boolean(), stale: stale }),
  fc.record({ op: fc.constant('add' as const), stale: stale, partition: fc.nat(3) }),
  fc.record({ op: fc.constant('offsets' as const), stale: stale }),
  fc.record({
    op: fc.constant('end' as const),
    stale: stale,
    committed: fc.boolean(),
    tv: fc.constantFrom(0, 2),
  }),
  fc.record({ op: fc.constant('markers' as const) }),
  fc.record({ op: fc.constant('expire' as const), advanceMs: fc.nat(1500) }),
  { arbitrary: fc.record({ op: fc.constant('write' as const), ok: fc.boolean() }), weight: 4 },
)

describe('transaction state machine properties', () => {
  test('no invalid transition is prepared or completed; epochs never go backwards; stale epochs are fenced', () => {
    const reached = new Set<TransactionState>()
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 30, maxLength: 80 }),
        fc.integer({ min: 0, max: 32767 }),
        fc.constantFrom(0, 2),
        (steps, startEpoch, tvLevel) => {
          const ctx = context(1000n, tvLevel)
          let m = initialized(ctx, 1000)
          m = { ...m, producerEpoch: Math.min(startEpoch, 32765) }
          let now = T0
          let inFlight: Extract<TxnOutcome, { kind: 'write' }> | null = null
          // The highest (producer id, epoch) the metadata ever held: never passed backwards.
          const highest = new Map<bigint, number>()
          const observe = (x: TransactionMetadata) => {
            const seen = highest.get(x.producerId)
            if (seen !== undefined)
              assert.ok(x.producerEpoch >= seen, `epoch went back ${seen} -> ${x.producerEpoch}`)
            highest.set(x.producerId, Math.max(seen ?? -1, x.producerEpoch))
          }
          observe(m)
          for (const s of steps) {
            now += 1
            let out: TxnOutcome | null = null
            const staleBy = 'stale' in s ? s.stale : 0
            const epoch = m.producerEpoch - staleBy
            const current = staleBy === 0
            switch (s.op) {
              case 'init':
                out = initProducerId(
                  m,
                  {
                    transactionalId: 'tx',
                    transactionTimeoutMs: 1000,
                    expected: s.expected ? { producerId: m.producerId, producerEpoch: epoch } : null,
                  },
                  now,
                  ctx,
                )
                break
              case 'add':
              case 'offsets': {
                const req = { producerId: m.producerId, producerEpoch: epoch }
                out =
                  s.op === 'add'
                    ? addPartitionsToTxn(
                        m,
                        { ...req, partitions: [{ topic: 't', partition: s.partition }] },
                        now,
                      )
                    : addOffsetsToTxn(m, { ...req, offsetsPartition: 3 }, now)
                if (!current) assert.equal(errorOf(out), ErrorCode.ProducerFenced)
                break
              }
              case 'end':
                out = endTxn(
                  m,
                  {
                    producerId: m.producerId,
                    producerEpoch: epoch,
                    committed: s.committed,
                    clientTransactionVersion: s.tv,
                  },
                  now,
                  ctx,
                )
                // A stale epoch is fenced, except a v2 retry of the EndTxn that bumped it by one.
                if (
                  !current &&
                  !(staleBy === 1 && s.tv >= 2 && m.state !== 'Ongoing' && m.state !== 'Empty')
                ) {
                  assert.equal(errorOf(out), ErrorCode.ProducerFenced)
                }
                break
              case 'markers':
                out = completeAfterMarkers(m, now)
                break
              case 'expire':
                now += s.advanceMs
                out = expireTransaction(m, now, ctx)
                break
              case 'write':
                if (inFlight !== null) {
                  if (s.ok) {
                    // What is written loads back as the metadata it completes to (the last epoch
                    // and the in-memory flags aside).
                    const { lastProducerEpoch: _, ...value } = inFlight.transit
                    const loaded = decodeTransactionLogRecord(
                      encodeTransactionLogKey('tx'),
                      encodeTransactionLogValue(value, 2),
                    )
                    assert.ok(!('kind' in loaded) && loaded.value !== null)
                    const completed = completeTransition(inFlight.metadata, inFlight.transit)
                    assert.deepEqual(metadataFromRecord('tx', loaded.value), {
                      ...completed,
                      lastProducerEpoch: NO_PRODUCER_EPOCH,
                      hasFailedEpochFence: false,
                    })
                  }
                  m = s.ok
                    ? completeTransition(inFlight.metadata, inFlight.transit)
                    : failTransition(inFlight.metadata, inFlight.epochFence)
                  inFlight = null
                  observe(m)
                  if (s.ok) reached.add(m.state)
                }
                continue
            }
            if (out === null || out.kind === 'answer') continue
            assert.equal(inFlight, null, 'a transition was prepared while another was pending')
            assert.ok(VALID_PREVIOUS_STATES[out.transit.state].includes(m.state as TransactionState))
            assert.ok(out.transit.producerEpoch >= 0 && out.transit.producerEpoch <= 32767)
            if (out.transit.producerId === m.producerId)
              assert.ok(out.transit.producerEpoch >= m.producerEpoch)
            inFlight = out
            m = out.metadata
            observe(m)
          }
        },
      ),
      { numRuns: 1000 },
    )
    // The runs reach every state a transition completes to.
    assert.deepEqual([...reached].sort(), [
      'CompleteAbort',
      'CompleteCommit',
      'Empty',
      'Ongoing',
      'PrepareAbort',
      'PrepareCommit',
    ])
  })
})
