/**
 * Rounds issued by the appends themselves (`earlyRoundBytes`), on the real file system: positional
 * writes of consecutive ranges really in flight together, across segment rolls, then read back,
 * reopened cleanly and recovered after an unclean stop.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { systemClock } from '../../src/io/clock.ts'
import type { Disk, DiskFile } from '../../src/io/disk.ts'
import { NodeDisk } from '../../src/io/node-disk.ts'
import { PartitionLog } from '../../src/storage/partition-log.ts'
import { batch, config, readAll } from '../storage/fixtures.ts'

const dirs: string[] = []
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true })
})

/** NodeDisk that counts the positional writes issued while another one was in flight. */
class OverlapDisk extends NodeDisk {
  inFlight = 0
  overlapped = 0
  override async open(path: string, options?: Parameters<Disk['open']>[1]): Promise<DiskFile> {
    const file = await super.open(path, options)
    const write = file.write.bind(file)
    file.write = (buffers, position) => {
      if (this.inFlight++ > 0) this.overlapped++
      return write(buffers, position).finally(() => {
        this.inFlight--
      })
    }
    return file
  }
}

describe('storage: early write rounds on the real file system', () => {
  it('keeps offsets dense and every record across rolls, clean reopen and recovery', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weir-early-'))
    dirs.push(dir)
    const logDir = join(dir, 't-0')
    const cfg = config({ segmentBytes: 48 * 1024, indexIntervalBytes: 1024 })
    const disk = new OverlapDisk()
    const log = await PartitionLog.open(logDir, cfg, { disk, clock: systemClock, earlyRoundBytes: 2048 })
    const payload = 'p'.repeat(900)
    let next = 0
    const total = 3000
    const offsets: bigint[] = []
    // A closed loop of 64 producers, as the bench drives the log: each append's value is its number.
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < total) {
          const n = next++
          const r = await log.append(batch([{ value: `v${n}|${payload}` }]))
          assert.equal(r.errorCode, 0)
          if (r.errorCode === 0) offsets[n] = r.baseOffset
        }
      }),
    )
    assert.deepEqual(
      offsets,
      Array.from({ length: total }, (_, i) => BigInt(i)),
      'offsets follow the order of the append calls',
    )
    assert.ok(disk.overlapped > 0, 'some rounds were written while another was in flight')
    assert.ok(log.segments.length > 10, `${log.segments.length} segments`)
    const values = (await readAll(log, 64 * 1024)).map((r) => r.value?.split('|')[0])
    assert.deepEqual(
      values,
      Array.from({ length: total }, (_, i) => `v${i}`),
    )
    await log.close()

    const reopened = await PartitionLog.open(logDir, cfg, {
      disk: new NodeDisk(),
      clock: systemClock,
      hadCleanShutdown: true,
    })
    assert.equal(reopened.logEndOffset, BigInt(total))
    assert.deepEqual(
      (await readAll(reopened, 64 * 1024)).map((r) => r.offset),
      offsets,
    )
    // More appends, then dropped without close: recovery scans, keeps every written record.
    await Promise.all(
      Array.from({ length: 300 }, (_, i) => reopened.append(batch([{ value: `v${total + i}|${payload}` }]))),
    )
    const recovered = await PartitionLog.open(logDir, cfg, { disk: new NodeDisk(), clock: systemClock })
    assert.deepEqual(recovered.recoveryReports, [])
    assert.deepEqual(
      (await readAll(recovered, 64 * 1024)).map((r) => [r.offset, r.value?.split('|')[0]]),
      Array.from({ length: total + 300 }, (_, i) => [BigInt(i), `v${i}`]),
    )
    await reopened.close()
    await recovered.close()
  })
})
