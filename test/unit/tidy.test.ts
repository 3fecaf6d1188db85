import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, it } from 'node:test'
import {
  findImports,
  formatViolation,
  MODULE_IMPORTS,
  tidy,
  tokenize,
  type Violation,
} from '../../tools/tidy.ts'

const roots: string[] = []
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})

/** A fake repository: each module listed gets an index.ts and README.md, then `files` are written. */
function tree(modules: readonly string[], files: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'tidy-'))
  roots.push(root)
  const all: Record<string, string> = {}
  for (const m of modules) {
    all[`src/${m}/index.ts`] = ''
    all[`src/${m}/README.md`] = `# ${m}\n`
  }
  Object.assign(all, files)
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

/** tidy() as compact `file:line rule` strings, easy to compare. */
function check(modules: readonly string[], files: Record<string, string>): string[] {
  return tidy(tree(modules, files)).map((v) => `${v.file}:${v.line} ${v.rule}`)
}

describe('tidy: import arrows', () => {
  it('passes a tree that keeps every arrow', () => {
    const modules = Object.keys(MODULE_IMPORTS)
    const files: Record<string, string> = {}
    for (const [m, allowed] of Object.entries(MODULE_IMPORTS)) {
      const lines = ['model', ...allowed]
        .filter((t) => t !== m)
        .map((t) => `import type {} from '../${t}/index.ts'`)
      files[`src/${m}/main-thing.ts`] = `${lines.join('\n')}\nexport const x = 1\n`
    }
    assert.deepEqual(tidy(tree(modules, files)), [])
  })

  it('reports every import the table does not allow', () => {
    const modules = Object.keys(MODULE_IMPORTS)
    const files: Record<string, string> = {}
    let expected = 0
    for (const [m, allowed] of Object.entries(MODULE_IMPORTS)) {
      const banned = modules.filter(
        (t) => t !== m && t !== 'model' && !(allowed as readonly string[]).includes(t),
      )
      expected += banned.length
      files[`src/${m}/main-thing.ts`] = banned.map((t) => `import '../${t}/index.ts'`).join('\n')
    }
    const violations = tidy(tree(modules, files))
    assert.equal(violations.length, expected)
    assert.ok(violations.every((v) => v.rule === 'import-arrow'))
  })

  it('spells out the arrows of docs/ARCHITECTURE.md', () => {
    const may = (from: string, to: string) => to === 'model' || MODULE_IMPORTS[from]!.includes(to)
    assert.equal(may('protocol', 'io'), false)
    assert.equal(may('raft', 'storage'), false)
    assert.equal(may('metadata', 'protocol'), true)
    assert.equal(may('metadata', 'storage'), false)
    assert.equal(may('storage', 'io'), true)
    assert.equal(may('storage', 'metadata'), false)
    assert.equal(may('quorum', 'raft'), true)
    assert.equal(may('replication', 'quorum'), false)
    assert.equal(may('coordinator', 'replication'), true)
    assert.equal(may('server', 'coordinator'), true)
    assert.equal(may('server', 'broker'), false)
    assert.equal(may('broker', 'server'), true)
    assert.equal(may('broker', 'cli'), false)
    assert.equal(may('cli', 'storage'), false)
    assert.equal(may('console', 'protocol'), true)
  })

  it('names the file, the line and the rule', () => {
    const violations = tidy(
      tree(['model', 'storage', 'server'], {
        'src/storage/segment.ts':
          "import type { Offset } from '../model/index.ts'\n\nimport { x } from '../server/index.ts'\n",
      }),
    )
    assert.equal(violations.length, 1)
    const v = violations[0]!
    assert.deepEqual([v.file, v.line, v.rule], ['src/storage/segment.ts', 3, 'import-arrow'])
    assert.match(
      formatViolation(v),
      /^src\/storage\/segment\.ts:3: storage may not import server .*\(import-arrow\)$/,
    )
    assert.match(v.message, /storage imports only model, protocol, io/)
  })

  it('checks test files too', () => {
    assert.deepEqual(
      check(['storage', 'server'], { 'src/storage/segment.test.ts': "import '../server/index.ts'\n" }),
      ['src/storage/segment.test.ts:1 import-arrow'],
    )
  })

  it('finds re-exports, dynamic imports and import types, on their own lines', () => {
    const source = [
      "export * from '../server/index.ts'",
      "export * as s from '../server/index.ts'",
      "export { a, b as c } from '../server/index.ts'",
      "export type { T } from '../server/index.ts'",
      "const m = await import('../server/index.ts')",
      "type Q = typeof import('../server/index.ts')",
      'import {',
      '  a,',
      '  type B,',
      "} from '../server/index.ts'",
      "import * as ns from '../server/index.ts'",
      "import d, { e } from '../server/index.ts'",
      'export const ok = 1',
      'export interface I {}',
    ].join('\n')
    assert.deepEqual(check(['storage', 'server'], { 'src/storage/segment.ts': source }), [
      'src/storage/segment.ts:1 import-arrow',
      'src/storage/segment.ts:2 import-arrow',
      'src/storage/segment.ts:3 import-arrow',
      'src/storage/segment.ts:4 import-arrow',
      'src/storage/segment.ts:5 import-arrow',
      'src/storage/segment.ts:6 import-arrow',
      'src/storage/segment.ts:7 import-arrow',
      'src/storage/segment.ts:11 import-arrow',
      'src/storage/segment.ts:12 import-arrow',
    ])
  })

  it('ignores imports in comments and strings', () => {
    const source = [
      "// import '../server/index.ts'",
      "/* import { x } from '../server/index.ts' */",
      'const s = "import \'../server/index.ts\'"',
      "const t = `import('../server/index.ts')`",
      "const r = /import '..\\/server/",
      'const meta = import.meta.url',
    ].join('\n')
    assert.deepEqual(check(['storage', 'server'], { 'src/storage/segment.ts': source }), [])
  })

  it('reports a computed dynamic import, which it cannot check', () => {
    assert.deepEqual(check(['storage'], { 'src/storage/segment.ts': 'const m = await import(name)\n' }), [
      'src/storage/segment.ts:1 import-arrow',
    ])
  })

  it('reports shipped code reaching outside src/, but lets tests use test/ fixtures', () => {
    assert.deepEqual(
      check(['storage'], {
        'src/storage/segment.ts': "import '../../tools/x.ts'\n",
        'src/storage/segment.test.ts': "import '../../test/fixtures/bytes.ts'\n",
      }),
      ['src/storage/segment.ts:1 import-arrow'],
    )
  })
})

describe('tidy: entry through index.ts', () => {
  it('reports deep imports across modules, but not within one', () => {
    assert.deepEqual(
      check(['model', 'io', 'storage', 'protocol', 'server'], {
        'src/storage/segment.ts': [
          "import { Disk } from '../io/disk.ts'",
          "import { assert } from '../model/brands.ts'",
          "import { x } from './offset-index.ts'",
          "import { y } from '../storage/offset-index.ts'",
          "import { z } from '../protocol/index.ts'",
        ].join('\n'),
        'src/storage/offset-index.ts': '',
        'src/protocol/codec.ts':
          "import { apis } from './generated/apis.ts'\nimport { r } from './wire/reader.ts'\n",
        'src/protocol/generated/apis.ts': "import { Reader } from '../wire/reader.ts'\n",
        'src/server/dispatch.ts': "import { apis } from '../protocol/generated/apis.ts'\n",
      }),
      [
        'src/server/dispatch.ts:1 import-entry',
        'src/storage/segment.ts:1 import-entry',
        'src/storage/segment.ts:2 import-entry',
      ],
    )
  })

  it('reports a folder import, which is not the index.ts', () => {
    assert.deepEqual(check(['io', 'storage'], { 'src/storage/segment.ts': "import '../io'\n" }), [
      'src/storage/segment.ts:1 import-entry',
    ])
  })

  it('reports both rules when both are broken', () => {
    assert.deepEqual(
      check(['storage', 'server'], { 'src/storage/segment.ts': "import '../server/handlers/x.ts'\n" }),
      ['src/storage/segment.ts:1 import-arrow', 'src/storage/segment.ts:1 import-entry'],
    )
  })
})

describe('tidy: node:* imports', () => {
  it('allows node:* at the edges and in tests only', () => {
    assert.deepEqual(
      check(['io', 'server', 'broker', 'cli', 'console', 'storage', 'raft'], {
        'src/io/node-disk.ts': "import { open } from 'node:fs/promises'\n",
        'src/server/listener.ts': "import { createServer } from 'node:net'\n",
        'src/broker/main.ts': "import process from 'node:process'\n",
        'src/cli/main.ts': "import { parseArgs } from 'node:util'\n",
        'src/console/http.ts': "import { createServer } from 'node:http'\n",
        'src/storage/segment.ts': "import { open } from 'node:fs/promises'\n",
        'src/storage/segment.test.ts': "import { test } from 'node:test'\nimport { tmpdir } from 'node:os'\n",
        'src/raft/node.ts': "\n\nconst os = await import('node:os')\n",
      }),
      ['src/raft/node.ts:3 node-import', 'src/storage/segment.ts:1 node-import'],
    )
  })

  it('treats a builtin without the node: prefix the same', () => {
    assert.deepEqual(check(['storage'], { 'src/storage/segment.ts': "import { readFile } from 'fs'\n" }), [
      'src/storage/segment.ts:1 node-import',
    ])
  })

  it('allows node:zlib and node:buffer in protocol/records only', () => {
    const violations = tidy(
      tree(['protocol'], {
        'src/protocol/records/gzip.ts':
          "import { gzipSync } from 'node:zlib'\nimport { Buffer } from 'node:buffer'\n",
        'src/protocol/records/crc32c.ts': "import { createRequire } from 'node:module'\n",
        'src/protocol/wire/zip.ts': "import { gzipSync } from 'node:zlib'\n",
      }),
    )
    assert.deepEqual(
      violations.map((v) => `${v.file}:${v.line} ${v.rule}`),
      ['src/protocol/records/crc32c.ts:1 node-import', 'src/protocol/wire/zip.ts:1 node-import'],
    )
    assert.match(violations[0]!.message, /src\/protocol\/records\/ may import node:zlib, node:buffer/)
  })

  it('does not judge npm packages', () => {
    assert.deepEqual(check(['protocol'], { 'src/protocol/x.ts': "import lz4 from 'lz4-napi'\n" }), [])
  })
})

describe('tidy: banned calls', () => {
  const banned = [
    'const a = Date.now()',
    'const b = new Date()',
    'const c = performance.now()',
    'const d = Math.random()',
    'setTimeout(() => {}, 10)',
    'const i = setInterval(f, 10)',
    'setImmediate(f)',
    'const h = process.hrtime.bigint()',
    'const e = process.hrtime()',
    'const g = globalThis.setTimeout(f, 1)',
    'const j = new Date',
    'const k = Date()',
    'const l = crypto.randomUUID()',
    'const m = globalThis.Date.now()',
    'const n = Date?.now()',
  ]

  it('reports each, on its line', () => {
    const lines = banned.map((_, i) => `src/storage/segment.ts:${i + 1} banned-call`)
    assert.deepEqual(check(['storage'], { 'src/storage/segment.ts': banned.join('\n') }), lines)
  })

  it('says what to use instead', () => {
    const [v] = tidy(tree(['raft'], { 'src/raft/node.ts': 'const t = Date.now()\n' }))
    assert.match(v!.message, /Date\.now outside io\/.*Clock\.nowMs\(\)/)
  })

  it('allows them in io, broker, cli and console, and in tests', () => {
    const source = banned.join('\n')
    assert.deepEqual(
      check(['io', 'broker', 'cli', 'console', 'storage'], {
        'src/io/clock.ts': source,
        'src/broker/main.ts': source,
        'src/cli/main.ts': source,
        'src/console/http.ts': source,
        'src/storage/segment.test.ts': source,
      }),
      [],
    )
  })

  it('does not report lookalikes', () => {
    const source = [
      'queueMicrotask(f)',
      'const d = new Date(0)',
      'const e = new Date(ms)',
      'const f = clock.setTimeout(g, 1)',
      'const n = clock.nowMs()',
      'const r = random.random()',
      'const p = stats.now()',
      'const t: Date = x',
      'const q = Date.parse(s)',
      'interface Timers { setTimeout: (f: () => void) => void }',
      'const o = { setInterval: 1 }',
      'const mathRandom = 1',
    ].join('\n')
    assert.deepEqual(check(['storage'], { 'src/storage/segment.ts': source }), [])
  })

  it('ignores comments, strings and template text, but not template substitutions', () => {
    const source = [
      '// Date.now()',
      '/* setTimeout(f, 1)',
      '   Math.random() */',
      "const a = 'Date.now()'",
      'const b = "new Date()"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text under test
      'const c = `performance.now() ${x} setTimeout(f)`',
      'const d = /Math.random()/g',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text under test
      'const e = `${Math.random()}`',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text under test
      'const f = `a ${`b ${ {k: Date.now()}.k }`} c`',
      "const g = 'it\\'s Date.now()'",
      'const h = a / b / Date.now()',
    ].join('\n')
    assert.deepEqual(check(['storage'], { 'src/storage/segment.ts': source }), [
      'src/storage/segment.ts:8 banned-call',
      'src/storage/segment.ts:9 banned-call',
      'src/storage/segment.ts:11 banned-call',
    ])
  })
})

describe('tidy: names and layout', () => {
  it('reports utils.ts, helpers.ts and names that are not kebab-case', () => {
    assert.deepEqual(
      check(['storage', 'server'], {
        'src/storage/utils.ts': '',
        'src/storage/helpers.test.ts': '',
        'src/storage/OffsetIndex.ts': '',
        'src/storage/time_index.ts': '',
        'src/storage/offset-index.ts': '',
        'src/storage/offset-index.test.ts': '',
        'src/server/Handlers/join-group.ts': "import '../../storage/index.ts'\n",
        'src/server/handlers/api-versions.ts': '',
      }),
      [
        'src/server/Handlers:1 file-name',
        'src/storage/OffsetIndex.ts:1 file-name',
        'src/storage/helpers.test.ts:1 file-name',
        'src/storage/time_index.ts:1 file-name',
        'src/storage/utils.ts:1 file-name',
      ],
    )
  })

  it('reports a module without index.ts or README.md, an unknown module, and a file outside modules', () => {
    assert.deepEqual(
      check(['model'], {
        'src/storage/segment.ts': '',
        'src/raft/README.md': '',
        'src/plugins/index.ts': '',
        'src/main.ts': '',
      }),
      [
        'src/main.ts:1 module-layout',
        'src/plugins:1 module-layout',
        'src/raft:1 module-layout',
        'src/storage:1 module-layout',
        'src/storage:1 module-layout',
      ],
    )
  })

  it('skips node_modules and non-.ts files', () => {
    assert.deepEqual(
      check(['storage'], {
        'src/storage/node_modules/pkg/Bad_Name.ts': 'Date.now()',
        'src/storage/notes.md': 'Date.now()',
        'src/storage/Fixture.json': '{}',
      }),
      [],
    )
  })

  it('reports a missing src/', () => {
    const root = mkdtempSync(join(tmpdir(), 'tidy-'))
    roots.push(root)
    assert.deepEqual(
      tidy(root).map((v: Violation) => v.rule),
      ['module-layout'],
    )
  })
})

describe('tidy: process talk', () => {
  // Each phrase's space is written \u0020: the fixtures must hold the phrases, this file must not.
  const phrases = [
    'as measured in session\u00208',
    'Session\u00209 (2026-12-01): every consume after its produce',
    'the figures of sessions\u00207 and 8',
    'with the failover work of this\u0020session',
    'while other\u0020engineers ran their builds',
    "another\u0020engineer's uncommitted changes",
    "issue\u002010's consume target",
    'Issue\u00203: the append path',
    'transactions are a later\u0020issue',
    'one way to reuse a frame early, found by\u0020review',
    'found by a\u0020review of the change',
    'the keys the\u0020brief names',
  ]

  it('reports each phrase in src/ (code and prose), docs/ and any README.md, on its line', () => {
    const prose = phrases.join('\n')
    const lines = (file: string) => phrases.map((_, i) => `${file}:${i + 1} process-talk`)
    assert.deepEqual(
      check(['storage'], {
        'src/storage/segment.ts': phrases.map((p) => `// ${p}`).join('\n'),
        'src/storage/notes.md': prose,
        'docs/performance.md': prose,
        'README.md': prose,
        'bench/peers/README.md': prose,
      }),
      [
        ...lines('README.md'),
        ...lines('bench/peers/README.md'),
        ...lines('docs/performance.md'),
        ...lines('src/storage/notes.md'),
        ...lines('src/storage/segment.ts'),
      ],
    )
  })

  it('catches a phrase wrapped over lines, in a comment or in Markdown', () => {
    assert.deepEqual(
      check(['storage'], {
        'src/storage/segment.ts':
          '/**\n * Hooks plug in here (a later\n * issue).\n */\n// measured in session\n// 8\n',
        'docs/notes.md': 'Left to a\nlater\u0020issue.\n',
      }),
      [
        'docs/notes.md:1 process-talk',
        'src/storage/segment.ts:2 process-talk',
        'src/storage/segment.ts:5 process-talk',
      ],
    )
  })

  it("does not report Kafka's sessions or other uses of the words", () => {
    const text = [
      '// session.timeout.ms and broker.session.timeout.ms',
      '// The follower keeps heartbeating (session\u002010 s) but never rejoins.',
      '// a session of 2000 ms; sessions\u002045 seconds long; a 9 s session',
      '// Sessionless full fetches (session id 0, epoch -1)',
      '// a new session, InitProducerId; the last broker session; fetch sessions',
      '// completions fed back in issue order; the token issue timestamp',
      '// the engineers of Kafka; tests reviewed by\u0020review tools',
    ].join('\n')
    assert.deepEqual(check(['storage'], { 'src/storage/segment.ts': text, 'docs/kafka.md': text }), [])
  })

  it('reads only src/, docs/ and README.md files', () => {
    assert.deepEqual(
      check(['storage'], {
        'test/unit/x.test.ts': '// session\u00208',
        'tools/notes.md': 'issue\u002010',
        'bench/notes.md': 'another\u0020engineer',
        'node_modules/pkg/README.md': 'session\u00208',
        'dist/src/README.md': 'session\u00208',
        '.cache/README.md': 'session\u00208',
        'test/sim/README.md': 'as in this\u0020session',
      }),
      ['test/sim/README.md:1 process-talk'],
    )
  })

  it('names the phrase in its message', () => {
    const [v] = tidy(tree(['storage'], { 'docs/perf.md': 'Figures from\nsession\u00208.\n' }))
    assert.match(
      formatViolation(v!),
      /^docs\/perf\.md:2: 'session\u00208' speaks of how Weir was built.*\(process-talk\)$/,
    )
  })
})

describe('tidy: vocabulary', () => {
  it("reports 'as never' in shipped code, not in tests nor the generated codecs", () => {
    const source = [
      'const a = x as never',
      'const b = f(y as never, 1)',
      'const c = z as NodeId',
      'const d = o.as as never',
      '// q as never',
      "const e = 'as never'",
    ].join('\n')
    assert.deepEqual(
      check(['protocol', 'storage'], {
        'src/storage/segment.ts': source,
        'src/storage/segment.test.ts': source,
        'src/protocol/generated/x.ts': source,
      }),
      [
        'src/storage/segment.ts:1 as-never',
        'src/storage/segment.ts:2 as-never',
        'src/storage/segment.ts:4 as-never',
      ],
    )
  })

  it('reports an error code compared with or defaulted to a number literal', () => {
    const source = [
      'if (r.errorCode !== 0) return',
      'const a = p?.errorCode ?? 42',
      'const b = errorCode === 3',
      'const c = (answer.errorCode) != -1',
      'const d = 0 === r.errorCode',
      'const e = topLevelErrorCode == 7',
    ].join('\n')
    assert.deepEqual(
      check(['storage'], { 'src/storage/segment.ts': source, 'src/storage/segment.test.ts': source }),
      [1, 2, 3, 4, 5, 6].map((line) => `src/storage/segment.ts:${line} error-literal`),
    )
  })

  it('does not report error codes named, numbers elsewhere, nor the generated codecs', () => {
    const source = [
      'if (r.errorCode !== ErrorCode.None) return',
      'const a = p?.errorCode ?? ErrorCode.InvalidRequest',
      'const b = { errorCode: 0 }',
      'const c = errorCodes.length === 0',
      'const d = r.errorCode === e ? 0 : 1',
      'const f = count === 0 && errorCode === ErrorCode.None',
      "const g = 'errorCode === 0'",
    ].join('\n')
    assert.deepEqual(
      check(['protocol', 'storage'], {
        'src/storage/segment.ts': source,
        'src/protocol/generated/x.ts': 'const z = (o.errorCode === undefined || o.errorCode === 0)\n',
      }),
      [],
    )
  })

  it('names the error code and the literal in its message', () => {
    const [v] = tidy(tree(['storage'], { 'src/storage/segment.ts': 'const a = p?.errorCode ?? 42\n' }))
    assert.match(formatViolation(v!), /^src\/storage\/segment\.ts:1: errorCode \?\? 42: say ErrorCode\.X/)
  })

  it('reports limits declared with max/min first or before their unit', () => {
    const source = [
      'interface Limits {',
      '  readonly maxRetainMs: number',
      '  minEntries?: number',
      '  holdTimeMaxMs: number',
      '}',
      'const maxFlushGapMs = 10',
      'function f(minBufferCapacity: number) {}',
      'class C {',
      '  #maxSeen = 0',
      '  readonly maxRound = 1',
      '  maxPendingWrites = 0',
      '}',
      'const o = { fetchMetadataMaxBytes: 4096 }',
    ].join('\n')
    assert.deepEqual(
      check(['storage'], { 'src/storage/segment.ts': source }),
      [2, 3, 4, 6, 7, 9, 10, 11, 13].map((line) => `src/storage/segment.ts:${line} limit-name`),
    )
  })

  it("allows limits with Max/Min last, Kafka's field names from the generated codecs, and reads", () => {
    const source = [
      'interface Limits {',
      '  readonly sessionTimeoutMsMax: number',
      '  readonly delayedOperationsMax: number',
      '  readonly maxWaitMs: number',
      '  readonly partitionMaxBytes: number',
      '}',
      'const a = { minVersion: 0, maxOutputLength: 1 }',
      'const b = req.maxBytes + o.maxSlots',
      'const c = ok ? maxSlots : 0',
      'const d = Math.max(x, y)',
      'const e = setMaxTimestamp',
    ].join('\n')
    const generated = [
      'export interface FetchRequest {',
      '  maxWaitMs: number',
      '  partitionMaxBytes: number',
      '  minVersion: number',
      '}',
    ].join('\n')
    assert.deepEqual(
      check(['protocol', 'storage'], {
        'src/storage/segment.ts': source,
        'src/storage/segment.test.ts': 'const maxFlushGapMs = 10\n',
        'src/protocol/generated/fetch.ts': generated,
      }),
      [],
    )
  })

  it('says how to name the limit', () => {
    const [v] = tidy(tree(['storage'], { 'src/storage/segment.ts': 'const maxFlushGapMs = 10\n' }))
    assert.match(v!.message, /'maxFlushGapMs': a limit ends in its unit and Max\/Min/)
  })
})

describe('tokenizer', () => {
  it('tells regular expressions from division', () => {
    const kinds = (s: string) => tokenize(s).map((t) => `${t.kind}:${t.value}`)
    assert.deepEqual(
      kinds("x = a / b / c; y = /'/.test(z)").filter((k) => k.startsWith('regex') || k === 'punct:/'),
      ['punct:/', 'punct:/', "regex:/'/"],
    )
    assert.deepEqual(kinds('return /[/]x/gi'), ['name:return', 'regex:/[/]x/gi'])
  })

  it('counts lines through comments, strings and templates', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text under test
    const tokens = tokenize('/*\n\n*/ a\n`x\n${b}\n` c\n"d\\\ne" f')
    const line = (name: string) => tokens.find((t) => t.value === name)?.line
    assert.equal(line('a'), 3)
    assert.equal(line('b'), 5)
    assert.equal(line('c'), 6)
    assert.equal(line('f'), 8)
  })

  it('skips a shebang', () => {
    assert.deepEqual(findImports(tokenize("#!/usr/bin/env node\nimport 'x'\n")), [
      { specifier: 'x', line: 2 },
    ])
  })
})

describe('tidy CLI', () => {
  const run = (root: string) =>
    spawnSync(process.execPath, [join(import.meta.dirname, '../../tools/tidy.ts'), root], {
      encoding: 'utf8',
    })

  it('prints file:line: message and exits 1 on violations', () => {
    const result = run(
      tree(['storage', 'server'], { 'src/storage/segment.ts': "\nimport '../server/index.ts'\n" }),
    )
    assert.equal(result.status, 1)
    assert.match(result.stdout, /^src\/storage\/segment\.ts:2: storage may not import server/m)
    assert.match(result.stderr, /tidy: 1 violation/)
  })

  it('exits 0 on a tidy tree', () => {
    const result = run(
      tree(['model', 'storage'], { 'src/storage/segment.ts': "import '../model/index.ts'\n" }),
    )
    assert.equal(result.status, 0, result.stdout + result.stderr)
    assert.equal(result.stdout, '')
  })
})
