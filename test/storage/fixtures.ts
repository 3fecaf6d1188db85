/** Test helpers for storage: batches from plain records, sim-disk logs, reading a log back. */
import { ManualClock } from '../../src/io/clock.ts'
import { SimDisk } from '../../src/io/sim-disk.ts'
import { type Compression, decodeBatch, encodeBatch, LOG_OVERHEAD } from '../../src/protocol/index.ts'
import { DEFAULT_LOG_CONFIG, type LogConfig } from '../../src/storage/log-config.ts'
import type { LogManagerOptions } from '../../src/storage/log-manager.ts'
import { PartitionLog, type PartitionLogOptions } from '../../src/storage/partition-log.ts'

export interface PlainRecord {
  key?: string | null
  value?: string | null
  /** ms; default the clock's now or 1000. */
  ts?: number
}

/** One batch of `records` (CreateTime), offsets from 0: the leader assigns real ones. */
export function batch(
  records: readonly PlainRecord[],
  options: {
    ts?: number
    compression?: (typeof Compression)[keyof typeof Compression]
    producerId?: bigint
  } = {},
): Buffer {
  return encodeBatch({
    records: records.map((r) => ({
      key: r.key === undefined || r.key === null ? null : Buffer.from(r.key),
      value: r.value === undefined || r.value === null ? null : Buffer.from(r.value),
      timestamp: BigInt(r.ts ?? options.ts ?? 1000),
    })),
    ...(options.compression !== undefined ? { compression: options.compression } : {}),
    ...(options.producerId !== undefined
      ? { producerId: options.producerId, producerEpoch: 0, baseSequence: 0 }
      : {}),
  })
}

/** A batch of `n` records with values `${prefix}${i}` and an optional key per record. */
export function valuesBatch(n: number, prefix: string, ts = 1000, key?: (i: number) => string): Buffer {
  const records: PlainRecord[] = []
  for (let i = 0; i < n; i++)
    records.push({ value: `${prefix}${i}`, ts, key: key === undefined ? null : key(i) })
  return batch(records)
}

export function config(overrides: Partial<LogConfig> = {}): LogConfig {
  return { ...DEFAULT_LOG_CONFIG, messageTimestampAfterMsMax: Number.MAX_SAFE_INTEGER, ...overrides }
}

export interface SimLog {
  disk: SimDisk
  clock: ManualClock
  log: PartitionLog
  dir: string
}

export const DIR = '/data/t-0'

export async function openSimLog(
  overrides: Partial<LogConfig> = {},
  env: { disk?: SimDisk; clock?: ManualClock; options?: Partial<PartitionLogOptions> } = {},
): Promise<SimLog> {
  const disk = env.disk ?? new SimDisk()
  const clock = env.clock ?? new ManualClock({ nowMs: 1_000_000 })
  if (env.disk === undefined) {
    await disk.mkdir('/data')
    await disk.syncDir('/')
  }
  const log = await PartitionLog.open(DIR, config(overrides), { disk, clock, ...env.options })
  return { disk, clock, log, dir: DIR }
}

export interface ReadRecord {
  offset: bigint
  key: string | null
  value: string | null
  timestamp: bigint
}

/** Decode every batch in `bytes`. */
export function decodeAll(bytes: Buffer): ReadRecord[] {
  const out: ReadRecord[] = []
  let at = 0
  while (at < bytes.length) {
    const size = LOG_OVERHEAD + bytes.readInt32BE(at + 8)
    const { records } = decodeBatch(bytes, at)
    for (const r of records) {
      out.push({
        offset: r.offset,
        key: r.key === null ? null : r.key.toString(),
        value: r.value === null ? null : r.value.toString(),
        timestamp: r.timestamp,
      })
    }
    at += size
  }
  return out
}

/** Every record from the log start to the end, read in chunks of `maxBytes`. */
export async function readAll(log: PartitionLog, maxBytes = 64 * 1024): Promise<ReadRecord[]> {
  const out: ReadRecord[] = []
  let offset = log.logStartOffset
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, maxBytes)
    if (r.errorCode !== 0) throw new Error(`read at ${offset}: error ${r.errorCode}`)
    if (!('records' in r) || r.records.length === 0) break
    const records = decodeAll(r.records)
    for (const rec of records) if (rec.offset >= offset) out.push(rec)
    // Continue after the last batch's last offset.
    let at = 0
    let next = offset
    while (at < r.records.length) {
      const size = LOG_OVERHEAD + r.records.readInt32BE(at + 8)
      next = r.records.readBigInt64BE(at) + BigInt(r.records.readInt32BE(at + 23)) + 1n
      at += size
    }
    offset = next
  }
  return out
}

/** The log dir `/kafka-logs` of node 1 on a fresh SimDisk, with LogManager options for it. */
export const LOG_DIR_ROOT = '/kafka-logs'

export async function logDirSetup(
  overrides: Partial<LogManagerOptions> = {},
): Promise<{ disk: SimDisk; clock: ManualClock; options: LogManagerOptions }> {
  const disk = new SimDisk()
  await disk.mkdir(LOG_DIR_ROOT)
  await disk.syncDir('/')
  const clock = new ManualClock({ nowMs: 1_700_000_000_000 })
  return {
    disk,
    clock,
    options: {
      disk,
      clock,
      clusterId: 'MkU3OEVBNTcwNTJENDM2Qk',
      nodeId: 1,
      defaultLogConfig: config(),
      ...overrides,
    },
  }
}
