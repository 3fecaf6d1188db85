import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SeededRandom } from '../io/index.ts'
import type { TopicName, Uuid } from '../model/index.ts'
import { ErrorCode, type FetchRequestData } from '../protocol/index.ts'
import { FetchSessionCache, selectResponsePartitions } from './fetch-session.ts'

const ZERO = 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid
const opts = { nowMs: 0, privileged: false, nameOf: () => undefined }

function req(
  sessionId: number,
  sessionEpoch: number,
  parts: Array<[string, number, bigint]>,
  forgotten: Array<[string, number]> = [],
): FetchRequestData.FetchRequest {
  const topics = new Map<string, FetchRequestData.FetchPartition[]>()
  for (const [t, p, offset] of parts) {
    const list = topics.get(t) ?? []
    list.push({
      partition: p,
      currentLeaderEpoch: -1,
      fetchOffset: offset,
      lastFetchedEpoch: -1,
      logStartOffset: -1n,
      partitionMaxBytes: 1000,
      replicaDirectoryId: ZERO,
    })
    topics.set(t, list)
  }
  return {
    clusterId: null,
    replicaId: -1 as never,
    replicaState: { replicaId: -1 as never, replicaEpoch: -1n },
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId,
    sessionEpoch,
    topics: [...topics].map(([topic, partitions]) => ({
      topic: topic as TopicName,
      topicId: ZERO,
      partitions,
    })),
    forgottenTopicsData: forgotten.map(([topic, p]) => ({
      topic: topic as TopicName,
      topicId: ZERO,
      partitions: [p],
    })),
    rackId: '',
  }
}

const answer = (records: number, hw: bigint) => ({
  errorCode: 0,
  highWatermark: hw,
  lastStableOffset: hw,
  logStartOffset: 0n,
  records: Buffer.alloc(records),
})

test('a session starts with a full fetch, then answers only partitions with news', () => {
  const cache = new FetchSessionCache({ slotsMax: 10, evictionMs: 1000 }, new SeededRandom(1))
  const full = cache.context(
    req(0, 0, [
      ['a', 0, 0n],
      ['a', 1, 0n],
      ['b', 0, 0n],
    ]),
    12,
    opts,
  )
  assert.equal(full.kind, 'full')
  if (full.kind !== 'full' || full.session === null) return
  const sent = selectResponsePartitions(
    full,
    full.partitions.map((p) => ({ partition: p, data: answer(0, 5n) })),
  )
  assert.equal(sent.length, 3)
  // Incremental with nothing named: all three are covered; only a-1 has new data.
  const inc = cache.context(req(full.session.id, 1, []), 12, opts)
  assert.equal(inc.kind, 'incremental')
  if (inc.kind !== 'incremental') return
  assert.equal(inc.partitions.length, 3)
  const answers = inc.partitions.map((p) => ({
    partition: p,
    data: answer(p.topic === 'a' && p.partition === 1 ? 10 : 0, 5n),
  }))
  assert.deepEqual(
    selectResponsePartitions(inc, answers).map((a) => `${a.partition.topic}-${a.partition.partition}`),
    ['a-1'],
  )
  // a-1 returned data, so it moves to the back.
  const next = cache.context(req(full.session.id, 2, [], [['b', 0]]), 12, opts)
  assert.equal(next.kind, 'incremental')
  if (next.kind !== 'incremental') return
  assert.deepEqual(
    next.partitions.map((p) => `${p.topic}-${p.partition}`),
    ['a-0', 'a-1'],
  )
  // A high watermark change alone is news.
  const hwMoved = next.partitions.map((p) => ({ partition: p, data: answer(0, p.partition === 0 ? 6n : 5n) }))
  assert.deepEqual(
    selectResponsePartitions(next, hwMoved).map((a) => a.partition.partition),
    [0],
  )
})

test('wrong epochs and unknown sessions are errors; epoch -1 closes a session', () => {
  const cache = new FetchSessionCache({ slotsMax: 10, evictionMs: 1000 }, new SeededRandom(2))
  const full = cache.context(req(0, 0, [['a', 0, 0n]]), 12, opts)
  if (full.kind !== 'full' || full.session === null) throw new Error('no session')
  const id = full.session.id
  assert.deepEqual(cache.context(req(id, 5, []), 12, opts), {
    kind: 'error',
    errorCode: ErrorCode.InvalidFetchSessionEpoch,
  })
  assert.deepEqual(cache.context(req(id + 1, 1, []), 12, opts), {
    kind: 'error',
    errorCode: ErrorCode.FetchSessionIdNotFound,
  })
  assert.equal(cache.context(req(id, -1, [['a', 0, 0n]]), 12, opts).kind, 'sessionless')
  assert.equal(cache.size, 0)
  assert.equal(cache.context(req(0, -1, [['a', 0, 0n]]), 12, opts).kind, 'sessionless')
  assert.equal(cache.context(req(0, 0, [['a', 0, 0n]]), 6, opts).kind, 'sessionless')
})

test('a full cache evicts stale sessions, and followers displace consumers', () => {
  const cache = new FetchSessionCache({ slotsMax: 1, evictionMs: 1000 }, new SeededRandom(3))
  const first = cache.context(req(0, 0, [['a', 0, 0n]]), 12, opts)
  assert.ok(first.kind === 'full' && first.session !== null)
  const refused = cache.context(req(0, 0, [['a', 0, 0n]]), 12, { ...opts, nowMs: 10 })
  assert.ok(refused.kind === 'full' && refused.session === null)
  const follower = cache.context(req(0, 0, [['a', 0, 0n]]), 12, { ...opts, nowMs: 10, privileged: true })
  assert.ok(follower.kind === 'full' && follower.session !== null)
  const later = cache.context(req(0, 0, [['a', 0, 0n]]), 12, { ...opts, nowMs: 5000 })
  assert.ok(later.kind === 'full' && later.session !== null)
})
