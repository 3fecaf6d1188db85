#!/usr/bin/env node
// The `weir` command. It runs the compiled JavaScript of `npm run build` (dist/) when that build is
// current, and otherwise the TypeScript sources directly (Node 24's type stripping), so a checkout
// whose sources changed since its last build runs what it holds. The build saves what type stripping
// costs at start-up: its transpiler and the stripped sources (measured in docs/performance.md). The
// build counts as current when no module under src/ is newer than it (a stat per source file, a few
// ms); WEIR_FROM_SOURCE=1 always runs the sources. An installed package holds the build and no
// TypeScript sources (Node does not strip types under node_modules/), so there the build runs.
// Node's compile cache (in the OS temp dir) keeps the compiled modules between runs: a cluster
// command starts in about a fifth of the time. main.ts then loads each command's module only when
// it runs, so cluster commands never load the broker.
import { existsSync, readdirSync, statSync } from 'node:fs'
import * as nodeModule from 'node:module'
import { fileURLToPath } from 'node:url'

// The oldest Node this command runs on (package.json's publishEngines: the compiled build needs zstd
// in node:zlib, and Node 24 is what the tests run on). A checkout brings Node 24 itself (the `node`
// devDependency, first on PATH under npm and npx); an installed package runs on the user's Node,
// which is checked before anything newer is used (node:module is imported whole for that: a named
// import that an older Node lacks fails before any line runs).
const NODE_MAJOR_MIN = 24
if (Number(process.versions.node.split('.')[0]) < NODE_MAJOR_MIN) {
  console.error(
    `weir: needs Node.js ${NODE_MAJOR_MIN} or newer; this is ${process.version} (${process.execPath})`,
  )
  process.exit(1)
}

nodeModule.enableCompileCache()

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
  if (!existsSync(SOURCES)) return true
  try {
    return newestMtimeMs(SOURCES) <= built.mtimeMs
  } catch {
    return false
  }
}

const { main } = builtIsCurrent() ? await import(BUILT_MAIN.href) : await import('../src/cli/main.ts')
process.exitCode = await main(process.argv.slice(2))
