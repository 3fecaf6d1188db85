/**
 * Simulated-crash properties of the partition log on SimDisk: after a power loss at any disk
 * operation (unsynced names lost, each unsynced write, up to three of them possibly in flight, lost, kept
 * or torn independently of the others), the recovered log is a prefix of what was written and holds
 * everything a completed flush covered.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ManualClock } from '../../src/io/clock.ts'
import { SeededRandom } from '../../src/io/random.ts'
import { SimDisk } from '../../src/io/sim-disk.ts'
import { PartitionLog } from '../../src/storage/partition-log.ts'
import { batch, config, DIR, readAll } from '../storage/fixtures.ts'

type Op =
  | { kind: 'append'; records: number; concurrent: number; gapTicks: number }
  | { kind: 'flush' }
  | { kind: 'tick' }
  | { kind: 'truncate'; back: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      records: fc.integer({ min: 1, max: 4 }),
      concurrent: fc.integer({ min: 1, max: 4 }),
      // Microtasks between the concurrent appends: later ones arrive while a write is in flight
      // and go out as a second round beside it.
      gapTicks: fc.integer({ min: 0, max: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flush' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('truncate' as const), back: fc.integer({ min: 0, max: 12 }) }),
  },
)

interface Scenario {
  ops: Op[]
  crashAtOp: number
  seed: number
  garbage: boolean
  useRecoveryPoint: boolean
  segmentBytes: number
  /**
   * PartitionLogOptions.earlyRoundBytes, 0 for the default: small values make appends hand rounds
   * to the disk themselves while the writer waits, across rolls.
   */
  earlyRoundBytes: number
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  ops: fc.array(opArb, { minLength: 1, maxLength: 25 }),
  crashAtOp: fc.integer({ min: 0, max: 400 }),
  seed: fc.integer({ min: 0, max: 1_000_000 }),
  garbage: fc.boolean(),
  useRecoveryPoint: fc.boolean(),
  segmentBytes: fc.constantFrom(250, 600, 5000),
  earlyRoundBytes: fc.constantFrom(0, 1, 150),
})

/** Drop to the next macrotask so every pending promise of the dead process settles. */
const settle = () => new Promise((r) => setImmediate(r))

/** Most positional writes in flight at once over every scenario run (the property must see 3). */
let writesInFlightMax = 0

async function runScenario(s: Scenario): Promise<void> {
  const disk = new SimDisk()
  await disk.mkdir('/data')
  await disk.syncDir('/')
  const cfg = config({ segmentBytes: s.segmentBytes, indexIntervalBytes: 64 })
  let ops = 0
  let dead = false
  disk.setHook(() => {
    if (dead) return 'EIO'
    if (++ops === s.crashAtOp) {
      dead = true
      disk.crash({ random: new SeededRandom(s.seed), garbage: s.garbage })
      return 'EIO'
    }
    return undefined
  })
  const clock = new ManualClock({ nowMs: 1_000_000 })
  /** Every value in the order its offset was assigned; `acked[i]`: its append resolved. */
  const written: string[] = []
  let durable = 0
  /** Index in `written` of each batch's first value (offsets are assigned in append-call order). */
  let batchStarts: number[] = []
  let checkpointedRecoveryPoint = 0n
  let next = 0
  /** Bumped by each truncation, so rewritten offsets carry different values. */
  let generation = 0
  try {
    const log = await PartitionLog.open(DIR, cfg, {
      disk,
      clock,
      ...(s.earlyRoundBytes > 0 ? { earlyRoundBytes: s.earlyRoundBytes } : {}),
    })
    for (const op of s.ops) {
      if (dead) break
      if (op.kind === 'append') {
        const appends: Promise<unknown>[] = []
        for (let c = 0; c < op.concurrent; c++) {
          const values = Array.from({ length: op.records }, () => `v${next++}g${generation}`)
          batchStarts.push(written.length)
          written.push(...values)
          appends.push(log.append(batch(values.map((value) => ({ value, key: null })))))
          for (let t = 0; t < op.gapTicks; t++) await null
        }
        await Promise.all(appends)
      } else if (op.kind === 'flush') {
        const end = written.length
        await log.flush()
        durable = end
        checkpointedRecoveryPoint = log.recoveryPoint
      } else if (op.kind === 'truncate') {
        // A follower's truncation; the manager rewrites the checkpoint through onRecoveryPointLowered.
        const target = log.logEndOffset - BigInt(Math.min(op.back, Number(log.logEndOffset)))
        // Once started it may take effect (its cut synced) before a crash ends it: what it removes
        // need not survive. (Found: a crash after the cut's sync recovered 3 of 4 flushed records.)
        // It cuts whole batches: at the start of the batch holding `target`.
        const cutAt = Math.max(0, ...batchStarts.filter((b) => b <= Number(target)))
        if (durable > cutAt) durable = cutAt
        await log.truncateTo(target)
        const end = Number(log.logEndOffset)
        batchStarts = batchStarts.filter((b) => b < end)
        written.length = end
        next = end
        generation++
        if (durable > end) durable = end
        checkpointedRecoveryPoint = log.recoveryPoint
      } else {
        // What the manager's checkpoint task would write now.
        checkpointedRecoveryPoint = log.recoveryPoint
        clock.advance(1000)
      }
    }
  } catch {
    // The crash (or the failure it caused) ends the first process.
  }
  writesInFlightMax = Math.max(writesInFlightMax, disk.writesInFlightMax)
  if (!dead) {
    dead = true
    disk.crash({ random: new SeededRandom(s.seed), garbage: s.garbage })
  }
  await settle()
  await settle()
  dead = false
  disk.setHook(null)

  const recovered = await PartitionLog.open(DIR, cfg, {
    disk,
    clock: new ManualClock({ nowMs: 2_000_000 }),
    recoveryPoint: s.useRecoveryPoint ? checkpointedRecoveryPoint : 0n,
  })
  const records = await readAll(recovered, 500)
  const values = records.map((r) => r.value)
  assert.deepEqual(
    values,
    written.slice(0, values.length),
    'the recovered log is a prefix of what was written',
  )
  assert.deepEqual(
    records.map((r) => r.offset),
    values.map((_, i) => BigInt(i)),
    'offsets are dense from 0',
  )
  assert.ok(values.length >= durable, `flushed ${durable} records but recovered ${values.length}`)
  assert.equal(recovered.logEndOffset, BigInt(values.length))

  // The recovered log works: append, flush, crash again, recover again.
  const more = await recovered.append(batch([{ value: 'after' }]))
  assert.ok(more.errorCode === 0 && more.baseOffset === BigInt(values.length))
  await recovered.flush()
  disk.crash({ random: new SeededRandom(s.seed + 1) })
  const again = await PartitionLog.open(DIR, cfg, { disk, clock: new ManualClock({ nowMs: 3_000_000 }) })
  assert.deepEqual(
    (await readAll(again, 500)).map((r) => r.value),
    [...values, 'after'],
  )
}

describe('partition log under simulated crashes', () => {
  it('recovers a prefix of what was written that holds everything flushed', async () => {
    await fc.assert(fc.asyncProperty(scenarioArb, runScenario), {
      numRuns: 150,

      examples: [
        // Found: truncateTo renamed the later segments away without syncing the directory, then
        // synced its cut; a crash between brought them back behind the cut segment (a hole).
        [
          {
            ops: [
              { kind: 'append', records: 3, concurrent: 2, gapTicks: 0 },
              { kind: 'append', records: 2, concurrent: 3, gapTicks: 0 },
              { kind: 'truncate', back: 7 },
            ],
            crashAtOp: 57,
            seed: 0,
            garbage: false,
            useRecoveryPoint: false,
            segmentBytes: 250,
            earlyRoundBytes: 0,
          },
        ],
        // Found in CI: recovery cut a torn tail, but its sync recorded the size before the cut, so a
        // later flush that brought the file back to that length skipped its fsync.
        [
          {
            ops: [
              { kind: 'append', records: 1, concurrent: 1, gapTicks: 0 },
              { kind: 'append', records: 1, concurrent: 1, gapTicks: 0 },
              { kind: 'flush' },
              { kind: 'append', records: 1, concurrent: 1, gapTicks: 0 },
              { kind: 'append', records: 1, concurrent: 1, gapTicks: 0 },
              { kind: 'flush' },
              { kind: 'truncate', back: 1 },
              { kind: 'tick' },
            ],
            crashAtOp: 24,
            seed: 0,
            garbage: false,
            useRecoveryPoint: false,
            segmentBytes: 5000,
            earlyRoundBytes: 0,
          },
        ],
        [
          {
            ops: [
              { kind: 'append', records: 3, concurrent: 4, gapTicks: 0 },
              { kind: 'flush' },
              { kind: 'append', records: 1, concurrent: 1, gapTicks: 0 },
            ],
            crashAtOp: 0,
            seed: 10,
            garbage: true,
            useRecoveryPoint: false,
            segmentBytes: 600,
            earlyRoundBytes: 0,
          },
        ],
      ],
    })
    assert.equal(writesInFlightMax, 3, 'some runs had three write rounds in flight (the most)')
  })

  // Found by the property (1 run in ~50): four records in two 2-record batches, flushed;
  // truncateTo(3), inside the second batch, which cuts the whole batch (the log ends at 2, as
  // Kafka's); a crash inside the truncation. The model counted 3 records as kept: it now counts what
  // a cut keeps by whole batches.
  it('a flushed log cut inside a batch, then crashed, keeps the batches before the cut', async () => {
    await runScenario({
      ops: [
        { kind: 'append', records: 2, concurrent: 2, gapTicks: 2 },
        { kind: 'flush' },
        { kind: 'truncate', back: 1 },
        { kind: 'append', records: 1, concurrent: 1, gapTicks: 0 },
      ],
      crashAtOp: 21,
      seed: 0,
      garbage: false,
      useRecoveryPoint: false,
      segmentBytes: 250,
      earlyRoundBytes: 0,
    } as never)
  })

  it('survives a crash at every disk operation of one fixed run', async () => {
    const ops: Op[] = [
      { kind: 'append', records: 3, concurrent: 3, gapTicks: 0 },
      { kind: 'flush' },
      { kind: 'append', records: 2, concurrent: 4, gapTicks: 2 },
      { kind: 'append', records: 4, concurrent: 1, gapTicks: 0 },
      { kind: 'flush' },
      { kind: 'append', records: 1, concurrent: 4, gapTicks: 1 },
    ]
    for (let crashAtOp = 1; crashAtOp < 120; crashAtOp++) {
      await runScenario({
        ops,
        crashAtOp,
        seed: crashAtOp,
        garbage: crashAtOp % 2 === 0,
        useRecoveryPoint: crashAtOp % 3 === 0,
        segmentBytes: 250,
        // Odd runs: the appends that arrive while a write is in flight issue their own rounds.
        earlyRoundBytes: crashAtOp % 2 === 1 ? 1 : 0,
      })
    }
  })
})
