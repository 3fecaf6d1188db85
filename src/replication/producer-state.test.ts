import assert from 'node:assert/strict'
import { test } from 'node:test'
import { crc32c, ErrorCode } from '../protocol/index.ts'
import { type ProducerBatchInfo, ProducerSnapshotError, ProducerStateManager } from './producer-state.ts'

const batch = (seq: number, count: number, epoch = 0, pid = 7n): ProducerBatchInfo => ({
  producerId: pid,
  producerEpoch: epoch,
  baseSequence: seq,
  lastOffsetDelta: count - 1,
  maxTimestamp: 1000n,
  isTransactional: false,
})

/** Appends like a leader would: check, then update with the next offsets. */
function append(psm: ProducerStateManager, info: ProducerBatchInfo, state: { next: bigint }) {
  const c = psm.check(info)
  if (c.kind === 'append') {
    const first = state.next
    state.next += BigInt(info.lastOffsetDelta + 1)
    psm.update(info, first, state.next - 1n, 0)
  }
  return c
}

test('in-order batches append; a retry of any of the last five answers with its original offsets', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  for (let i = 0; i < 7; i++) assert.equal(append(psm, batch(i * 2, 2), log).kind, 'append')
  // Batch 6 (seq 12-13) was at offsets 12-13; batch 1 (seq 2-3) is too old to be remembered.
  const dup = append(psm, batch(12, 2), log)
  assert.equal(dup.kind, 'duplicate')
  if (dup.kind === 'duplicate') assert.deepEqual([dup.batch.firstOffset, dup.batch.lastOffset], [12n, 13n])
  assert.equal(append(psm, batch(4, 2), log).kind, 'duplicate')
  const old = append(psm, batch(2, 2), log)
  assert.equal(old.kind, 'error')
  assert.equal(log.next, 14n)
})

test('a gap is OUT_OF_ORDER_SEQUENCE_NUMBER; a stale epoch is INVALID_PRODUCER_EPOCH', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  append(psm, batch(0, 3, 1), log)
  const gap = psm.check(batch(5, 1, 1))
  assert.equal(gap.kind === 'error' && gap.errorCode, ErrorCode.OutOfOrderSequenceNumber)
  const stale = psm.check(batch(3, 1, 0))
  assert.equal(stale.kind === 'error' && stale.errorCode, ErrorCode.InvalidProducerEpoch)
  // A new epoch must start at sequence 0.
  const bump = psm.check(batch(3, 1, 2))
  assert.equal(bump.kind === 'error' && bump.errorCode, ErrorCode.OutOfOrderSequenceNumber)
  assert.equal(append(psm, batch(0, 1, 2), log).kind, 'append')
  assert.equal(psm.get(7n)?.epoch, 2)
})

test('an unknown producer may start at any sequence (its state may have expired)', () => {
  const psm = new ProducerStateManager()
  assert.equal(psm.check(batch(42, 1)).kind, 'append')
})

test('sequences wrap at Int32.MAX_VALUE', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  append(psm, batch(2 ** 31 - 2, 2), log)
  assert.equal(psm.get(7n)?.batches[0]?.lastSeq, 2 ** 31 - 1)
  assert.equal(append(psm, batch(0, 1), log).kind, 'append')
})

test('snapshots round-trip and refuse corruption', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  append(psm, batch(0, 3, 4, 1n), log)
  append(psm, batch(0, 2, 0, 2n), log)
  const snap = psm.snapshot(crc32c)
  const loaded = ProducerStateManager.fromSnapshot(snap, crc32c, 0)
  assert.equal(loaded.size, 2)
  assert.deepEqual(loaded.get(1n)?.batches, psm.get(1n)?.batches)
  assert.equal(loaded.check(batch(0, 3, 4, 1n)).kind, 'duplicate')
  assert.equal(loaded.check(batch(3, 1, 4, 1n)).kind, 'append')
  const bad = Buffer.from(snap)
  bad[bad.length - 1] = bad[bad.length - 1]! ^ 1
  assert.throws(() => ProducerStateManager.fromSnapshot(bad, crc32c, 0), ProducerSnapshotError)
})

test('truncation forgets batches past the new end; expiry forgets idle producers', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  append(psm, batch(0, 2), log)
  append(psm, batch(2, 2), log)
  psm.truncateTo(2n)
  assert.equal(psm.get(7n)?.batches.length, 1)
  assert.equal(psm.check(batch(2, 2)).kind, 'append')
  assert.equal(psm.expire(10, 5), 1)
  assert.equal(psm.size, 0)
})

const txnBatch = (seq: number, count: number, pid: bigint, epoch = 0): ProducerBatchInfo => ({
  ...batch(seq, count, epoch, pid),
  isTransactional: true,
})
const marker = (pid: bigint, committed: boolean, epoch = 0, coordinatorEpoch = 0) => ({
  producerId: pid,
  producerEpoch: epoch,
  coordinatorEpoch,
  committed,
})

test('open transactions are kept by first offset; a marker ends one, unstable until the high watermark passes it', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  append(psm, batch(0, 2, 0, 9n), log) // 0-1: idempotent, no transaction
  append(psm, txnBatch(0, 2, 1n), log) // 2-3
  append(psm, txnBatch(0, 1, 2n), log) // 4
  append(psm, txnBatch(2, 1, 1n), log) // 5: producer 1's transaction goes on
  assert.deepEqual(psm.ongoingTxns(), [
    { producerId: 1n, firstOffset: 2n },
    { producerId: 2n, firstOffset: 4n },
  ])
  assert.equal(psm.get(1n)?.currentTxnFirstOffset, 2n)
  assert.equal(psm.firstUnstableOffset(6n), 2n)
  // An abort of producer 1 at offset 6: the next open transaction gives its last stable offset.
  const aborted = psm.completeTxn(marker(1n, false), 6n, 0)
  assert.deepEqual(aborted, {
    producerId: 1n,
    firstOffset: 2n,
    lastOffset: 6n,
    aborted: true,
    lastStableOffset: 4n,
  })
  assert.equal(psm.get(1n)?.currentTxnFirstOffset, -1n)
  assert.equal(psm.firstUnstableOffset(6n), 2n, 'its marker is not below the high watermark yet')
  assert.equal(psm.firstUnstableOffset(7n), 4n)
  const committed = psm.completeTxn(marker(2n, true), 7n, 0)
  assert.equal(committed?.lastStableOffset, 8n, 'none open: the offset after the marker')
  assert.equal(psm.firstUnstableOffset(8n), null)
  assert.equal(psm.completeTxn(marker(2n, true), 8n, 0), null, 'a marker with no open transaction ends none')
})

test('transactional checks: a plain batch in an open transaction, stale epochs and fenced coordinators', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  append(psm, txnBatch(0, 1, 1n, 3), log)
  const plain = psm.check(batch(1, 1, 3, 1n))
  assert.equal(plain.kind === 'error' && plain.errorCode, ErrorCode.InvalidTxnState)
  const older = psm.check(txnBatch(1, 1, 1n, 2))
  assert.equal(older.kind === 'error' && older.errorCode, ErrorCode.InvalidProducerEpoch)
  assert.equal(psm.check(txnBatch(1, 1, 1n, 3)).kind, 'append')
  const staleMarker = psm.checkMarker(marker(1n, true, 2, 5))
  assert.equal(staleMarker.kind === 'error' && staleMarker.errorCode, ErrorCode.InvalidProducerEpoch)
  assert.equal(psm.checkMarker(marker(1n, true, 3, 5)).kind, 'append')
  psm.completeTxn(marker(1n, true, 3, 5), 1n, 0)
  const fenced = psm.checkMarker(marker(1n, false, 3, 4))
  assert.equal(fenced.kind === 'error' && fenced.errorCode, ErrorCode.TransactionCoordinatorFenced)
  assert.equal(psm.checkMarker(marker(1n, false, 3, 5)).kind, 'append')
  assert.equal(psm.check(batch(1, 1, 3, 1n)).kind, 'append', 'after the marker a plain batch is fine')
})

test('a snapshot keeps open transactions and coordinator epochs; truncation drops a transaction it cuts', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  append(psm, txnBatch(0, 2, 5n), log) // 0-1
  append(psm, txnBatch(0, 1, 4n), log) // 2
  psm.completeTxn(marker(4n, true, 0, 7), 3n, 0)
  log.next = 4n
  append(psm, txnBatch(1, 1, 4n), log) // 4: producer 4's next transaction
  const loaded = ProducerStateManager.fromSnapshot(psm.snapshot(crc32c), crc32c, 0)
  assert.deepEqual(loaded.ongoingTxns(), [
    { producerId: 5n, firstOffset: 0n },
    { producerId: 4n, firstOffset: 4n },
  ])
  assert.equal(loaded.get(4n)?.coordinatorEpoch, 7)
  assert.equal(loaded.firstUnstableOffset(5n), 0n)
  loaded.truncateTo(4n)
  assert.deepEqual(loaded.ongoingTxns(), [{ producerId: 5n, firstOffset: 0n }])
  assert.equal(loaded.get(4n)?.currentTxnFirstOffset ?? -1n, -1n)
})

test('KIP-890 verification guards: needed until the transaction opens, voided by a marker, one per verification', () => {
  const psm = new ProducerStateManager()
  const log = { next: 0n }
  const txn = (seq: number, epoch = 0): ProducerBatchInfo => ({
    ...batch(seq, 1, epoch),
    isTransactional: true,
  })
  const refused = (c: ReturnType<ProducerStateManager['check']>) =>
    c.kind === 'error' && c.errorCode === ErrorCode.InvalidTxnState
  // No transaction open: a guard is needed, and only the one handed out passes.
  const guard = psm.startVerification(7n, 0)
  assert.notEqual(guard, null)
  assert.equal(psm.startVerification(7n, 0), guard, 'a second verification before the append shares it')
  assert.ok(refused(psm.check(txn(0), 'client', null)), 'no guard: not verified')
  assert.ok(refused(psm.check(txn(0), 'client', {})), 'a guard of no verification')
  assert.equal(psm.check(txn(0), 'client', guard).kind, 'append')
  // A marker between the verification and the append voids the guard: no hanging transaction.
  psm.completeTxn({ producerId: 7n, producerEpoch: 0, coordinatorEpoch: 0, committed: false }, 0n, 0)
  log.next = 1n
  assert.ok(refused(psm.check(txn(0), 'client', guard)))
  // Verified again and appended: the open transaction needs no verification for this epoch.
  const again = psm.startVerification(7n, 0)!
  assert.notEqual(again, guard)
  const c = psm.check(txn(0), 'client', again)
  assert.equal(c.kind, 'append')
  psm.update(txn(0), 1n, 1n, 0)
  assert.equal(psm.startVerification(7n, 0), null)
  assert.equal(psm.check(txn(1), 'client', null).kind, 'append')
  // A new epoch (transaction version 2 bumps it per transaction) is verified again.
  assert.notEqual(psm.startVerification(7n, 1), null)
  // Without a guard argument (verification off, or a coordinator's write) nothing is required.
  assert.equal(psm.check(txn(0, 0), 'coordinator').kind, 'append')
})
