import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { AssertionError } from '../model/index.ts'
import type { Entry, EpochEndOffset } from './entry.ts'
import { RaftLog } from './raft-log.ts'

function entries(start: bigint, epochs: number[]): Entry[] {
  return epochs.map((epoch, i) => ({
    kind: 'data',
    offset: start + BigInt(i),
    epoch,
    data: new Uint8Array([i]),
  }))
}

/** The definition, spelled out: the largest epoch <= e among the records, and where it ends. */
function naiveEndOffsetForEpoch(
  snapshot: { endOffset: bigint; epoch: number },
  epochs: number[],
  e: number,
): EpochEndOffset | undefined {
  let best: EpochEndOffset | undefined =
    e >= snapshot.epoch ? { epoch: snapshot.epoch, endOffset: snapshot.endOffset } : undefined
  for (let i = 0; i < epochs.length; i++) {
    const epoch = epochs[i]!
    if (epoch <= e && (best === undefined || epoch >= best.epoch)) {
      best = { epoch, endOffset: snapshot.endOffset + BigInt(i) + 1n }
    }
  }
  return best
}

describe('RaftLog', () => {
  it('answers endOffsetForEpoch as KIP-595 describes', () => {
    const log = new RaftLog(undefined, entries(0n, [1, 1, 3, 3]))
    assert.deepEqual(log.endOffsetForEpoch(0), { epoch: 0, endOffset: 0n })
    assert.deepEqual(log.endOffsetForEpoch(1), { epoch: 1, endOffset: 2n })
    assert.deepEqual(log.endOffsetForEpoch(2), { epoch: 1, endOffset: 2n })
    assert.deepEqual(log.endOffsetForEpoch(3), { epoch: 3, endOffset: 4n })
    assert.deepEqual(log.endOffsetForEpoch(9), { epoch: 3, endOffset: 4n })
    assert.deepEqual(log.lastEpochEndOffset, { epoch: 3, endOffset: 4n })
  })

  it('truncates and compacts, keeping the epoch index right', () => {
    const log = new RaftLog(undefined, entries(0n, [1, 1, 2, 2, 2, 4]))
    log.truncateTo(4n)
    assert.equal(log.endOffset, 4n)
    assert.equal(log.lastEpoch, 2)
    log.compactTo({ endOffset: 3n, epoch: 2 })
    assert.equal(log.startOffset, 3n)
    assert.equal(log.entryAt(2n), undefined)
    assert.equal(log.epochAt(2n), 2, 'the snapshot answers for its last offset')
    assert.deepEqual(log.endOffsetForEpoch(2), { epoch: 2, endOffset: 4n })
    assert.equal(log.endOffsetForEpoch(1), undefined, 'below the snapshot: unknown')
    assert.throws(() => log.truncateTo(2n), AssertionError)
  })

  it('refuses appends that break offsets or lower the epoch', () => {
    const log = new RaftLog(undefined, entries(0n, [2]))
    assert.throws(() => log.append(entries(5n, [2])), AssertionError)
    assert.throws(() => log.append(entries(1n, [1])), AssertionError)
  })

  it('restarts empty at an installed snapshot', () => {
    const log = new RaftLog(undefined, entries(0n, [1, 1, 1]))
    log.installSnapshot({ endOffset: 10n, epoch: 3 })
    assert.equal(log.startOffset, 10n)
    assert.equal(log.endOffset, 10n)
    assert.deepEqual(log.lastEpochEndOffset, { epoch: 3, endOffset: 10n })
  })

  it('slices by count and bytes, always returning a first entry', () => {
    const log = new RaftLog(undefined, entries(0n, [1, 1, 1, 1]))
    assert.equal(log.slice(0n, 4n, 2).length, 2)
    assert.equal(log.slice(1n, 4n, 10, 1).length, 1)
  })

  it('matches the definition of endOffsetForEpoch under appends, truncations and compactions', () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('append' as const),
        bumps: fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 6 }),
      }),
      fc.record({ kind: fc.constant('truncate' as const), back: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ kind: fc.constant('compact' as const), forward: fc.integer({ min: 1, max: 5 }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), fc.integer({ min: 0, max: 8 }), (ops, probe) => {
        const log = new RaftLog()
        let snapshot = { endOffset: 0n, epoch: 0 }
        let epochs: number[] = []
        for (const o of ops) {
          if (o.kind === 'append') {
            let epoch = log.lastEpoch
            const added = o.bumps.map((bump) => (epoch = Math.max(1, epoch + bump)))
            log.append(entries(log.endOffset, added))
            epochs.push(...added)
          } else if (o.kind === 'truncate') {
            const keep = Math.max(0, epochs.length - o.back)
            log.truncateTo(snapshot.endOffset + BigInt(keep))
            epochs = epochs.slice(0, keep)
          } else if (epochs.length > 0) {
            const n = Math.min(o.forward, epochs.length)
            snapshot = { endOffset: snapshot.endOffset + BigInt(n), epoch: epochs[n - 1]! }
            log.compactTo(snapshot)
            epochs = epochs.slice(n)
          }
          for (let e = 0; e <= probe; e++) {
            assert.deepEqual(log.endOffsetForEpoch(e), naiveEndOffsetForEpoch(snapshot, epochs, e))
          }
          assert.equal(log.endOffset, snapshot.endOffset + BigInt(epochs.length))
        }
      }),
      { numRuns: 300 },
    )
  })
})
