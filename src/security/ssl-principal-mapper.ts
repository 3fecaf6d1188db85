/**
 * `ssl.principal.mapping.rules` as Kafka's SslPrincipalMapper splits, parses and applies them: a
 * comma-separated list of `DEFAULT` (the distinguished name itself) and
 * `RULE:pattern/replacement/` with an optional `L` or `U` after the last slash (lower or upper
 * case the result). The first rule whose pattern matches the whole name maps it: every match of
 * the pattern in the name is replaced, with Java's replacement syntax (`$1`, `${name}`, `\` to
 * quote), and a back reference past the pattern's groups taken literally as Kafka does.
 *
 * The patterns are Java regular expressions run as JavaScript ones: the common syntax is the same;
 * leading inline flags (`(?i)`) become flags; Java-only syntax (possessive quantifiers, `\p{javaX}`,
 * `\A`, `\Z`) is refused as a malformed rule.
 */

/** Kafka's default, when the key is not set. */
export const DEFAULT_SSL_PRINCIPAL_MAPPING_RULES = 'DEFAULT'

/** A rule list Kafka refuses (its IllegalArgumentException, from the broker's config). */
export class SslPrincipalRuleError extends Error {
  override name = 'SslPrincipalRuleError'
}

/** No rule maps the name (Kafka's NoMatchingRule): the TLS handshake's principal cannot be built. */
export class NoMatchingRuleError extends Error {
  override name = 'NoMatchingRuleError'
}

/** Java's `\s`. */
const WS = '[ \\t\\n\\x0B\\f\\r]'
const RULE_PATTERN = String.raw`(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`
const RULE_PARSER = new RegExp(`^(?:${RULE_PATTERN})`)

interface Rule {
  readonly isDefault: boolean
  /** The pattern's text, as Kafka prints it. */
  readonly source: string
  readonly replacement: string
  readonly toLowerCase: boolean
  readonly toUpperCase: boolean
  readonly whole: RegExp
  readonly global: RegExp
  readonly groupCount: number
}

/** Java's String.trim(): every char up to U+0020 off both ends. */
function javaTrim(text: string): string {
  let start = 0
  let end = text.length
  while (start < end && text.charCodeAt(start) <= 0x20) start++
  while (end > start && text.charCodeAt(end - 1) <= 0x20) end--
  return text.slice(start, end)
}

/** Kafka's splitRules: each rule's text, found one after the other as Java's Matcher.find does. */
function splitRules(rules: string): string[] {
  const splitter = new RegExp(`${WS}*(${RULE_PATTERN})${WS}*(,${WS}*|$)`, 'g')
  const text = javaTrim(rules)
  const out: string[] = []
  while (splitter.lastIndex <= text.length) {
    const match = splitter.exec(text)
    if (match === null) break
    out.push(match[1] ?? '')
    if (match[0] === '') splitter.lastIndex++
  }
  return out
}

/** Leading Java inline flags (`(?i)`, `(?is)`) as JavaScript flags; other flags stay in the pattern and fail there. */
function javaPattern(source: string): { body: string; flags: string } {
  const leading = /^\(\?([ims]+)\)/.exec(source)
  return leading === null
    ? { body: source, flags: '' }
    : { body: source.slice(leading[0].length), flags: leading[1]! }
}

function compileRule(source: string, replacement: string, flag: string): Rule {
  const { body, flags } = javaPattern(source)
  let whole: RegExp
  let global: RegExp
  try {
    whole = new RegExp(`^(?:${body})$`, flags)
    global = new RegExp(body, `${flags}g`)
  } catch (error) {
    throw new SslPrincipalRuleError(`Invalid rule pattern \`${source}\`: ${(error as Error).message}`)
  }
  const groupCount = new RegExp(`${body}|`, flags).exec('')!.length - 1
  return {
    isDefault: false,
    source,
    replacement,
    toLowerCase: flag === 'L',
    toUpperCase: flag === 'U',
    whole,
    global,
    groupCount,
  }
}

const DEFAULT_RULE: Rule = {
  isDefault: true,
  source: '',
  replacement: '',
  toLowerCase: false,
  toUpperCase: false,
  whole: /$^/,
  global: /$^/g,
  groupCount: 0,
}

/** Kafka's parseRules of one rule's text: a rule, or null for an empty one (ignored). */
function parseRule(text: string): Rule | null {
  const match = RULE_PARSER.exec(text)
  if (match === null) throw new SslPrincipalRuleError(`Invalid rule: ${text}`)
  if (match[0].length !== text.length) {
    throw new SslPrincipalRuleError(
      `Invalid rule: \`${text}\`, unmatched substring: \`${text.slice(match[0].length)}\``,
    )
  }
  if (match[1] !== undefined) return DEFAULT_RULE
  if (match[2] !== undefined) return compileRule(match[2], match[4] ?? '', match[6] ?? '')
  return null
}

function ruleText(rule: Rule): string {
  if (rule.isDefault) return 'DEFAULT'
  const flag = rule.toLowerCase ? '/L' : rule.toUpperCase ? '/U' : ''
  return `RULE:${rule.source}/${rule.replacement}${flag}`
}

export class SslPrincipalMapper {
  readonly #rules: readonly Rule[]

  private constructor(rules: readonly Rule[]) {
    this.#rules = rules
  }

  /** The mapper of a rules value (unset: `DEFAULT`); a malformed list throws SslPrincipalRuleError. */
  static fromRules(rules: string | undefined): SslPrincipalMapper {
    const parsed = splitRules(rules ?? DEFAULT_SSL_PRINCIPAL_MAPPING_RULES).map(parseRule)
    return new SslPrincipalMapper(parsed.filter((rule) => rule !== null))
  }

  /** The principal name of a distinguished name (RFC 2253, `x500-name.ts`): the first rule that maps it. */
  getName(distinguishedName: string): string {
    for (const rule of this.#rules) {
      const name = applyRule(rule, distinguishedName)
      if (name !== null) return name
    }
    throw new NoMatchingRuleError(`No rules apply to ${distinguishedName}, rules ${this.#rulesText()}`)
  }

  #rulesText(): string {
    return `[${this.#rules.map(ruleText).join(', ')}]`
  }

  /** As Kafka prints it: `SslPrincipalMapper(rules = [RULE:^CN=(.*?)$/$1/L, DEFAULT])`. */
  toString(): string {
    return `SslPrincipalMapper(rules = ${this.#rulesText()})`
  }
}

function applyRule(rule: Rule, distinguishedName: string): string | null {
  if (rule.isDefault) return distinguishedName
  if (!rule.whole.test(distinguishedName)) return null
  const replacement = escapeLiteralBackReferences(rule.replacement, rule.groupCount)
  rule.global.lastIndex = 0
  const result = distinguishedName.replace(rule.global, (...args: unknown[]) => {
    const last = args.at(-1)
    const named =
      typeof last === 'object' && last !== null ? (last as Record<string, string | undefined>) : undefined
    return expandReplacement(replacement, args.slice(0, rule.groupCount + 1) as (string | undefined)[], named)
  })
  if (rule.toLowerCase) return result.toLowerCase()
  return rule.toUpperCase ? result.toUpperCase() : result
}

/**
 * Kafka's escapeLiteralBackReferences: a `$n` past the pattern's groups (after dropping trailing
 * digits while above 9) gets a backslash before it, so it stays literal. Positions are those of the
 * original text while the text grows, exactly as Kafka computes them.
 */
function escapeLiteralBackReferences(unescaped: string, groupCount: number): string {
  if (groupCount === 0) return unescaped
  let value = unescaped
  for (const match of unescaped.matchAll(/\$(\d+)/g)) {
    const digits = match[1]!
    if (digits.startsWith('0')) continue
    let index = Number(digits)
    if (index > 0x7fffffff) throw new SslPrincipalRuleError(`For input string: "${digits}"`)
    while (index > groupCount && index >= 10) index = Math.floor(index / 10)
    if (index > groupCount) {
      const groupStart = match.index + 1
      value = `${value.slice(0, groupStart - 1)}\\${value.slice(groupStart - 1)}`
    }
  }
  return value
}

/** Java's Matcher.appendReplacement expansion of one match. */
function expandReplacement(
  replacement: string,
  groups: readonly (string | undefined)[],
  named: NamedGroups,
): string {
  let out = ''
  for (let i = 0; i < replacement.length; i++) {
    const char = replacement[i]!
    if (char === '\\') {
      i++
      if (i === replacement.length) throw new SslPrincipalRuleError('character to be escaped is missing')
      out += replacement[i]
    } else if (char === '$') {
      const reference = readReference(replacement, i + 1, groups, named)
      out += reference.value
      i = reference.end - 1
    } else {
      out += char
    }
  }
  return out
}

type NamedGroups = Readonly<Record<string, string | undefined>> | undefined

/** One `$n` or `${name}` reference at `at` (just past the `$`): its text and where it ends. */
function readReference(
  replacement: string,
  at: number,
  groups: readonly (string | undefined)[],
  named: NamedGroups,
): { value: string; end: number } {
  if (at === replacement.length)
    throw new SslPrincipalRuleError('Illegal group reference: group index is missing')
  if (replacement[at] === '{') return readNamedReference(replacement, at + 1, named)
  const groupCount = groups.length - 1
  let index = replacement.charCodeAt(at) - 48
  if (index < 0 || index > 9) throw new SslPrincipalRuleError('Illegal group reference')
  let end = at + 1
  for (; end < replacement.length; end++) {
    const digit = replacement.charCodeAt(end) - 48
    if (digit < 0 || digit > 9 || index * 10 + digit > groupCount) break
    index = index * 10 + digit
  }
  if (index > groupCount) throw new SslPrincipalRuleError(`No group ${index}`)
  return { value: groups[index] ?? '', end }
}

function readNamedReference(
  replacement: string,
  at: number,
  named: NamedGroups,
): { value: string; end: number } {
  const close = replacement.indexOf('}', at)
  if (close < 0) throw new SslPrincipalRuleError("named capturing group is missing trailing '}'")
  const name = replacement.slice(at, close)
  if (name === '') throw new SslPrincipalRuleError('named capturing group has 0 length name')
  if (named === undefined || !Object.hasOwn(named, name))
    throw new SslPrincipalRuleError(`No group with name {${name}}`)
  return { value: named[name] ?? '', end: close + 1 }
}
