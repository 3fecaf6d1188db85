/**
 * Record-batch benchmark: CRC32C throughput, each codec's compress and decompress speed on the same
 * JSON-like producer payloads (16 KiB and 1 MiB), batch scan of a 1 MiB produce payload made of
 * 16 KiB batches, and whole-batch decode. Prints figures; asserts nothing about time.
 * Run: npm run bench:records   (BENCH_SECONDS=0.5 for a quick look)
 */

import { crc32cPure } from '../src/protocol/records/crc32c.ts'
import { jsonPayload } from '../src/protocol/records/fixtures/golden.ts'
import {
  Compression,
  type CompressionCodec,
  CRC32C_IMPLEMENTATION,
  compress,
  crc32c,
  decodeBatch,
  decompress,
  encodeBatch,
  scanBatches,
} from '../src/protocol/records/index.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1)
const MIB = 1024 * 1024
const BATCH_BYTES = 16 * 1024

/** Runs `op` for about SECONDS (after a warm-up); returns operations per second. */
function opsPerSecond(op: () => void): number {
  // At least 0.3 s: the JIT needs it whatever BENCH_SECONDS says.
  const warmUntil = process.hrtime.bigint() + BigInt(Math.floor(Math.max(0.3, SECONDS * 0.2) * 1e9))
  while (process.hrtime.bigint() < warmUntil) op()
  let ops = 0
  const start = process.hrtime.bigint()
  const deadline = start + BigInt(Math.floor(SECONDS * 1e9))
  let now = start
  while (now < deadline) {
    op()
    ops++
    now = process.hrtime.bigint()
  }
  return ops / (Number(now - start) / 1e9)
}

function size(bytes: number): string {
  if (bytes >= MIB) return `${(bytes / MIB).toFixed(2)} MiB`
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${bytes} B`
}

console.log(`node ${process.version}, CRC32C implementation: ${CRC32C_IMPLEMENTATION}\n`)

console.log('CRC32C')
for (const bytes of [64, 256, 1024, BATCH_BYTES, MIB]) {
  const buf = jsonPayload(bytes)
  const native = opsPerSecond(() => crc32c(buf))
  const pure = opsPerSecond(() => crc32cPure(buf))
  console.log(
    `  ${size(bytes).padStart(8)}  crc32c ${((native * bytes) / 1e9).toFixed(2).padStart(6)} GB/s   pure TS ${((pure * bytes) / 1e9).toFixed(2).padStart(6)} GB/s`,
  )
}

const CODECS: [string, CompressionCodec][] = [
  ['gzip', Compression.gzip],
  ['snappy', Compression.snappy],
  ['lz4', Compression.lz4],
  ['zstd', Compression.zstd],
]
console.log('\nCompression (JSON-like records; MB/s of uncompressed bytes)')
for (const bytes of [BATCH_BYTES, MIB]) {
  const data = jsonPayload(bytes)
  for (const [name, codec] of CODECS) {
    const packed = compress(codec, data)
    const c = opsPerSecond(() => compress(codec, data))
    const d = opsPerSecond(() => decompress(codec, packed, bytes))
    console.log(
      `  ${size(bytes).padStart(8)}  ${name.padEnd(7)} ratio ${(bytes / packed.length).toFixed(2).padStart(5)}   compress ${((c * bytes) / 1e6).toFixed(0).padStart(5)} MB/s   decompress ${((d * bytes) / 1e6).toFixed(0).padStart(5)} MB/s`,
    )
  }
}

/** A produce payload: `total` bytes of batches of about `batchBytes`, each with ~100-byte records. */
function producePayload(total: number, batchBytes: number, codec: CompressionCodec): Buffer {
  const batches: Buffer[] = []
  let length = 0
  let seed = 1
  while (length < total) {
    const records = Array.from({ length: Math.floor(batchBytes / 110) }, (_, i) => ({
      key: Buffer.from(`user-${seed}-${i}`),
      value: jsonPayload(90, seed * 1000 + i),
      timestamp: 1_700_000_000_000n + BigInt(i),
    }))
    const batch = encodeBatch({
      records,
      compression: codec,
      producerId: 1n,
      producerEpoch: 0,
      baseSequence: 0,
    })
    batches.push(batch)
    length += batch.length
    seed++
  }
  return Buffer.concat(batches)
}

console.log(
  '\nProduce payload of ~1 MiB in batches of 16 KiB of records (compressed batches are smaller, so more):\n' +
    'scanBatches (headers + CRC, no record decoding) and decodeBatch of every batch',
)
for (const [name, codec] of [['none', Compression.none] as const, ...CODECS]) {
  const payload = producePayload(MIB, BATCH_BYTES, codec)
  const scan = scanBatches(payload)
  if (!scan.ok) throw new Error(`bench payload refused: ${scan.error.message}`)
  const count = scan.batches.length
  const scans = opsPerSecond(() => scanBatches(payload))
  const decodes = opsPerSecond(() => {
    for (const b of scan.batches) decodeBatch(payload, b.position)
  })
  console.log(
    `  ${name.padEnd(7)} ${size(payload.length).padStart(8)} in ${String(count).padStart(3)} batches   scan ${((scans * count) / 1e3).toFixed(0).padStart(6)}k batches/s (${((scans * payload.length) / 1e9).toFixed(2)} GB/s)   decode ${((decodes * count) / 1e3).toFixed(1).padStart(6)}k batches/s`,
  )
}
