import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  formatLeaderEpochCheckpoint,
  LeaderEpochCache,
  LeaderEpochCheckpointError,
  parseLeaderEpochCheckpoint,
} from './leader-epoch-cache.ts'

const entries = (c: LeaderEpochCache) => c.entries.map((e) => [e.epoch, Number(e.startOffset)])

test('assign keeps epochs and offsets increasing (Kafka LeaderEpochFileCacheTest)', () => {
  const c = new LeaderEpochCache()
  assert.equal(c.assign(2, 6n), true)
  assert.equal(c.assign(2, 10n), false, 'the same epoch later is no change')
  assert.equal(c.assign(3, 11n), true)
  assert.deepEqual(entries(c), [
    [2, 6],
    [3, 11],
  ])
  // An older epoch (or an earlier offset) drops the entries it conflicts with.
  assert.equal(c.assign(2, 8n), true)
  assert.deepEqual(entries(c), [[2, 8]])
  assert.equal(c.assign(4, 7n), true)
  assert.deepEqual(entries(c), [[4, 7]])
  assert.equal(c.assign(-1, 9n), false)
  assert.equal(c.assignIfNewer(3, 20n), false)
  assert.equal(c.assignIfNewer(5, 20n), true)
  assert.equal(c.latestEpoch, 5)
})

test('endOffsetFor answers where an epoch ended', () => {
  const c = new LeaderEpochCache([
    { epoch: 1, startOffset: 0n },
    { epoch: 3, startOffset: 10n },
    { epoch: 5, startOffset: 20n },
  ])
  assert.deepEqual(c.endOffsetFor(5, 30n), { epoch: 5, endOffset: 30n }, 'the latest ends at the log end')
  assert.deepEqual(c.endOffsetFor(3, 30n), { epoch: 3, endOffset: 20n })
  assert.deepEqual(c.endOffsetFor(4, 30n), { epoch: 3, endOffset: 20n }, 'an unknown epoch: the one below')
  assert.deepEqual(c.endOffsetFor(0, 30n), { epoch: 0, endOffset: 0n }, 'below every epoch: the first start')
  assert.deepEqual(c.endOffsetFor(6, 30n), { epoch: -1, endOffset: -1n })
  assert.deepEqual(c.endOffsetFor(-1, 30n), { epoch: -1, endOffset: -1n })
  assert.equal(c.epochForOffset(15n), 3)
  assert.equal(c.epochForOffset(0n), 1)
})

test('truncation from the end and from the start', () => {
  const c = new LeaderEpochCache([
    { epoch: 1, startOffset: 0n },
    { epoch: 3, startOffset: 10n },
    { epoch: 5, startOffset: 20n },
  ])
  assert.equal(c.truncateFromEnd(20n), true)
  assert.deepEqual(entries(c), [
    [1, 0],
    [3, 10],
  ])
  assert.equal(c.truncateFromStart(12n), true)
  assert.deepEqual(entries(c), [[3, 12]])
  assert.equal(c.truncateFromStart(12n), false)
  assert.equal(c.truncateFromStart(5n), false)
  assert.equal(c.clear(), true)
  assert.equal(c.latestEpoch, -1)
})

test("the checkpoint file is Kafka's: version, count, then `epoch offset` lines", () => {
  const text = formatLeaderEpochCheckpoint([
    { epoch: 0, startOffset: 0n },
    { epoch: 2, startOffset: 17n },
  ])
  assert.equal(text, '0\n2\n0 0\n2 17\n')
  assert.deepEqual(parseLeaderEpochCheckpoint(text), [
    { epoch: 0, startOffset: 0n },
    { epoch: 2, startOffset: 17n },
  ])
  assert.deepEqual(parseLeaderEpochCheckpoint('0\n0\n'), [])
  for (const bad of ['1\n0\n', '0\n2\n0 0\n', '0\n1\nx 1\n', '']) {
    assert.throws(() => parseLeaderEpochCheckpoint(bad), LeaderEpochCheckpointError)
  }
})
