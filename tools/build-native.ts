/**
 * Builds Weir's native addons (today one: CRC-32C, src/protocol/records/native/crc32c.c) into
 * build/native/, where src/protocol/records/crc32c.ts looks for them. Runs after `npm ci` (postinstall)
 * and before `npm run check`; does nothing when the output is newer than its source.
 *
 *   node tools/build-native.ts          # CC=clang to pick the compiler (default: cc)
 *
 * Never fails the install: on a platform it does not build for (not x86-64 Linux), without a C
 * compiler, or on a compiler error, it says so and exits 0, and the CRC falls back to @node-rs/crc32
 * (then to pure TS) at run time. The addon needs no Node headers: it declares the few Node-API
 * functions it calls itself.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
const source = join(root, 'src/protocol/records/native/crc32c.c')
const outDir = join(root, 'build/native')
const out = join(outDir, 'crc32c.node')

function main(): void {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    console.log(
      `build-native: skipped on ${process.platform}-${process.arch} (CRC-32C falls back to @node-rs/crc32)`,
    )
    return
  }
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(source).mtimeMs) return
  mkdirSync(outDir, { recursive: true })
  const temp = `${out}.${process.pid}.tmp`
  const cc = process.env.CC ?? 'cc'
  try {
    execFileSync(cc, ['-O2', '-Wall', '-Wextra', '-shared', '-fPIC', '-o', temp, source], {
      stdio: 'inherit',
    })
    renameSync(temp, out)
    console.log(`build-native: built ${out}`)
  } catch (e) {
    rmSync(temp, { force: true })
    console.log(
      `build-native: could not build ${out} with ${cc} (${e instanceof Error ? e.message : String(e)}); CRC-32C falls back to @node-rs/crc32`,
    )
  }
}

main()
