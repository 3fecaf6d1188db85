import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { APPENDED_BATCHES_TRACKED, AppendedBytes } from './replica-log-state.ts'

/** Every entry ever pushed since the last reset, as the ring should see its last window of them. */
class Model {
  entries: Array<{ end: bigint; total: number }> = []
  total = 0
  reset(end: bigint): void {
    this.entries = []
    this.total = 0
    this.push(end, 0)
  }
  push(end: bigint, bytes: number): void {
    this.total += bytes
    this.entries.push({ end, total: this.total })
    if (this.entries.length > APPENDED_BATCHES_TRACKED) this.entries.shift()
  }
  truncateTo(end: bigint): void {
    while (this.entries.length > 0 && this.entries.at(-1)!.end > end) this.entries.pop()
    this.total = this.entries.at(-1)?.total ?? 0
  }
  #totalAt(offset: bigint): number | null {
    for (let i = this.entries.length - 1; i >= 0; i--)
      if (this.entries[i]!.end <= offset) return this.entries[i]!.total
    return null
  }
  between(from: bigint, to: bigint): number | null {
    if (to <= from) return 0
    const a = this.#totalAt(from)
    const b = this.#totalAt(to)
    return a === null || b === null ? null : b - a
  }
}

describe('AppendedBytes', () => {
  it('answers as a list of every batch in its window would, through growth, wrap-around and truncation', () => {
    const op = fc.oneof(
      {
        weight: 20,
        arbitrary: fc.record({
          kind: fc.constant('push' as const),
          batches: fc.integer({ min: 1, max: 700 }),
          bytes: fc.integer({ min: 1, max: 5000 }),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('truncate' as const),
          back: fc.integer({ min: 0, max: 1500 }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const) }) },
    )
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 12 }),
        fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 5, maxLength: 20 }),
        (ops, queries) => {
          const ring = new AppendedBytes()
          const model = new Model()
          let end = 0n
          ring.reset(end)
          model.reset(end)
          for (const o of ops) {
            if (o.kind === 'push') {
              for (let i = 0; i < o.batches; i++) {
                end += 1n + BigInt(i % 3)
                ring.push(end, o.bytes)
                model.push(end, o.bytes)
              }
            } else if (o.kind === 'truncate') {
              end = end > BigInt(o.back) ? end - BigInt(o.back) : 0n
              ring.truncateTo(end)
              model.truncateTo(end)
            } else {
              ring.reset(end)
              model.reset(end)
            }
            for (const [a, b] of queries) {
              const from = BigInt(a) % (end + 2n)
              const to = BigInt(b) % (end + 2n)
              assert.equal(ring.between(from, to), model.between(from, to), `between(${from}, ${to})`)
            }
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})
