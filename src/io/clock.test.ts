import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { AssertionError } from '../model/index.ts'
import { ManualClock, systemClock } from './clock.ts'

describe('ManualClock', () => {
  it('starts at the given wall time and monotonic 0', () => {
    const clock = new ManualClock({ nowMs: 1_700_000_000_000 })
    assert.equal(clock.nowMs(), 1_700_000_000_000)
    assert.equal(clock.monotonicMs(), 0)
    assert.equal(new ManualClock().nowMs(), 0)
  })

  it('fires due timers in order of deadline, then of insertion, each at its deadline', () => {
    const clock = new ManualClock({ nowMs: 1000 })
    const log: string[] = []
    const at = (name: string) => () => log.push(`${name}@${clock.monotonicMs()}/${clock.nowMs()}`)
    clock.setTimer(10, at('c'))
    clock.setTimer(5, at('a'))
    clock.setTimer(10, at('d'))
    clock.setTimer(5, at('b'))
    clock.setTimer(11, at('e'))
    clock.advance(10)
    assert.deepEqual(log, ['a@5/1005', 'b@5/1005', 'c@10/1010', 'd@10/1010'])
    assert.equal(clock.monotonicMs(), 10)
    assert.equal(clock.timersPending, 1)
    assert.equal(clock.nextDeadlineMs(), 11)
    clock.advance(1)
    assert.deepEqual(log.at(-1), 'e@11/1011')
    assert.equal(clock.nextDeadlineMs(), null)
  })

  it('does not fire a timer before its deadline, and advance(0) fires what is due now', () => {
    const clock = new ManualClock()
    let fired = 0
    clock.setTimer(0, () => fired++)
    assert.equal(fired, 0, 'never synchronously inside setTimer')
    clock.setTimer(3, () => fired++)
    clock.advance(0)
    assert.equal(fired, 1)
    clock.advance(2.5)
    assert.equal(fired, 1)
    clock.advance(0.5)
    assert.equal(fired, 2)
  })

  it('treats negative delays as zero', () => {
    const clock = new ManualClock()
    let fired = false
    clock.setTimer(-5, () => {
      fired = true
    })
    clock.advance(0)
    assert.equal(fired, true)
  })

  it('fires timers set by callbacks within the same advance when they fall due', () => {
    const clock = new ManualClock()
    const log: number[] = []
    clock.setTimer(2, () => {
      log.push(clock.monotonicMs())
      clock.setTimer(0, () => log.push(clock.monotonicMs()))
      clock.setTimer(3, () => log.push(clock.monotonicMs()))
      clock.setTimer(10, () => log.push(clock.monotonicMs()))
    })
    clock.advance(5)
    assert.deepEqual(log, [2, 2, 5])
    assert.equal(clock.timersPending, 1)
  })

  it('clearTimer cancels, is idempotent, and is harmless after firing', () => {
    const clock = new ManualClock()
    const log: string[] = []
    const a = clock.setTimer(1, () => log.push('a'))
    const b = clock.setTimer(2, () => log.push('b'))
    clock.clearTimer(a)
    clock.clearTimer(a)
    clock.advance(5)
    clock.clearTimer(b)
    assert.deepEqual(log, ['b'])
    assert.equal(clock.timersPending, 0)
  })

  it('a callback may clear a later timer', () => {
    const clock = new ManualClock()
    const log: string[] = []
    const handles: Parameters<ManualClock['clearTimer']>[0][] = []
    clock.setTimer(1, () => {
      log.push('a')
      for (const h of handles) clock.clearTimer(h)
    })
    handles.push(clock.setTimer(1, () => log.push('b')))
    handles.push(clock.setTimer(2, () => log.push('c')))
    clock.advance(3)
    assert.deepEqual(log, ['a'])
  })

  it('rejects timers of another clock and non-finite input', () => {
    const one = new ManualClock()
    const two = new ManualClock()
    const h = one.setTimer(1, () => {})
    assert.throws(() => two.clearTimer(h), AssertionError)
    assert.throws(() => one.setTimer(Number.NaN, () => {}), AssertionError)
    assert.throws(() => one.setTimer(Number.POSITIVE_INFINITY, () => {}), AssertionError)
    assert.throws(() => one.advance(-1), AssertionError)
  })

  it('leaves the clock at the deadline of a throwing timer; the rest wait', () => {
    const clock = new ManualClock()
    let later = false
    clock.setTimer(2, () => {
      throw new Error('boom')
    })
    clock.setTimer(3, () => {
      later = true
    })
    assert.throws(() => clock.advance(10), /boom/)
    assert.equal(clock.monotonicMs(), 2)
    assert.equal(later, false)
    clock.advance(8)
    assert.equal(later, true)
    assert.equal(clock.monotonicMs(), 10)
  })

  it('setNowMs moves wall time alone, even backwards', () => {
    const clock = new ManualClock({ nowMs: 5000 })
    clock.advance(10)
    clock.setNowMs(100)
    assert.equal(clock.nowMs(), 100)
    assert.equal(clock.monotonicMs(), 10)
    clock.advance(1)
    assert.equal(clock.nowMs(), 101)
  })

  it('matches a reference model for any schedule of sets, clears and advances', () => {
    type Op =
      | { kind: 'set'; delayMs: number }
      | { kind: 'clear'; pick: number }
      | { kind: 'advance'; ms: number }
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), delayMs: fc.integer({ min: -2, max: 50 }) }),
      fc.record({ kind: fc.constant('clear' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 30 }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const clock = new ManualClock()
        const fired: { id: number; at: number }[] = []
        // The model: a list of live timers; due ones fire sorted by (deadline, id).
        const live: { id: number; deadlineMs: number }[] = []
        const expected: { id: number; at: number }[] = []
        const handles: ReturnType<ManualClock['setTimer']>[] = []
        let nowMs = 0
        for (const o of ops) {
          if (o.kind === 'set') {
            const id = handles.length
            handles.push(clock.setTimer(o.delayMs, () => fired.push({ id, at: clock.monotonicMs() })))
            live.push({ id, deadlineMs: nowMs + Math.max(0, o.delayMs) })
          } else if (o.kind === 'clear') {
            if (handles.length === 0) continue
            const id = o.pick % handles.length
            clock.clearTimer(handles[id]!)
            const i = live.findIndex((t) => t.id === id)
            if (i >= 0) live.splice(i, 1)
          } else {
            nowMs += o.ms
            const due = live.filter((t) => t.deadlineMs <= nowMs)
            due.sort((a, b) => a.deadlineMs - b.deadlineMs || a.id - b.id)
            for (const t of due) {
              expected.push({ id: t.id, at: t.deadlineMs })
              live.splice(live.indexOf(t), 1)
            }
            clock.advance(o.ms)
          }
          assert.equal(clock.timersPending, live.length)
        }
        assert.deepEqual(fired, expected)
        assert.equal(clock.monotonicMs(), nowMs)
      }),
    )
  })
})

describe('systemClock', () => {
  it('reads wall and monotonic time', () => {
    const wall = systemClock.nowMs()
    assert.ok(Math.abs(wall - Date.now()) < 1000)
    const a = systemClock.monotonicMs()
    const b = systemClock.monotonicMs()
    assert.ok(b >= a)
  })

  it('fires a timer, and a cleared one never fires', async () => {
    const cleared = systemClock.setTimer(1, () => assert.fail('cleared timer fired'))
    systemClock.clearTimer(cleared)
    systemClock.clearTimer(cleared)
    const started = systemClock.monotonicMs()
    const elapsed = await new Promise<number>((resolve) => {
      systemClock.setTimer(5, () => resolve(systemClock.monotonicMs() - started))
    })
    assert.ok(elapsed >= 4, `fired after ${elapsed} ms`)
  })

  it('can clear a timer longer than Node allows without it firing early', async () => {
    let fired = false
    const h = systemClock.setTimer(2 ** 31 + 1000, () => {
      fired = true
    })
    await new Promise((resolve) => setTimeout(resolve, 5))
    systemClock.clearTimer(h)
    assert.equal(fired, false)
  })
})
