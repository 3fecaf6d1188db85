import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { config, DIR, decodeAll, openSimLog, readAll, valuesBatch } from '../../test/storage/fixtures.ts'
import type { SimDisk } from '../io/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { offsetFileName } from './log-segment.ts'
import { PartitionLog } from './partition-log.ts'

/** The records in one segment file, decoded from its bytes. */
async function fileValues(disk: SimDisk, name: string): Promise<string[]> {
  return decodeAll(await disk.readFile(`${DIR}/${name}`)).map((r) => r.value ?? '')
}

describe('retention', () => {
  it('deletes closed segments older than retention.ms by their largest timestamp, never the active one', async () => {
    const { log, disk, clock } = await openSimLog({
      segmentBytes: 200,
      retentionMs: 10_000,
      fileDeleteDelayMs: 5000,
    })
    const now = clock.nowMs()
    // Three segments of old records, then recent ones.
    for (let i = 0; i < 6; i++) await log.append(valuesBatch(2, `old${i}-`, now - 60_000 + i))
    for (let i = 0; i < 4; i++) await log.append(valuesBatch(2, `new${i}-`, now))
    // 174-byte batches, two per segment: [0..3] [4..7] [8..11] old, [12..15] [16..19] new.
    assert.deepEqual(
      log.segments.map((s) => s.baseOffset),
      [0n, 4n, 8n, 12n, 16n],
    )
    assert.equal(await log.deleteOldSegments(), 3)
    assert.equal(log.logStartOffset, 12n)
    // Renamed to .deleted now, removed after file.delete.delay.ms.
    const names = await disk.list(DIR)
    assert.ok(names.includes(`${offsetFileName(0n)}.log.deleted`), names.join(' '))
    assert.deepEqual(await fileValues(disk, `${offsetFileName(0n)}.log.deleted`), [
      'old0-0',
      'old0-1',
      'old1-0',
      'old1-1',
    ])
    clock.advance(5000)
    await new Promise((r) => setTimeout(r, 5))
    assert.ok(!(await disk.list(DIR)).some((n) => n.endsWith('.deleted')))
    // What remains is exactly the surviving records, still readable.
    const remaining = (await readAll(log)).map((r) => r.value)
    assert.ok(remaining.includes('new0-0') && remaining.includes('new3-1'))
    assert.ok(!remaining.includes('old0-0'))
    // Everything is expired now, but the active segment stays.
    clock.advance(1_000_000)
    await log.deleteOldSegments()
    assert.equal(log.segments.length, 1)
    assert.ok((await readAll(log)).length > 0)
  })

  it('deletes the oldest segments while the log is over retention.bytes', async () => {
    const { log, disk } = await openSimLog({ segmentBytes: 200, retentionBytes: 450, retentionMs: -1 })
    for (let i = 0; i < 12; i++) await log.append(valuesBatch(2, `r${i}-`))
    const before = log.sizeBytes
    assert.ok(before > 450)
    await log.deleteOldSegments()
    assert.ok(log.sizeBytes <= 450 + log.activeSegment.size, `${log.sizeBytes}`)
    assert.ok(log.sizeBytes - log.segments[0]!.size < 450)
    const first = log.segments[0]!
    assert.equal(log.logStartOffset, first.baseOffset)
    const live = (await disk.list(DIR)).filter((n) => n.endsWith('.log'))
    assert.equal(live.length, log.segments.length)
    // The first live file holds exactly the records from the new log start.
    const values = await fileValues(disk, `${offsetFileName(first.baseOffset)}.log`)
    const expected = (await readAll(log)).slice(0, values.length).map((r) => r.value)
    assert.deepEqual(values, expected)
  })

  it('does not delete by time or size under cleanup.policy=compact', async () => {
    const { log } = await openSimLog({
      segmentBytes: 200,
      retentionMs: 1,
      retentionBytes: 1,
      cleanupPolicy: { delete: false, compact: true },
    })
    for (let i = 0; i < 6; i++) await log.append(valuesBatch(2, `c${i}-`, 1, (j) => `k${j}`))
    assert.equal(await log.deleteOldSegments(), 0)
  })

  it('DeleteRecords moves the log start offset and deletes wholly covered segments', async () => {
    const { log, disk, clock } = await openSimLog({ segmentBytes: 200 })
    for (let i = 0; i < 8; i++) await log.append(valuesBatch(2, `d${i}-`))
    const third = log.segments[2]!.baseOffset
    const r = await log.deleteRecordsBefore(third + 1n)
    assert.deepEqual(r, { errorCode: 0, lowWatermark: third + 1n })
    assert.equal(log.segments[0]!.baseOffset, third)
    assert.equal((await log.read(third, 100)).errorCode, ErrorCode.OffsetOutOfRange)
    const records = await readAll(log)
    assert.equal(records[0]!.offset, third + 1n)
    assert.equal((await log.deleteRecordsBefore(1000n)).errorCode, ErrorCode.OffsetOutOfRange)
    // A reopened log keeps the checkpointed start even though the segment holds earlier offsets.
    await log.close()
    const reopened = await PartitionLog.open(DIR, config({ segmentBytes: 200 }), {
      disk,
      clock,
      logStartOffset: third + 1n,
      hadCleanShutdown: true,
    })
    assert.equal(reopened.logStartOffset, third + 1n)
  })
})
