/**
 * The write tail: reads near the end of a log come from the bytes it wrote last, never from a
 * stale or foreign file range, within the per-log and shared memory bounds.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeAll, openSimLog, valuesBatch } from '../../test/storage/fixtures.ts'
import { PartitionLog } from './partition-log.ts'
import { TailBudget, WriteTail } from './write-tail.ts'

/** A copy of `b` in memory of its own (the fixtures' batches are views of a shared 64 KiB buffer). */
function owned(b: Buffer): Buffer {
  const own = Buffer.allocUnsafeSlow(b.length)
  b.copy(own)
  return own
}

async function values(log: PartitionLog, offset: bigint, maxBytes = 1 << 20): Promise<string[]> {
  const r = await log.read(offset, maxBytes)
  assert.ok(r.errorCode === 0 && 'records' in r)
  return decodeAll(r.records)
    .filter((x) => x.offset >= offset)
    .map((x) => x.value ?? '')
}

describe('WriteTail', () => {
  it('gives up its oldest pieces at once when its bound is lowered, and never exceeds the new one', () => {
    const budget = new TailBudget(64 * 1024)
    const tail = new WriteTail(budget, 16 * 1024)
    const owner = {}
    const pieces = [0, 1, 2, 3].map((i) => Buffer.alloc(4096, String(i)))
    tail.add(owner, pieces, 0)
    assert.equal(tail.cost, 16 * 1024)
    tail.setBytesMax(8 * 1024)
    assert.equal(tail.bytesMax, 8 * 1024)
    assert.equal(tail.cost, 8 * 1024)
    assert.equal(budget.used, 8 * 1024, 'the shared budget is given back what was dropped')
    assert.equal(tail.get(owner, 0, 4096), null, 'the oldest went first')
    assert.equal(tail.get(owner, 8192, 8192)?.toString(), '2'.repeat(4096) + '3'.repeat(4096))
    tail.add(owner, [Buffer.alloc(4096, '4')], 16 * 1024)
    assert.equal(tail.cost, 8 * 1024, 'later writes keep to the new bound')
  })

  it('keeps views, counting the memory they keep alive once per run of pieces sharing it', () => {
    const tail = new WriteTail(new TailBudget(1 << 20), 1 << 20)
    const owner = {}
    const whole = Buffer.alloc(8) // its own memory
    whole.write('abcdefgh')
    const socketRead = Buffer.alloc(4096, '.')
    socketRead.write('XYZ', 100)
    tail.add(owner, [whole, socketRead.subarray(100, 102), socketRead.subarray(102, 103)], 50)
    assert.equal(tail.cost, 8 + 4096, 'the socket read is counted once, whole')
    assert.equal(tail.get(owner, 50, 11)!.toString(), 'abcdefghXYZ')
    assert.equal(tail.get(owner, 52, 3)!.toString(), 'cde')
    assert.equal(tail.get(owner, 49, 2), null, 'before what is held')
    assert.equal(tail.get(owner, 58, 4), null, 'past what is held')
    assert.equal(tail.get({}, 50, 3), null, 'another file')
  })

  it('holds exactly the newest pieces within its bound, through ring growth and wrap-around (random rounds against a model)', () => {
    let seed = 12345
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
      return seed % n
    }
    const bound = 64 * 1024
    const tail = new WriteTail(new TailBudget(1 << 30), bound)
    const owner = {}
    // The model: every piece ever added at its position; the held ones are the newest whose
    // memories (each counted once per run of adjacent pieces sharing it) fit the bound.
    const pieces: { position: number; bytes: Buffer }[] = []
    let end = 0
    let held = 0
    const costOf = (from: number) => {
      let cost = 0
      for (let i = from; i < pieces.length; i++)
        if (i === from || pieces[i]!.bytes.buffer !== pieces[i - 1]!.bytes.buffer)
          cost += pieces[i]!.bytes.buffer.byteLength
      return cost
    }
    for (let round = 0; round < 400; round++) {
      if (rand(50) === 0) {
        tail.cut(owner)
        pieces.length = 0
        held = 0
        end += 7
      }
      const buffers: Buffer[] = []
      // Some rounds: slices of one shared memory (a frame's batches); others: pieces of their own.
      const shared = rand(3) === 0 ? Buffer.alloc(8192 + rand(8192)) : null
      let at = 0
      for (let n = 1 + rand(40); n > 0; n--) {
        const size = 1 + rand(600)
        let b: Buffer
        if (shared !== null && at + size <= shared.length) {
          b = shared.subarray(at, at + size)
          at += size
        } else b = Buffer.allocUnsafeSlow(size)
        for (let i = 0; i < b.length; i++) b[i] = rand(256)
        buffers.push(b)
      }
      tail.add(owner, buffers, end)
      for (const b of buffers) {
        pieces.push({ position: end, bytes: b })
        end += b.length
      }
      while (held < pieces.length && costOf(held) > bound) held++
      assert.equal(tail.cost, costOf(held), `round ${round}: cost`)
      const from = held < pieces.length ? pieces[held]!.position : end
      for (let k = 0; k < 5; k++) {
        const position = from - 50 + rand(end - from + 100)
        const length = 1 + rand(3000)
        const got = tail.get(owner, position, length)
        if (position < from || position + length > end) {
          assert.equal(got, null, `round ${round}: [${position}, +${length}) is not held`)
          continue
        }
        const want = Buffer.concat(pieces.slice(held).map((p) => p.bytes)).subarray(
          position - from,
          position - from + length,
        )
        assert.ok(got !== null && got.equals(want), `round ${round}: [${position}, +${length})`)
      }
    }
  })

  it('a small piece of a large memory is dropped once that memory is over the bound', () => {
    const tail = new WriteTail(new TailBudget(1 << 20), 10_000)
    const owner = {}
    const frame = Buffer.alloc(50_000, 'f')
    tail.add(owner, [Buffer.alloc(100, 'a')], 0)
    tail.add(owner, [frame.subarray(0, 10)], 100) // keeps 50,000 bytes alive: over 10,000
    assert.equal(tail.cost, 0)
    assert.equal(tail.get(owner, 100, 10), null)
    tail.add(owner, [Buffer.alloc(100, 'b')], 110)
    assert.equal(tail.get(owner, 110, 100)!.toString(), 'b'.repeat(100))
  })

  it('a write elsewhere or to another file starts over; a cut forgets', () => {
    const tail = new WriteTail(new TailBudget(1 << 20), 1 << 20)
    const a = {}
    const b = {}
    tail.add(a, [Buffer.from('0123')], 0)
    tail.add(a, [Buffer.from('4567')], 4)
    assert.equal(tail.get(a, 2, 4)!.toString(), '2345')
    tail.add(a, [Buffer.from('zz')], 2) // not at the end (a cut then a write): starts over
    assert.equal(tail.get(a, 0, 2), null)
    assert.equal(tail.get(a, 2, 2)!.toString(), 'zz')
    tail.add(b, [Buffer.from('bb')], 4)
    assert.equal(tail.get(a, 2, 2), null)
    assert.equal(tail.get(b, 4, 2)!.toString(), 'bb')
    tail.cut(a) // not the file held: nothing changes
    assert.equal(tail.get(b, 4, 2)!.toString(), 'bb')
    tail.cut(b)
    assert.equal(tail.get(b, 4, 2), null)
    assert.equal(tail.cost, 0)
  })

  it('stays within its own bound and the shared budget, dropping the oldest bytes first', () => {
    const budget = new TailBudget(100)
    const t1 = new WriteTail(budget, 60)
    const t2 = new WriteTail(budget, 60)
    const o1 = {}
    const o2 = {}
    for (let i = 0; i < 10; i++) t1.add(o1, [Buffer.alloc(20, 97 + i)], i * 20) // each its own memory
    assert.ok(t1.cost <= 60)
    assert.equal(t1.get(o1, 180, 20)!.toString(), 'j'.repeat(20))
    assert.equal(t1.get(o1, 100, 20), null)
    for (let i = 0; i < 10; i++) t2.add(o2, [Buffer.alloc(20, 65 + i)], i * 20)
    assert.ok(t1.cost + t2.cost <= 100 && budget.used === t1.cost + t2.cost, `${t1.cost} + ${t2.cost}`)
    assert.equal(t2.get(o2, 180, 20)!.toString(), 'J'.repeat(20))
    t1.clear()
    t2.clear()
    assert.equal(budget.used, 0)
  })

  it('past the shared budget, the tails written least recently give up their bytes first', () => {
    const budget = new TailBudget(100)
    const idle = new WriteTail(budget, 60)
    const other = new WriteTail(budget, 60)
    const writing = new WriteTail(budget, 60)
    const [o1, o2, o3] = [{}, {}, {}]
    idle.add(o1, [Buffer.alloc(40, 'i')], 0)
    other.add(o2, [Buffer.alloc(40, 'o')], 0)
    // 80 held; 20 more fits, then the idle tail (written first) pays for the next 20.
    writing.add(o3, [Buffer.alloc(20, 'a')], 0)
    writing.add(o3, [Buffer.alloc(20, 'b')], 20)
    assert.equal(idle.cost, 0, 'the least recently written tail gave up its bytes')
    assert.equal(other.get(o2, 0, 40)!.toString(), 'o'.repeat(40))
    assert.equal(writing.get(o3, 0, 40)!.toString(), `${'a'.repeat(20)}${'b'.repeat(20)}`)
    // Written again, the other tail is the newest: a new writer takes from the one written longest ago.
    other.add(o2, [Buffer.alloc(20, 'p')], 40)
    const late = new WriteTail(budget, 60)
    const o4 = {}
    late.add(o4, [Buffer.alloc(20, 'l')], 0)
    assert.equal(writing.get(o3, 0, 20), null, 'its oldest piece went')
    assert.equal(writing.get(o3, 20, 20)!.toString(), 'b'.repeat(20))
    assert.equal(other.get(o2, 0, 60)!.toString(), `${'o'.repeat(40)}${'p'.repeat(20)}`)
    assert.equal(late.get(o4, 0, 20)!.toString(), 'l'.repeat(20))
    assert.equal(budget.used, idle.cost + other.cost + writing.cost + late.cost)
    assert.ok(budget.used <= 100)
  })
})

describe('PartitionLog reads from its write tail', () => {
  it('answers reads at the end from memory, older ones from the file, with the same bytes', async () => {
    const { log, disk } = await openSimLog({ segmentBytes: 10_000_000 }, { options: { tailBytesMax: 4096 } })
    for (let i = 0; i < 100; i++) await log.append(owned(valuesBatch(2, `v${i}-`)))
    let reads = disk.reads
    assert.deepEqual(await values(log, 198n), ['v99-0', 'v99-1'])
    assert.deepEqual(await values(log, 199n), ['v99-1'])
    assert.equal(disk.reads, reads, 'the tail answered')
    reads = disk.reads
    assert.deepEqual(await values(log, 0n, 100), ['v0-0', 'v0-1'])
    assert.ok(disk.reads > reads, 'the start of the log is read from the file')
    // The whole log read both ways agrees.
    const { log: plain } = await openSimLog({ segmentBytes: 10_000_000 }, { options: { tailBytesMax: 0 } })
    for (let i = 0; i < 100; i++) await plain.append(valuesBatch(2, `v${i}-`))
    for (let offset = 0n; offset < 200n; offset += 7n) {
      assert.deepEqual(await values(log, offset, 500), await values(plain, offset, 500), `at ${offset}`)
    }
  })

  it('after a truncation (a follower diverged) and new appends, serves the new bytes', async () => {
    const { log } = await openSimLog({ segmentBytes: 10_000_000 })
    for (let i = 0; i < 5; i++) await log.append(valuesBatch(4, `old${i}-`))
    assert.deepEqual(await values(log, 16n), ['old4-0', 'old4-1', 'old4-2', 'old4-3'])
    await log.truncateTo(10n) // whole batches: the log ends at 8
    assert.equal(log.logEndOffset, 8n)
    assert.deepEqual(await values(log, 4n), ['old1-0', 'old1-1', 'old1-2', 'old1-3'])
    await log.append(valuesBatch(3, 'new-'))
    await log.append(valuesBatch(9, 'newer-'))
    assert.deepEqual(await values(log, 8n), [
      'new-0',
      'new-1',
      'new-2',
      ...Array.from({ length: 9 }, (_, i) => `newer-${i}`),
    ])
    assert.deepEqual(
      await values(log, 16n),
      Array.from({ length: 4 }, (_, i) => `newer-${i + 5}`),
    )
    await log.truncateFullyAndStartAt(100n)
    await log.append(valuesBatch(2, 'fresh-'))
    assert.deepEqual(await values(log, 100n), ['fresh-0', 'fresh-1'])
  })

  it('across a roll, both segments read back whole', async () => {
    const { log } = await openSimLog({ segmentBytes: 1000 })
    for (let i = 0; i < 30; i++) await log.append(valuesBatch(3, `r${i}-`))
    const all: string[] = []
    let offset = 0n
    while (offset < log.logEndOffset) {
      const got = await values(log, offset, 300)
      assert.ok(got.length > 0)
      all.push(...got)
      offset += BigInt(got.length)
    }
    assert.deepEqual(
      all,
      Array.from({ length: 90 }, (_, i) => `r${Math.floor(i / 3)}-${i % 3}`),
    )
  })

  it('a reopened log reads what the previous one wrote (the tail is memory only)', async () => {
    const { log, disk, clock } = await openSimLog({ segmentBytes: 10_000_000 })
    for (let i = 0; i < 5; i++) await log.append(valuesBatch(2, `p${i}-`))
    await log.close()
    const again = await PartitionLog.open(log.dir, log.config, { disk, clock, hadCleanShutdown: true })
    assert.deepEqual(await values(again, 8n), ['p4-0', 'p4-1'])
  })
})
