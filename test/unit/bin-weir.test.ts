/**
 * bin/weir.js picks the compiled build (dist/) only when it is current, or when there are no sources
 * (an installed package): the real bin file, copied into a temp tree with a stand-in `main` on each
 * side, run by a real node process.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'

const REPO = join(import.meta.dirname, '../..')
const NODE = process.execPath
const root = mkdtempSync(join(tmpdir(), 'weir-bin-'))
after(() => rmSync(root, { recursive: true, force: true }))

const BIN = join(root, 'bin/weir.js')
const SOURCE_MAIN = join(root, 'src/cli/main.ts')
const SOURCE_OTHER = join(root, 'src/model/thing.ts')
const BUILT_MAIN = join(root, 'dist/src/cli/main.js')
const stub = (who: string) =>
  `export async function main(argv: string[]) { console.log('${who} ' + argv.join(' ')); return 3 }\n`

mkdirSync(join(root, 'bin'))
mkdirSync(join(root, 'src/cli'), { recursive: true })
mkdirSync(join(root, 'src/model'))
mkdirSync(join(root, 'dist/src/cli'), { recursive: true })
copyFileSync(join(REPO, 'bin/weir.js'), BIN)
writeFileSync(join(root, 'package.json'), '{"type":"module"}\n')
writeFileSync(SOURCE_MAIN, stub('source'))
writeFileSync(SOURCE_OTHER, 'export const x = 1\n')

/** Runs the bin; returns its stdout and exit code. */
function weir(env: Record<string, string> = {}): { out: string; code: number } {
  try {
    const out = execFileSync(NODE, [BIN, 'start', '--x'], {
      encoding: 'utf8',
      env: { ...process.env, WEIR_FROM_SOURCE: '', ...env },
    })
    return { out: out.trim(), code: 0 }
  } catch (e) {
    const err = e as { stdout: string; status: number }
    return { out: err.stdout.trim(), code: err.status }
  }
}

/** Sets a file's modification time, seconds from now. */
function age(path: string, secondsFromNow: number): void {
  const t = new Date(Date.now() + secondsFromNow * 1000)
  utimesSync(path, t, t)
}

test('without a build, the bin runs the TypeScript sources and passes argv and the exit code', () => {
  assert.deepEqual(weir(), { out: 'source start --x', code: 3 })
})

test('a build newer than every source module is what runs', () => {
  writeFileSync(BUILT_MAIN, stub('built').replace('argv: string[]', 'argv'))
  age(SOURCE_MAIN, -100)
  age(SOURCE_OTHER, -100)
  age(BUILT_MAIN, -10)
  assert.deepEqual(weir(), { out: 'built start --x', code: 3 })
})

test('a source module edited after the build makes the bin run the sources, not the stale build', () => {
  age(SOURCE_OTHER, -1)
  assert.equal(weir().out, 'source start --x')
  age(SOURCE_OTHER, -100)
  assert.equal(weir().out, 'built start --x')
})

test('a test file edited after the build does not make the build stale', () => {
  const t = join(root, 'src/model/thing.test.ts')
  writeFileSync(t, 'export {}\n')
  age(t, -1)
  assert.equal(weir().out, 'built start --x')
})

test('WEIR_FROM_SOURCE=1 runs the sources even with a current build', () => {
  assert.equal(weir({ WEIR_FROM_SOURCE: '1' }).out, 'source start --x')
})

test('without TypeScript sources (an installed package), the build runs, whatever its age', () => {
  rmSync(join(root, 'src'), { recursive: true })
  age(BUILT_MAIN, -1000)
  assert.deepEqual(weir(), { out: 'built start --x', code: 3 })
})
