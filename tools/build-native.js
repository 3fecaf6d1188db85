/**
 * Builds Weir's native addons into build/native/: CRC-32C (src/protocol/records/native/crc32c.c,
 * loaded by src/protocol/records/crc32c.ts) and glibc's allocator settings
 * (src/server/native/malloc-tuning.c, loaded by src/server/malloc-tuning.ts). Runs after `npm ci`
 * and after the installation of the package (postinstall), and before `npm run check`; does nothing
 * for an addon whose output is newer than its source.
 *
 *   node tools/build-native.js          # CC=clang to pick the compiler (default: cc)
 *
 * Plain JavaScript, not TypeScript like the rest of tools/: in an installed package it runs under
 * node_modules/, where Node does not strip types, and under whatever Node the installing user has.
 *
 * Never fails the install: on a platform it does not build an addon for, without a C compiler, or on
 * a compiler error, it says so and exits 0, and the code falls back at run time (CRC-32C to
 * @node-rs/crc32, then to pure TS; the allocator settings to glibc's defaults). The addons need no
 * Node headers: they declare the few Node-API functions they call themselves.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const outDir = join(root, 'build/native')

/**
 * @typedef {object} Addon
 * @property {string} source
 * @property {string} out
 * @property {boolean} builds whether it is built on this platform and architecture
 * @property {string} fallback what the code does without it
 */

/** @type {readonly Addon[]} */
const ADDONS = [
  {
    source: 'src/protocol/records/native/crc32c.c',
    out: 'crc32c.node',
    builds: process.platform === 'linux' && process.arch === 'x64',
    fallback: 'CRC-32C falls back to @node-rs/crc32',
  },
  {
    source: 'src/server/native/malloc-tuning.c',
    out: 'malloc-tuning.node',
    builds: process.platform === 'linux',
    fallback: "the broker keeps the C allocator's defaults",
  },
]

/** @param {Addon} addon */
function build(addon) {
  const source = join(root, addon.source)
  const out = join(outDir, addon.out)
  if (!addon.builds) {
    console.log(
      `build-native: ${addon.out} skipped on ${process.platform}-${process.arch} (${addon.fallback})`,
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
      `build-native: could not build ${out} with ${cc} (${e instanceof Error ? e.message : String(e)}); ${addon.fallback}`,
    )
  }
}

for (const addon of ADDONS) build(addon)
