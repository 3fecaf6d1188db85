/**
 * tidy: checks that src/ keeps the shape docs/DESIGN.md and docs/ARCHITECTURE.md draw: the import
 * arrows between modules, entry through each module's index.ts, node:* only at the edges, time and
 * randomness only through the io ports, kebab-case file names, and an index.ts and README.md per
 * module. And that src/, docs/ and every README.md describe the software, not the process that
 * built it (the phrases of PROCESS_TALK below). And, in src/'s shipped code (not its tests,
 * not the generated codecs), the vocabulary of docs/HACKING.md that a tool can check: no `as never`
 * cast, no error code compared with or defaulted to a bare number, and limits named with Max/Min
 * last (`fetchWaitMsMax`, not `maxFetchWaitMs`).
 *
 * Run: `node tools/tidy.ts [root]` (root defaults to the repository). Prints `file:line: message`
 * per violation and exits 1 if there is any.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { isBuiltin } from 'node:module'
import { join, posix, resolve } from 'node:path'

// ---------------------------------------------------------------------------------------------
// The rules, in one place. Change docs/ARCHITECTURE.md (the module map of docs/DESIGN.md) and this
// table together.
// ---------------------------------------------------------------------------------------------

/**
 * The import arrows: each module (a folder under src/) and the other modules it may import. Every
 * module may also import itself and `model`. A folder missing here is an unknown module.
 */
export const MODULE_IMPORTS: Readonly<Record<string, readonly string[]>> = arrows({
  model: '', // ids, units, assert(): imports nothing
  io: '', // the ports and their node:* implementations
  protocol: '', // the codec: pure
  raft: '', // the KRaft core: pure
  metadata: 'protocol',
  config: '', // the catalog of Kafka config keys: pure, imports only model
  storage: 'protocol io config', // record batches and error codes; all of protocol is allowed
  client: 'protocol io security', // Kafka-protocol requests to other nodes over the Transport port; SASL's client side
  quorum: 'raft storage protocol io client',
  controller: 'quorum metadata protocol io config security', // appends records via the quorum; ACL and SCRAM rules from security
  replication: 'storage metadata protocol io client config',
  coordinator: 'replication storage metadata protocol io config',
  server:
    'io protocol storage raft quorum metadata controller replication coordinator client config security',
  broker:
    'io protocol storage raft quorum metadata controller replication coordinator server client config security console',
  security: 'protocol io config', // authentication (SASL, TLS principals) and authorization: pure but for hashing
  cli: 'protocol io client config broker security console', // over the wire to clusters; `weir start` hosts a node (broker); ACL names and SCRAM salting from security; `weir console`
  console: 'protocol io client', // the web console: the Kafka protocol only, so it serves any cluster
})

function arrows(table: Record<string, string>): Record<string, readonly string[]> {
  const result: Record<string, readonly string[]> = {}
  for (const [module, targets] of Object.entries(table)) {
    result[module] = targets.split(' ').filter((t) => t !== '')
    for (const target of result[module]) {
      if (!Object.hasOwn(table, target)) throw new Error(`tidy: ${module} -> ${target}: no such module`)
    }
  }
  return result
}

/** Modules that may import `node:*` (the edges). */
const NODE_IMPORT_MODULES: ReadonlySet<string> = new Set(['io', 'server', 'broker', 'cli', 'console'])

/** Single exceptions to NODE_IMPORT_MODULES: a folder and the builtins it may import. */
const NODE_IMPORT_ALLOWANCES: readonly { dir: string; specifiers: readonly string[]; why: string }[] = [
  { dir: 'src/protocol/records/', specifiers: ['node:zlib', 'node:buffer'], why: 'record compression' },
  {
    dir: 'src/security/',
    specifiers: ['node:crypto'],
    why: 'hashes, HMACs and signatures (randomness comes from the Random port)',
  },
]

/** Modules that may read real time and randomness and set real timers; the rest use the io ports. */
const REAL_TIME_MODULES: ReadonlySet<string> = new Set(['io', 'broker', 'cli', 'console'])

/** Member reads that reach real time or randomness, and what to use instead. */
const BANNED_MEMBERS: ReadonlyMap<string, string> = new Map([
  ['Date.now', 'Clock.nowMs()'],
  ['performance.now', 'Clock.monotonicMs()'],
  ['process.hrtime', 'Clock.monotonicMs()'],
  ['Math.random', 'the Random port'],
  ['crypto.getRandomValues', 'the Random port'],
  ['crypto.randomUUID', 'the Random port'],
])

/**
 * Global calls that set real timers (`queueMicrotask` is allowed: it involves no time). A method of
 * the same name is reported too, which is why the Clock port calls it `setTimer`.
 */
const BANNED_TIMER_CALLS: ReadonlySet<string> = new Set(['setTimeout', 'setInterval', 'setImmediate'])

/** Names that say nothing about what a file holds. */
const BANNED_FILE_NAMES: ReadonlySet<string> = new Set(['utils', 'helpers'])

/** Files every module folder has. */
const MODULE_FILES = ['index.ts', 'README.md'] as const

const KEBAB_CASE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/**
 * Phrases that speak of how Weir was built (a work session, a numbered issue, the people) instead
 * of what it is: a document or comment gives the reason for a choice, and the history is in git.
 * Kafka's own sessions are not matched: `session.timeout.ms`, a session of 10 s or 2000 ms, fetch
 * session id 0, group and broker sessions.
 */
const PROCESS_TALK: readonly RegExp[] = [
  /\bsessions?\s+\d+\b(?!\s*(?:ms|s|seconds?|minutes?)\b)/gi,
  /\bthis\s+session\b/gi,
  /\b(?:other|another)\s+engineers?\b/gi,
  /\bissues?\s+\d+\b/gi,
  /\ba\s+later\s+issue\b/gi,
  /\bfound\s+by\s+(?:a\s+)?review\b/gi,
  /\bthe\s+brief\b/gi,
]

/** Files under src/ whose text (comments included) PROCESS_TALK checks; docs/ and READMEs: `.md`. */
const PROSE_IN_SRC = /\.(?:ts|js|mjs|md|c|h)$/

/** The generated codecs (Kafka's names, never edited by hand): the vocabulary rules skip them. */
const GENERATED_DIR = 'src/protocol/generated/'

/**
 * A limit named the other way round: `max`/`min` first (`maxRetainMs`), or between the concept
 * and its unit (`holdTimeMaxMs`). Weir's limits end in their unit and Max/Min: `retainMsMax`.
 */
const LIMIT_NAME_FIRST = /^#?(?:max|min)[A-Z]/
const LIMIT_NAME_INSIDE = /^#?[a-z][A-Za-z0-9]*[a-z0-9](?:Max|Min)(?:[A-Z][A-Za-z0-9]*)?(?:Ms|Bytes)$/

/**
 * Names of that shape that are not Weir's to choose, besides the generated codecs' field names
 * (Kafka's: `maxWaitMs`, `minVersion`, `partitionMaxBytes`, read from src/protocol/generated/).
 */
const FOREIGN_LIMIT_NAMES: ReadonlyMap<string, string> = new Map([
  ['maxOutputLength', "node:zlib's option"],
  ['maxHeaderSize', "node:http's server option"],
  ['maxConnections', "node:net's server property"],
])

/** Folders never searched for READMEs: dependencies, build output, dot-folders (.git, .cache). */
const SKIPPED_FOLDERS: ReadonlySet<string> = new Set(['node_modules', 'dist', 'build'])

// ---------------------------------------------------------------------------------------------

export type Rule =
  | 'import-arrow'
  | 'import-entry'
  | 'node-import'
  | 'banned-call'
  | 'file-name'
  | 'module-layout'
  | 'process-talk'
  | 'as-never'
  | 'error-literal'
  | 'limit-name'

export interface Violation {
  /** Path relative to the root, with `/` separators. */
  readonly file: string
  /** 1-based. */
  readonly line: number
  readonly rule: Rule
  readonly message: string
}

export function formatViolation(v: Violation): string {
  return `${v.file}:${v.line}: ${v.message} (${v.rule})`
}

function isModuleName(name: string): boolean {
  return Object.hasOwn(MODULE_IMPORTS, name)
}

/** Check `rootDir/src`, and the prose of src/, docs/ and every README.md. Violations come sorted by file, line and rule. */
export function tidy(rootDir: string): Violation[] {
  const violations: Violation[] = []
  const srcDir = join(rootDir, 'src')
  if (!existsSync(srcDir)) {
    return [{ file: 'src', line: 1, rule: 'module-layout', message: 'no src/ directory' }]
  }
  checkModuleLayout(srcDir, violations)
  const files = [...walk(srcDir, 'src')]
  const kafkaNames = generatedLimitNames(rootDir, files)
  for (const { path, isDirectory } of files) {
    checkName(path, isDirectory, violations)
    if (!isDirectory) checkSource(path, readFileSync(join(rootDir, path), 'utf8'), kafkaNames, violations)
  }
  for (const path of proseFiles(rootDir)) {
    checkProcessTalk(path, readFileSync(join(rootDir, path), 'utf8'), violations)
  }
  return violations.sort(
    (a, b) =>
      compare(a.file, b.file) || a.line - b.line || compare(a.rule, b.rule) || compare(a.message, b.message),
  )
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Every folder and .ts file under `dir`, depth first in name order, skipping node_modules. */
function* walk(dir: string, relDir: string): Generator<{ path: string; isDirectory: boolean }> {
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => compare(a.name, b.name))
  for (const entry of entries) {
    const path = `${relDir}/${entry.name}`
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules') continue
      yield { path, isDirectory: true }
      yield* walk(join(dir, entry.name), path)
    } else if (entry.isFile() && entry.name.endsWith('.ts')) {
      yield { path, isDirectory: false }
    }
  }
}

/** Every file of any kind under `dir`, in name order, skipping SKIPPED_FOLDERS and dot-entries. */
function* allFiles(dir: string, relDir: string): Generator<string> {
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => compare(a.name, b.name))
  for (const entry of entries) {
    if (entry.name.startsWith('.') || SKIPPED_FOLDERS.has(entry.name)) continue
    const path = relDir === '' ? entry.name : `${relDir}/${entry.name}`
    if (entry.isDirectory()) yield* allFiles(join(dir, entry.name), path)
    else if (entry.isFile()) yield path
  }
}

/** The files PROCESS_TALK reads: src/'s sources and prose, docs/'s Markdown, every README.md. */
function proseFiles(rootDir: string): string[] {
  const paths = new Set<string>()
  for (const path of allFiles(rootDir, '')) {
    const isSrc = path.startsWith('src/') && PROSE_IN_SRC.test(path)
    const isDoc = path.startsWith('docs/') && path.endsWith('.md')
    if (isSrc || isDoc || path === 'README.md' || path.endsWith('/README.md')) paths.add(path)
  }
  return [...paths]
}

/**
 * Reports each PROCESS_TALK phrase, also one wrapped over lines: a line break and what continues a
 * comment (`//`, `*`, `#`) count as spaces, replaced by as many so that offsets keep their lines.
 */
function checkProcessTalk(path: string, text: string, out: Violation[]): void {
  const joined = text.replace(/\n[ \t]*(?:\/\/+|\*(?!\/)|#+)?/g, (gap) => ' '.repeat(gap.length))
  for (const pattern of PROCESS_TALK) {
    for (const match of joined.matchAll(pattern)) {
      let line = 1
      for (let i = text.indexOf('\n'); i >= 0 && i < match.index; i = text.indexOf('\n', i + 1)) line++
      out.push({
        file: path,
        line,
        rule: 'process-talk',
        message: `'${match[0].replace(/\s+/g, ' ')}' speaks of how Weir was built: describe the software (its history is in git)`,
      })
    }
  }
}

function checkModuleLayout(srcDir: string, out: Violation[]): void {
  for (const entry of readdirSync(srcDir, { withFileTypes: true })) {
    const path = `src/${entry.name}`
    // src/index.ts is the package entry (`import { startCluster } from 'weir'`): it only re-exports
    // from module entries, which the import rules below check like any other file.
    if (entry.isFile() && entry.name.endsWith('.ts') && entry.name !== 'index.ts') {
      out.push({
        file: path,
        line: 1,
        rule: 'module-layout',
        message: 'file directly in src/, outside any module folder',
      })
    }
    if (!entry.isDirectory() || entry.name === 'node_modules') continue
    if (!isModuleName(entry.name)) {
      out.push({
        file: path,
        line: 1,
        rule: 'module-layout',
        message: `unknown module '${entry.name}': not in docs/ARCHITECTURE.md's module map (add it there and to tidy's MODULE_IMPORTS)`,
      })
      continue
    }
    for (const name of MODULE_FILES) {
      if (!existsSync(join(srcDir, entry.name, name))) {
        out.push({
          file: path,
          line: 1,
          rule: 'module-layout',
          message:
            name === 'index.ts'
              ? `module '${entry.name}' has no index.ts (its only public entry)`
              : `module '${entry.name}' has no README.md (what it owns, what it must not do, main types)`,
        })
      }
    }
  }
}

function checkName(path: string, isDirectory: boolean, out: Violation[]): void {
  const base = path.slice(path.lastIndexOf('/') + 1)
  const parts = (isDirectory ? base : base.slice(0, -'.ts'.length)).split('.')
  if (!parts.every((part) => KEBAB_CASE.test(part))) {
    const what = isDirectory ? 'folder' : 'file'
    out.push({ file: path, line: 1, rule: 'file-name', message: `${what} name '${base}' is not kebab-case` })
  }
  if (!isDirectory && BANNED_FILE_NAMES.has(parts[0]!)) {
    out.push({
      file: path,
      line: 1,
      rule: 'file-name',
      message: `no ${parts[0]}.ts: name the file after its main export`,
    })
  }
}

/** The module a path under src/ belongs to, or null for a file directly in src/. */
function moduleOf(path: string): string | null {
  const parts = path.split('/')
  return parts.length > 2 ? parts[1]! : null
}

/** The limit-shaped names in the generated codecs: Kafka's field names, which Weir keeps. */
function generatedLimitNames(
  rootDir: string,
  files: readonly { path: string; isDirectory: boolean }[],
): ReadonlySet<string> {
  const names = new Set<string>()
  for (const { path, isDirectory } of files) {
    if (isDirectory || !path.startsWith(GENERATED_DIR)) continue
    for (const t of tokenize(readFileSync(join(rootDir, path), 'utf8'))) {
      if (t.kind === 'name' && isLimitShaped(t.value!)) names.add(t.value!)
    }
  }
  return names
}

function isLimitShaped(name: string): boolean {
  return LIMIT_NAME_FIRST.test(name) || LIMIT_NAME_INSIDE.test(name)
}

function checkSource(path: string, source: string, kafkaNames: ReadonlySet<string>, out: Violation[]): void {
  const isTest = path.endsWith('.test.ts')
  const module = moduleOf(path)
  const tokens = tokenize(source)

  if (!isTest && !path.startsWith(GENERATED_DIR)) checkVocabulary(path, tokens, kafkaNames, out)

  for (const ref of findImports(tokens)) {
    const at = { file: path, line: ref.line }
    if (ref.specifier === null) {
      out.push({
        ...at,
        rule: 'import-arrow',
        message: 'import() of a computed specifier cannot be checked: use a string literal',
      })
      continue
    }
    const spec = ref.specifier
    if (spec.startsWith('node:') || isBuiltin(spec)) {
      if (!isTest) checkNodeImport(path, module, spec, at, out)
    } else if (spec.startsWith('./') || spec.startsWith('../')) {
      checkRelativeImport(path, module, spec, isTest, at, out)
    }
    // Bare package specifiers are not this tool's business (docs/decisions.md lists dependencies).
  }

  if (!isTest && (module === null || !REAL_TIME_MODULES.has(module))) {
    for (const found of findBannedCalls(tokens)) {
      out.push({
        file: path,
        line: found.line,
        rule: 'banned-call',
        message: `${found.what} outside io/, broker/, cli/, console/: use ${found.instead} from the io ports`,
      })
    }
  }
}

/** The vocabulary rules of shipped code: `as never`, bare error numbers, limit names. */
function checkVocabulary(
  path: string,
  tokens: readonly Token[],
  kafkaNames: ReadonlySet<string>,
  out: Violation[],
): void {
  for (const found of findAsNever(tokens)) {
    out.push({
      file: path,
      line: found.line,
      rule: 'as-never',
      message:
        "'as never' accepts anything: make a branded id with its constructor (TopicName(), NodeId()), or name the type",
    })
  }
  for (const found of findErrorLiterals(tokens)) {
    out.push({
      file: path,
      line: found.line,
      rule: 'error-literal',
      message: `${found.name} ${found.op} ${found.literal}: say ErrorCode.X (ErrorCode.None for 0), not a bare number`,
    })
  }
  for (const found of findLimitDeclarations(tokens)) {
    if (kafkaNames.has(found.name) || FOREIGN_LIMIT_NAMES.has(found.name)) continue
    out.push({
      file: path,
      line: found.line,
      rule: 'limit-name',
      message: `'${found.name}': a limit ends in its unit and Max/Min (fetchWaitMsMax, entriesMax; docs/HACKING.md)`,
    })
  }
}

function checkNodeImport(
  path: string,
  module: string | null,
  spec: string,
  at: { file: string; line: number },
  out: Violation[],
): void {
  if (module !== null && NODE_IMPORT_MODULES.has(module)) return
  const name = spec.startsWith('node:') ? spec : `node:${spec}`
  if (NODE_IMPORT_ALLOWANCES.some((a) => path.startsWith(a.dir) && a.specifiers.includes(name))) return
  const allowance = NODE_IMPORT_ALLOWANCES.find((a) => path.startsWith(a.dir))
  const extra =
    allowance === undefined
      ? ''
      : ` (${allowance.dir} may import ${allowance.specifiers.join(', ')} for ${allowance.why})`
  out.push({
    ...at,
    rule: 'node-import',
    message: `imports '${spec}': only ${[...NODE_IMPORT_MODULES].join(', ')} import node:*${extra}; reach the OS through the io ports`,
  })
}

function checkRelativeImport(
  path: string,
  module: string | null,
  spec: string,
  isTest: boolean,
  at: { file: string; line: number },
  out: Violation[],
): void {
  const target = posix.normalize(posix.join(posix.dirname(path), spec))
  if (!target.startsWith('src/')) {
    // Tests may reach fixtures and helpers under test/; shipped code stays inside src/.
    if (!isTest) out.push({ ...at, rule: 'import-arrow', message: `imports '${spec}', outside src/` })
    return
  }
  // `../io` names the module folder itself; `src/main.ts` is a file in no module.
  const targetModule = moduleOf(target) ?? (target.includes('.') ? null : target.slice('src/'.length))
  if (targetModule === null) {
    out.push({ ...at, rule: 'import-arrow', message: `imports '${spec}', which is in no module` })
    return
  }
  if (targetModule === module) return
  const allowed = module !== null && isModuleName(module) ? MODULE_IMPORTS[module] : undefined
  if (allowed !== undefined && targetModule !== 'model') {
    if (!allowed.includes(targetModule)) {
      const may = ['model', ...allowed].join(', ')
      out.push({
        ...at,
        rule: 'import-arrow',
        message: `${module} may not import ${targetModule} ('${spec}'); ${module} imports only ${may}`,
      })
    }
  }
  const entry = `src/${targetModule}/index.ts`
  if (target !== entry) {
    out.push({
      ...at,
      rule: 'import-entry',
      message: `imports '${spec}': reach another module only through its index.ts (${entry})`,
    })
  }
}

// ---------------------------------------------------------------------------------------------
// A small tokenizer: enough of TypeScript's lexical grammar to skip comments, strings, template
// text and regular expressions, so that code in them is never mistaken for imports or calls.
// ---------------------------------------------------------------------------------------------

export type TokenKind = 'name' | 'number' | 'string' | 'template' | 'regex' | 'punct'

export interface Token {
  readonly kind: TokenKind
  /** Names and punctuation: their text. Strings, and templates without substitutions: their raw
   * contents. A template with `${...}` has `value` null; the code inside it follows as tokens. */
  readonly value: string | null
  readonly line: number
}

/** After these keywords a `/` starts a regular expression, not a division. */
const KEYWORDS_BEFORE_EXPRESSION: ReadonlySet<string> = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
])

const NAME_START = /[\p{ID_Start}$_#]/u
const NAME_PART = /[\p{ID_Continue}$\u200c\u200d]/u

export function tokenize(source: string): Token[] {
  const tokens: Token[] = []
  const n = source.length
  let i = source.startsWith('#!') ? source.indexOf('\n') : 0 // a shebang line
  if (i < 0) i = n
  let line = 1
  /** Per open `${`: how many `{` are open inside it, so its own `}` resumes the template. */
  const substitutions: number[] = []

  const push = (kind: TokenKind, value: string | null, at = line) => {
    tokens.push({ kind, value, line: at })
  }

  /** Scan template text from `i` to its closing backtick or next `${`. Returns the raw text and whether it ended. */
  const scanTemplateText = (): { text: string; ended: boolean } => {
    const start = i
    while (i < n) {
      const c = source[i]!
      if (c === '\\') {
        if (source[i + 1] === '\n') line++
        i += 2
      } else if (c === '`') {
        i++
        return { text: source.slice(start, i - 1), ended: true }
      } else if (c === '$' && source[i + 1] === '{') {
        const text = source.slice(start, i)
        i += 2
        substitutions.push(0)
        return { text, ended: false }
      } else {
        if (c === '\n') line++
        i++
      }
    }
    return { text: source.slice(start), ended: true }
  }

  const regexAllowed = (): boolean => {
    const prev = tokens.at(-1)
    if (prev === undefined) return true
    if (prev.kind === 'punct') return prev.value !== ')' && prev.value !== ']' && prev.value !== '}'
    if (prev.kind === 'name') return KEYWORDS_BEFORE_EXPRESSION.has(prev.value!)
    return false
  }

  /** Scan a regular expression literal at `i`; false (and `i` unchanged) if none ends on this line. */
  const scanRegex = (): boolean => {
    let j = i + 1
    let inClass = false
    while (j < n) {
      const c = source[j]!
      if (c === '\n') return false
      if (c === '\\') j += 2
      else {
        if (c === '[') inClass = true
        else if (c === ']') inClass = false
        else if (c === '/' && !inClass) break
        j++
      }
    }
    if (j >= n) return false
    j++
    while (j < n && /[a-z]/.test(source[j]!)) j++
    push('regex', source.slice(i, j))
    i = j
    return true
  }

  while (i < n) {
    const c = source[i]!
    const next = source[i + 1]
    if (c === '\n') {
      line++
      i++
    } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v' || c === '\ufeff') {
      i++
    } else if (c === '/' && next === '/') {
      while (i < n && source[i] !== '\n') i++
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2)
      const stop = end < 0 ? n : end + 2
      for (let k = i; k < stop; k++) if (source[k] === '\n') line++
      i = stop
    } else if (c === "'" || c === '"') {
      const at = line
      let j = i + 1
      while (j < n && source[j] !== c && source[j] !== '\n') {
        if (source[j] === '\\') {
          if (source[j + 1] === '\n') line++
          j++
        }
        j++
      }
      push('string', source.slice(i + 1, j), at)
      i = j < n && source[j] === c ? j + 1 : j
    } else if (c === '`') {
      const at = line
      i++
      const { text, ended } = scanTemplateText()
      push('template', ended ? text : null, at)
    } else if (c === '}' && substitutions.length > 0 && substitutions.at(-1) === 0) {
      substitutions.pop()
      i++
      scanTemplateText()
    } else if (c === '/' && regexAllowed() && scanRegex()) {
      // scanned
    } else if (NAME_START.test(c)) {
      let j = i + 1
      while (j < n && NAME_PART.test(source[j]!)) j++
      push('name', source.slice(i, j))
      i = j
    } else if ((c >= '0' && c <= '9') || (c === '.' && next !== undefined && next >= '0' && next <= '9')) {
      let j = i + 1
      while (j < n && /[\w.]/.test(source[j]!)) j++
      push('number', source.slice(i, j))
      i = j
    } else if (c === '?' && next === '.' && !/[0-9]/.test(source[i + 2] ?? '')) {
      push('punct', '?.')
      i += 2
    } else {
      if (substitutions.length > 0) {
        if (c === '{') substitutions[substitutions.length - 1]!++
        else if (c === '}') substitutions[substitutions.length - 1]!--
      }
      push('punct', c)
      i++
    }
  }
  return tokens
}

export interface ImportRef {
  /** The module specifier, or null for `import(expr)` with a computed one. */
  readonly specifier: string | null
  readonly line: number
}

function isPunct(token: Token | undefined, ...values: string[]): boolean {
  return token?.kind === 'punct' && values.includes(token.value!)
}

function isName(token: Token | undefined, value: string): boolean {
  return token?.kind === 'name' && token.value === value
}

function staticString(token: Token | undefined): string | null {
  return (token?.kind === 'string' || token?.kind === 'template') && token.value !== null ? token.value : null
}

/**
 * Every `import ... from '...'`, `import '...'`, `export ... from '...'` and `import('...')`
 * (including TypeScript's `typeof import('...')` types).
 */
export function findImports(tokens: readonly Token[]): ImportRef[] {
  const refs: ImportRef[] = []
  for (let k = 0; k < tokens.length; k++) {
    const token = tokens[k]!
    if (token.kind !== 'name' || (token.value !== 'import' && token.value !== 'export')) continue
    if (isPunct(tokens[k - 1], '.', '?.')) continue // obj.import, not a keyword
    const after = tokens[k + 1]
    if (token.value === 'import') {
      if (isPunct(after, '.')) continue // import.meta
      if (isPunct(after, '(')) {
        const literal = staticString(tokens[k + 2])
        const closed = isPunct(tokens[k + 3], ')', ',')
        refs.push({ specifier: literal !== null && closed ? literal : null, line: token.line })
        continue
      }
      if (after?.kind === 'string') {
        refs.push({ specifier: after.value!, line: token.line }) // import './side-effect.ts'
        continue
      }
    } else {
      // Only re-exports have a `from`: export * ..., export { ... }, export type { ... } / * ...
      const head = isName(after, 'type') ? tokens[k + 2] : after
      if (!isPunct(head, '*', '{')) continue
    }
    // An import or re-export clause: names, `{ } , *`, up to `from '...'`.
    for (let j = k + 1; j < tokens.length; j++) {
      const t = tokens[j]!
      if (isName(t, 'from') && tokens[j + 1]?.kind === 'string') {
        refs.push({ specifier: tokens[j + 1]!.value!, line: token.line })
        break
      }
      const clause =
        (t.kind === 'name' && t.value !== 'import' && t.value !== 'export') || isPunct(t, '{', '}', ',', '*')
      if (!clause) break // not an import declaration this tool knows, e.g. `import x = require(...)`
    }
  }
  return refs
}

interface BannedCall {
  readonly what: string
  readonly instead: string
  readonly line: number
}

const GLOBAL_OBJECTS: ReadonlySet<string> = new Set(['globalThis', 'global', 'window', 'self'])

/** A name read as a global: not a member of something else, except of `globalThis`. */
function isGlobalRead(tokens: readonly Token[], k: number): boolean {
  if (!isPunct(tokens[k - 1], '.', '?.')) return true
  const owner = tokens[k - 2]
  return owner?.kind === 'name' && GLOBAL_OBJECTS.has(owner.value!)
}

export function findBannedCalls(tokens: readonly Token[]): BannedCall[] {
  const found: BannedCall[] = []
  for (let k = 0; k < tokens.length; k++) {
    const token = tokens[k]!
    if (token.kind !== 'name' || !isGlobalRead(tokens, k)) continue
    const name = token.value!
    const after = tokens[k + 1]
    if (isPunct(after, '.', '?.') && tokens[k + 2]?.kind === 'name') {
      const member = `${name}.${tokens[k + 2]!.value}`
      const instead = BANNED_MEMBERS.get(member)
      if (instead !== undefined) found.push({ what: member, instead, line: token.line })
    } else if (BANNED_TIMER_CALLS.has(name) && isPunct(after, '(')) {
      found.push({ what: `${name}()`, instead: 'Clock.setTimer()', line: token.line })
    } else if (name === 'Date') {
      const isNew = isName(tokens[k - 1], 'new')
      const noArgs = isPunct(after, '(') && isPunct(tokens[k + 2], ')')
      if (isNew && (noArgs || !isPunct(after, '('))) {
        found.push({ what: 'new Date()', instead: 'Clock.nowMs()', line: token.line })
      } else if (!isNew && isPunct(after, '(')) {
        found.push({ what: 'Date()', instead: 'Clock.nowMs()', line: token.line })
      }
    }
  }
  return found
}

/** Every `as never`. */
export function findAsNever(tokens: readonly Token[]): { line: number }[] {
  const found: { line: number }[] = []
  for (let k = 0; k + 1 < tokens.length; k++) {
    if (isName(tokens[k], 'as') && isName(tokens[k + 1], 'never') && !isPunct(tokens[k - 1], '.', '?.')) {
      found.push({ line: tokens[k]!.line })
    }
  }
  return found
}

/** The comparison or default operator starting at `k` (`===`, `!==`, `==`, `!=`, `??`), and its length in tokens. */
function operatorAt(tokens: readonly Token[], k: number): { op: string; length: number } | null {
  const text = (n: number) =>
    tokens
      .slice(k, k + n)
      .map((t) => (t.kind === 'punct' ? t.value : ' '))
      .join('')
  for (const op of ['===', '!==', '==', '!=', '??']) {
    if (text(op.length) === op) {
      // `a == =b` is not a thing, but `a === b` must not read as `==` then `=`: longest first.
      return { op, length: op.length }
    }
  }
  return null
}

/** A number literal at `k`, with its sign: `0`, `-1`, `42`. */
function numberAt(tokens: readonly Token[], k: number): { literal: string; length: number } | null {
  const t = tokens[k]
  if (t?.kind === 'number') return { literal: t.value!, length: 1 }
  if (isPunct(t, '-') && tokens[k + 1]?.kind === 'number')
    return { literal: `-${tokens[k + 1]!.value}`, length: 2 }
  return null
}

const ERROR_CODE_NAME = /[eE]rrorCode$/

/**
 * An error code compared with or defaulted to a number literal: `r.errorCode !== 0`,
 * `p?.errorCode ?? 42`, `3 === errorCode` (a closing parenthesis may sit between: `(a.errorCode) === 0`).
 */
export function findErrorLiterals(
  tokens: readonly Token[],
): { name: string; op: string; literal: string; line: number }[] {
  const found: { name: string; op: string; literal: string; line: number }[] = []
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!
    if (t.kind !== 'name' || !ERROR_CODE_NAME.test(t.value!)) continue
    let after = k + 1
    while (isPunct(tokens[after], ')')) after++
    const op = operatorAt(tokens, after)
    const literal = op === null ? null : numberAt(tokens, after + op.length)
    if (op !== null && literal !== null) {
      found.push({ name: t.value!, op: op.op, literal: literal.literal, line: t.line })
      continue
    }
    // The literal first: `0 === errorCode`, `0 === r.errorCode`.
    let head = k
    while (isPunct(tokens[head - 1], '.', '?.') && tokens[head - 2]?.kind === 'name') head -= 2
    for (const opText of ['===', '!==', '==', '!=']) {
      const start = head - opText.length
      if (start < 1 || operatorAt(tokens, start)?.op !== opText) continue
      const n = tokens[start - 1]!
      if (n.kind === 'number') found.push({ name: t.value!, op: opText, literal: n.value!, line: t.line })
      break
    }
  }
  return found
}

/** Keywords after which a name is declared. */
const DECLARING_KEYWORDS: ReadonlySet<string> = new Set([
  'const',
  'let',
  'var',
  'function',
  'class',
  'interface',
  'type',
  'enum',
])

/** Modifiers before a class field or property signature. */
const MEMBER_MODIFIERS: ReadonlySet<string> = new Set([
  'readonly',
  'static',
  'public',
  'private',
  'protected',
  'override',
  'declare',
  'accessor',
])

/**
 * Limit-shaped names where they are declared: after `const`/`let`/`function`/`interface`/..., as a
 * property, parameter or object key (`name:`, `name?:`), or as a class field (`#name = 0`,
 * `readonly name = 0`, `name = 0` first on its line). Not where they are only read (`a.maxBytes`): that is the declaration's business.
 */
export function findLimitDeclarations(tokens: readonly Token[]): { name: string; line: number }[] {
  const found: { name: string; line: number }[] = []
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!
    if (t.kind !== 'name' || !isLimitShaped(t.value!)) continue
    const prev = tokens[k - 1]
    const next = tokens[k + 1]
    if (isPunct(prev, '.', '?.')) continue
    const declared =
      (prev?.kind === 'name' && DECLARING_KEYWORDS.has(prev.value!)) ||
      // `name:` or `name?:`, but not a ternary's `c ? name : d` nor a `case name:`
      ((isPunct(next, ':') || (isPunct(next, '?') && isPunct(tokens[k + 2], ':'))) &&
        !isPunct(prev, '?') &&
        !isName(prev, 'case')) ||
      // a class field: `#name = ...`, `readonly name = ...` (not `name == x` nor `name => x`)
      (isPunct(next, '=') &&
        !isPunct(tokens[k + 2], '=', '>') &&
        (t.value!.startsWith('#') ||
          (prev?.kind === 'name' && MEMBER_MODIFIERS.has(prev.value!)) ||
          (prev !== undefined && prev.line < t.line && !isPunct(prev, '(', ',', '='))))
    if (declared) found.push({ name: t.value!, line: t.line })
  }
  return found
}

function main(args: readonly string[]): void {
  const root = resolve(args[0] ?? join(import.meta.dirname, '..'))
  const violations = tidy(root)
  for (const v of violations) console.log(formatViolation(v))
  if (violations.length > 0) {
    console.error(`tidy: ${violations.length} violation${violations.length === 1 ? '' : 's'}`)
    process.exitCode = 1
  }
}

if (import.meta.main) main(process.argv.slice(2))
