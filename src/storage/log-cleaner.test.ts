import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { batch, config, decodeAll, type ReadRecord, readAll } from '../../test/storage/fixtures.ts'
import { ManualClock, SeededRandom, SimDisk } from '../io/index.ts'
import {
  Compression,
  ControlRecordType,
  decodeBatch,
  encodeBatch,
  encodeEndTxnMarkerBatch,
  hasDeleteHorizon,
  LOG_OVERHEAD,
  readBatchHeader,
} from '../protocol/index.ts'
import type { LogConfig } from './log-config.ts'
import { LogManager, type LogManagerOptions } from './log-manager.ts'
import { offsetFileName } from './log-segment.ts'
import { murmur3x86x128, OffsetMap } from './offset-map.ts'
import type { PartitionLog } from './partition-log.ts'

const ROOT = '/logs'
const DIR = `${ROOT}/compacted-0`

const compactConfig = (overrides: Partial<LogConfig> = {}): LogConfig =>
  config({
    cleanupPolicy: { delete: false, compact: true },
    segmentBytes: 400,
    cleanableDirtyRatioMin: 0.01,
    deleteRetentionMs: 10_000,
    ...overrides,
  })

async function setup(
  logConfig: LogConfig,
  dedupeBufferBytes = 1 << 16,
  disk = new SimDisk(),
): Promise<{
  m: LogManager
  log: PartitionLog
  disk: SimDisk
  clock: ManualClock
  options: LogManagerOptions
}> {
  await disk.mkdir(ROOT)
  await disk.syncDir('/')
  const clock = new ManualClock({ nowMs: 1_000_000 })
  const options: LogManagerOptions = {
    disk,
    clock,
    clusterId: 'c',
    nodeId: 0,
    topicConfig: () => logConfig,
    config: {
      recoveryPointCheckpointIntervalMs: 60_000,
      logStartOffsetCheckpointIntervalMs: 60_000,
      flushSchedulerIntervalMs: Number.MAX_SAFE_INTEGER,
      retentionCheckIntervalMs: 300_000,
      cleanerEnable: true,
      cleanerDedupeBufferBytes: dedupeBufferBytes,
      cleanerIoBufferBytes: 4096,
      cleanerIoBufferLoadFactor: 0.9,
      cleanerBackoffMs: 1000,
    },
  }
  const m = await LogManager.open(ROOT, options)
  const log = await m.getOrCreateLog('compacted', 0)
  return { m, log, disk, clock, options }
}

/** Append `n` single-record batches cycling over `keys` keys; value `${key}@${offset}`. */
async function writeUpdates(log: PartitionLog, n: number, keys: number, ts: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const key = `k${i % keys}`
    await log.append(batch([{ key, value: `${key}@${log.logEndOffset}`, ts }]))
  }
}

/** key -> latest value over records (a tombstone deletes the key). */
function latest(records: readonly ReadRecord[]): Map<string, string | null> {
  const out = new Map<string, string | null>()
  for (const r of records) out.set(r.key!, r.value)
  return out
}

/** The records of every live segment file, decoded from the files themselves. */
async function fileRecords(disk: SimDisk, log: PartitionLog): Promise<Map<bigint, ReadRecord[]>> {
  const out = new Map<bigint, ReadRecord[]>()
  for (const s of log.segments)
    out.set(s.baseOffset, decodeAll(await disk.readFile(`${DIR}/${offsetFileName(s.baseOffset)}.log`)))
  return out
}

describe('OffsetMap', () => {
  it('keeps the latest offset per key within its memory, then reports full', () => {
    const map = new OffsetMap(24 * 100, 0.9)
    assert.equal(map.entriesMax, 90)
    for (let i = 0; i < 90; i++) map.put(Buffer.from(`key-${i}`), i)
    assert.ok(map.isFull)
    map.put(Buffer.from('key-3'), 1000) // an existing key still updates
    map.put(Buffer.from('key-4'), 1) // never backwards
    assert.equal(map.get(Buffer.from('key-3')), 1000)
    assert.equal(map.get(Buffer.from('key-4')), 4)
    assert.equal(map.get(Buffer.from('absent')), -1)
    assert.throws(() => map.put(Buffer.from('new'), 5))
    map.clear()
    assert.equal(map.size, 0)
    assert.equal(map.get(Buffer.from('key-3')), -1)
  })

  it('hashes distinct keys distinctly', () => {
    const seen = new Set<string>()
    const out = new Int32Array(4)
    for (let i = 0; i < 20_000; i++) {
      murmur3x86x128(Buffer.from(`user-${i}`), out)
      seen.add(out.join(','))
    }
    murmur3x86x128(Buffer.alloc(0), out)
    assert.deepEqual([...out], [0, 0, 0, 0])
    assert.equal(seen.size, 20_000)
  })
})

describe('log cleaner', () => {
  it('keeps the latest record per key at its original offset, in order, in the segment files', async () => {
    const { m, log, disk } = await setup(compactConfig())
    await writeUpdates(log, 60, 5, 1000)
    const before = await readAll(log)
    const active = log.activeSegment.baseOffset
    const activeBytes = await disk.readFile(`${DIR}/${offsetFileName(active)}.log`)
    const stats = await m.runCleanerOnce()
    assert.ok(stats !== null && stats.segmentsCleaned > 0)
    const after = await readAll(log)
    // Same final state, fewer records, offsets a subsequence of the originals with the same values.
    assert.deepEqual(latest(after), latest(before))
    assert.ok(after.length < before.length)
    const byOffset = new Map(before.map((r) => [r.offset, r]))
    for (const r of after) assert.deepEqual(byOffset.get(r.offset), r)
    for (let i = 1; i < after.length; i++) assert.ok(after[i]!.offset > after[i - 1]!.offset)
    // In the cleaned files, each key appears once; the active segment is untouched.
    const files = await fileRecords(disk, log)
    const cleanedKeys: string[] = []
    for (const [base, records] of files) if (base < active) cleanedKeys.push(...records.map((r) => r.key!))
    assert.equal(new Set(cleanedKeys).size, cleanedKeys.length)
    assert.deepEqual(await disk.readFile(`${DIR}/${offsetFileName(active)}.log`), activeBytes)
    assert.equal(log.activeSegment.baseOffset, active)
    // The cleaner checkpoint records where the next cleaning starts.
    const checkpoint = (await disk.readFile(`${ROOT}/cleaner-offset-checkpoint`)).toString()
    assert.equal(checkpoint, `0\n1\ncompacted 0 ${active}\n`)
    await m.close()
  })

  it('keeps tombstones for delete.retention.ms after their first cleaning, then drops them', async () => {
    const { m, log, disk, clock } = await setup(compactConfig())
    await writeUpdates(log, 20, 4, 1000)
    await log.append(batch([{ key: 'k1', value: null, ts: 1000 }]))
    await writeUpdates(log, 20, 4, 1000)
    await log.append(
      batch([
        { key: 'gone', value: 'x', ts: 1000 },
        { key: 'gone', value: null, ts: 1000 },
      ]),
    )
    await writeUpdates(log, 12, 2, 1000) // k0, k1 again: k1 revives after its tombstone
    assert.ok((await m.runCleanerOnce()) !== null)
    const files = await fileRecords(disk, log)
    const tombstoneBatches: boolean[] = []
    for (const [base] of files) {
      if (base === log.activeSegment.baseOffset) continue
      const bytes = await disk.readFile(`${DIR}/${offsetFileName(base)}.log`)
      for (let at = 0; at < bytes.length; at += LOG_OVERHEAD + bytes.readInt32BE(at + 8)) {
        const { header, records } = decodeBatch(bytes, at)
        if (records.some((r) => r.value === null)) tombstoneBatches.push(hasDeleteHorizon(header.attributes))
      }
    }
    assert.deepEqual(
      tombstoneBatches,
      [true],
      'the tombstone of "gone" is kept, stamped with a delete horizon',
    )
    assert.ok((await readAll(log)).some((r) => r.key === 'gone' && r.value === null))
    // Past the horizon, the next cleaning drops it (more writes make the log dirty again).
    clock.advance(10_001)
    await writeUpdates(log, 30, 2, clock.nowMs())
    assert.ok((await m.runCleanerOnce()) !== null)
    assert.ok(!(await readAll(log)).some((r) => r.key === 'gone'))
    await m.close()
  })

  it("drops an aborted transaction's records, which never shadow the committed value; its .txnindex entry moves with its marker", async () => {
    const { m, log } = await setup(compactConfig())
    await log.append(batch([{ key: 'k', value: 'committed' }])) // 0
    const txn = encodeBatch({
      records: [{ key: Buffer.from('k'), value: Buffer.from('aborted'), timestamp: 1000n }],
      producerId: 7n,
      producerEpoch: 0,
      baseSequence: 0,
      transactional: true,
    })
    await log.append(txn) // 1
    const abort = encodeEndTxnMarkerBatch({
      marker: { type: ControlRecordType.abort, coordinatorEpoch: 0 },
      producerId: 7n,
      producerEpoch: 0,
      timestamp: 1000n,
    })
    await log.append(abort, { origin: 'coordinator' }) // 2
    const entry = { producerId: 7n, firstOffset: 1n, lastOffset: 2n, lastStableOffset: 3n }
    await log.appendAbortedTxn(entry)
    await writeUpdates(log, 20, 3, 1000)
    assert.ok((await m.runCleanerOnce()) !== null)
    const records = await readAll(log)
    assert.deepEqual(
      records.filter((r) => r.key === 'k').map((r) => r.value),
      ['committed'],
    )
    assert.ok(
      records.some((r) => r.offset === 2n),
      'the marker stays',
    )
    assert.deepEqual(await log.collectAbortedTxns(0n, log.logEndOffset), [entry])
    await m.close()
  })

  it('an ABORT marker whose data is gone gets a delete horizon, then goes with its .txnindex entry', async () => {
    const { m, log, clock } = await setup(compactConfig())
    const txn = (value: string, seq: number) =>
      encodeBatch({
        records: [{ key: Buffer.from('k'), value: Buffer.from(value), timestamp: 1000n }],
        producerId: 7n,
        producerEpoch: 0,
        baseSequence: seq,
        transactional: true,
      })
    await log.append(txn('aborted', 0)) // 0
    const abort = encodeEndTxnMarkerBatch({
      marker: { type: ControlRecordType.abort, coordinatorEpoch: 0 },
      producerId: 7n,
      producerEpoch: 0,
      timestamp: 1000n,
    })
    await log.append(abort, { origin: 'coordinator' }) // 1
    await log.appendAbortedTxn({ producerId: 7n, firstOffset: 0n, lastOffset: 1n, lastStableOffset: 2n })
    const markerAt1 = async () => {
      const r = await log.read(1n, 1 << 16, { offsetMax: 2n })
      return 'records' in r && r.records.length > 0 ? readBatchHeader(r.records, 0) : null
    }
    const clean = async () => {
      // The producer writes again in the dirty part each time: the cleaner, which knows a producer's
      // last batch only from there, then knows the marker is not its last.
      await log.append(batch([{ key: 'p', value: `${log.logEndOffset}` }], { producerId: 7n }))
      await writeUpdates(log, 20, 3, 1000)
      assert.ok((await m.runCleanerOnce()) !== null)
    }
    await clean()
    assert.ok(!(await readAll(log)).some((r) => r.offset === 0n), 'the aborted data goes first')
    assert.equal((await markerAt1())?.baseOffset, 1n, 'the marker stays while its data was still there')
    await clean()
    const stamped = await markerAt1()
    assert.ok(stamped !== null && hasDeleteHorizon(stamped.attributes), 'found empty: a delete horizon')
    assert.equal((await log.collectAbortedTxns(0n, 3n)).length, 1)
    clock.advance(10_001)
    await clean()
    assert.equal(await markerAt1(), null, 'past delete.retention.ms it is gone')
    assert.deepEqual(await log.collectAbortedTxns(0n, 3n), [])
    await m.close()
  })

  it('never cleans at or above the upper bound (the high watermark)', async () => {
    const { m, log } = await setup(compactConfig())
    await writeUpdates(log, 40, 2, 1000)
    assert.equal(await m.runCleanerOnce(() => 0n), null)
    const bound = log.segments[2]!.baseOffset
    assert.ok((await m.runCleanerOnce(() => bound)) !== null)
    const records = await readAll(log)
    // Below the bound: at most one record per key; from it on: untouched, every offset present.
    const above = records.filter((r) => r.offset >= bound).map((r) => r.offset)
    assert.deepEqual(
      above,
      Array.from({ length: Number(log.logEndOffset - bound) }, (_, i) => bound + BigInt(i)),
    )
    await m.close()
  })

  it('honours min.compaction.lag.ms', async () => {
    const { m, log, clock } = await setup(compactConfig({ compactionLagMsMin: 5000 }))
    await writeUpdates(log, 40, 2, clock.nowMs())
    assert.equal(await m.runCleanerOnce(), null, 'everything is younger than the lag')
    clock.advance(5001)
    await writeUpdates(log, 1, 2, clock.nowMs())
    assert.ok((await m.runCleanerOnce()) !== null)
    await m.close()
  })

  it('cleans in several passes when the key map is smaller than the dirty keys', async () => {
    // 10 slots of 24 bytes, 9 keys a pass: 30 distinct keys need several passes.
    const { m, log } = await setup(compactConfig({ segmentBytes: 300 }), 240)
    for (let round = 0; round < 3; round++) await writeUpdates(log, 30, 30, 1000)
    const before = await readAll(log)
    let passes = 0
    while ((await m.runCleanerOnce()) !== null) passes++
    assert.ok(passes >= 3, `${passes} passes`)
    const after = await readAll(log)
    assert.deepEqual(latest(after), latest(before))
    // Outside the active segment, no key is left with two records.
    const closedKeys = after.filter((r) => r.offset < log.activeSegment.baseOffset).map((r) => r.key)
    assert.equal(new Set(closedKeys).size, closedKeys.length)
    await m.close()
  })

  it('keeps compressed batches compressed', async () => {
    const { m, log, disk } = await setup(compactConfig({ segmentBytes: 500 }))
    for (let i = 0; i < 12; i++) {
      await log.append(
        batch(
          [
            { key: 'a', value: `a${i}` },
            { key: 'b', value: `b${i}` },
          ],
          { compression: Compression.lz4 },
        ),
      )
    }
    assert.ok((await m.runCleanerOnce()) !== null)
    const first = await disk.readFile(`${DIR}/${offsetFileName(0n)}.log`)
    assert.equal(readBatchHeader(first).attributes & 0x7, Compression.lz4)
    const records = await readAll(log)
    assert.deepEqual(latest(records).get('a'), 'a11')
    await m.close()
  })

  it('leaves the log whole when a crash interrupts a cleaning at any disk operation', async () => {
    for (let crashAt = 1; crashAt < 260; crashAt += 2) {
      const disk = new SimDisk()
      const { m, log } = await setup(compactConfig(), 1 << 16, disk)
      // Keys written once sit in every segment: losing any segment loses a latest value.
      for (let i = 0; i < 50; i++) {
        const key = i % 3 === 0 ? `once${i}` : `k${i % 4}`
        await log.append(batch([{ key, value: `${key}@${i}`, ts: 1000 }]))
      }
      await log.flush()
      await m.checkpointRecoveryPoints()
      const before = await readAll(log)
      let ops = 0
      let dead = false
      disk.setHook(() => {
        if (dead) return 'EIO'
        if (++ops === crashAt) {
          dead = true
          disk.crash({ random: new SeededRandom(crashAt) })
          return 'EIO'
        }
        return undefined
      })
      await m.runCleanerOnce().catch(() => undefined)
      if (!dead) {
        dead = true
        disk.crash()
      }
      await new Promise((r) => setImmediate(r))
      disk.setHook(null)
      const clock = new ManualClock({ nowMs: 2_000_000 })
      const again = await LogManager.open(ROOT, {
        disk,
        clock,
        clusterId: 'c',
        nodeId: 0,
        topicConfig: () => compactConfig(),
      })
      const after = await readAll(again.getLog('compacted', 0)!)
      assert.deepEqual(latest(after), latest(before), `crash at op ${crashAt}`)
      const byOffset = new Map(before.map((r) => [r.offset, r]))
      for (const r of after) assert.deepEqual(byOffset.get(r.offset), r, `crash at op ${crashAt}`)
      for (let i = 1; i < after.length; i++) assert.ok(after[i]!.offset > after[i - 1]!.offset)
    }
  })
})
