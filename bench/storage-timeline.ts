/**
 * Where a storage bench case's time goes: one case of bench/storage.ts (a closed loop of appends
 * on NodeDisk), with every log-file write's issue and completion, every fsync's start and end and
 * every append's call and answer stamped. Prints the append MB/s, the share of the run with at
 * least 1, 2 and 3 writes in flight, the idle gaps between writes, the write latency percentiles,
 * MB/s per 10 ms and a slice of the timeline from the middle of the run (`A`/`R`: appends called
 * and answered since the previous event; `W`/`D`: a write issued and completed; `S`/`E`: an fsync
 * started and ended).
 *
 *   node bench/storage-timeline.ts                          # 16 KiB batches, 1 per append, 64 in flight
 *   CASE=1024,1,1024 FLUSH=1 node bench/storage-timeline.ts # group commit
 *   EARLY=524288 ROUNDS=2 SPAN_MS=1 node bench/storage-timeline.ts
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { systemClock } from '../src/io/clock.ts'
import type { Disk, DiskFile } from '../src/io/disk.ts'
import { NodeDisk } from '../src/io/node-disk.ts'
import { encodeBatch } from '../src/protocol/records/index.ts'
import { DEFAULT_LOG_CONFIG } from '../src/storage/log-config.ts'
import { PartitionLog } from '../src/storage/partition-log.ts'

const [batchBytes, perAppend, inFlight] = (process.env.CASE ?? '16384,1,64').split(',').map(Number) as [
  number,
  number,
  number,
]
const flush = process.env.FLUSH === '1'
type Kind = 'A' | 'R' | 'W' | 'D' | 'S' | 'E'
const times: number[] = []
const kinds: Kind[] = []
const sizes: number[] = []
function stamp(kind: Kind, bytes = 0): void {
  times.push(performance.now())
  kinds.push(kind)
  sizes.push(bytes)
}

/** NodeDisk whose log-file writes and fsyncs are stamped. */
class StampingDisk extends NodeDisk {
  override async open(path: string, options?: Parameters<Disk['open']>[1]): Promise<DiskFile> {
    const f = await super.open(path, options)
    if (!path.endsWith('.log')) return f
    return {
      path: f.path,
      size: () => f.size(),
      read: (into, position, length, intoOffset) => f.read(into, position, length, intoOffset),
      append: (buffers) => f.append(buffers),
      write(buffers, position) {
        let n = 0
        for (const b of buffers) n += b.length
        stamp('W', n)
        return f.write(buffers, position).then(() => stamp('D', n))
      },
      truncate: (size) => f.truncate(size),
      sync() {
        stamp('S')
        return f.sync().then(() => stamp('E'))
      },
      close: () => f.close(),
    }
  }
}

function makeBatch(bytes: number): Buffer {
  const make = (valueBytes: number) =>
    encodeBatch({ records: [{ value: Buffer.alloc(valueBytes, 'v'), timestamp: BigInt(Date.now()) }] })
  let valueBytes = bytes - make(0).length
  valueBytes -= make(valueBytes).length - bytes
  return make(valueBytes)
}

execFileSync('sync') // as bench/storage.ts: no earlier dirty pages throttle this run
const dir = await mkdtemp(join(tmpdir(), 'weir-storage-timeline-'))
try {
  const log = await PartitionLog.open(join(dir, 't-0'), DEFAULT_LOG_CONFIG, {
    disk: new StampingDisk(),
    clock: systemClock,
    ...(process.env.ROUNDS === undefined ? {} : { writeRoundsInFlight: Number(process.env.ROUNDS) }),
    ...(process.env.EARLY === undefined ? {} : { earlyRoundBytes: Number(process.env.EARLY) }),
  })
  const one = makeBatch(batchBytes)
  const template = Buffer.concat(Array.from({ length: perAppend }, () => one))
  const pool = Array.from({ length: inFlight + Math.ceil((2 << 20) / template.length) + 1 }, () =>
    Buffer.from(template),
  )
  const count = Math.ceil((Number(process.env.BENCH_MIB ?? 256) << 20) / template.length)
  let issued = 0
  const start = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (issued < count) {
        const buffer = pool[issued++ % pool.length]!
        stamp('A')
        const r = await log.append(buffer, flush ? { flush: true } : {})
        stamp('R')
        if (r.errorCode !== 0) throw new Error(`append failed: ${r.errorCode}`)
      }
    }),
  )
  const ms = performance.now() - start
  await log.close()
  report(start, ms, count * template.length)
} finally {
  await rm(dir, { recursive: true, force: true })
}

function report(start: number, ms: number, bytes: number): void {
  console.log(`${(bytes / 1048576 / (ms / 1000)).toFixed(0)} MB/s appended (${ms.toFixed(0)} ms)`)
  let depth = 0
  let last = start
  const atLeast = [0, 0, 0, 0]
  const idle: number[] = []
  const issuedAt: number[] = []
  const latencies: number[] = []
  const perBucket = new Map<number, number>()
  for (let i = 0; i < times.length; i++) {
    const t = times[i]!
    const k = kinds[i]!
    if (k !== 'W' && k !== 'D') continue
    for (let d = 1; d <= Math.min(depth, 3); d++) atLeast[d]! += t - last
    if (depth === 0 && t - last > 0.05) idle.push(Math.round((t - last) * 1000))
    last = t
    if (k === 'W') {
      depth++
      issuedAt.push(t)
    } else {
      depth--
      latencies.push(Math.round((t - issuedAt.shift()!) * 1000))
      const b = Math.floor((t - start) / 10)
      perBucket.set(b, (perBucket.get(b) ?? 0) + sizes[i]!)
    }
  }
  const writes = kinds.filter((k) => k === 'W').length
  const written = sizes.reduce((a, b) => a + b, 0) / 2
  const pct = (x: number) => `${((100 * x) / ms).toFixed(0)}%`
  console.log(
    `${writes} writes of ${(written / Math.max(1, writes) / 1024).toFixed(0)} KiB on average; ` +
      `>= 1 in flight ${pct(atLeast[1]!)}, >= 2 ${pct(atLeast[2]!)}, >= 3 ${pct(atLeast[3]!)} of the run`,
  )
  idle.sort((a, b) => b - a)
  console.log(
    `no write in flight for > 50 us: ${idle.length} times, ${idle.reduce((a, b) => a + b, 0)} us in all; longest ${idle.slice(0, 8).join(' ')} us`,
  )
  latencies.sort((a, b) => a - b)
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]
  console.log(
    `write issue to completion, us: p10 ${q(0.1)} p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} max ${latencies.at(-1)}`,
  )
  const buckets = [...perBucket.entries()].sort((a, b) => a[0] - b[0])
  console.log(`MB/s written per 10 ms: ${buckets.map(([, n]) => Math.round(n / 1048576 / 0.01)).join(' ')}`)
  const spanMs = Number(process.env.SPAN_MS ?? 2)
  const mid = times.findIndex((t) => t - start >= ms / 2)
  const t0 = times[mid] ?? start
  let calls = 0
  let answers = 0
  const lines: string[] = []
  for (let i = Math.max(0, mid); i < times.length && times[i]! - t0 < spanMs; i++) {
    const k = kinds[i]!
    if (k === 'A') calls++
    else if (k === 'R') answers++
    else {
      const size = k === 'W' || k === 'D' ? ` ${(sizes[i]! / 1024).toFixed(0)} KiB` : ''
      lines.push(`${((times[i]! - t0) * 1000).toFixed(0).padStart(7)} us  A${calls} R${answers}  ${k}${size}`)
      calls = 0
      answers = 0
    }
  }
  console.log(lines.join('\n'))
}
