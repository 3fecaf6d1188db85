import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { AssertionError } from '../model/index.ts'
import { type Random, SeededRandom, systemRandom } from './random.ts'

function draws(random: Random, n: number): number[] {
  return Array.from({ length: n }, () => random.nextU32())
}

describe('SeededRandom', () => {
  // Expected values from Vigna's reference C code (xoshiro128starstar.c seeded by splitmix64.c).
  it('matches the xoshiro128** reference for a raw state', () => {
    const random = SeededRandom.fromState([1, 2, 3, 4])
    assert.deepEqual(
      draws(random, 8),
      [11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849],
    )
  })

  it('matches the reference when seeded through SplitMix64', () => {
    const vectors: [number | bigint, number[]][] = [
      [0, [3737715805, 2584255861, 2876756834, 3286328325, 1553311962, 1625202774, 3260698944, 2754151956]],
      [1, [1695105466, 1423115009, 634581793, 1068227753, 716759206, 4186505319, 3777694425, 2710820970]],
      [42, [1776835114, 4165204688, 17111135, 2317295270, 2792088233, 2554630222, 2940343271, 2244566231]],
      [
        Number.MAX_SAFE_INTEGER,
        [1233166643, 1287031142, 661813442, 2960669951, 2601079046, 1036114921, 2300589652, 2591400186],
      ],
      [-1n, [477689756, 2493998634, 555695776, 607808419, 61340979, 301466976, 2478485284, 2565876330]],
    ]
    for (const [seed, expected] of vectors) assert.deepEqual(draws(new SeededRandom(seed), 8), expected)
    assert.equal(new SeededRandom(0).state()[0], 0x7b1dcdaf, 'low half of splitmix64(0) = 0xe220a8397b1dcdaf')
  })

  it('replays from a state snapshot', () => {
    const random = new SeededRandom(7)
    draws(random, 5)
    const resumed = SeededRandom.fromState(random.state())
    assert.deepEqual(draws(resumed, 20), draws(random, 20))
  })

  it('rejects bad seeds and states', () => {
    assert.throws(() => new SeededRandom(1.5), AssertionError)
    assert.throws(() => new SeededRandom(2 ** 60), AssertionError)
    assert.throws(() => SeededRandom.fromState([0, 0, 0, 0]), AssertionError)
    assert.throws(() => SeededRandom.fromState([2 ** 32, 0, 0, 0]), AssertionError)
  })

  it('keeps every output in range', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.integer({ min: 1, max: 2 ** 53 }),
        (seed, max) => {
          const random = new SeededRandom(seed)
          for (let i = 0; i < 20; i++) {
            const u = random.nextU32()
            assert.ok(Number.isInteger(u) && u >= 0 && u < 2 ** 32)
            const f = random.nextFloat()
            assert.ok(f >= 0 && f < 1)
            const n = random.int(max)
            assert.ok(Number.isInteger(n) && n >= 0 && n < max)
          }
        },
      ),
    )
  })

  it('int is roughly uniform (chi-squared, fixed seed)', () => {
    const random = new SeededRandom(12345)
    const buckets = 10
    const n = 100_000
    const counts = new Array<number>(buckets).fill(0)
    for (let i = 0; i < n; i++) {
      const k = random.int(buckets)
      counts[k] = counts[k]! + 1
    }
    const expected = n / buckets
    const chi2 = counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0)
    // 9 degrees of freedom: p = 0.001 at 27.88.
    assert.ok(chi2 < 27.88, `chi2 ${chi2} for ${counts.join(',')}`)
  })

  it('int rejects a exclusiveMax outside [1, 2^53]', () => {
    const random = new SeededRandom(1)
    for (const bad of [0, -1, 1.5, 2 ** 53 + 2, Number.NaN]) {
      assert.throws(() => random.int(bad), AssertionError, String(bad))
    }
    assert.equal(random.int(1), 0)
  })

  it('different seeds give different streams', () => {
    const seen = new Set<string>()
    for (let seed = 0; seed < 100; seed++) seen.add(draws(new SeededRandom(seed), 2).join(','))
    assert.equal(seen.size, 100)
  })
})

describe('systemRandom', () => {
  it('draws in range across batch boundaries', () => {
    const seen = new Set<number>()
    for (let i = 0; i < 1000; i++) {
      const u = systemRandom.nextU32()
      assert.ok(Number.isInteger(u) && u >= 0 && u < 2 ** 32)
      seen.add(u)
      const f = systemRandom.nextFloat()
      assert.ok(f >= 0 && f < 1)
      const n = systemRandom.int(3)
      assert.ok(n === 0 || n === 1 || n === 2)
    }
    assert.ok(seen.size > 990, 'values repeat far more than chance allows')
  })
})
