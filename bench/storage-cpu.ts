/**
 * The append path's CPU alone: a partition log whose segment writes and fsyncs cost nothing (names
 * and indexes on SimDisk, log-file writes only counted), driven as bench/storage.ts drives it.
 * Prints wall and process CPU time per append; profile it with --cpu-prof.
 *
 *   node bench/storage-cpu.ts                      # 1 KiB batches, 1 per append, 64 in flight
 *   CASE=16384,1,64 FLUSH=1 node bench/storage-cpu.ts
 *   TAIL=0 node bench/storage-cpu.ts                # without the log's in-memory write tail
 *   HOOK=1 node bench/storage-cpu.ts                # with an onBatch hook, as the broker's logs have
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/storage-cpu.ts && node bench/cpu-profile-top.ts /tmp/prof
 */
import { systemClock } from '../src/io/clock.ts'
import type { Disk, DiskFile } from '../src/io/disk.ts'
import { SimDisk } from '../src/io/sim-disk.ts'
import { encodeBatch } from '../src/protocol/records/index.ts'
import { DEFAULT_LOG_CONFIG } from '../src/storage/log-config.ts'
import { type LogHooks, PartitionLog } from '../src/storage/partition-log.ts'

/** SimDisk for names; log-file writes only counted (no bytes kept), resolved at once. */
class NullDisk extends SimDisk {
  override async open(path: string, options?: Parameters<Disk['open']>[1]): Promise<DiskFile> {
    const f = await super.open(path, options)
    if (!path.endsWith('.log')) return f
    let size = f.size()
    return {
      path: f.path,
      size: () => size,
      read: (i, p, l, o) => f.read(i, p, l, o),
      append: (b) => f.append(b),
      write(buffers, position) {
        let n = 0
        for (const b of buffers) n += b.length
        if (position + n > size) size = position + n
        return Promise.resolve()
      },
      truncate: (s) => f.truncate(s),
      sync: () => Promise.resolve(),
      close: () => f.close(),
    }
  }
}
const [batchBytes, perAppend, inFlight] = (process.env.CASE ?? '1024,1,64').split(',').map(Number) as [
  number,
  number,
  number,
]
/**
 * HOOK=1: an `onBatch` hook reading what the broker's (replication's leader-epoch and producer
 * state) reads of every appended batch: its base offset, last offset, epoch and producer id.
 */
let hookSink = 0n
const hooks: LogHooks = {
  onBatch(h) {
    if (h.partitionLeaderEpoch >= 0 || h.producerId >= 0n)
      hookSink ^= h.baseOffset + BigInt(h.lastOffsetDelta)
  },
}
const disk = new NullDisk()
await disk.mkdir('/d')
const log = await PartitionLog.open(
  '/d/t-0',
  { ...DEFAULT_LOG_CONFIG, segmentBytes: 1 << 30 },
  {
    disk,
    clock: systemClock,
    ...(process.env.TAIL === '0' ? { tailBytesMax: 0 } : {}),
    ...(process.env.HOOK === '1' ? { hooks } : {}),
  },
)
/** A record batch of exactly `batchBytes` (as bench/storage.ts makes them). */
function makeBatch(bytes: number): Buffer {
  const make = (valueBytes: number) =>
    encodeBatch({ records: [{ value: Buffer.alloc(valueBytes, 'v'), timestamp: BigInt(Date.now()) }] })
  let valueBytes = bytes - make(0).length
  valueBytes -= make(valueBytes).length - bytes // the varint lengths grew
  return make(valueBytes)
}
const probe = makeBatch(batchBytes)
const template = Buffer.concat(Array.from({ length: perAppend }, () => probe))
// The log owns an append's buffer (offsets rewritten in place, its write tail may keep a view): a
// buffer is used again only after the appends in flight and 2 MiB more, as bench/storage.ts does.
const pool = Array.from({ length: inFlight + Math.ceil((2 * 1024 * 1024) / template.length) + 1 }, () =>
  Buffer.from(template),
)
const count = Math.ceil((Number(process.env.BENCH_MIB ?? 512) * 1024 * 1024) / template.length)
let issued = 0
const start = performance.now()
const cpu0 = process.cpuUsage()
await Promise.all(
  Array.from({ length: inFlight }, async () => {
    while (issued < count) {
      const buffer = pool[issued++ % pool.length]!
      const r = await log.append(buffer, process.env.FLUSH ? { flush: true } : {})
      if (r.errorCode !== 0) throw new Error('append failed')
    }
  }),
)
const ms = performance.now() - start
if (hookSink === -1n) console.log('') // keep the hook's reads
const cpu = process.cpuUsage(cpu0)
console.log(
  `${count} appends of ${template.length} B: ${((ms * 1000) / count).toFixed(2)} us/append, ${((count * template.length) / 1048576 / (ms / 1000)).toFixed(0)} MB/s, cpu ${((cpu.user + cpu.system) / count).toFixed(2)} us/append`,
)
