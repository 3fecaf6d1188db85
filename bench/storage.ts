/**
 * Storage benchmark: append throughput with 1 KiB and 16 KiB batches, without fsync and with
 * group-commit fsync, beside the raw sequential write bandwidth of the same disk measured in the
 * same run (interleaved, median of three); then sequential read throughput. Prints figures only.
 *
 *   npm run bench:storage        (BENCH_MIB=128 by default: the volume per case)
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { systemClock } from '../src/io/clock.ts'
import { NodeDisk } from '../src/io/node-disk.ts'
import { CRC32C_IMPLEMENTATION, encodeBatch, LOG_OVERHEAD } from '../src/protocol/records/index.ts'
import { DEFAULT_LOG_CONFIG } from '../src/storage/log-config.ts'
import { PartitionLog } from '../src/storage/partition-log.ts'

const MIB = 1024 * 1024
const totalMiB = Number(process.env.BENCH_MIB ?? 128)
const disk = new NodeDisk()

function mbps(bytes: number, ms: number): number {
  return bytes / MIB / (ms / 1000)
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

/**
 * Raw sequential 1 MiB writes with fs/promises to a new file. `fsync`: an fdatasync after every
 * write, the best a durable sequential writer does with 1 MiB groups.
 */
async function rawWrite(dir: string, bytes: number, fsync: boolean): Promise<number> {
  settleDisk()
  const path = join(dir, `raw-${fsync}.bin`)
  const fh = await open(path, 'w')
  const chunk = Buffer.alloc(MIB, 7)
  const start = performance.now()
  for (let position = 0; position < bytes; position += chunk.length) {
    await fh.write(chunk, 0, chunk.length, position)
    if (fsync) await fh.datasync()
  }
  const ms = performance.now() - start
  await fh.close()
  await rm(path)
  return mbps(bytes, ms)
}

/** Write back every dirty page first, so one case's page cache does not throttle the next. */
function settleDisk(): void {
  execFileSync('sync')
}

/** A record batch of exactly `batchBytes` (uncompressed, one value filling it). */
function makeBatch(batchBytes: number): Buffer {
  const probe = encodeBatch({ records: [{ value: Buffer.alloc(0), timestamp: BigInt(Date.now()) }] })
  let valueBytes = batchBytes - probe.length
  let b = encodeBatch({ records: [{ value: Buffer.alloc(valueBytes, 'v'), timestamp: BigInt(Date.now()) }] })
  valueBytes -= b.length - batchBytes // the varint lengths grew
  b = encodeBatch({ records: [{ value: Buffer.alloc(valueBytes, 'v'), timestamp: BigInt(Date.now()) }] })
  return b
}

interface Case {
  batchBytes: number
  /** Batches per append call: 1 as a producer sends, many as a follower appends a fetch. */
  batchesPerAppend: number
  fsync: boolean
  inFlight: number
}

interface Result extends Case {
  appendMBps: number
  appendsPerSec: number
  log: PartitionLog
}

let logSeq = 0

async function appendCase(dir: string, c: Case, bytes: number): Promise<Result> {
  settleDisk()
  const log = await PartitionLog.open(join(dir, `bench-${logSeq++}`), DEFAULT_LOG_CONFIG, {
    disk,
    clock: systemClock,
  })
  const one = makeBatch(c.batchBytes)
  const template = Buffer.concat(Array.from({ length: c.batchesPerAppend }, () => one))
  // The log rewrites base offsets in place: each append in flight needs its own buffer.
  const pool = Array.from({ length: c.inFlight * 2 }, () => Buffer.from(template))
  const count = Math.ceil(bytes / template.length)
  let issued = 0
  const start = performance.now()
  const producer = async (slot: number) => {
    let buffer = pool[slot]!
    while (issued < count) {
      issued++
      const r = await log.append(buffer, c.fsync ? { flush: true } : {})
      if (r.errorCode !== 0) throw new Error(`append failed: ${r.errorCode}`)
      buffer = buffer === pool[slot] ? pool[slot + c.inFlight]! : pool[slot]!
    }
  }
  await Promise.all(Array.from({ length: c.inFlight }, (_, i) => producer(i)))
  const ms = performance.now() - start
  await log.flush()
  return { ...c, appendMBps: mbps(count * template.length, ms), appendsPerSec: count / (ms / 1000), log }
}

/** Read the whole log from the start in `maxBytes` fetches, as a consumer catching up. */
async function readCase(log: PartitionLog, maxBytes: number): Promise<number> {
  let offset = log.logStartOffset
  let bytes = 0
  const start = performance.now()
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, maxBytes)
    if (r.errorCode !== 0 || !('records' in r) || r.records.length === 0) break
    bytes += r.records.length
    let at = 0
    while (at < r.records.length) {
      offset = r.records.readBigInt64BE(at) + BigInt(r.records.readInt32BE(at + 23)) + 1n
      at += LOG_OVERHEAD + r.records.readInt32BE(at + 8)
    }
  }
  return mbps(bytes, performance.now() - start)
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-storage-'))
  const bytes = totalMiB * MIB
  const cases: Case[] = [
    { batchBytes: 1024, batchesPerAppend: 1, fsync: false, inFlight: 64 },
    { batchBytes: 1024, batchesPerAppend: 64, fsync: false, inFlight: 8 },
    { batchBytes: 16 * 1024, batchesPerAppend: 1, fsync: false, inFlight: 64 },
    { batchBytes: 1024, batchesPerAppend: 1, fsync: true, inFlight: 64 },
    { batchBytes: 1024, batchesPerAppend: 1, fsync: true, inFlight: 1024 },
    { batchBytes: 1024, batchesPerAppend: 64, fsync: true, inFlight: 64 },
    { batchBytes: 16 * 1024, batchesPerAppend: 1, fsync: true, inFlight: 64 },
    { batchBytes: 16 * 1024, batchesPerAppend: 1, fsync: true, inFlight: 1024 },
  ]
  try {
    console.log(`storage bench: ${totalMiB} MiB per case, crc32c ${CRC32C_IMPLEMENTATION}, ${dir}`)
    const rawNoSync: number[] = []
    const rawSync: number[] = []
    const results: Result[] = []
    const third = Math.ceil(cases.length / 3)
    for (let round = 0; round < 3; round++) {
      rawNoSync.push(await rawWrite(dir, bytes, false))
      rawSync.push(await rawWrite(dir, bytes, true))
      for (const c of cases.slice(round * third, (round + 1) * third))
        results.push(await appendCase(dir, c, bytes))
    }
    const raw0 = median(rawNoSync)
    const raw1 = median(rawSync)
    const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ')
    console.log(
      `raw sequential write, 1 MiB writes, no fsync:    ${raw0.toFixed(0)} MB/s (median of ${list(rawNoSync)})`,
    )
    console.log(
      `raw sequential write, 1 MiB writes, fsync each: ${raw1.toFixed(0)} MB/s (median of ${list(rawSync)})`,
    )
    console.log('')
    console.log('batch   batches/append  in flight  fsync         append MB/s  appends/s  % of raw (target)')
    for (const r of results) {
      const raw = r.fsync ? raw1 : raw0
      console.log(
        [
          `${r.batchBytes / 1024} KiB`.padEnd(7),
          String(r.batchesPerAppend).padStart(14),
          String(r.inFlight).padStart(10),
          (r.fsync ? 'group commit' : 'none').padStart(13),
          r.appendMBps.toFixed(0).padStart(12),
          r.appendsPerSec.toFixed(0).padStart(10),
          `${((100 * r.appendMBps) / raw).toFixed(0)}% (>= ${r.fsync ? 50 : 70}%)`.padStart(18),
        ].join(' '),
      )
    }
    console.log('')
    for (const r of results.filter((x) => !x.fsync && x.batchesPerAppend === 1)) {
      console.log(
        `read, ${r.batchBytes / 1024} KiB batches, 1 MiB fetches: ${(await readCase(r.log, MIB)).toFixed(0)} MB/s`,
      )
    }
    for (const r of results) await r.log.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

await main()
