/**
 * A segment's `.index` and `.timeindex` on the real file system: on disk from the segment's
 * creation (as Kafka's), written through as the active segment grows, and after a crash, whatever
 * state they were left in, rebuilt by recovery into exactly what the log holds.
 */
import assert from 'node:assert/strict'
import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { batch, config, readAll } from '../../test/storage/fixtures.ts'
import { ManualClock, NodeDisk, SimDisk } from '../io/index.ts'
import type { LogConfig } from './log-config.ts'
import { LogSegment, offsetFileName } from './log-segment.ts'
import { PartitionLog } from './partition-log.ts'

const roots: string[] = []
after(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true })
})

async function freshDir(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'weir-index-files-'))
  roots.push(root)
  return join(root, 't-0')
}

const SETTINGS: Partial<LogConfig> = { indexIntervalBytes: 256, segmentBytes: 64 * 1024 }

function open(dir: string, overrides: Partial<LogConfig> = SETTINGS, hadCleanShutdown = false) {
  return PartitionLog.open(dir, config(overrides), {
    disk: new NodeDisk(),
    clock: new ManualClock({ nowMs: 1_000_000 }),
    hadCleanShutdown,
  })
}

/** `n` one-record batches of ~200 bytes, timestamps rising from `ts`. */
async function appendBatches(log: PartitionLog, n: number, ts = 10_000): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await log.append(batch([{ value: `v${i}-${'x'.repeat(150)}`, ts: ts + i }]))
    assert.equal(r.errorCode, 0)
  }
}

const names = (base: bigint) => ({
  log: `${offsetFileName(base)}.log`,
  index: `${offsetFileName(base)}.index`,
  timeIndex: `${offsetFileName(base)}.timeindex`,
})

/** The offset index file's entries as (relative offset, position). */
function offsetEntries(bytes: Buffer): [number, number][] {
  assert.equal(bytes.length % 8, 0, 'whole entries')
  const out: [number, number][] = []
  for (let at = 0; at < bytes.length; at += 8) out.push([bytes.readInt32BE(at), bytes.readInt32BE(at + 4)])
  return out
}

/** Every entry points at the start of a batch whose last offset is the entry's, inside the file. */
async function assertEntriesMatchLog(dir: string, base: bigint): Promise<number> {
  const n = names(base)
  const log = await readFile(join(dir, n.log))
  const lastOffsetAt = new Map<number, bigint>()
  for (let at = 0; at + 12 <= log.length; at += 12 + log.readInt32BE(at + 8)) {
    lastOffsetAt.set(at, log.readBigInt64BE(at) + BigInt(log.readInt32BE(at + 23)))
  }
  const entries = offsetEntries(await readFile(join(dir, n.index)))
  for (const [rel, pos] of entries) {
    assert.equal(lastOffsetAt.get(pos), base + BigInt(rel), `entry (${rel}, ${pos}) is a batch's`)
  }
  return entries.length
}

describe('segment index files', () => {
  it('a new segment has its .index and .timeindex on disk right away, empty', async () => {
    const dir = await freshDir()
    const disk = new NodeDisk()
    await disk.mkdir(dir)
    const settings = { indexIntervalBytes: 4096, segmentIndexBytes: 10 * 1024 * 1024, readBufferBytes: 65536 }
    const segment = await LogSegment.create(disk, dir, 42n, settings, 0)
    const n = names(42n)
    assert.deepEqual((await readdir(dir)).sort(), [n.index, n.log, n.timeIndex])
    for (const name of [n.index, n.timeIndex]) assert.equal((await stat(join(dir, name))).size, 0)
    await segment.close()
  })

  it('a log, new or rolled, has all three files for every segment before anything is flushed', async () => {
    const dir = await freshDir()
    const log = await open(dir)
    assert.deepEqual((await readdir(dir)).sort(), Object.values(names(0n)).sort())
    await appendBatches(log, 400) // ~90 KiB: one roll at 64 KiB
    const bases = log.segments.map((s) => s.baseOffset)
    assert.equal(bases.length, 2)
    const expected = bases.flatMap((b) => Object.values(names(b))).sort()
    assert.deepEqual((await readdir(dir)).sort(), expected)
    await log.close()
  })

  it('the active segment writes its entries through: at a flush, and every MiB, never synced', async () => {
    const sim = new SimDisk()
    await sim.mkdir('/data')
    await sim.syncDir('/')
    let indexSyncs = 0
    sim.setHook((op, path) => {
      if (op === 'sync' && !path.endsWith('.log')) indexSyncs++
      return undefined
    })
    const log = await PartitionLog.open('/data/t-0', config({ indexIntervalBytes: 256 }), {
      disk: sim,
      clock: new ManualClock({ nowMs: 1_000_000 }),
    })
    const index = `/data/t-0/${names(0n).index}`
    await appendBatches(log, 100)
    assert.equal((await sim.readFile(index)).length, 0, 'below a MiB and unflushed: in memory only')
    await log.flush()
    const flushed = offsetEntries(await sim.readFile(index))
    assert.ok(flushed.length >= 40, `${flushed.length} entries after the flush`)
    // Past a MiB of log without a flush, the entries follow.
    await appendBatches(log, 6000, 20_000)
    const grown = offsetEntries(await sim.readFile(index))
    const inMemory = log.activeSegment.offsetIndexEntries
    assert.ok(
      grown.at(-1)![1] >= 1024 * 1024,
      `${grown.length} of ${inMemory} entries, up to ${grown.at(-1)}`,
    )
    assert.ok(grown.length < inMemory, 'the last entries wait for the next MiB or flush')
    assert.deepEqual(grown.slice(0, flushed.length), flushed)
    assert.equal(indexSyncs, 0, 'index files are synced only when the segment is sealed')
    await log.close()
    assert.equal(indexSyncs, 2)
    assert.equal(offsetEntries(await sim.readFile(index)).length, inMemory)
  })

  for (const damage of ['zeros', 'lagging', 'missing'] as const) {
    it(`after a crash, an active segment's index that is ${damage} is rebuilt from the log, as Kafka recovers it`, async () => {
      // The reference: the same appends, closed cleanly.
      const clean = await freshDir()
      const reference = await open(clean)
      await appendBatches(reference, 250)
      await reference.close()
      const dir = await freshDir()
      const crashed = await open(dir)
      await appendBatches(crashed, 250)
      await crashed.flush()
      // The process dies here: its files are closed, the active segment not sealed, no marker. Its
      // index files are then left as a crash can leave them: Kafka's preallocated zeros, fewer
      // entries than the log, or none.
      for (const s of crashed.segments) await s.close()
      const base = crashed.activeSegment.baseOffset
      const n = names(base)
      const full = await readFile(join(clean, n.index))
      assert.ok(full.length >= 16 * 8, 'the reference has entries')
      if (damage === 'zeros') {
        const kept = full.subarray(0, full.length / 2)
        await writeFile(join(dir, n.index), Buffer.concat([kept, Buffer.alloc(1024 * 1024)]))
        await writeFile(join(dir, n.timeIndex), Buffer.alloc(1024 * 1024 - 4))
      } else if (damage === 'lagging') {
        await truncate(join(dir, n.index), 8 * 3)
        await truncate(join(dir, n.timeIndex), 12 * 2)
      } else {
        await rm(join(dir, n.index))
        await rm(join(dir, n.timeIndex))
      }
      const recovered = await open(dir)
      assert.equal(recovered.logEndOffset, 250n)
      assert.equal((await readAll(recovered)).length, 250)
      assert.deepEqual(await readFile(join(dir, n.index)), full, 'the rebuilt index is on disk, no zeros')
      assert.ok((await assertEntriesMatchLog(dir, base)) > 0)
      // Sealed at close, the time index gains its final entry: then both equal the clean log's.
      await recovered.close()
      for (const name of [n.log, n.index, n.timeIndex])
        assert.deepEqual(await readFile(join(dir, name)), await readFile(join(clean, name)), name)
    })
  }

  it('a clean reopen keeps the sealed files and writes on after their entries', async () => {
    const dir = await freshDir()
    const first = await open(dir, { indexIntervalBytes: 256 })
    await appendBatches(first, 100)
    await first.close()
    const n = names(0n)
    const sealed = await readFile(join(dir, n.index))
    const again = await open(dir, { indexIntervalBytes: 256 }, true)
    await appendBatches(again, 100, 30_000)
    await again.flush()
    const grown = await readFile(join(dir, n.index))
    assert.ok(grown.length > sealed.length)
    assert.deepEqual(grown.subarray(0, sealed.length), sealed)
    assert.equal(await assertEntriesMatchLog(dir, 0n), grown.length / 8)
    await again.close()
  })

  it('truncation cuts the index files of the segment it makes active', async () => {
    const dir = await freshDir()
    const log = await open(dir)
    await appendBatches(log, 400)
    assert.equal(log.segments.length, 2)
    await log.flush()
    await log.truncateTo(150n) // inside the first segment, sealed: it becomes active again
    assert.equal(log.segments.length, 1)
    const entries = offsetEntries(await readFile(join(dir, names(0n).index)))
    assert.ok(entries.length > 0 && entries.every(([rel]) => rel < 150))
    assert.equal(entries.length, log.activeSegment.offsetIndexEntries)
    await assertEntriesMatchLog(dir, 0n)
    await appendBatches(log, 50, 50_000)
    await log.flush()
    assert.equal(await assertEntriesMatchLog(dir, 0n), log.activeSegment.offsetIndexEntries)
    await log.close()
  })
})
