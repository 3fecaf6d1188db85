/**
 * Weir as a user installs it: `npm pack` of a copy of this checkout (prepack, the build by prepare,
 * postpack: what `npm publish` uploads), then `npm install` of that tarball into an empty project.
 * There `npx weir` runs and serves, the native addons were built at install and load,
 * `import { startCluster } from 'weir'` works in a `.mjs` test and in a `.ts` one (run by Node's
 * type stripping, typechecked by tsc against the package's declarations), and the README's kafkajs
 * example passes unchanged. Real npm, real processes. kafkajs, typescript and @types/node are the
 * versions this repository pins, so npm finds them in its cache after `npm ci` (--prefer-offline)
 * and asks the registry otherwise.
 *
 * The children run with a user's environment: Node 24 first on PATH (this process's), and none of
 * the `npm_*` variables of the npm script around the test, NODE_OPTIONS, or NODE_TEST_CONTEXT (with
 * which a nested `node --test` would report to this runner instead of printing).
 */
import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { freePorts, REPO, tempDir } from '../support/weir-process.ts'

const run = promisify(execFile)

const env: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^npm_/i.test(k) && k !== 'NODE_OPTIONS' && k !== 'NODE_TEST_CONTEXT',
  ),
)
env.PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`

const repoManifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  version: string
  engines: Record<string, string>
  publishEngines: Record<string, string>
  exports: Record<string, unknown>
  devDependencies: Record<string, string>
}
const pinned = (name: string) => `${name}@${repoManifest.devDependencies[name]}`

/** Runs a command to completion; its stdout, or an error with both outputs. */
async function sh(
  cwd: string,
  command: string,
  args: readonly string[],
  timeoutMs = 180_000,
): Promise<string> {
  try {
    return (await run(command, args, { cwd, env, timeout: timeoutMs, maxBuffer: 64 << 20 })).stdout
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string }
    throw new Error(
      `${command} ${args.join(' ')} failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`,
    )
  }
}

/** What a fresh clone has: everything but git's, the caches, and what builds and installs make. */
const NOT_COPIED = new Set(['.git', 'node_modules', '.cache', 'dist', 'build', '.weir', '.data'])

const tmp = tempDir('weir-package-')
const checkout = join(tmp.path, 'checkout')
const app = join(tmp.path, 'app')
let packed: { filename: string; files: { path: string }[] }
let tarballManifest: {
  engines: Record<string, string>
  exports: Record<string, unknown>
  bin: Record<string, string>
}

before(async () => {
  cpSync(REPO, checkout, {
    recursive: true,
    filter: (src) => {
      const top = src.slice(REPO.length + 1).split('/')[0]!
      return src === REPO || !(NOT_COPIED.has(top) || top.endsWith('.tgz'))
    },
  })
  symlinkSync(realpathSync(join(REPO, 'node_modules')), join(checkout, 'node_modules'))
  const out = await sh(checkout, 'npm', ['pack', '--json', '--pack-destination', tmp.path])
  ;[packed] = JSON.parse(out) as [typeof packed]
  const unpacked = join(tmp.path, 'unpacked')
  mkdirSync(unpacked)
  await sh(unpacked, 'tar', ['xzf', join(tmp.path, packed.filename), 'package/package.json'])
  tarballManifest = JSON.parse(readFileSync(join(unpacked, 'package/package.json'), 'utf8'))

  mkdirSync(app)
  await sh(app, 'npm', ['init', '-y'])
  await sh(app, 'npm', ['pkg', 'set', 'type=module'])
  await sh(app, 'npm', [
    'install',
    '--prefer-offline',
    '--no-audit',
    '--no-fund',
    join(tmp.path, packed.filename),
    pinned('kafkajs'),
    pinned('typescript'),
    pinned('@types/node'),
  ])
})
after(() => tmp.remove())

describe('npm pack', () => {
  test('the tarball holds the build with its declarations, the bin, the addon sources and their plain-JS build, and no TypeScript source', () => {
    assert.equal(packed.filename, `weir-${repoManifest.version}.tgz`)
    const files = packed.files.map((f) => f.path)
    for (const f of [
      'package.json',
      'README.md',
      'bin/weir.js',
      'tools/build-native.js',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/cli/main.js',
      'src/protocol/records/native/crc32c.c',
      'src/server/native/malloc-tuning.c',
    ]) {
      assert.ok(files.includes(f), `${f} is not in the tarball`)
    }
    const stray = files.filter(
      (f) => (/\.ts$/.test(f) && !f.endsWith('.d.ts')) || !/^(dist\/src|bin|tools|src)\/|^[^/]+$/.test(f),
    )
    assert.deepEqual(stray, [])
    assert.ok(!files.some((f) => f.startsWith('dist/bin/') || f.includes('.test.')))
  })

  test('its package.json names the Node the build needs and resolves to the build; the checkout is left as it was', () => {
    assert.deepEqual(tarballManifest.engines, { ...repoManifest.engines, ...repoManifest.publishEngines })
    // `weir-source` (the sources, not in the tarball) is a condition only this repository's scripts set.
    assert.deepEqual(tarballManifest.exports, repoManifest.exports)
    assert.deepEqual(repoManifest.exports['.'], {
      'weir-source': './src/index.ts',
      types: './dist/src/index.d.ts',
      default: './dist/src/index.js',
    })
    assert.deepEqual(tarballManifest.bin, { weir: 'bin/weir.js' })
    assert.equal(
      readFileSync(join(checkout, 'package.json'), 'utf8'),
      readFileSync(join(REPO, 'package.json'), 'utf8'),
    )
  })
})

describe('installed into an empty project', () => {
  test('npx weir --help', async () => {
    assert.match(await sh(app, 'npx', ['weir', '--help']), /^Usage: weir <command>/)
  })

  test('npx weir start serves the installed CLI, and shuts down on SIGTERM', async () => {
    const [client, controller] = await freePorts(2)
    const bootstrap = `127.0.0.1:${client}`
    // Its own process group: SIGTERM reaches npx, its shell and the node they started alike.
    const child: ChildProcess = spawn(
      'npx',
      [
        'weir',
        'start',
        '--data-dir',
        join(tmp.path, 'start-data'),
        '--set',
        `listeners=PLAINTEXT://${bootstrap},CONTROLLER://127.0.0.1:${controller}`,
        '--set',
        `controller.quorum.voters=1@127.0.0.1:${controller}`,
      ],
      { cwd: app, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let output = ''
    const collect = (d: Buffer) => {
      output += d.toString()
    }
    child.stdout?.on('data', collect)
    child.stderr?.on('data', collect)
    // 'close': every holder of the pipes, the node included, is gone.
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
    try {
      const deadline = Date.now() + 60_000
      while (!/ready in \d+ ms/.test(output)) {
        assert.ok(Date.now() < deadline && child.exitCode === null, `not ready:\n${output}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      assert.match(output, new RegExp(`bootstrap: ${bootstrap.replaceAll('.', '\\.')}\\b`))
      await sh(app, 'npx', ['weir', 'topic', 'create', 'installed', '-p', '2', '-b', bootstrap])
      assert.match(await sh(app, 'npx', ['weir', 'topic', 'list', '-b', bootstrap]), /\binstalled\b/)
      process.kill(-child.pid!, 'SIGTERM')
      await closed
      assert.match(output, /SIGTERM: shutting down/)
      assert.doesNotMatch(output, /\] (ERROR|WARN) /)
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL') // whatever of the group is left after a failure
      } catch {}
    }
  })

  test('the native addons were built at install and the installed build loads them', {
    skip:
      process.platform !== 'linux' || process.arch !== 'x64' ? 'addons built on x86-64 Linux only' : false,
  }, async () => {
    const installed = join(app, 'node_modules/weir')
    assert.ok(existsSync(join(installed, 'build/native/crc32c.node')), 'crc32c.node was not built')
    assert.ok(
      existsSync(join(installed, 'build/native/malloc-tuning.node')),
      'malloc-tuning.node was not built',
    )
    const probe = join(app, 'addons.mjs')
    writeFileSync(
      probe,
      "const c = await import('./node_modules/weir/dist/src/protocol/records/crc32c.js')\n" +
        "const m = await import('./node_modules/weir/dist/src/server/malloc-tuning.js')\n" +
        'console.log(c.CRC32C_IMPLEMENTATION, m.mallocTunable())\n',
    )
    assert.equal((await sh(app, 'node', [probe])).trim(), 'weir-native true')
  })

  test("a .mjs test and the README's kafkajs example (.ts, type stripping) import startCluster from 'weir' and pass", async () => {
    writeFileSync(
      join(app, 'embedded.test.mjs'),
      [
        "import assert from 'node:assert/strict'",
        "import { test } from 'node:test'",
        "import { startCluster } from 'weir'",
        '',
        "test('startCluster from the installed package', async () => {",
        '  const cluster = await startCluster({ nodes: 1 })',
        '  try {',
        '    assert.equal(cluster.bootstrap.length, 1)',
        '    assert.equal(cluster.nodes[0].running, true)',
        '  } finally {',
        '    await cluster.stop()',
        '  }',
        '})',
        '',
      ].join('\n'),
    )
    copyFileSync(join(REPO, 'test/cli/examples/kafkajs.test.ts'), join(app, 'kafkajs.test.ts'))
    const out = await sh(app, 'node', [
      '--test',
      '--test-reporter=tap',
      'embedded.test.mjs',
      'kafkajs.test.ts',
    ])
    assert.match(out, /^# pass 3$/m, out)
    assert.match(out, /^# fail 0$/m, out)
  })

  test("tsc typechecks the kafkajs example against the package's declarations (and rejects a wrong type)", async () => {
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2024',
          module: 'nodenext',
          strict: true,
          noEmit: true,
          types: ['node'],
          verbatimModuleSyntax: true,
          erasableSyntaxOnly: true,
        },
        files: ['kafkajs.test.ts'],
      }),
    )
    await sh(app, 'npx', ['tsc', '-p', '.'])
    writeFileSync(
      join(app, 'wrong.ts'),
      "import { startCluster } from 'weir'\nconst n: number = (await startCluster()).bootstrapServers\nconsole.log(n)\n",
    )
    writeFileSync(
      join(app, 'tsconfig.wrong.json'),
      JSON.stringify({ extends: './tsconfig.json', files: ['wrong.ts'] }),
    )
    await assert.rejects(
      sh(app, 'npx', ['tsc', '-p', 'tsconfig.wrong.json']),
      /wrong\.ts\(2,7\): error TS2322: Type 'string' is not assignable to type 'number'/,
    )
  })
})
