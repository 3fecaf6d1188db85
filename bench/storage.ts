/**
 * Storage benchmark: append throughput with 1 KiB and 16 KiB batches, without fsync and with
 * group-commit fsync, beside raw sequential writes to the same disk in the same run; then sequential
 * read throughput. Every workload (raw and log) runs once per round, in an order shuffled anew each
 * round, and the figures are medians with their min-max spread. Prints only.
 *
 *   npm run bench:storage
 *   BENCH_MIB=256 BENCH_ROUNDS=5 BENCH_CASES=1k-x1-q64,16k-x1-q64-gc BENCH_RAW=0 node bench/storage.ts
 *
 * (defaults shown; 256 MiB per workload keeps the fastest raw run above 50 ms, about 90 s in all)
 *
 * Two raw baselines, both printed:
 * - `1 MiB` (the original one): 1 MiB writes, and with fsync an fdatasync after every 1 MiB. The
 *   disk's best sequential figure, whatever the workload.
 * - `matched`: a raw writer given the same window as the log case: the case's bytes in flight
 *   (in flight x bytes per append) written, awaited, in writes of at most 1 MiB (the log's largest
 *   write round), and with fsync followed by one fdatasync, so that it makes as many bytes durable
 *   per fsync as the best group commit can when that many bytes are in flight (a fixed policy, not
 *   what the log happened to achieve). The log cannot coalesce more than its window into one write
 *   or one fsync, so this is its ceiling on this disk; the 1 MiB ratio mixes the log's costs with
 *   the client's window. (Single 4 and 16 MiB writes before an fdatasync measured 290-500 MB/s in
 *   most runs here, against ~1800 for the same bytes in 1 MiB writes: not the log's pattern.)
 * - `raw+CRC` (without fsync): the matched writer that also computes the CRC32C of every batch-sized
 *   slice before each write: the one check a validating log cannot skip (Kafka's LogValidator does
 *   it too), so the floor of any log's CPU per byte here. Column `% of raw+CRC`.
 * Every raw writer runs twice: its writes through libuv's pool (`fh.write`, awaited) and on the
 * calling thread (`fs.writeSync`; `[on loop]`), and each ratio is taken against the faster of the
 * two in that round. The log makes small writes on the calling thread (NodeDisk's
 * `syncWriteBytesMax`), and here a pool write costs ~40 us more than the same write made at once
 * (64 KiB: ~60 against ~19 us): a pool-only baseline flattered the log's small-window cases.
 * Ratios are taken per round (log / raw of the same round), then the median. `cpu` is the process's
 * CPU time (every thread: the main one and libuv's, which copy the bytes into the page cache) over
 * the workload's wall time, in % of one core: near 200% the run was bound by this 2-core machine's
 * CPU, not by its disk. `2 writes`: the share of the log's writes issued while its previous one was
 * still in flight (two write rounds in flight).
 */
import { execFileSync } from 'node:child_process'
import { writeSync } from 'node:fs'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { systemClock } from '../src/io/clock.ts'
import type { Disk, DiskFile } from '../src/io/disk.ts'
import { NodeDisk } from '../src/io/node-disk.ts'
import {
  CRC_START,
  CRC32C_IMPLEMENTATION,
  crc32cRange,
  encodeBatch,
  LOG_OVERHEAD,
} from '../src/protocol/records/index.ts'
import { DEFAULT_LOG_CONFIG } from '../src/storage/log-config.ts'
import { PartitionLog } from '../src/storage/partition-log.ts'

const MIB = 1024 * 1024
const KIB = 1024
const totalMiB = Number(process.env.BENCH_MIB ?? 256)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const only = process.env.BENCH_CASES?.split(',').filter((s) => s !== '')
const withRaw = process.env.BENCH_RAW !== '0'
/**
 * `PartitionLogOptions.earlyRoundBytes` variants to compare (bytes, comma-separated; each log case
 * runs once per variant in every round, named with an `-e<KiB>k` suffix). Unset: the log's default.
 */
const earlyVariants = process.env.BENCH_EARLY?.split(',')
  .filter((s) => s !== '')
  .map(Number)
/**
 * `NodeDisk`'s `syncWriteBytesMax` variants (bytes, 0: every write in libuv's pool), as BENCH_EARLY:
 * `-s<KiB>k`. Unset: NodeDisk's default (writes up to 64 KiB on the event-loop thread).
 */
const syncWriteVariants = process.env.BENCH_SYNC_WRITE?.split(',')
  .filter((s) => s !== '')
  .map(Number)
/** `PartitionLogOptions.writeRoundsInFlight` variants, as BENCH_EARLY: `-w<n>`. */
const roundsVariants = process.env.BENCH_WRITE_ROUNDS?.split(',')
  .filter((s) => s !== '')
  .map(Number)
/** `PartitionLogOptions.flushRoundBytesFirst` variants (bytes), as BENCH_EARLY: `-f<KiB>k`. */
const flushFirstVariants = process.env.BENCH_FLUSH_FIRST?.split(',')
  .filter((s) => s !== '')
  .map(Number)
/** `PartitionLogOptions.tailBytesMax` variants (bytes, 0: no write tail), as BENCH_EARLY: `-t<KiB>k`. */
const tailVariants = process.env.BENCH_TAIL?.split(',')
  .filter((s) => s !== '')
  .map(Number)

function mbps(bytes: number, ms: number): number {
  return bytes / MIB / (ms / 1000)
}

/** `xs` in an order drawn from `seed` (a 32-bit LCG, Fisher-Yates): the same for every run. */
function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs]
  let state = seed >>> 0
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    const j = state % (i + 1)
    const t = out[i]!
    out[i] = out[j]!
    out[j] = t
  }
  return out
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** `median (min-max)`. */
function spread(xs: readonly number[], digits = 0, unit = ''): string {
  const f = (x: number) => `${x.toFixed(digits)}${unit}`
  return `${f(median(xs))} (${f(Math.min(...xs))}-${f(Math.max(...xs))})`
}

/**
 * Counts the log files' writes and fsyncs (one call through, no extra promise); the index files'
 * (written through every MiB or flush, synced at a roll) pass uncounted, so `B/write` and
 * `B/fsync` stay the log file's.
 */
class CountingDisk implements Disk {
  readonly #inner: NodeDisk
  constructor(syncWriteBytesMax?: number) {
    this.#inner = new NodeDisk(syncWriteBytesMax === undefined ? {} : { syncWriteBytesMax })
  }
  writes = 0
  writtenBytes = 0
  syncs = 0
  /** Positional writes in flight now, and writes issued while another was in flight. */
  inFlight = 0
  overlapped = 0

  reset(): void {
    this.writes = this.writtenBytes = this.syncs = this.overlapped = 0
  }

  async open(path: string, options?: Parameters<Disk['open']>[1]): Promise<DiskFile> {
    const file = await this.#inner.open(path, options)
    if (!path.endsWith('.log')) return file
    const counts = this
    return {
      path: file.path,
      size: () => file.size(),
      read: (into, position, length, intoOffset) => file.read(into, position, length, intoOffset),
      append(buffers) {
        counts.writes++
        for (const b of buffers) counts.writtenBytes += b.length
        return file.append(buffers)
      },
      write(buffers, position) {
        counts.writes++
        for (const b of buffers) counts.writtenBytes += b.length
        if (counts.inFlight++ > 0) counts.overlapped++
        return file.write(buffers, position).finally(() => {
          counts.inFlight--
        })
      },
      truncate: (size) => file.truncate(size),
      sync() {
        counts.syncs++
        return file.sync()
      },
      close: () => file.close(),
    }
  }
  readFile = (path: string) => this.#inner.readFile(path)
  rename = (from: string, to: string) => this.#inner.rename(from, to)
  remove = (path: string) => this.#inner.remove(path)
  removeTree = (path: string) => this.#inner.removeTree(path)
  list = (dir: string) => this.#inner.list(dir)
  mkdir = (path: string) => this.#inner.mkdir(path)
  syncDir = (path: string) => this.#inner.syncDir(path)
  exists = (path: string) => this.#inner.exists(path)
  stat = (path: string) => this.#inner.stat(path)
}

const disks = new Map<number | undefined, CountingDisk>()
/** The counting disk for a `syncWriteBytesMax` variant (undefined: NodeDisk's default). */
function diskFor(syncWriteBytesMax: number | undefined): CountingDisk {
  let d = disks.get(syncWriteBytesMax)
  if (d === undefined) {
    d = new CountingDisk(syncWriteBytesMax)
    disks.set(syncWriteBytesMax, d)
  }
  return d
}

/**
 * Before each workload: collect the last one's garbage (so that its collection is not timed in
 * this one), then write back every dirty page, so that its page cache does not throttle this one.
 */
function settleDisk(): void {
  collectGarbage()
  execFileSync('sync')
}

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

/** The largest raw write: the log's largest write round (WRITE_ROUND_BYTES_MAX). */
const RAW_WRITE_BYTES_MAX = MIB

/**
 * Sequential writes to a new file, `windowBytes` at a time in writes of at most
 * RAW_WRITE_BYTES_MAX, each awaited (`onLoop`: made on the calling thread); with `fsync` an
 * fdatasync (in libuv's pool) after each window.
 */
async function rawWrite(
  dir: string,
  bytes: number,
  windowBytes: number,
  fsync: boolean,
  crcBatchBytes = 0,
  onLoop = false,
): Promise<number> {
  settleDisk()
  const path = join(dir, `raw-${windowBytes}-${fsync}-${crcBatchBytes}-${onLoop}.bin`)
  const fh = await open(path, 'w')
  const writeBytes = Math.min(windowBytes, RAW_WRITE_BYTES_MAX)
  const chunk = Buffer.alloc(writeBytes, 7)
  let crcs = 0
  const cpu0 = process.cpuUsage()
  const start = performance.now()
  for (let position = 0; position < bytes; position += windowBytes) {
    for (let at = 0; at < windowBytes; at += writeBytes) {
      // The one check a log cannot skip: each batch's CRC32C (from its attributes field on).
      for (let b = 0; crcBatchBytes > 0 && b < writeBytes; b += crcBatchBytes)
        crcs ^= crc32cRange(chunk, b + CRC_START, b + crcBatchBytes)
      if (onLoop) writeSync(fh.fd, chunk, 0, writeBytes, position + at)
      else await fh.write(chunk, 0, writeBytes, position + at)
    }
    if (fsync) await fh.datasync()
  }
  if (crcs === -1) console.log('') // keep the CRCs
  const ms = performance.now() - start
  rawCpu.push(cpuShare(cpu0, ms))
  await fh.close()
  await rm(path)
  return mbps(bytes, ms)
}

/** Process CPU (every thread: the main one and libuv's) since `from`, as % of one core over `ms`. */
function cpuShare(from: NodeJS.CpuUsage, ms: number): number {
  const used = process.cpuUsage(from)
  return (used.user + used.system) / 10 / ms
}

/** `cpuShare` of the last raw run (read by the caller beside its MB/s). */
const rawCpu: number[] = []

/** A record batch of exactly `batchBytes` (uncompressed, one value filling it). */
function makeBatch(batchBytes: number): Buffer {
  const probe = encodeBatch({ records: [{ value: Buffer.alloc(0), timestamp: BigInt(Date.now()) }] })
  let valueBytes = batchBytes - probe.length
  let b = encodeBatch({ records: [{ value: Buffer.alloc(valueBytes, 'v'), timestamp: BigInt(Date.now()) }] })
  valueBytes -= b.length - batchBytes // the varint lengths grew
  b = encodeBatch({ records: [{ value: Buffer.alloc(valueBytes, 'v'), timestamp: BigInt(Date.now()) }] })
  return b
}

/**
 * Buffers for the appends, used in turn. The log owns an append's buffer from then on: it rewrites
 * the base offset in place and its write tail may keep the bytes as a view to answer reads. So a
 * buffer is used again only after the appends in flight and 2 MiB more (past the tail's 1 MiB).
 */
function appendPool(template: Buffer, inFlight: number): Buffer[] {
  const n = inFlight + Math.ceil((2 * MIB) / template.length) + 1
  return Array.from({ length: n }, () => Buffer.from(template))
}

interface Case {
  batchBytes: number
  /** Batches per append call: 1 as a producer sends, many as a follower appends a fetch. */
  batchesPerAppend: number
  fsync: boolean
  inFlight: number
  /** PartitionLogOptions.earlyRoundBytes (undefined: the default). */
  earlyRoundBytes?: number
  /** PartitionLogOptions.tailBytesMax (undefined: the default). */
  tailBytesMax?: number
  /** NodeDisk's syncWriteBytesMax (undefined: the default). */
  syncWriteBytesMax?: number
  /** PartitionLogOptions.writeRoundsInFlight (undefined: the default). */
  writeRoundsInFlight?: number
  /** PartitionLogOptions.flushRoundBytesFirst (undefined: the default). */
  flushRoundBytesFirst?: number
}

function caseName(c: Case): string {
  const early = c.earlyRoundBytes === undefined ? '' : `-e${c.earlyRoundBytes / KIB}k`
  const tail = c.tailBytesMax === undefined ? '' : `-t${c.tailBytesMax / KIB}k`
  const sync = c.syncWriteBytesMax === undefined ? '' : `-s${c.syncWriteBytesMax / KIB}k`
  const rounds = c.writeRoundsInFlight === undefined ? '' : `-w${c.writeRoundsInFlight}`
  const flushFirst = c.flushRoundBytesFirst === undefined ? '' : `-f${c.flushRoundBytesFirst / KIB}k`
  return `${c.batchBytes / KIB}k-x${c.batchesPerAppend}-q${c.inFlight}${c.fsync ? '-gc' : ''}${early}${tail}${sync}${rounds}${flushFirst}`
}

/** The matched raw writer's bytes per write (and per fsync): the case's bytes in flight. */
function windowBytes(c: Case): number {
  return c.batchBytes * c.batchesPerAppend * c.inFlight
}

interface LogRun {
  appendMBps: number
  /** Process CPU while appending, % of one core (main thread and libuv's, which copy to the page cache). */
  cpuPercent: number
  appendsPerSec: number
  bytesPerWrite: number
  /** Share of the log's writes issued while its previous write was still in flight. */
  overlappedPercent: number
  bytesPerSync: number
  readMBps: number | null
}

let logSeq = 0

async function appendCase(dir: string, c: Case, bytes: number): Promise<LogRun> {
  settleDisk()
  const logDir = join(dir, `bench-${logSeq++}`)
  const disk = diskFor(c.syncWriteBytesMax)
  const log = await PartitionLog.open(logDir, DEFAULT_LOG_CONFIG, {
    disk,
    clock: systemClock,
    ...(c.earlyRoundBytes === undefined ? {} : { earlyRoundBytes: c.earlyRoundBytes }),
    ...(c.tailBytesMax === undefined ? {} : { tailBytesMax: c.tailBytesMax }),
    ...(c.writeRoundsInFlight === undefined ? {} : { writeRoundsInFlight: c.writeRoundsInFlight }),
    ...(c.flushRoundBytesFirst === undefined ? {} : { flushRoundBytesFirst: c.flushRoundBytesFirst }),
  })
  const one = makeBatch(c.batchBytes)
  const template = Buffer.concat(Array.from({ length: c.batchesPerAppend }, () => one))
  const pool = appendPool(template, c.inFlight)
  const count = Math.ceil(bytes / template.length)
  let issued = 0
  disk.reset()
  const cpu0 = process.cpuUsage()
  const start = performance.now()
  const producer = async () => {
    while (issued < count) {
      const buffer = pool[issued++ % pool.length]!
      const r = await log.append(buffer, c.fsync ? { flush: true } : {})
      if (r.errorCode !== 0) throw new Error(`append failed: ${r.errorCode}`)
    }
  }
  await Promise.all(Array.from({ length: c.inFlight }, producer))
  const ms = performance.now() - start
  // The appends' CPU only (it once also counted the read below, over the appends' wall time).
  const cpuPercent = cpuShare(cpu0, ms)
  const { writes, writtenBytes, syncs, overlapped } = disk
  await log.flush()
  const readMBps = !c.fsync && c.batchesPerAppend === 1 ? await readCase(log, MIB) : null
  await log.close()
  await rm(logDir, { recursive: true, force: true })
  return {
    appendMBps: mbps(count * template.length, ms),
    cpuPercent,
    appendsPerSec: count / (ms / 1000),
    bytesPerWrite: writtenBytes / Math.max(1, writes),
    overlappedPercent: (100 * overlapped) / Math.max(1, writes),
    bytesPerSync: syncs === 0 ? 0 : writtenBytes / syncs,
    readMBps,
  }
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

interface RawWorkload {
  /** Bytes between fdatasyncs (with `fsync`), written in writes of at most RAW_WRITE_BYTES_MAX. */
  writeBytes: number
  fsync: boolean
  /** With a CRC32C of every `crcBatchBytes` slice before each write (0: none). */
  crcBatchBytes?: number
  /** Writes made on the calling thread (fs.writeSync) instead of in libuv's pool. */
  onLoop?: boolean
}

function sizeName(bytes: number): string {
  return bytes >= MIB ? `${bytes / MIB} MiB` : `${bytes / KIB} KiB`
}

function rawName(r: RawWorkload): string {
  const crc = (r.crcBatchBytes ?? 0) > 0 ? ` + CRC32C per ${sizeName(r.crcBatchBytes!)}` : ''
  const writes = `${sizeName(Math.min(r.writeBytes, RAW_WRITE_BYTES_MAX))} writes${crc}`
  const loop = r.onLoop === true ? ' [on loop]' : ''
  if (!r.fsync) return writes + loop
  return r.writeBytes > RAW_WRITE_BYTES_MAX
    ? `${writes}, fdatasync per ${sizeName(r.writeBytes)}${loop}`
    : `${writes} + fdatasync each${loop}`
}

function rawKey(r: RawWorkload): string {
  return `${r.writeBytes}/${r.fsync}/${r.crcBatchBytes ?? 0}/${r.onLoop === true}`
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-bench-storage-'))
  const bytes = totalMiB * MIB
  const allCases: Case[] = [
    { batchBytes: 1024, batchesPerAppend: 1, fsync: false, inFlight: 64 },
    { batchBytes: 1024, batchesPerAppend: 64, fsync: false, inFlight: 8 },
    { batchBytes: 16 * 1024, batchesPerAppend: 1, fsync: false, inFlight: 64 },
    { batchBytes: 1024, batchesPerAppend: 1, fsync: true, inFlight: 64 },
    { batchBytes: 1024, batchesPerAppend: 1, fsync: true, inFlight: 1024 },
    { batchBytes: 1024, batchesPerAppend: 64, fsync: true, inFlight: 64 },
    { batchBytes: 16 * 1024, batchesPerAppend: 1, fsync: true, inFlight: 64 },
    { batchBytes: 16 * 1024, batchesPerAppend: 1, fsync: true, inFlight: 1024 },
  ]
  const cases = allCases
    .filter((c) => only === undefined || only.includes(caseName(c)))
    .flatMap((c) =>
      earlyVariants === undefined ? [c] : earlyVariants.map((e) => ({ ...c, earlyRoundBytes: e })),
    )
    .flatMap((c) => (tailVariants === undefined ? [c] : tailVariants.map((t) => ({ ...c, tailBytesMax: t }))))
    .flatMap((c) =>
      syncWriteVariants === undefined ? [c] : syncWriteVariants.map((s) => ({ ...c, syncWriteBytesMax: s })),
    )
    .flatMap((c) =>
      roundsVariants === undefined ? [c] : roundsVariants.map((w) => ({ ...c, writeRoundsInFlight: w })),
    )
    .flatMap((c) =>
      flushFirstVariants === undefined || !c.fsync
        ? [c]
        : flushFirstVariants.map((f) => ({ ...c, flushRoundBytesFirst: f })),
    )
  const original: RawWorkload[] = [
    { writeBytes: MIB, fsync: false },
    { writeBytes: MIB, fsync: true },
  ]
  const raws = new Map<string, RawWorkload>()
  if (withRaw) {
    const add = (r: RawWorkload) => {
      for (const onLoop of [false, true]) raws.set(rawKey({ ...r, onLoop }), { ...r, onLoop })
    }
    for (const r of [...original, ...cases.map((c) => ({ writeBytes: windowBytes(c), fsync: c.fsync }))])
      add(r)
    // Without fsync, the matched writer plus the batches' CRCs: what a validating log cannot go below.
    for (const c of cases) {
      if (!c.fsync) add({ writeBytes: windowBytes(c), fsync: false, crcBatchBytes: c.batchBytes })
    }
  }
  type Job = { kind: 'raw'; raw: RawWorkload } | { kind: 'log'; c: Case }
  const jobs: Job[] = [
    ...[...raws.values()].map((raw): Job => ({ kind: 'raw', raw })),
    ...cases.map((c): Job => ({ kind: 'log', c })),
  ]
  const rawRuns = new Map<string, number[]>()
  const rawCpuRuns = new Map<string, number[]>()
  /** Per round, the faster of a raw writer's two ways (pool, on loop). */
  const bestRaw = (r: RawWorkload): number[] => {
    const pool = rawRuns.get(rawKey({ ...r, onLoop: false }))!
    const loop = rawRuns.get(rawKey({ ...r, onLoop: true }))!
    return pool.map((x, i) => Math.max(x, loop[i]!))
  }
  const logRuns = new Map<Case, LogRun[]>()
  try {
    console.log(
      `storage bench: ${totalMiB} MiB per workload, ${rounds} rounds interleaved, crc32c ${CRC32C_IMPLEMENTATION}, ${dir}`,
    )
    for (let round = 0; round < rounds; round++) {
      // A new order each round (seeded: the same for every run). A rotation kept each workload's
      // predecessor, and what runs just before matters: raw 1 MiB writes always followed the
      // 16 KiB x 1024 group-commit case and measured 630-880 MB/s, 4000 when shuffled.
      for (const job of shuffled(jobs, round + 1)) {
        if (job.kind === 'raw') {
          const key = rawKey(job.raw)
          const runs = rawRuns.get(key) ?? []
          const { writeBytes, fsync, crcBatchBytes, onLoop } = job.raw
          runs.push(await rawWrite(dir, bytes, writeBytes, fsync, crcBatchBytes, onLoop))
          rawRuns.set(key, runs)
          rawCpuRuns.set(key, [...(rawCpuRuns.get(key) ?? []), rawCpu.pop()!])
        } else {
          const runs = logRuns.get(job.c) ?? []
          runs.push(await appendCase(dir, job.c, bytes))
          logRuns.set(job.c, runs)
        }
      }
      process.stderr.write(`round ${round + 1}/${rounds} done\n`)
    }
    if (withRaw) {
      console.log('')
      console.log('raw sequential write (MB/s, median (min-max); process CPU, % of one core)')
      for (const r of raws.values()) {
        const tag = original.some((o) => rawKey({ ...o, onLoop: r.onLoop === true }) === rawKey(r))
          ? ' [original baseline]'
          : ''
        const cpu = `cpu ${median(rawCpuRuns.get(rawKey(r))!).toFixed(0)}%`
        console.log(
          `  ${rawName(r).padEnd(46)} ${spread(rawRuns.get(rawKey(r))!).padStart(20)} ${cpu.padStart(9)}${tag}`,
        )
      }
    }
    console.log('')
    console.log(
      [
        'case'.padEnd(15),
        'append MB/s'.padStart(20),
        'appends/s'.padStart(9),
        ...(withRaw
          ? [
              'matched raw'.padStart(22),
              '% of matched'.padStart(16),
              '% of 1 MiB raw'.padStart(16),
              '% of raw+CRC'.padStart(16),
            ]
          : []),
        'target'.padStart(6),
        'B/write'.padStart(9),
        'B/fsync'.padStart(9),
        'cpu'.padStart(5),
        '2 writes'.padStart(8),
      ].join(' '),
    )
    for (const c of cases) {
      const runs = logRuns.get(c)!
      const mb = runs.map((r) => r.appendMBps)
      const cols = [
        caseName(c).padEnd(15),
        spread(mb).padStart(20),
        median(runs.map((r) => r.appendsPerSec))
          .toFixed(0)
          .padStart(9),
      ]
      if (withRaw) {
        const matched = bestRaw({ writeBytes: windowBytes(c), fsync: c.fsync })
        const orig = bestRaw({ writeBytes: MIB, fsync: c.fsync })
        const pct = (base: number[]) => mb.map((x, i) => (100 * x) / base[i]!)
        const withCrc = c.fsync
          ? undefined
          : bestRaw({ writeBytes: windowBytes(c), fsync: false, crcBatchBytes: c.batchBytes })
        cols.push(
          `${sizeName(windowBytes(c))}: ${median(matched).toFixed(0)}`.padStart(22),
          spread(pct(matched), 0, '%').padStart(16),
          spread(pct(orig), 0, '%').padStart(16),
          (withCrc === undefined ? '-' : spread(pct(withCrc), 0, '%')).padStart(16),
        )
      }
      cols.push(
        `${c.fsync ? 50 : 70}%`.padStart(6),
        median(runs.map((r) => r.bytesPerWrite))
          .toFixed(0)
          .padStart(9),
        (c.fsync
          ? median(runs.map((r) => r.bytesPerSync))
              .toFixed(0)
              .padStart(9)
          : '-'
        ).padStart(9),
        `${median(runs.map((r) => r.cpuPercent)).toFixed(0)}%`.padStart(5),
        `${median(runs.map((r) => r.overlappedPercent)).toFixed(0)}%`.padStart(8),
      )
      console.log(cols.join(' '))
    }
    console.log('')
    for (const c of cases) {
      const reads = logRuns
        .get(c)!
        .map((r) => r.readMBps)
        .filter((x) => x !== null)
      if (reads.length > 0)
        console.log(`read, ${c.batchBytes / KIB} KiB batches, 1 MiB fetches: ${spread(reads)} MB/s`)
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

await main()
