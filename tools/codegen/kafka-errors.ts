/**
 * Derives Kafka's error table from the Java sources of kafka-clients (its `-sources.jar`), since no
 * jar carries it as data: the entries of the `Errors` enum give code, name, message and exception
 * class; `retriable` is whether that class derives from `RetriableException`, followed through the
 * `extends` chain across the sources. Only the little Java these files use is understood, and
 * anything else in the enum's entries is refused rather than guessed.
 */

export interface KafkaError {
  readonly code: number
  readonly name: string
  readonly retriable: boolean
  /** The exception class's simple name; null for NONE. */
  readonly exception: string | null
  readonly message: string | null
}

const ERRORS_FILE = 'org/apache/kafka/common/protocol/Errors.java'
const RETRIABLE = 'org.apache.kafka.common.errors.RetriableException'

type Token =
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'word'; readonly value: string }
  | { readonly kind: 'punct'; readonly value: string }

const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  b: '\b',
  f: '\f',
  '"': '"',
  "'": "'",
  '\\': '\\',
}

/** Java source as tokens: string literals decoded, comments and whitespace dropped. */
function tokenize(src: string): Token[] {
  const out: Token[] = []
  let i = 0
  while (i < src.length) {
    const c = src[i]!
    if (/\s/.test(c)) i++
    else if (src.startsWith('//', i)) i = src.indexOf('\n', i) === -1 ? src.length : src.indexOf('\n', i)
    else if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2)
      if (end === -1) throw new Error('Java: unterminated comment')
      i = end + 2
    } else if (c === '"') {
      let value = ''
      i++
      while (src[i] !== '"') {
        if (i >= src.length || src[i] === '\n') throw new Error('Java: unterminated string literal')
        if (src[i] === '\\') {
          const e = src[i + 1]!
          if (e === 'u') {
            value += String.fromCharCode(Number.parseInt(src.slice(i + 2, i + 6), 16))
            i += 6
          } else if (ESCAPES[e] !== undefined) {
            value += ESCAPES[e]
            i += 2
          } else throw new Error(`Java: unsupported escape \\${e}`)
        } else value += src[i++]
      }
      i++
      out.push({ kind: 'string', value })
    } else if (c === "'") {
      // A char literal: its text does not matter here, only that a quote inside it is no string.
      const end = src.indexOf("'", src[i + 1] === '\\' ? i + 3 : i + 2)
      out.push({ kind: 'punct', value: src.slice(i, end + 1) })
      i = end + 1
    } else if (/[\w$]/.test(c)) {
      const m = /^[\w$.]+/.exec(src.slice(i, i + 200))!
      out.push({ kind: 'word', value: m[0] })
      i += m[0].length
    } else if (src.startsWith('::', i) || src.startsWith('->', i)) {
      out.push({ kind: 'punct', value: src.slice(i, i + 2) })
      i += 2
    } else {
      out.push({ kind: 'punct', value: c })
      i++
    }
  }
  return out
}

/** The source's package and its single-type imports, to resolve simple class names. */
interface Unit {
  readonly pkg: string
  readonly imports: ReadonlyMap<string, string>
  readonly tokens: readonly Token[]
}

function unit(src: string): Unit {
  const tokens = tokenize(src)
  let pkg = ''
  const imports = new Map<string, string>()
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!
    if (t.kind !== 'word') continue
    if (t.value === 'package') pkg = tokens[i + 1]!.value
    else if (t.value === 'import' && tokens[i + 1]?.value !== 'static') {
      const name = tokens[i + 1]!.value
      imports.set(name.slice(name.lastIndexOf('.') + 1), name)
    } else if (t.value === 'class' || t.value === 'enum' || t.value === 'interface') break
  }
  return { pkg, imports, tokens }
}

function resolve(u: Unit, simple: string): string {
  if (simple.includes('.')) return simple
  return u.imports.get(simple) ?? `${u.pkg}.${simple}`
}

/** Splits `tokens[from..]` (just after an opening parenthesis) into top-level arguments. */
function argumentsAt(tokens: readonly Token[], from: number): { args: Token[][]; end: number } {
  const args: Token[][] = [[]]
  let depth = 0
  for (let i = from; i < tokens.length; i++) {
    const t = tokens[i]!
    if (t.kind === 'punct' && (t.value === '(' || t.value === '{' || t.value === '[')) depth++
    if (t.kind === 'punct' && (t.value === ')' || t.value === '}' || t.value === ']')) {
      if (depth === 0) return { args, end: i }
      depth--
    }
    if (depth === 0 && t.kind === 'punct' && t.value === ',') args.push([])
    else args[args.length - 1]!.push(t)
  }
  throw new Error('Java: unbalanced parentheses')
}

function show(tokens: readonly Token[]): string {
  return tokens.map((t) => (t.kind === 'string' ? JSON.stringify(t.value) : t.value)).join(' ')
}

function intArg(tokens: readonly Token[], where: string): number {
  const text = tokens.map((t) => t.value).join('')
  if (!/^-?\d+$/.test(text)) throw new Error(`${where}: code is not an integer literal: ${show(tokens)}`)
  return Number(text)
}

/** A string literal, a `+` concatenation of them, or `null`. */
function messageArg(tokens: readonly Token[], where: string): string | null {
  if (tokens.length === 1 && tokens[0]!.kind === 'word' && tokens[0]!.value === 'null') return null
  let out = ''
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!
    if (i % 2 === 0 ? t.kind !== 'string' : t.kind !== 'punct' || t.value !== '+')
      throw new Error(`${where}: message is not a string literal: ${show(tokens)}`)
    if (t.kind === 'string') out += t.value
  }
  return out
}

/** `SomeException::new`, or `message -> null` (NONE's builder, which makes no exception). */
function exceptionArg(tokens: readonly Token[], where: string): string | null {
  const [a, b, c] = tokens
  if (tokens.length === 3 && a?.kind === 'word' && b?.value === '::' && c?.value === 'new') return a.value
  if (tokens.length === 3 && a?.kind === 'word' && b?.value === '->' && c?.value === 'null') return null
  throw new Error(`${where}: exception builder is not Class::new: ${show(tokens)}`)
}

/** The class `name` extends in its own source file, resolved to a full name; undefined for none. */
function superclass(u: Unit, simple: string): string | undefined {
  const t = u.tokens
  for (let i = 0; i + 1 < t.length; i++) {
    if (t[i]!.value !== 'class' || t[i + 1]!.value !== simple) continue
    let j = i + 2
    if (t[j]?.value === '<') {
      let depth = 0
      for (; j < t.length; j++) {
        if (t[j]!.value === '<') depth++
        else if (t[j]!.value === '>' && --depth === 0) break
      }
      j++
    }
    return t[j]?.value === 'extends' ? resolve(u, t[j + 1]!.value) : undefined
  }
  throw new Error(`Java: no class ${simple} in ${u.pkg}`)
}

/**
 * The error table from kafka-clients' sources: `source(path)` returns a file of the sources jar
 * (e.g. `org/apache/kafka/common/protocol/Errors.java`), or undefined when the jar has none (a JDK
 * class such as `java.lang.RuntimeException`, where an `extends` chain leaves Kafka).
 */
export function kafkaErrors(source: (path: string) => string | undefined): KafkaError[] {
  const text = source(ERRORS_FILE)
  if (text === undefined) throw new Error(`kafka-clients sources: no ${ERRORS_FILE}`)
  const errors = unit(text)
  const units = new Map<string, Unit | undefined>()
  const unitOf = (full: string): Unit | undefined => {
    if (!units.has(full)) {
      const src = source(`${full.replaceAll('.', '/')}.java`)
      units.set(full, src === undefined ? undefined : unit(src))
    }
    return units.get(full)
  }
  const retriable = (full: string, seen: ReadonlySet<string> = new Set()): boolean => {
    if (full === RETRIABLE) return true
    if (seen.has(full)) throw new Error(`Java: ${full} extends itself`)
    const u = unitOf(full)
    if (u === undefined) return false
    const parent = superclass(u, full.slice(full.lastIndexOf('.') + 1))
    return parent !== undefined && retriable(parent, new Set([...seen, full]))
  }

  const t = errors.tokens
  let i = t.findIndex((x, n) => x.value === 'enum' && t[n + 1]?.value === 'Errors')
  if (i === -1 || t[i + 2]?.value !== '{') throw new Error(`${ERRORS_FILE}: no enum Errors`)
  i += 3
  const out: KafkaError[] = []
  for (;;) {
    const name = t[i]
    if (name?.kind !== 'word' || t[i + 1]?.value !== '(')
      throw new Error(`${ERRORS_FILE}: bad enum entry at ${name?.value}`)
    const where = `${ERRORS_FILE} ${name.value}`
    const { args, end } = argumentsAt(t, i + 2)
    if (args.length !== 3)
      throw new Error(`${where}: expected (code, message, builder), got ${args.length} arguments`)
    const exception = exceptionArg(args[2]!, where)
    out.push({
      code: intArg(args[0]!, where),
      name: name.value,
      retriable: exception !== null && retriable(resolve(errors, exception)),
      exception,
      message: messageArg(args[1]!, where),
    })
    const next = t[end + 1]?.value
    i = end + 2
    if (next === ';') break
    if (next !== ',') throw new Error(`${where}: expected , or ; after the entry`)
  }
  const codes = new Set(out.map((e) => e.code))
  if (codes.size !== out.length) throw new Error(`${ERRORS_FILE}: an error code appears twice`)
  return out
}
