#!/usr/bin/env node
// The `weir` command. It runs the compiled JavaScript of `npm run build` (dist/) when that build is
// current, and otherwise the TypeScript sources directly (Node 24's type stripping), so a fresh
// clone works with no build step. The build saves what type stripping costs at start-up: its
// transpiler and the stripped sources (measured in docs/performance.md). The build counts as current
// when no module under src/ is newer than it (a stat per source file, a few ms); WEIR_FROM_SOURCE=1
// always runs the sources.
// Node's compile cache (in the OS temp dir) keeps the compiled modules between runs: a cluster
// command starts in about a fifth of the time. main.ts then loads each command's module only when
// it runs, so cluster commands never load the broker.
import { readdirSync, statSync } from 'node:fs'
import { enableCompileCache } from 'node:module'
import { fileURLToPath } from 'node:url'

enableCompileCache?.()

const BUILT_MAIN = new URL('../dist/src/cli/main.js', import.meta.url)
const SOURCES = fileURLToPath(new URL('../src', import.meta.url))

/** The newest modification time (ms) of a module under `dir` (tests aside), Infinity if one vanished. */
function newestMtimeMs(dir) {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue
    const ms = statSync(`${entry.parentPath}/${entry.name}`, { throwIfNoEntry: false })?.mtimeMs
    if (ms === undefined) return Number.POSITIVE_INFINITY
    if (ms > newest) newest = ms
  }
  return newest
}

/** Whether dist/ holds a build at least as new as every source file. */
function builtIsCurrent() {
  if (process.env.WEIR_FROM_SOURCE === '1') return false
  const built = statSync(BUILT_MAIN, { throwIfNoEntry: false })
  if (built === undefined) return false
  try {
    return newestMtimeMs(SOURCES) <= built.mtimeMs
  } catch {
    return false
  }
}

const { main } = builtIsCurrent() ? await import(BUILT_MAIN.href) : await import('../src/cli/main.ts')
process.exitCode = await main(process.argv.slice(2))
