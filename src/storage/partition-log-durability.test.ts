import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { batch, config, DIR, openSimLog, readAll, valuesBatch } from '../../test/storage/fixtures.ts'
import { SeededRandom } from '../io/index.ts'
import { offsetFileName } from './log-segment.ts'
import { type AppendResult, LogOfflineError, PartitionLog } from './partition-log.ts'

const seg0 = `${DIR}/${offsetFileName(0n)}`

describe('PartitionLog flush', () => {
  it('group-commits concurrent flushes into at most two fsyncs', async () => {
    const { log, disk } = await openSimLog()
    const before = disk.syncs
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        await log.append(valuesBatch(1, `g${i}`))
        await log.flush()
      }),
    )
    assert.ok(disk.syncs - before <= 2, `${disk.syncs - before} fsyncs for 40 flushes`)
    assert.equal(log.recoveryPoint, 40n)
    assert.equal(disk.unsyncedBytes(`${seg0}.log`), 0)
  })

  it('append with flush resolves only once durable, sharing fsyncs', async () => {
    const { log, disk } = await openSimLog()
    const before = disk.syncs
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => log.append(valuesBatch(1, `f${i}`), { flush: true })),
    )
    assert.ok(results.every((r) => r.errorCode === 0))
    assert.equal(disk.unsyncedBytes(`${seg0}.log`), 0)
    assert.ok(disk.syncs - before <= 2, `${disk.syncs - before} fsyncs`)
  })

  it('an fsync that started while a write was in flight does not count for that write', async () => {
    const { log, disk } = await openSimLog()
    await log.append(valuesBatch(1, 'first'), { flush: true })
    let release: () => void = () => undefined
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    disk.setHook((op) => (op === 'write' ? held.then(() => undefined) : undefined))
    const appended = log.append(valuesBatch(1, 'in flight'), { flush: true })
    // Let the write reach the disk (held there), then flush: this fsync starts before the bytes land.
    for (let i = 0; i < 10; i++) await null
    await log.flush()
    disk.setHook(null)
    release()
    const r = await appended
    assert.equal(r.errorCode, 0)
    assert.equal(disk.unsyncedBytes(`${seg0}.log`), 0, 'acknowledged with flush but not durable')
  })

  it('starts the fsync of a large burst after its first half, writing the rest meanwhile', async () => {
    const { log, disk } = await openSimLog()
    const seen: number[] = []
    // The second half's write is held until the first fsync has started: it is written meanwhile.
    let firstSync: () => void = () => undefined
    const synced = new Promise<undefined>((resolve) => {
      firstSync = () => resolve(undefined)
    })
    let writes = 0
    // The log file's writes and fsyncs (a flush also writes index entries, to the index files).
    disk.setHook((op, path) => {
      if (!path.endsWith('.log')) return undefined
      if (op === 'sync') {
        seen.push(log.activeSegment.writtenSize)
        firstSync()
      }
      if (op === 'write' && ++writes === 2) return synced
      return undefined
    })
    const before = log.activeSegment.writtenSize
    const value = 'x'.repeat(128 * 1024 - 100)
    const results = await Promise.all(
      Array.from({ length: 8 }, () => log.append(batch([{ value }]), { flush: true })),
    )
    disk.setHook(null)
    assert.ok(results.every((r) => r.errorCode === 0))
    const size = batch([{ value }]).length
    assert.deepEqual(
      seen.map((n) => n - before),
      [4 * size, 8 * size],
      'the first fsync covers the first half, the second the rest',
    )
    assert.equal(disk.unsyncedBytes(`${seg0}.log`), 0)
  })

  it('a flush during a truncation does not vouch for the bytes later written back to the old size', async () => {
    const { log, disk } = await openSimLog()
    for (const name of ['a', 'b', 'c']) await log.append(valuesBatch(1, name))
    await log.flush()
    let release: () => void = () => undefined
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    disk.setHook((op) => (op === 'truncate' ? held.then(() => undefined) : undefined))
    const truncated = log.truncateTo(1n)
    for (let i = 0; i < 50; i++) await null // the truncate is held at the disk
    await log.flush() // an fsync while the file is being cut
    disk.setHook(null)
    release()
    await truncated
    // Back to the size before the cut, with the same batch sizes, the last one acknowledged durable.
    await log.append(valuesBatch(1, 'B'))
    const r = await log.append(valuesBatch(1, 'C'), { flush: true })
    assert.equal(r.errorCode, 0)
    assert.equal(disk.unsyncedBytes(`${seg0}.log`), 0, 'acknowledged with flush but not durable')
  })

  it('flushes by itself after flush.messages records', async () => {
    const { log, disk } = await openSimLog({ flushMessages: 5 })
    for (let i = 0; i < 4; i++) await log.append(valuesBatch(1, 'x'))
    assert.ok(disk.unsyncedBytes(`${seg0}.log`) > 0)
    await log.append(valuesBatch(1, 'x'))
    assert.equal(disk.unsyncedBytes(`${seg0}.log`), 0)
    assert.equal(log.recoveryPoint, 5n)
  })

  it('flushIfDue honours flush.ms', async () => {
    const { log, disk, clock } = await openSimLog({ flushMs: 1000 })
    await log.append(valuesBatch(1, 'x'))
    assert.equal(await log.flushIfDue(clock.nowMs()), false)
    clock.advance(1001)
    assert.equal(await log.flushIfDue(clock.nowMs()), true)
    assert.equal(disk.unsyncedBytes(`${seg0}.log`), 0)
  })

  it('loses only unflushed appends in a crash', async () => {
    const { log, disk, clock } = await openSimLog()
    await log.append(valuesBatch(3, 'durable'))
    await log.flush()
    await log.append(valuesBatch(3, 'lost'))
    disk.crash()
    const reopened = await PartitionLog.open(DIR, config(), { disk, clock, recoveryPoint: 0n })
    assert.deepEqual(
      (await readAll(reopened)).map((r) => r.value),
      ['durable0', 'durable1', 'durable2'],
    )
    assert.equal(reopened.logEndOffset, 3n)
  })
})

describe('PartitionLog recovery', () => {
  it('cuts a torn tail, reports it, and serves only whole batches', async () => {
    for (let seed = 0; seed < 20; seed++) {
      const { log, disk, clock } = await openSimLog()
      await log.append(valuesBatch(2, 'a'))
      await log.flush()
      await log.append(valuesBatch(2, 'b'))
      await log.append(valuesBatch(2, 'c'))
      disk.crash({ random: new SeededRandom(seed), garbage: seed % 2 === 0 })
      const reopened = await PartitionLog.open(DIR, config(), { disk, clock })
      const values = (await readAll(reopened)).map((r) => r.value)
      assert.deepEqual(values.slice(0, 2), ['a0', 'a1'], `seed ${seed}`)
      const all = ['a0', 'a1', 'b0', 'b1', 'c0', 'c1']
      assert.deepEqual(values, all.slice(0, values.length), `seed ${seed}: a prefix`)
      assert.equal(reopened.logEndOffset, BigInt(values.length))
      // The file now ends at the last whole batch.
      assert.equal(reopened.activeSegment.size, (await disk.stat(`${seg0}.log`)).size)
    }
  })

  it('truncates at a corrupt batch in the middle and deletes later segments', async () => {
    const { log, disk, clock } = await openSimLog({ segmentBytes: 250 })
    for (let i = 0; i < 8; i++) await log.append(valuesBatch(2, `s${i}-`))
    await log.flush()
    assert.ok(log.segments.length >= 3)
    const second = log.segments[1]!
    await log.close()
    // Flip a byte inside the first batch of the second segment.
    disk.corrupt(`${DIR}/${offsetFileName(second.baseOffset)}.log`, 70, Buffer.from([0xee]))
    const warnings: string[] = []
    const reopened = await PartitionLog.open(DIR, config({ segmentBytes: 250 }), {
      disk,
      clock,
      recoveryPoint: 0n,
      onWarning: (m) => warnings.push(m),
    })
    assert.equal(reopened.logEndOffset, second.baseOffset)
    assert.equal(reopened.segments.length, 2)
    assert.equal(reopened.recoveryReports.length, 1)
    assert.match(reopened.recoveryReports[0]!.problem, /crc/)
    assert.equal(warnings.length, 1)
    const records = await readAll(reopened)
    assert.equal(records.length, Number(second.baseOffset))
    // New appends continue at the cut.
    const r = await reopened.append(valuesBatch(1, 'after'))
    assert.ok(r.errorCode === 0 && r.baseOffset === second.baseOffset)
  })

  it('skips the scan after a clean shutdown and rebuilds missing or damaged indexes', async () => {
    const { log, disk, clock } = await openSimLog({ segmentBytes: 400, indexIntervalBytes: 50 })
    for (let i = 0; i < 12; i++) await log.append(valuesBatch(2, `k${i}-`))
    const end = log.logEndOffset
    const segments = log.segments.map((s) => s.baseOffset)
    assert.equal(await log.close(), true)
    await disk.remove(`${DIR}/${offsetFileName(segments[0]!)}.index`)
    const garbage = Buffer.alloc(16, 0xff)
    const f = await disk.open(`${DIR}/${offsetFileName(segments[1]!)}.index`, { truncate: true })
    await f.append([garbage])
    await f.close()
    const reopened = await PartitionLog.open(DIR, config({ segmentBytes: 400, indexIntervalBytes: 50 }), {
      disk,
      clock,
      hadCleanShutdown: true,
      recoveryPoint: end,
    })
    assert.equal(reopened.logEndOffset, end)
    const records = await readAll(reopened, 10)
    assert.equal(records.length, 24)
    assert.ok((await disk.stat(`${DIR}/${offsetFileName(segments[0]!)}.index`)).size > 0)
    const rebuilt = await disk.readFile(`${DIR}/${offsetFileName(segments[1]!)}.index`)
    assert.equal(rebuilt.length % 8, 0)
    assert.notDeepEqual(rebuilt.subarray(0, 16), garbage)
  })

  it('removes leftover .deleted, .cleaned and .tmp files at open', async () => {
    const { log, disk, clock } = await openSimLog()
    await log.append(valuesBatch(1, 'x'))
    await log.close()
    for (const name of [
      '00000000000000000099.log.deleted',
      '00000000000000000007.log.cleaned',
      '00000000000000000000.index.tmp',
    ]) {
      const f = await disk.open(`${DIR}/${name}`, { create: true })
      await f.close()
    }
    await PartitionLog.open(DIR, config(), { disk, clock, hadCleanShutdown: true })
    assert.deepEqual(await disk.list(DIR), [
      `${offsetFileName(0n)}.index`,
      `${offsetFileName(0n)}.log`,
      `${offsetFileName(0n)}.timeindex`,
    ])
  })
})

describe('PartitionLog truncation', () => {
  it('truncateTo removes whole batches from the one holding the offset, across segments', async () => {
    const { log, disk, clock } = await openSimLog({ segmentBytes: 300 })
    for (let i = 0; i < 10; i++) await log.append(valuesBatch(2, `t${i}-`))
    await log.flush()
    const segmentsBefore = log.segments.length
    await log.truncateTo(7n) // inside batch 6..7: the batch goes
    assert.equal(log.logEndOffset, 6n)
    assert.ok(log.recoveryPoint <= 6n)
    assert.ok(log.segments.length < segmentsBefore)
    assert.deepEqual(
      (await readAll(log)).map((r) => r.offset),
      [0n, 1n, 2n, 3n, 4n, 5n],
    )
    const r = await log.append(valuesBatch(1, 'new'))
    assert.ok(r.errorCode === 0 && r.baseOffset === 6n)
    // The truncation was synced: a crash does not bring the old tail back.
    await log.flush()
    disk.crash()
    const reopened = await PartitionLog.open(DIR, config({ segmentBytes: 300 }), { disk, clock })
    assert.deepEqual(
      (await readAll(reopened)).map((r) => r.value),
      ['t0-0', 't0-1', 't1-0', 't1-1', 't2-0', 't2-1', 'new0'],
    )
  })

  it('truncateTo past the end does nothing; below the first segment truncates fully', async () => {
    const { log } = await openSimLog()
    await log.append(valuesBatch(3, 'a'))
    await log.truncateTo(10n)
    assert.equal(log.logEndOffset, 3n)
    await log.truncateTo(0n)
    assert.equal(log.logEndOffset, 0n)
    assert.equal((await readAll(log)).length, 0)
  })

  it('truncateFullyAndStartAt restarts the log at the offset, durably', async () => {
    const { log, disk, clock } = await openSimLog()
    await log.append(valuesBatch(3, 'a'))
    await log.truncateFullyAndStartAt(100n)
    assert.equal(log.logStartOffset, 100n)
    assert.equal(log.logEndOffset, 100n)
    const r = await log.append(valuesBatch(1, 'b'))
    assert.ok(r.errorCode === 0 && r.baseOffset === 100n)
    await log.flush()
    clock.advance(60_001)
    disk.crash()
    const reopened = await PartitionLog.open(DIR, config(), { disk, clock, logStartOffset: 100n })
    assert.equal(reopened.logStartOffset, 100n)
    assert.deepEqual(
      (await readAll(reopened)).map((x) => [x.offset, x.value]),
      [[100n, 'b0']],
    )
    assert.ok(!(await disk.list(DIR)).includes(`${offsetFileName(0n)}.log`))
  })
})

/** A hook that holds the `n`th positional write (1-based) until released, optionally failing it. */
function holdWrite(n: number): {
  hook: (op: string) => undefined | string | Promise<undefined | string>
  release: (code?: string) => void
} {
  let writes = 0
  let release: (code?: string) => void = () => undefined
  const held = new Promise<undefined | string>((resolve) => {
    release = (code) => resolve(code)
  })
  return {
    hook: (op) => (op === 'write' && ++writes === n ? held : undefined),
    release: (code) => release(code),
  }
}

describe('PartitionLog with write rounds in flight', () => {
  it('writes up to three rounds at once, a fourth waits; they show and resolve in order whatever order the disk finishes them in', async () => {
    const { log, disk } = await openSimLog()
    // The first two writes are held at the disk; the second is let go first.
    const gates: ((code?: string) => void)[] = []
    let writes = 0
    disk.setHook((op) => {
      if (op !== 'write' || ++writes > 2) return undefined
      return new Promise<undefined | string>((resolve) => gates.push(resolve))
    })
    const resolved: string[] = []
    const all: Promise<AppendResult>[] = []
    for (const cohort of ['a', 'b', 'c', 'd']) {
      for (let i = 0; i < 3; i++)
        all.push(
          log.append(valuesBatch(1, `${cohort}${i}`)).then((r) => {
            resolved.push(`${cohort}${i}`)
            return r
          }),
        )
      for (let i = 0; i < 10; i++) await null // the writer issues this cohort as its own round
    }
    assert.equal(disk.writesInFlightMax, 3, 'a, b and c at the disk at once; d waits for a slot')
    assert.equal(disk.writes, 1, 'c completed beside the two held')
    assert.equal(log.logEndOffset, 0n, 'nothing readable before the oldest round completes')
    gates[1]!() // b completes before a: still nothing readable, nothing resolved
    for (let i = 0; i < 10; i++) await null
    assert.equal(log.logEndOffset, 0n)
    assert.deepEqual(resolved, [])
    gates[0]!()
    const results = await Promise.all(all)
    assert.deepEqual(
      results.map((r) => (r.errorCode === 0 ? Number(r.baseOffset) : -1)),
      Array.from({ length: 12 }, (_, i) => i),
    )
    assert.deepEqual(
      resolved,
      ['a', 'b', 'c', 'd'].flatMap((c) => [0, 1, 2].map((i) => `${c}${i}`)),
    )
    assert.equal(disk.writesInFlightMax, 3)
    disk.setHook(null)
    assert.deepEqual(
      (await readAll(log)).map((r) => r.value),
      ['a', 'b', 'c', 'd'].flatMap((c) => [0, 1, 2].map((i) => `${c}${i}0`)),
    )
  })

  it('with writeRoundsInFlight 1 a round waits for the previous write', async () => {
    const { log, disk } = await openSimLog({}, { options: { writeRoundsInFlight: 1 } })
    const held = holdWrite(1)
    disk.setHook(held.hook)
    const first = log.append(valuesBatch(1, 'a'))
    for (let i = 0; i < 10; i++) await null
    const second = log.append(valuesBatch(1, 'b'))
    for (let i = 0; i < 10; i++) await null
    assert.equal(disk.writesInFlightMax, 1)
    held.release()
    assert.deepEqual(
      (await Promise.all([first, second])).map((r) => (r.errorCode === 0 ? Number(r.baseOffset) : -1)),
      [0, 1],
    )
  })

  it('a failed oldest round fails every round in flight after it', async () => {
    const { log, disk } = await openSimLog()
    await log.append(valuesBatch(1, 'before'), { flush: true })
    const gates: ((code?: string) => void)[] = []
    let writes = 0
    disk.setHook((op) => {
      if (op !== 'write' || ++writes > 2) return undefined
      return new Promise<undefined | string>((resolve) => gates.push(resolve))
    })
    const rounds: Promise<AppendResult>[][] = []
    for (const cohort of ['a', 'b', 'c']) {
      rounds.push(Array.from({ length: 2 }, (_, i) => log.append(valuesBatch(1, `${cohort}${i}`))))
      for (let i = 0; i < 10; i++) await null
    }
    assert.equal(disk.writesInFlightMax, 3)
    gates[1]!() // b is written; a fails
    gates[0]!('EIO')
    for (const o of await Promise.allSettled(rounds.flat())) {
      assert.equal(o.status, 'rejected')
      assert.ok(o.reason instanceof LogOfflineError, String(o.reason))
    }
    assert.equal(log.logEndOffset, 1n, 'nothing past the failed write became readable')
    disk.setHook(null)
    disk.crash({ random: new SeededRandom(3) })
    const { log: reopened } = await openSimLog({}, { disk })
    const values = (await readAll(reopened)).map((r) => r.value)
    assert.equal(values[0], 'before0')
    // What a restart keeps past the acknowledged record is a prefix of what was written, no hole.
    const written = ['a00', 'a10', 'b00', 'b10', 'c00', 'c10']
    assert.deepEqual(values.slice(1), written.slice(0, values.length - 1))
  })

  it('writes the next round while one is at the disk, and shows and resolves them in order', async () => {
    const { log, disk } = await openSimLog()
    const held = holdWrite(1)
    disk.setHook(held.hook)
    const resolved: string[] = []
    const first = Array.from({ length: 10 }, (_, i) =>
      log.append(valuesBatch(1, `a${i}`)).then((r) => {
        resolved.push(`a${i}`)
        return r
      }),
    )
    for (let i = 0; i < 10; i++) await null // the first round's write is held at the disk
    const second = Array.from({ length: 10 }, (_, i) =>
      log.append(valuesBatch(1, `b${i}`)).then((r) => {
        resolved.push(`b${i}`)
        return r
      }),
    )
    // The second round is written (beside the held first) and completes first at the disk.
    for (let i = 0; i < 50 && disk.writes < 1; i++) await null
    assert.equal(disk.writes, 1, 'the second write completed while the first is held')
    assert.equal(disk.writesInFlightMax, 2)
    // A read never sees a hole: nothing is readable before the first round completes.
    assert.equal(log.logEndOffset, 0n)
    const early = await log.read(0n, 1 << 20)
    assert.ok(early.errorCode === 0 && 'records' in early && early.records.length === 0)
    assert.deepEqual(resolved, [])
    held.release()
    const results = await Promise.all([...first, ...second])
    assert.deepEqual(
      results.map((r) => (r.errorCode === 0 ? Number(r.baseOffset) : -1)),
      Array.from({ length: 20 }, (_, i) => i),
    )
    assert.deepEqual(resolved, [
      ...Array.from({ length: 10 }, (_, i) => `a${i}`),
      ...Array.from({ length: 10 }, (_, i) => `b${i}`),
    ])
    disk.setHook(null)
    assert.deepEqual(
      (await readAll(log)).map((r) => r.value),
      [...Array.from({ length: 10 }, (_, i) => `a${i}0`), ...Array.from({ length: 10 }, (_, i) => `b${i}0`)],
    )
    // Flushed with both in the file: a crash keeps them all.
    await log.flush()
    disk.crash({ random: new SeededRandom(1) })
    const { log: again } = await openSimLog({}, { disk })
    assert.equal((await readAll(again)).length, 20)
  })

  it('a failed first round fails the second round too and takes the log offline', async () => {
    const { log, disk } = await openSimLog()
    await log.append(valuesBatch(1, 'before'), { flush: true })
    const held = holdWrite(1)
    disk.setHook(held.hook)
    const first = Array.from({ length: 5 }, (_, i) => log.append(valuesBatch(1, `a${i}`)))
    for (let i = 0; i < 10; i++) await null
    const second = Array.from({ length: 5 }, (_, i) => log.append(valuesBatch(1, `b${i}`), { flush: true }))
    for (let i = 0; i < 50 && disk.writes < 2; i++) await null
    assert.equal(disk.writesInFlightMax, 2)
    held.release('EIO')
    const outcomes = await Promise.allSettled([...first, ...second])
    for (const o of outcomes) {
      assert.equal(o.status, 'rejected')
      assert.ok(o.reason instanceof LogOfflineError, String(o.reason))
    }
    assert.ok(log.offlineCause !== null)
    assert.equal(log.logEndOffset, 1n, 'nothing past the failed write became readable')
    await assert.rejects(log.append(valuesBatch(1, 'after')), LogOfflineError)
    await assert.rejects(log.read(0n, 100), LogOfflineError)
    disk.setHook(null)
    // What a restart finds: the acknowledged record, and never the second round after a hole.
    disk.crash({ random: new SeededRandom(7) })
    const { log: reopened } = await openSimLog({}, { disk })
    const values = (await readAll(reopened)).map((r) => r.value)
    assert.equal(values[0], 'before0')
    assert.ok(values.length === 1 || values[1] === 'a00', values.join(','))
  })

  it('an append that fills a round hands it to the disk itself, before its turn ends', async () => {
    const one = valuesBatch(1, 'b0').length
    const { log, disk } = await openSimLog({}, { options: { earlyRoundBytes: 3 * one } })
    const firstWrite = holdWrite(1)
    disk.setHook(firstWrite.hook)
    const first = log.append(valuesBatch(1, 'a'))
    for (let i = 0; i < 10; i++) await null // its write is held at the disk; the writer waits
    assert.equal(disk.writesInFlightMax, 1)
    const burst: Promise<AppendResult>[] = []
    for (let i = 0; i < 2; i++) burst.push(log.append(valuesBatch(1, `b${i}`)))
    assert.equal(disk.writesInFlightMax, 1)
    burst.push(log.append(valuesBatch(1, 'b2')))
    assert.equal(disk.writesInFlightMax, 2, 'the third append issued the round b0-b2 in its own call')
    for (let i = 3; i < 6; i++) burst.push(log.append(valuesBatch(1, `b${i}`)))
    assert.equal(log.logEndOffset, 0n)
    firstWrite.release()
    const results = await Promise.all([first, ...burst])
    assert.deepEqual(
      results.map((r) => (r.errorCode === 0 ? Number(r.baseOffset) : -1)),
      [0, 1, 2, 3, 4, 5, 6],
    )
    assert.equal(disk.writes, 3, 'with two rounds in flight, b3-b5 waited for the writer: one more write')
    disk.setHook(null)
    assert.deepEqual(
      (await readAll(log)).map((r) => [r.offset, r.value]),
      [[0n, 'a0'], ...Array.from({ length: 6 }, (_, i) => [BigInt(i + 1), `b${i}0`])],
    )
  })

  it('an early round that would roll the segment is left to the writer, which rolls', async () => {
    const one = valuesBatch(1, 'b00').length
    // Room for two and a half batches: the first early round (2 batches) does not fit beside the
    // first batch, so the writer rolls; later rounds fill and roll segments in turn.
    const segmentBytes = Math.floor(2.5 * one)
    const { log, disk } = await openSimLog({ segmentBytes }, { options: { earlyRoundBytes: 2 * one } })
    const firstWrite = holdWrite(1)
    disk.setHook(firstWrite.hook)
    const first = log.append(valuesBatch(1, 'a00'))
    for (let i = 0; i < 10; i++) await null
    const burst = Array.from({ length: 12 }, (_, i) =>
      log.append(valuesBatch(1, `b${String(i).padStart(2, '0')}`)),
    )
    firstWrite.release()
    const results = await Promise.all([first, ...burst])
    assert.deepEqual(
      results.map((r) => (r.errorCode === 0 ? Number(r.baseOffset) : -1)),
      Array.from({ length: 13 }, (_, i) => i),
    )
    disk.setHook(null)
    assert.ok(log.segments.length >= 3, `${log.segments.length} segments`)
    for (const s of log.segments)
      assert.ok(s.size <= segmentBytes, `segment ${s.baseOffset}: ${s.size} bytes`)
    const expected = ['a000', ...Array.from({ length: 12 }, (_, i) => `b${String(i).padStart(2, '0')}0`)]
    assert.deepEqual(
      (await readAll(log)).map((r) => r.value),
      expected,
    )
    // Flushed, crashed, recovered from scratch: the same records at the same offsets.
    await log.flush()
    disk.crash({ random: new SeededRandom(3) })
    const { log: again } = await openSimLog({ segmentBytes }, { disk })
    assert.deepEqual(
      (await readAll(again)).map((r) => [r.offset, r.value]),
      expected.map((v, i) => [BigInt(i), v]),
    )
  })

  it('a failed second round fails only from it on: the first round resolves', async () => {
    const { log, disk } = await openSimLog()
    const firstWrite = holdWrite(1)
    let writes = 0
    disk.setHook((op) => {
      if (op !== 'write') return undefined
      writes++
      return writes === 1 ? firstWrite.hook(op) : 'EIO'
    })
    const first = Array.from({ length: 5 }, (_, i) => log.append(valuesBatch(1, `a${i}`)))
    for (let i = 0; i < 10; i++) await null
    const second = Array.from({ length: 5 }, (_, i) => log.append(valuesBatch(1, `b${i}`)))
    for (let i = 0; i < 50 && writes < 2; i++) await null
    firstWrite.release()
    const done = await Promise.allSettled([...first, ...second])
    assert.deepEqual(
      done.map((o) => o.status),
      [...Array(5).fill('fulfilled'), ...Array(5).fill('rejected')],
    )
    assert.ok(log.offlineCause !== null)
    assert.equal(log.logEndOffset, 5n)
  })
})
