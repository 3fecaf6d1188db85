import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { batch, DIR, openSimLog, readAll, valuesBatch } from '../../test/storage/fixtures.ts'
import { ManualClock } from '../io/index.ts'
import { Compression, ErrorCode, readBatchHeader } from '../protocol/index.ts'
import { offsetFileName } from './log-segment.ts'
import { PartitionLog } from './partition-log.ts'

describe('PartitionLog append and read', () => {
  it('assigns offsets, rewrites base offsets, reads the records back', async () => {
    const { log } = await openSimLog()
    const a = await log.append(valuesBatch(3, 'a'))
    const b = await log.append(valuesBatch(2, 'b'))
    assert.equal(a.errorCode, 0)
    assert.ok(a.errorCode === 0 && b.errorCode === 0)
    assert.equal(a.baseOffset, 0n)
    assert.equal(a.lastOffset, 2n)
    assert.equal(b.baseOffset, 3n)
    assert.equal(b.lastOffset, 4n)
    assert.equal(log.logEndOffset, 5n)
    const records = await readAll(log)
    assert.deepEqual(
      records.map((r) => [r.offset, r.value]),
      [
        [0n, 'a0'],
        [1n, 'a1'],
        [2n, 'a2'],
        [3n, 'b0'],
        [4n, 'b1'],
      ],
    )
  })

  it('writes base offsets across the int64 low word (a segment based just below 2^32, and above 2^40)', async () => {
    for (const start of [2n ** 32n - 3n, 2n ** 40n + 2n ** 32n - 2n]) {
      const { log } = await openSimLog()
      await log.truncateFullyAndStartAt(start)
      const results = await Promise.all(
        Array.from({ length: 3 }, (_, i) => log.append(valuesBatch(2, `v${i}`))),
      )
      assert.deepEqual(
        results.map((r) => (r.errorCode === 0 ? r.baseOffset - start : -1n)),
        [0n, 2n, 4n],
      )
      const records = await readAll(log)
      assert.deepEqual(
        records.map((r) => r.offset - start),
        [0n, 1n, 2n, 3n, 4n, 5n],
        'each batch header carries its base offset, high word and all',
      )
    }
  })

  it('writes the appends of one turn with one write, and those made during it with the next', async () => {
    const { log, disk } = await openSimLog()
    let before = disk.writes
    await Promise.all(Array.from({ length: 20 }, (_, i) => log.append(valuesBatch(1, `s${i}`))))
    assert.equal(disk.writes - before, 1)
    before = disk.writes
    const first = Array.from({ length: 20 }, (_, i) => log.append(valuesBatch(1, `t${i}`)))
    for (let i = 0; i < 5; i++) await null // the first write is under way
    const second = Array.from({ length: 20 }, (_, i) => log.append(valuesBatch(1, `u${i}`)))
    const results = await Promise.all([...first, ...second])
    assert.deepEqual(
      results.map((r) => (r.errorCode === 0 ? Number(r.baseOffset) : -1)),
      Array.from({ length: 40 }, (_, i) => 20 + i),
    )
    assert.equal(disk.writes - before, 2)
    assert.equal((await readAll(log)).length, 60)
  })

  it('names files as Kafka does', async () => {
    const { disk, log } = await openSimLog()
    await log.append(valuesBatch(1, 'x'))
    await log.close()
    assert.deepEqual(await disk.list(DIR), [
      `${offsetFileName(0n)}.index`,
      `${offsetFileName(0n)}.log`,
      `${offsetFileName(0n)}.timeindex`,
    ])
    assert.equal(offsetFileName(42n), '00000000000000000042')
  })

  it('reads whole batches within the byte budget, but the first batch even when larger', async () => {
    const { log } = await openSimLog()
    const sizes: number[] = []
    for (let i = 0; i < 5; i++) {
      const b = valuesBatch(4, `v${i}-`)
      sizes.push(b.length)
      await log.append(b)
    }
    const one = await log.read(0n, 10)
    assert.ok(one.errorCode === 0 && 'records' in one)
    assert.equal(one.records.length, sizes[0])
    const two = await log.read(0n, sizes[0]! + sizes[1]! + 5)
    assert.ok(two.errorCode === 0 && 'records' in two)
    assert.equal(two.records.length, sizes[0]! + sizes[1]!)
    const none = await log.read(0n, 10, { atLeastOneBatch: false })
    assert.ok(none.errorCode === 0 && 'records' in none)
    assert.equal(none.records.length, 0)
    // From the middle of a batch: the batch holding the offset comes first.
    const mid = await log.read(5n, 1)
    assert.ok(mid.errorCode === 0 && 'records' in mid)
    assert.equal(readBatchHeader(mid.records).baseOffset, 4n)
  })

  it('stops below offsetMax (the high watermark) and refuses offsets out of range', async () => {
    const { log } = await openSimLog()
    await log.append(valuesBatch(2, 'a'))
    await log.append(valuesBatch(2, 'b'))
    const r = await log.read(0n, 1 << 20, { offsetMax: 2n })
    assert.ok(r.errorCode === 0 && 'records' in r)
    assert.equal(readBatchHeader(r.records).baseOffset, 0n)
    assert.equal(r.records.length, readBatchHeader(r.records).batchLength + 12)
    const atEnd = await log.read(4n, 100)
    assert.ok(atEnd.errorCode === 0 && 'records' in atEnd && atEnd.records.length === 0)
    assert.equal((await log.read(5n, 100)).errorCode, ErrorCode.OffsetOutOfRange)
    assert.equal((await log.read(-1n, 100)).errorCode, ErrorCode.OffsetOutOfRange)
  })

  it('refuses corrupt, oversized and out-of-policy batches with Kafka error codes', async () => {
    const { log } = await openSimLog({ messageBytesMax: 200 })
    const bad = valuesBatch(1, 'x')
    bad.writeUInt8(bad.readUInt8(bad.length - 1) ^ 0xff, bad.length - 1)
    assert.equal((await log.append(bad)).errorCode, ErrorCode.CorruptMessage)
    assert.equal((await log.append(valuesBatch(20, 'long-value-'))).errorCode, ErrorCode.MessageTooLarge)
    const torn = valuesBatch(1, 'x').subarray(0, 40)
    assert.equal((await log.append(torn)).errorCode, ErrorCode.CorruptMessage)
    assert.equal(log.logEndOffset, 0n)
    const { log: compacted } = await openSimLog({ cleanupPolicy: { delete: false, compact: true } })
    const nullKey = await compacted.append(
      batch([
        { key: 'k', value: 'v' },
        { key: null, value: 'v' },
      ]),
    )
    assert.equal(nullKey.errorCode, ErrorCode.CorruptMessage)
    const compressedNullKey = await compacted.append(
      batch([{ key: null, value: 'v' }], { compression: Compression.lz4 }),
    )
    assert.equal(compressedNullKey.errorCode, ErrorCode.CorruptMessage)
    assert.equal((await compacted.append(batch([{ key: 'k', value: 'v' }]))).errorCode, 0)
  })

  it('refuses a batch with any one byte changed after its CRC, on every path that verifies it', async () => {
    // 1 KiB and 16 KiB batches (one value each) and one past 3 x 8 KiB: the native CRC's interleaved
    // streams, their joins and its byte-wise tail. A corrupt batch is refused whole with
    // CORRUPT_MESSAGE, on a client's append, a follower's and among good batches, and nothing lands.
    for (const valueBytes of [1000, 16 * 1024, 3 * 8192 + 777]) {
      const { log } = await openSimLog({ messageBytesMax: 1 << 20, segmentBytes: 1 << 22 })
      const good = batch([{ key: 'k', value: 'v'.repeat(valueBytes) }])
      const positions = [21, 22, 61, good.length >> 1, good.length - 8, good.length - 1]
      for (const at of positions) {
        for (const origin of ['client', 'replication'] as const) {
          const bad = Buffer.from(good)
          bad[at] = bad[at]! ^ 0x10
          if (origin === 'replication') bad.writeBigInt64BE(log.logEndOffset, 0)
          const r = await log.append(bad, { origin })
          assert.equal(r.errorCode, ErrorCode.CorruptMessage, `${valueBytes} B value, byte ${at}, ${origin}`)
          const among = Buffer.concat([Buffer.from(good), bad, Buffer.from(good)])
          if (origin === 'replication') {
            for (let i = 0, o = log.logEndOffset; i < 3; i++, o++) among.writeBigInt64BE(o, i * good.length)
          }
          const r2 = await log.append(among, { origin })
          assert.equal(
            r2.errorCode,
            ErrorCode.CorruptMessage,
            `${valueBytes} B value, byte ${at}, among good`,
          )
        }
      }
      assert.equal(log.logEndOffset, 0n)
      assert.equal((await log.append(Buffer.from(good))).errorCode, 0)
      assert.equal(log.logEndOffset, 1n)
    }
  })

  it('checks CreateTime bounds and stamps LogAppendTime', async () => {
    const { log, clock } = await openSimLog({ messageTimestampAfterMsMax: 1000 })
    const future = await log.append(valuesBatch(1, 'x', clock.nowMs() + 5000))
    assert.equal(future.errorCode, ErrorCode.InvalidTimestamp)
    // Under the default bounds (NEVER_MS) only a timestamp past NEVER_MS is too far ahead.
    const { log: unbounded } = await openSimLog()
    assert.equal((await unbounded.append(valuesBatch(1, 'x', 2 ** 52))).errorCode, 0)
    const farFuture = await unbounded.append(valuesBatch(1, 'x', 2 ** 60))
    assert.equal(farFuture.errorCode, ErrorCode.InvalidTimestamp)
    const { log: lat, clock: c2 } = await openSimLog({ messageTimestampType: 'LogAppendTime' })
    const r = await lat.append(valuesBatch(2, 'x', 5))
    assert.ok(r.errorCode === 0)
    assert.equal(r.logAppendTimeMs, c2.nowMs())
    const records = await readAll(lat)
    assert.deepEqual(
      records.map((x) => x.timestamp),
      [BigInt(c2.nowMs()), BigInt(c2.nowMs())],
    )
  })

  it('judges message.timestamp.after.max.ms against the clock, read only for a batch that looks too new', async () => {
    class CountingClock extends ManualClock {
      reads = 0
      override nowMs(): number {
        this.reads++
        return super.nowMs()
      }
    }
    const clock = new CountingClock({ nowMs: 1_000_000 })
    const { log } = await openSimLog({ messageTimestampAfterMsMax: 1000 }, { clock })
    const t0 = clock.nowMs()
    assert.equal((await log.append(valuesBatch(1, 'a', t0))).errorCode, 0)
    const reads = clock.reads
    const ok = await Promise.all(
      Array.from({ length: 10 }, (_, i) => log.append(valuesBatch(1, `b${i}`, t0 + 900))),
    )
    assert.ok(ok.every((r) => r.errorCode === 0))
    assert.ok(clock.reads - reads <= 2, `${clock.reads - reads} clock reads for 10 appends in one round`)
    assert.equal((await log.append(valuesBatch(1, 'c', t0 + 1500))).errorCode, ErrorCode.InvalidTimestamp)
    clock.advance(1000)
    assert.equal((await log.append(valuesBatch(1, 'd', t0 + 1500))).errorCode, 0)
    // A wall clock stepped back is seen by the next round's reading.
    clock.setNowMs(t0 - 10_000)
    assert.equal((await log.append(valuesBatch(1, 'e', t0 - 10_000))).errorCode, 0)
    assert.equal((await log.append(valuesBatch(1, 'f', t0 + 900))).errorCode, ErrorCode.InvalidTimestamp)
  })

  it('stamps the leader epoch and keeps the max timestamp', async () => {
    const { log } = await openSimLog()
    const r = await log.append(
      batch([
        { value: 'a', ts: 50 },
        { value: 'b', ts: 70 },
        { value: 'c', ts: 60 },
      ]),
      {
        leaderEpoch: 7,
      },
    )
    assert.ok(r.errorCode === 0)
    assert.equal(r.maxTimestampMs, 70)
    const read = await log.read(0n, 1000)
    assert.ok(read.errorCode === 0 && 'records' in read)
    assert.equal(readBatchHeader(read.records).partitionLeaderEpoch, 7)
    // Every byte of the field: a one-batch append and a two-batch one.
    const big = 0x12345678
    await log.append(valuesBatch(1, 'x'), { leaderEpoch: big })
    await log.append(Buffer.concat([valuesBatch(1, 'y'), valuesBatch(1, 'z')]), { leaderEpoch: big + 1 })
    const all = await log.read(3n, 1 << 20)
    assert.ok(all.errorCode === 0 && 'records' in all)
    const epochs: number[] = []
    for (let at = 0; at < all.records.length; at += 12 + all.records.readInt32BE(at + 8))
      epochs.push(readBatchHeader(all.records.subarray(at)).partitionLeaderEpoch)
    assert.deepEqual(epochs, [big, big + 1, big + 1])
  })

  it('coalesces concurrent appends into few writes, in call order', async () => {
    const { log, disk } = await openSimLog()
    const before = disk.writes
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => log.append(valuesBatch(1, `m${i}`))),
    )
    assert.deepEqual(
      results.map((r) => (r.errorCode === 0 ? r.baseOffset : -1n)),
      Array.from({ length: 50 }, (_, i) => BigInt(i)),
    )
    assert.ok(disk.writes - before <= 3, `${disk.writes - before} writes for 50 appends`)
    const records = await readAll(log)
    assert.deepEqual(
      records.map((r) => r.value),
      Array.from({ length: 50 }, (_, i) => `m${i}0`),
    )
  })

  it('keeps follower offsets and refuses appends below the log end', async () => {
    const { log: leader } = await openSimLog()
    await leader.append(valuesBatch(3, 'a'))
    await leader.append(valuesBatch(2, 'b'))
    const fetched = await leader.read(0n, 1 << 20)
    assert.ok(fetched.errorCode === 0 && 'records' in fetched)
    const { log: follower } = await openSimLog()
    const r = await follower.append(Buffer.from(fetched.records), { origin: 'replication' })
    assert.ok(r.errorCode === 0)
    assert.equal(r.baseOffset, 0n)
    assert.equal(follower.logEndOffset, 5n)
    await assert.rejects(
      follower.append(Buffer.from(fetched.records), { origin: 'replication' }),
      /below the log end/,
    )
  })
})

describe('PartitionLog segments', () => {
  it('rolls at segment.bytes and reads across segments', async () => {
    const { log, disk } = await openSimLog({ segmentBytes: 300 })
    for (let i = 0; i < 10; i++) await log.append(valuesBatch(2, `s${i}-`))
    assert.ok(log.segments.length > 3, `${log.segments.length} segments`)
    for (const s of log.segments.slice(0, -1)) assert.ok(s.size <= 300)
    const records = await readAll(log, 100)
    assert.equal(records.length, 20)
    assert.deepEqual(
      records.map((r) => r.offset),
      Array.from({ length: 20 }, (_, i) => BigInt(i)),
    )
    const names = await disk.list(DIR)
    for (const s of log.segments) assert.ok(names.includes(`${offsetFileName(s.baseOffset)}.log`))
  })

  it('rolls inside one round of concurrent appends by index room and by segment.ms', async () => {
    // Every batch past the first adds an index entry; the time index holds two entries.
    const { log: byIndex } = await openSimLog({ segmentIndexBytes: 24, indexIntervalBytes: 1 })
    await byIndex.append(valuesBatch(1, 'a', 1000))
    const round = await Promise.all(
      Array.from({ length: 30 }, (_, i) => byIndex.append(valuesBatch(1, `b${i}-`, 1001 + i))),
    )
    assert.deepEqual(
      round.map((r) => (r.errorCode === 0 ? Number(r.baseOffset) : -1)),
      Array.from({ length: 30 }, (_, i) => i + 1),
    )
    assert.ok(byIndex.segments.length >= 10, `${byIndex.segments.length} segments`)
    assert.deepEqual(
      (await readAll(byIndex)).map((r) => r.offset),
      Array.from({ length: 31 }, (_, i) => BigInt(i)),
    )
    // segment.ms by record time: a round whose batches span 3 s rolls where each second is passed.
    const { log: byTime } = await openSimLog({ segmentMs: 1000 })
    await byTime.append(valuesBatch(1, 'a', 10_000))
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => byTime.append(valuesBatch(1, `t${i}-`, 10_100 + 100 * i))),
    )
    const bases = byTime.segments.map((x) => Number(x.baseOffset))
    // Offset k has time 10_000 + 100 k: a roll at the first batch more than 1000 ms past its
    // segment's first (Kafka's `timeWaitedForRoll > segment.ms`).
    assert.deepEqual(bases, [0, 11, 22])
    assert.equal((await readAll(byTime)).length, 31)
  })

  it('rolls at segment.ms by record time', async () => {
    const { log } = await openSimLog({ segmentMs: 1000 })
    await log.append(valuesBatch(1, 'a', 10_000))
    await log.append(valuesBatch(1, 'b', 10_500))
    assert.equal(log.segments.length, 1)
    await log.append(valuesBatch(1, 'c', 11_001))
    assert.equal(log.segments.length, 2)
    assert.equal(log.activeSegment.baseOffset, 2n)
  })

  it('writes a sparse offset index every index.interval.bytes and finds offsets through it', async () => {
    const { log, disk } = await openSimLog({ indexIntervalBytes: 200, segmentBytes: 100_000 })
    for (let i = 0; i < 40; i++) await log.append(valuesBatch(3, `i${i}-`))
    await log.close()
    const index = await disk.readFile(`${DIR}/${offsetFileName(0n)}.index`)
    assert.ok(index.length >= 8 * 10, `index of ${index.length} bytes`)
    let lastRel = -1
    for (let at = 0; at < index.length; at += 8) {
      const rel = index.readInt32BE(at)
      assert.ok(rel > lastRel)
      lastRel = rel
    }
    const reopened = await PartitionLog.open(DIR, log.config, {
      disk,
      clock: (await openSimLog()).clock,
      hadCleanShutdown: true,
    })
    for (const offset of [0n, 1n, 59n, 60n, 119n]) {
      const r = await reopened.read(offset, 1)
      assert.ok(r.errorCode === 0 && 'records' in r)
      const h = readBatchHeader(r.records)
      assert.ok(h.baseOffset <= offset && offset <= h.baseOffset + BigInt(h.lastOffsetDelta))
    }
  })

  it('finds offsets by timestamp through the time index', async () => {
    const { log } = await openSimLog({ indexIntervalBytes: 100, segmentBytes: 2000 })
    for (let i = 0; i < 30; i++) await log.append(batch([{ value: `t${i}`, ts: 1000 + i * 10 }]))
    assert.ok(log.segments.length > 1)
    const at = await log.offsetForTimestamp(1155)
    assert.equal(at?.offset, 16n)
    assert.equal(at?.timestampMs, 1160)
    assert.equal((await log.offsetForTimestamp(0))?.offset, 0n)
    assert.equal(await log.offsetForTimestamp(5000), null)
    assert.equal((await log.offsetForTimestamp(-1))?.offset, 30n)
    assert.equal((await log.offsetForTimestamp(-2))?.offset, 0n)
    assert.equal((await log.offsetForTimestamp(-3))?.offset, 29n)
  })

  it('a read of one segment lists an aborted transaction that began in it and ended in a later one', async () => {
    const { log } = await openSimLog({ segmentBytes: 300 })
    for (let i = 0; i < 10; i++) await log.append(valuesBatch(2, `s${i}-`))
    assert.ok(log.segments.length > 3)
    const marker = log.logEndOffset - 1n
    // The entry goes to the segment of its marker, the last one; the transaction began at 1.
    const entry = { producerId: 7n, firstOffset: 1n, lastOffset: marker, lastStableOffset: 1n }
    await log.appendAbortedTxn(entry)
    const firstSegmentEnd = log.segments[1]!.baseOffset
    assert.deepEqual(await log.collectAbortedTxns(0n, firstSegmentEnd), [entry])
  })
})
