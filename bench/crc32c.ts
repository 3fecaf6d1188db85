/**
 * CRC-32C per record batch: what one batch's check costs with each implementation, for batches of a
 * given size laid end to end (as a follower's fetch or a round of produced batches lie in memory),
 * the CRC covering attributes..end as Kafka's does. Prints ns per batch.
 *
 *   node bench/crc32c.ts [1024 16384 65536]
 *
 * - `@node-rs/crc32, view`: the runtime dependency; it takes a Buffer, so a view is made per batch.
 * - `weir addon, range`: src/protocol/records/native/crc32c.c (npm run build:native), given the range.
 * - `weir addon, view`: the same on a view, to see what the view costs.
 * - `pure TS`: the slicing-by-8 table (the fallback, and the path below NATIVE_BYTES_MIN).
 * - `view only`: `subarray` alone.
 */
import { crc32c as nodeRsCrc32c } from '@node-rs/crc32'
import { CRC32C_IMPLEMENTATION, crc32cPure, crc32cRange } from '../src/protocol/records/crc32c.ts'
import { CRC_START } from '../src/protocol/records/index.ts'

const sizes = process.argv.slice(2).map(Number)
const BATCHES = 64

function bench(name: string, size: number, f: (buf: Buffer, start: number, end: number) => number): void {
  const buf = Buffer.alloc(size * BATCHES)
  for (let i = 0; i < buf.length; i++) buf[i] = (i * 2654435761 + (i >> 9)) >>> 24
  const pass = () => {
    let x = 0
    for (let i = 0; i < BATCHES; i++) x ^= f(buf, i * size + CRC_START, (i + 1) * size)
    return x
  }
  for (let i = 0; i < 200; i++) pass()
  const passes = Math.max(200, Math.floor(2e8 / buf.length))
  let x = 0
  const t0 = performance.now()
  for (let i = 0; i < passes; i++) x ^= pass()
  const ns = ((performance.now() - t0) * 1e6) / passes / BATCHES
  if (x === 0.5) console.log('') // keep the results
  const gbps = (size - CRC_START) / ns
  console.log(
    `  ${name.padEnd(24)} ${ns.toFixed(0).padStart(7)} ns per batch ${gbps.toFixed(2).padStart(6)} GB/s`,
  )
}

console.log(`crc32c implementation in use: ${CRC32C_IMPLEMENTATION}`)
for (const size of sizes.length > 0 ? sizes : [1024, 16384, 65536]) {
  console.log(`${size} B batches, ${BATCHES} end to end:`)
  bench('view only', size, (b, s, e) => b.subarray(s, e).length)
  bench('@node-rs/crc32, view', size, (b, s, e) => nodeRsCrc32c(b.subarray(s, e)))
  if (CRC32C_IMPLEMENTATION === 'weir-native') {
    bench('weir addon, range', size, (b, s, e) => crc32cRange(b, s, e))
    bench('weir addon, view', size, (b, s, e) => crc32cRange(b.subarray(s, e), 0, e - s))
  }
  bench('pure TS', size, (b, s, e) => crc32cPure(b.subarray(s, e)))
}
