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
