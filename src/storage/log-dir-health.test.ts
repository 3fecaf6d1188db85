/**
 * A log directory's way offline and back (LogManager's health state machine) on a SimDisk whose
 * hook fails operations as a full disk does: a failure takes every log of the directory offline,
 * a probe retries on a bounded backoff, and once the disk takes writes every log is re-opened
 * through recovery (a half-written batch cut), with nothing acknowledged lost.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LOG_DIR_ROOT, logDirSetup, readAll, valuesBatch } from '../../test/storage/fixtures.ts'
import type { SimDisk, SimDiskOp } from '../io/index.ts'
import { LOG_DIR_PROBE_FILE, LogDirFile, LogManager } from './log-manager.ts'
import { LogOfflineError } from './partition-log.ts'

const ROOT = LOG_DIR_ROOT
const setup = () => logDirSetup({ probe: { backoffMs: 100, backoffMsMax: 800 } })

/** Lets the SimDisk's asynchronous operations run (no real I/O exists here). */
async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !cond(); i++) await new Promise((r) => setImmediate(r))
  assert.ok(cond(), `never: ${what}`)
}

/** The disk is full: writes, appends, truncations, fsyncs and creations fail with ENOSPC. */
function fullDisk(disk: SimDisk, seen: Array<{ op: SimDiskOp; path: string }> = []): void {
  disk.setHook((op, path) => {
    seen.push({ op, path })
    if (op === 'write' || op === 'append' || op === 'sync' || op === 'truncate') return 'ENOSPC'
    return undefined
  })
}

describe('log directory health', () => {
  it('a failed write takes the whole directory offline; the probe backs off; space back re-opens every log through recovery', async () => {
    const { disk, clock, options } = await setup()
    const m = await LogManager.open(ROOT, options)
    const events: string[] = []
    m.subscribe({
      onOffline: (_, cause) => events.push(`offline: ${cause.message.slice(0, 6)}`),
      onOnline: () => events.push('online'),
    })
    const a = await m.getOrCreateLog('orders', 0)
    const b = await m.getOrCreateLog('orders', 1)
    await a.append(valuesBatch(3, 'a'), { flush: true })
    await b.append(valuesBatch(2, 'b'), { flush: true })
    assert.equal(m.state, 'online')

    const seen: Array<{ op: SimDiskOp; path: string }> = []
    fullDisk(disk, seen)
    await assert.rejects(a.append(valuesBatch(1, 'lost')), LogOfflineError)
    assert.equal(m.state, 'offline')
    assert.deepEqual(events, ['offline: ENOSPC'])
    // The other log of the directory is offline too, though nothing failed on it.
    assert.ok(b.offlineCause !== null)
    await assert.rejects(b.append(valuesBatch(1, 'b')), LogOfflineError)
    await assert.rejects(m.getOrCreateLog('orders', 2), LogOfflineError)
    assert.equal(m.health.failures, 1)

    // Probes while the disk is still full: each fails, the next waits twice as long, up to the cap.
    const probes: number[] = []
    disk.setHook((op, path) => {
      if (op === 'open' && path.endsWith(LOG_DIR_PROBE_FILE)) probes.push(clock.monotonicMs())
      if (op === 'write' || op === 'append' || op === 'sync' || op === 'truncate') return 'ENOSPC'
      return undefined
    })
    for (let i = 0; i < 6; i++) {
      const n = probes.length
      clock.advance(800)
      await until(`probe ${i + 1}`, () => probes.length > n && m.state === 'offline')
    }
    const gaps = probes.slice(1).map((t, i) => t - probes[i]!)
    assert.ok(
      gaps.every((g, i) => i === 0 || g >= gaps[i - 1]!),
      `probe delays grow: ${gaps.join(', ')}`,
    )
    assert.ok(
      gaps.every((g) => g <= 800 + 800),
      `probe delays stay bounded by backoffMsMax: ${gaps.join(', ')}`,
    )
    assert.equal(m.state, 'offline')
    assert.deepEqual(events, ['offline: ENOSPC'])

    // A half-written batch lands past the log end (a short write of a batch nobody was told of).
    disk.setHook(null)
    const torn = valuesBatch(1, 'torn').subarray(0, 30)
    const seg = await disk.open(`${a.dir}/00000000000000000000.log`)
    await seg.append([torn])
    await seg.close()

    clock.advance(800)
    await until('online again', () => m.state === 'online')
    assert.deepEqual(events, ['offline: ENOSPC', 'online'])
    assert.equal(m.health.recoveries, 1)
    assert.equal(await disk.exists(`${ROOT}/${LOG_DIR_PROBE_FILE}`), false)
    const a2 = m.getLog('orders', 0)!
    const b2 = m.getLog('orders', 1)!
    assert.notEqual(a2, a, 'a fresh log object')
    assert.equal(a2.offlineCause, null)
    assert.deepEqual(
      (await readAll(a2)).map((r) => r.value),
      ['a0', 'a1', 'a2'],
      'every acknowledged record, the torn tail cut',
    )
    assert.ok(a2.recoveryReports.length > 0, 'recovery reported the cut tail')
    assert.equal(a2.logEndOffset, 3n)
    const r = await a2.append(valuesBatch(2, 'after'), { flush: true })
    assert.ok('baseOffset' in r && r.baseOffset === 3n, 'appends go on at the log end')
    assert.deepEqual(
      (await readAll(b2)).map((x) => x.value),
      ['b0', 'b1'],
    )
    await m.getOrCreateLog('orders', 2)
    await m.close()

    // And a restart finds the same.
    const again = await LogManager.open(ROOT, options)
    assert.deepEqual(
      (await readAll(again.getLog('orders', 0)!)).map((x) => x.value),
      ['a0', 'a1', 'a2', 'after0', 'after1'],
    )
    await again.close()
  })

  it('a failed checkpoint takes the directory offline too, and closing while offline writes no clean-shutdown marker', async () => {
    const { disk, clock, options } = await setup()
    const m = await LogManager.open(ROOT, options)
    const a = await m.getOrCreateLog('t', 0)
    await a.append(valuesBatch(2, 'x'), { flush: true })
    fullDisk(disk)
    await assert.rejects(m.checkpointRecoveryPoints())
    assert.equal(m.state, 'offline')
    assert.ok(a.offlineCause !== null)
    // Checkpoints are skipped while offline (a partial file would drop the offline logs' entries).
    await m.checkpointRecoveryPoints()
    disk.setHook(null)
    await m.close()
    clock.advance(10_000) // no probe after close
    assert.equal(await disk.exists(`${ROOT}/${LogDirFile.cleanShutdown}`), false)
    const again = await LogManager.open(ROOT, options)
    assert.equal(again.hadCleanShutdown, false)
    assert.deepEqual(
      (await readAll(again.getLog('t', 0)!)).map((r) => r.value),
      ['x0', 'x1'],
    )
    await again.close()
  })

  it('a re-open that fails sends the directory back offline to wait longer', async () => {
    const { disk, clock, options } = await setup()
    const m = await LogManager.open(ROOT, options)
    const a = await m.getOrCreateLog('t', 0)
    await a.append(valuesBatch(2, 'x'), { flush: true })
    fullDisk(disk)
    await assert.rejects(a.append(valuesBatch(1, 'y')), LogOfflineError)
    // The probe passes, but reading a segment back fails once.
    let failReads = 1
    disk.setHook((op, path) => {
      if (op === 'open' && path.endsWith('.log') && failReads > 0) {
        failReads--
        return 'EIO'
      }
      return undefined
    })
    clock.advance(100)
    await until('back offline after a failed re-open', () => failReads === 0 && m.state === 'offline')
    assert.equal(m.health.recoveries, 0)
    clock.advance(800)
    await until('online', () => m.state === 'online')
    assert.deepEqual(
      (await readAll(m.getLog('t', 0)!)).map((r) => r.value),
      ['x0', 'x1'],
    )
    await m.close()
  })

  it('out of descriptors is not a failed disk: the directory stays online, the one log re-opens and goes on', async () => {
    const { disk, clock, options } = await setup()
    const m = await LogManager.open(ROOT, options)
    const events: string[] = []
    m.subscribe({
      onOffline: () => events.push('offline'),
      onOnline: () => events.push('online'),
      onLogsReopened: () => events.push('reopened'),
    })
    const a = await m.getOrCreateLog('t', 0)
    const b = await m.getOrCreateLog('t', 1)
    await a.append(valuesBatch(2, 'a'), { flush: true })
    // The process has no descriptor left for a while: every open, write and fsync fails.
    let exhausted = true
    let refusedOpens = 0
    disk.setHook((op, path) => {
      if (!exhausted || !(op === 'open' || op === 'append' || op === 'write' || op === 'sync'))
        return undefined
      if (op === 'open' && path.endsWith('.log')) refusedOpens++
      return 'EMFILE'
    })
    await assert.rejects(a.append(valuesBatch(1, 'refused')), LogOfflineError)
    assert.equal(m.state, 'online', 'the directory is not taken for failed')
    assert.equal(b.offlineCause, null, 'the other log goes on')
    assert.equal(m.health.failures, 0)
    // A checkpoint that cannot be written is refused, the directory still online.
    await assert.rejects(m.checkpointRecoveryPoints())
    assert.equal(m.state, 'online')
    // Still short at the first re-open: it waits longer.
    clock.advance(100)
    await until('a re-open tried', () => refusedOpens > 0)
    clock.advance(100)
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r))
    assert.equal(refusedOpens, 1, 'the next re-open waits twice as long')
    assert.equal(m.getLog('t', 0), a)
    assert.equal(events.length, 0)
    exhausted = false
    clock.advance(800)
    await until('re-opened', () => events.includes('reopened'))
    assert.deepEqual(events, ['reopened'])
    const a2 = m.getLog('t', 0)!
    assert.notEqual(a2, a)
    assert.equal(a2.offlineCause, null)
    const r = await a2.append(valuesBatch(1, 'after'), { flush: true })
    assert.ok('baseOffset' in r && r.baseOffset === 2n)
    assert.deepEqual(
      (await readAll(a2)).map((x) => x.value),
      ['a0', 'a1', 'after0'],
    )
    await b.append(valuesBatch(1, 'b'), { flush: true })
    await m.close()
  })

  it('tells of many logs out of descriptors in two lines an interval, not one a log', async () => {
    const warnings: string[] = []
    const { disk, clock, options } = await logDirSetup({
      probe: { backoffMs: 100, backoffMsMax: 800 },
      onWarning: (m) => warnings.push(m),
    })
    const m = await LogManager.open(ROOT, options)
    let reopened = 0
    m.subscribe({ onLogsReopened: () => reopened++ })
    const logs = []
    for (let p = 0; p < 40; p++) logs.push(await m.getOrCreateLog('t', p))
    let exhausted = true
    disk.setHook((op) =>
      exhausted && (op === 'open' || op === 'append' || op === 'write') ? 'EMFILE' : undefined,
    )
    const before = warnings.length
    for (const log of logs) await assert.rejects(log.append(valuesBatch(1, 'refused')), LogOfflineError)
    for (let t = 0; t < 9_000; t += 100) {
      clock.advance(100)
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
    }
    assert.equal(warnings.length - before, 1, warnings.slice(before).join('\n'))
    assert.match(warnings.at(-1)!, /log t-0 offline for want of resources.*EMFILE/)
    exhausted = false
    clock.advance(1_000)
    await until('every log re-opened', () => reopened === 40)
    assert.equal(m.state, 'online')
    clock.advance(10_000)
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
    const told = warnings.slice(before)
    assert.ok(told.length <= 3, told.join('\n'))
    assert.match(
      told[1]!,
      /in the last 10 s: 40 logs offline for want of resources \((t-\d+, ){5}\.\.\.\), the last re-opening in \d+ ms: .*EMFILE/,
    )
    const reopenedTold = told
      .map((w) => Number(/(\d+) logs re-opened/.exec(w)?.[1] ?? (/log t-\d+ re-opened/.test(w) ? 1 : 0)))
      .reduce((a, b) => a + b, 0)
    assert.equal(reopenedTold, 40, told.join('\n'))
    clock.advance(20_000)
    assert.equal(warnings.length - before, told.length, 'nothing more to tell')
    for (const p of [0, 39]) {
      const r = await m.getLog('t', p)!.append(valuesBatch(1, 'after'), { flush: true })
      assert.ok('baseOffset' in r)
    }
    await m.close()
  })
})
