/**
 * `server.properties` text -> a Map, exactly as java.util.Properties.load reads it, and the
 * `--set key=value` overrides of `weir start`. Text in, Map out: no file access.
 */

/** Malformed properties text (Java throws IllegalArgumentException for the same input). */
export class PropertiesSyntaxError extends Error {
  override name = 'PropertiesSyntaxError'
  /** 1-based line of the logical line at fault. */
  readonly line: number

  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`)
    this.line = line
  }
}

const SPACE = 0x20
const TAB = 0x09
const FORM_FEED = 0x0c
const LF = 0x0a
const CR = 0x0d
const BACKSLASH = 0x5c

function isBlank(c: number): boolean {
  return c === SPACE || c === TAB || c === FORM_FEED
}

/** A logical line: its characters (continuations joined) and the 1-based line where it starts. */
interface LogicalLine {
  readonly text: string
  readonly line: number
}

/** The 1-based line of each offset of `text` (\r\n, \r and \n each end a line). */
function lineNumbers(text: string): (offset: number) => number {
  const starts = [0]
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === LF || (c === CR && text.charCodeAt(i + 1) !== LF)) starts.push(i + 1)
  }
  return (offset) => {
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if ((starts[mid] ?? 0) <= offset) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
}

/**
 * java.util.Properties.LineReader: natural lines end at \n, \r or \r\n; leading blanks (space, tab,
 * form feed) are skipped; a line whose first non-blank character is `#` or `!` is a comment; a line
 * ending in an odd number of backslashes continues on the next, whose leading blanks are skipped.
 */
function* logicalLines(text: string): Generator<LogicalLine> {
  const lineAt = lineNumbers(text)
  const limit = text.length
  let off = 0
  for (;;) {
    let buf = ''
    let first = -1
    let skipWhiteSpace = true
    let appendedLineBegin = false
    let precedingBackslash = false
    const done = () => ({ text: precedingBackslash ? buf.slice(0, -1) : buf, line: lineAt(first) })
    for (;;) {
      if (off >= limit) {
        if (buf.length > 0) yield done()
        return
      }
      const c = text.charCodeAt(off++)
      if (skipWhiteSpace) {
        if (isBlank(c)) continue
        if (!appendedLineBegin && (c === CR || c === LF)) continue
        skipWhiteSpace = false
        appendedLineBegin = false
      }
      if (buf.length === 0 && (c === 0x23 || c === 0x21)) {
        // A comment: skip the rest of the natural line, terminator included (it never continues).
        while (off < limit) {
          const d = text.charCodeAt(off++)
          if (d === CR || d === LF) break
        }
        skipWhiteSpace = true
        continue
      }
      if (c !== LF && c !== CR) {
        if (buf.length === 0) first = off - 1
        buf += text[off - 1]
        precedingBackslash = c === BACKSLASH ? !precedingBackslash : false
        continue
      }
      // The end of a natural line.
      if (buf.length === 0) {
        skipWhiteSpace = true
        continue
      }
      if (off >= limit) {
        yield done()
        return
      }
      if (!precedingBackslash) {
        yield done()
        break
      }
      // A continuation: drop the backslash, skip the next line's leading blanks.
      buf = buf.slice(0, -1)
      skipWhiteSpace = true
      appendedLineBegin = true
      precedingBackslash = false
      if (c === CR && text.charCodeAt(off) === LF) off++
    }
  }
}

/** java.util.Properties.loadConvert: \t \n \r \f, \uXXXX, and `\x` -> `x` for any other x. */
function loadConvert(s: string, line: number): string {
  if (!s.includes('\\')) return s
  let out = ''
  let i = 0
  while (i < s.length) {
    const c = s[i++]
    if (c !== '\\') {
      out += c
      continue
    }
    const e = s[i++] ?? ''
    if (e === 'u') {
      const hex = s.slice(i, i + 4)
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new PropertiesSyntaxError(line, 'Malformed \\uxxxx encoding.')
      out += String.fromCharCode(Number.parseInt(hex, 16))
      i += 4
    } else {
      out += e === 't' ? '\t' : e === 'r' ? '\r' : e === 'n' ? '\n' : e === 'f' ? '\f' : e
    }
  }
  return out
}

/**
 * Parses properties text as java.util.Properties.load does: `key=value`, `key: value` and
 * `key value` (the key ends at the first unescaped `=`, `:` or blank; blanks and one `=` or `:`
 * after it are skipped; the value keeps trailing blanks), comments (`#`, `!`), continuation lines,
 * and the escapes \t \n \r \f \uXXXX. A repeated key keeps its last value (at its first position).
 * Throws PropertiesSyntaxError on a malformed \uXXXX escape.
 *
 * One difference: Kafka hands Properties the file's bytes, which Java reads as ISO-8859-1; the
 * caller here decodes the file (as UTF-8) first. The two agree on ASCII and on \u escapes.
 *
 * Example: `parseProperties('a = 1\nb: x\\\n  y\n# c=3')` -> Map { a => '1', b => 'xy' }.
 */
export function parseProperties(text: string): Map<string, string> {
  const result = new Map<string, string>()
  for (const { text: line, line: lineNo } of logicalLines(text)) {
    const limit = line.length
    let keyLen = 0
    let valueStart = limit
    let hasSep = false
    let precedingBackslash = false
    while (keyLen < limit) {
      const c = line.charCodeAt(keyLen)
      if ((c === 0x3d || c === 0x3a) && !precedingBackslash) {
        valueStart = keyLen + 1
        hasSep = true
        break
      }
      if (isBlank(c) && !precedingBackslash) {
        valueStart = keyLen + 1
        break
      }
      precedingBackslash = c === BACKSLASH ? !precedingBackslash : false
      keyLen++
    }
    while (valueStart < limit) {
      const c = line.charCodeAt(valueStart)
      if (!isBlank(c)) {
        if (!hasSep && (c === 0x3d || c === 0x3a)) hasSep = true
        else break
      }
      valueStart++
    }
    const key = loadConvert(line.slice(0, keyLen), lineNo)
    const value = loadConvert(line.slice(valueStart), lineNo)
    result.set(key, value)
  }
  return result
}

/** A `--set` argument that is not `key=value`. */
export class OverrideSyntaxError extends Error {
  override name = 'OverrideSyntaxError'
}

/**
 * `--set key=value` arguments -> a Map: split at the first `=`, nothing trimmed or unescaped (the
 * shell has already done its quoting), later arguments win. `key=` sets an empty value. Throws
 * OverrideSyntaxError for an argument without `=` or with an empty key.
 * Example: `parseOverrides(['log.retention.hours=1', 'listeners=PLAINTEXT://:9092'])`.
 */
export function parseOverrides(args: readonly string[]): Map<string, string> {
  const result = new Map<string, string>()
  for (const arg of args) {
    const eq = arg.indexOf('=')
    if (eq <= 0) throw new OverrideSyntaxError(`--set ${arg}: expected key=value`)
    result.set(arg.slice(0, eq), arg.slice(eq + 1))
  }
  return result
}

/** `base` with `overrides` applied (overrides win); neither is changed. */
export function applyOverrides(
  base: ReadonlyMap<string, string>,
  overrides: ReadonlyMap<string, string>,
): Map<string, string> {
  const result = new Map(base)
  for (const [key, value] of overrides) result.set(key, value)
  return result
}
