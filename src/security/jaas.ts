/**
 * `sasl.jaas.config` as Kafka reads it (JaasConfig, JaasContext): `<loginModuleClass> <controlFlag>
 * (<optionName>=<optionValue>)*;`, tokenized as Java's StreamTokenizer does with Kafka's settings:
 * words of letters, digits, `.`, `-`, `_` and `$`; strings in double or single quotes with Java's
 * escapes; `//` and `/* *\/` comments. A bare number is not a value (Kafka wants it quoted).
 */

export type JaasControlFlag = 'required' | 'requisite' | 'sufficient' | 'optional'

export interface JaasEntry {
  readonly loginModule: string
  readonly controlFlag: JaasControlFlag
  readonly options: ReadonlyMap<string, string>
}

/** Malformed `sasl.jaas.config`. The message names keys, never values (they hold passwords). */
export class JaasConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'JaasConfigError'
  }
}

/** Login modules Kafka refuses by default (`org.apache.kafka.disallowed.login.modules`). */
export const DISALLOWED_LOGIN_MODULES: readonly string[] = ['com.sun.security.auth.module.JndiLoginModule']

export const PLAIN_LOGIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule'
export const SCRAM_LOGIN_MODULE = 'org.apache.kafka.common.security.scram.ScramLoginModule'
export const OAUTHBEARER_LOGIN_MODULE = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule'

type Token =
  | { readonly type: 'eof' }
  | { readonly type: 'word' | 'quoted'; readonly text: string }
  | { readonly type: 'number' }
  | { readonly type: 'char'; readonly char: string }

function isWordStart(c: string): boolean {
  return /[A-Za-z_$]/.test(c) || c.charCodeAt(0) >= 160
}

function isWordPart(c: string): boolean {
  return isWordStart(c) || /[0-9.-]/.test(c)
}

const ESCAPES: Readonly<Record<string, string>> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
}

/** StreamTokenizer over one string; `next()` returns the next token. */
class JaasTokenizer {
  readonly #text: string
  #i = 0

  constructor(text: string) {
    this.#text = text
  }

  next(): Token {
    this.#skipSpaceAndComments()
    const c = this.#text[this.#i]
    if (c === undefined) return { type: 'eof' }
    if (/[0-9.]/.test(c) || (c === '-' && /[0-9.]/.test(this.#text[this.#i + 1] ?? ''))) return this.#number()
    if (c === '-') {
      this.#i++
      return { type: 'char', char: '-' }
    }
    if (isWordStart(c)) return this.#word()
    if (c === '"' || c === "'") return this.#quoted(c)
    this.#i++
    return { type: 'char', char: c }
  }

  #skipSpaceAndComments(): void {
    const text = this.#text
    for (;;) {
      while (this.#i < text.length && text.charCodeAt(this.#i) <= 32) this.#i++
      if (text[this.#i] !== '/') return
      if (text[this.#i + 1] === '*') {
        const end = text.indexOf('*/', this.#i + 2)
        this.#i = end < 0 ? text.length : end + 2
      } else {
        // `//` and a lone `/` (StreamTokenizer's default comment character) both end at the line.
        while (this.#i < text.length && text[this.#i] !== '\n' && text[this.#i] !== '\r') this.#i++
      }
    }
  }

  #number(): Token {
    if (this.#text[this.#i] === '-') this.#i++
    let seenDot = false
    for (;;) {
      const c = this.#text[this.#i]
      if (c === '.' && !seenDot) seenDot = true
      else if (c === undefined || !/[0-9]/.test(c)) break
      this.#i++
    }
    return { type: 'number' }
  }

  #word(): Token {
    const start = this.#i
    while (this.#i < this.#text.length && isWordPart(this.#text[this.#i]!)) this.#i++
    return { type: 'word', text: this.#text.slice(start, this.#i) }
  }

  /** A quoted string ends at its quote, a line end or the end of input, as StreamTokenizer's. */
  #quoted(quote: string): Token {
    const text = this.#text
    let out = ''
    this.#i++
    for (;;) {
      const c = text[this.#i]
      if (c === undefined || c === '\n' || c === '\r') break
      this.#i++
      if (c === quote) break
      out += c === '\\' ? this.#escape() : c
    }
    return { type: 'quoted', text: out }
  }

  /** After a backslash: an octal escape of up to three digits (the first at most 3), or one letter. */
  #escape(): string {
    const text = this.#text
    const first = text[this.#i]
    if (first === undefined) return ''
    this.#i++
    if (!/[0-7]/.test(first)) return ESCAPES[first] ?? first
    let code = first.charCodeAt(0) - 48
    const digitsMax = first <= '3' ? 3 : 2
    for (let digits = 1; digits < digitsMax && /[0-7]/.test(text[this.#i] ?? ''); digits++) {
      code = code * 8 + (text.charCodeAt(this.#i) - 48)
      this.#i++
    }
    return String.fromCharCode(code)
  }
}

/** StreamTokenizer's `sval`: the text of a word or quoted string, null for anything else. */
function textOf(token: Token): string | null {
  return token.type === 'word' || token.type === 'quoted' ? token.text : null
}

function isChar(token: Token, char: string): boolean {
  return token.type === 'char' && token.char === char
}

function controlFlag(token: Token): JaasControlFlag {
  const flag = textOf(token)
  if (flag === null)
    throw new JaasConfigError('Login module control flag is not available in the JAAS config')
  const lower = flag.toLowerCase()
  if (lower === 'required' || lower === 'requisite' || lower === 'sufficient' || lower === 'optional') {
    return lower
  }
  // A quoted flag is likely a misplaced value, which may be a password: Kafka would echo it.
  const shown = token.type === 'word' ? ` '${flag}'` : ''
  throw new JaasConfigError(`Invalid login module control flag${shown} in JAAS config`)
}

function parseEntry(first: Token, tokenizer: JaasTokenizer): JaasEntry {
  const loginModule = textOf(first)
  if (loginModule === null || loginModule === '') {
    throw new JaasConfigError('Login module name not specified in JAAS config')
  }
  const flagToken = tokenizer.next()
  if (flagToken.type === 'eof')
    throw new JaasConfigError('Login module control flag not specified in JAAS config')
  const flag = controlFlag(flagToken)
  const { options, terminated } = parseOptions(tokenizer)
  if (!terminated) throw new JaasConfigError('JAAS config entry not terminated by semi-colon')
  return { loginModule, controlFlag: flag, options }
}

/** The options up to `;` (terminated) or the end of input (not). */
function parseOptions(tokenizer: JaasTokenizer): { options: Map<string, string>; terminated: boolean } {
  const options = new Map<string, string>()
  for (;;) {
    const token = tokenizer.next()
    if (token.type === 'eof' || isChar(token, ';')) return { options, terminated: token.type !== 'eof' }
    const key = textOf(token)
    const value = isChar(tokenizer.next(), '=') ? textOf(tokenizer.next()) : null
    if (value === null) throw new JaasConfigError(`Value not specified for key '${key}' in JAAS config`)
    options.set(key ?? 'null', value)
  }
}

/** Every entry of a `sasl.jaas.config` value. Throws JaasConfigError with Kafka's messages. */
export function parseJaasConfig(text: string): JaasEntry[] {
  const tokenizer = new JaasTokenizer(text)
  const entries: JaasEntry[] = []
  for (let token = tokenizer.next(); token.type !== 'eof'; token = tokenizer.next()) {
    entries.push(parseEntry(token, tokenizer))
  }
  if (entries.length === 0) throw new JaasConfigError('Login module not specified in JAAS config')
  return entries
}

/**
 * The one login module of a broker's `listener.name.<l>.<mechanism>.sasl.jaas.config` (JaasContext):
 * exactly one entry, and not a disallowed module.
 */
export function parseServerJaasConfig(
  text: string,
  disallowed: readonly string[] = DISALLOWED_LOGIN_MODULES,
): JaasEntry {
  const entries = parseJaasConfig(text)
  if (entries.length !== 1) {
    throw new JaasConfigError(
      `JAAS config property contains ${entries.length} login modules, should be 1 module`,
    )
  }
  const entry = entries[0]!
  const name = entry.loginModule.trim()
  if (disallowed.includes(name)) {
    throw new JaasConfigError(
      `${name} is not allowed. Update System property 'org.apache.kafka.disallowed.login.modules' to allow ${name}`,
    )
  }
  return entry
}

/** JaasContext.configEntryOption: the first entry (of `loginModule`, if given) with `key`. */
export function jaasOption(entries: readonly JaasEntry[], key: string, loginModule?: string): string | null {
  for (const entry of entries) {
    if (loginModule !== undefined && entry.loginModule !== loginModule) continue
    const value = entry.options.get(key)
    if (value !== undefined) return value
  }
  return null
}

/** PlainServerCallbackHandler's users: each `user_<name>="<password>"` of the PlainLoginModule entries. */
export function plainUsersFromJaas(entries: readonly JaasEntry[]): ReadonlyMap<string, string> {
  const users = new Map<string, string>()
  for (const entry of entries) {
    if (entry.loginModule !== PLAIN_LOGIN_MODULE) continue
    for (const [key, value] of entry.options) {
      if (key.startsWith('user_') && !users.has(key.slice('user_'.length)))
        users.set(key.slice('user_'.length), value)
    }
  }
  return users
}
