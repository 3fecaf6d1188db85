import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import type { BrokerId } from '../model/index.ts'
import { PlacementError, placeReplicas, rackAlternatedOrder } from './placement.ts'

const brokers = (n: number, racks = 0) =>
  Array.from({ length: n }, (_, i) => ({ id: (i + 1) as BrokerId, rack: racks > 0 ? `r${i % racks}` : null }))

test('rack-alternated order interleaves racks', () => {
  assert.deepEqual(rackAlternatedOrder(brokers(6, 3)), [1, 2, 3, 4, 5, 6])
  const uneven = [
    { id: 1 as BrokerId, rack: 'a' },
    { id: 2 as BrokerId, rack: 'a' },
    { id: 3 as BrokerId, rack: 'b' },
  ]
  assert.deepEqual(rackAlternatedOrder(uneven), [1, 3, 2])
})

test('every partition gets distinct replicas; leaders spread evenly', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 9 }),
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 9 }),
      fc.nat(100),
      fc.nat(100),
      (n, partitions, rfRaw, startIndex, shift) => {
        const rf = Math.min(rfRaw, n)
        const placed = placeReplicas(
          brokers(n),
          { partitionCount: partitions, replicationFactor: rf },
          { startIndex, shift },
        )
        assert.equal(placed.length, partitions)
        const leaders = new Map<number, number>()
        for (const replicas of placed) {
          assert.equal(replicas.length, rf)
          assert.equal(new Set(replicas).size, rf)
          for (const r of replicas) assert.ok(r >= 1 && r <= n)
          leaders.set(replicas[0]!, (leaders.get(replicas[0]!) ?? 0) + 1)
        }
        const counts = [...leaders.values()]
        if (partitions >= n) assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, `leaders ${counts}`)
      },
    ),
    { numRuns: 300, seed: 11 },
  )
})

test('with as many racks as replicas, each partition uses every rack once', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 3 }),
      fc.nat(50),
      fc.nat(50),
      (perRack, rf, s, t) => {
        const bs = brokers(perRack * 3, 3)
        const placed = placeReplicas(
          bs,
          { partitionCount: 12, replicationFactor: rf },
          { startIndex: s, shift: t },
        )
        for (const replicas of placed) {
          const racks = new Set(replicas.map((r) => bs.find((b) => b.id === r)!.rack))
          assert.equal(racks.size, rf)
        }
      },
    ),
    { numRuns: 200, seed: 5 },
  )
})

test('impossible requests are PlacementErrors', () => {
  assert.throws(
    () => placeReplicas(brokers(2), { partitionCount: 1, replicationFactor: 3 }, { startIndex: 0, shift: 0 }),
    PlacementError,
  )
  assert.throws(
    () => placeReplicas(brokers(2), { partitionCount: 0, replicationFactor: 1 }, { startIndex: 0, shift: 0 }),
    PlacementError,
  )
})
