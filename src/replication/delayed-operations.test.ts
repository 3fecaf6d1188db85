import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ManualClock } from '../io/index.ts'
import { DelayedOperations, type WaitOutcome, Watchers } from './delayed-operations.ts'

/** Lets pending promise callbacks run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

function track(p: Promise<WaitOutcome>): { outcome: WaitOutcome | null } {
  const t: { outcome: WaitOutcome | null } = { outcome: null }
  void p.then((o) => {
    t.outcome = o
  })
  return t
}

test('a waiter is re-checked only when woken, and completes when its condition holds', async () => {
  const clock = new ManualClock()
  const ops = new DelayedOperations(clock, { operationsMax: 10 })
  const w = new Watchers()
  let value = 0
  let checks = 0
  const t = track(
    ops.wait(
      [w],
      () => {
        checks++
        return value >= 2
      },
      1000,
    ),
  )
  await settle()
  assert.equal(t.outcome, null)
  assert.equal(checks, 1, 'checked once up front, then not again until woken')
  value = 1
  w.wake()
  await settle()
  assert.equal(t.outcome, null)
  value = 2
  w.wake()
  await settle()
  assert.equal(t.outcome, 'completed')
  assert.equal(w.size, 0, 'a completed waiter leaves its watchers')
  assert.equal(clock.timersPending, 0, 'and its timer')
  assert.equal(ops.size, 0)
})

test('a waiter expires when its timeout passes on the clock', async () => {
  const clock = new ManualClock()
  const ops = new DelayedOperations(clock, { operationsMax: 10 })
  const w = new Watchers()
  const t = track(ops.wait([w], () => false, 500))
  clock.advance(499)
  await settle()
  assert.equal(t.outcome, null)
  clock.advance(1)
  await settle()
  assert.equal(t.outcome, 'expired')
  assert.equal(w.size, 0)
})

test('no wait when the condition holds, the timeout is zero, or the limit is reached', async () => {
  const clock = new ManualClock()
  const ops = new DelayedOperations(clock, { operationsMax: 1 })
  assert.equal(await ops.wait([], () => true, 100), 'completed')
  assert.equal(await ops.wait([], () => false, 0), 'expired')
  const first = track(ops.wait([], () => false, 100))
  assert.equal(await ops.wait([], () => false, 100), 'expired', 'over operationsMax')
  ops.completeAll()
  await settle()
  assert.equal(first.outcome, 'shutdown')
  assert.equal(await ops.wait([], () => false, 100), 'shutdown', 'after shutdown nothing waits')
})

test('shutting down fetches first lets waiting produces finish', async () => {
  const clock = new ManualClock()
  const ops = new DelayedOperations(clock, { operationsMax: 10 })
  const w = new Watchers()
  let durable = false
  const fetch = track(ops.wait([w], () => false, 1000, 'fetch'))
  const produce = track(ops.wait([w], () => durable, 1000, 'produce'))
  ops.complete('fetch')
  await settle()
  assert.equal(fetch.outcome, 'shutdown')
  assert.equal(produce.outcome, null)
  assert.equal(await ops.wait([], () => false, 1000, 'fetch'), 'shutdown', 'new long polls do not wait')
  durable = true
  w.wake()
  await settle()
  assert.equal(produce.outcome, 'completed')
})
