import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
  rangeAssign,
} from './group-member.ts'

test("range assignor: Kafka's RangeAssignor ranges, members sorted, the first ones one more", () => {
  const a = rangeAssign(
    [
      { memberId: 'c', topics: ['t', 'u'] },
      { memberId: 'a', topics: ['t'] },
      { memberId: 'b', topics: ['t', 'u'] },
    ],
    new Map([
      ['t', 7],
      ['u', 1],
    ]),
  )
  assert.deepEqual(a.get('a'), [{ topic: 't', partitions: [0, 1, 2] }])
  assert.deepEqual(a.get('b'), [
    { topic: 't', partitions: [3, 4] },
    { topic: 'u', partitions: [0] },
  ])
  assert.deepEqual(a.get('c'), [{ topic: 't', partitions: [5, 6] }])
})

test('subscription and assignment bytes round-trip (ConsumerProtocol v0)', () => {
  assert.deepEqual(decodeSubscription(encodeSubscription(['a', 'b'])), ['a', 'b'])
  assert.deepEqual(decodeAssignment(encodeAssignment([{ topic: 'a', partitions: [2, 0] }])), [
    { topic: 'a', partition: 2 },
    { topic: 'a', partition: 0 },
  ])
  assert.deepEqual(decodeAssignment(Buffer.alloc(0)), [])
})
