/**
 * One config key's definition (Kafka's name, type, textual default, validation, documentation) and
 * the parsers, renderers and validators that read and show values exactly as Kafka's ConfigDef does.
 * Pure: no I/O, no defaults of its own.
 */

/** Kafka's ConfigDef.Type, lower-cased. */
export type ConfigType =
  | 'boolean'
  | 'string'
  | 'int'
  | 'short'
  | 'long'
  | 'double'
  | 'list'
  | 'class'
  | 'password'

/** Kafka's ConfigDef.Importance, lower-cased. */
export type ConfigImportance = 'high' | 'medium' | 'low'

/**
 * A parsed value. By type: boolean -> `boolean`; string, class, password -> `string`; int, short,
 * double -> `number`; long -> `bigint` (exact, as Java's long: Kafka's "never" defaults such as
 * 9223372036854775807 are not representable as a safe `number`); list -> `readonly string[]`.
 * Modules that want a `number` for a long use `longToNumber`, which saturates at
 * ±Number.MAX_SAFE_INTEGER (the storage module's "never").
 */
export type ConfigValue = boolean | string | number | bigint | readonly string[]

/** DescribeConfigs' ConfigType codes (DescribeConfigsResponse.json); `unknown` for keys with no definition. */
export const ConfigTypeCode = {
  unknown: 0,
  boolean: 1,
  string: 2,
  int: 3,
  short: 4,
  long: 5,
  double: 6,
  list: 7,
  class: 8,
  password: 9,
} as const
export type ConfigTypeCode = (typeof ConfigTypeCode)[keyof typeof ConfigTypeCode]

/** DescribeConfigs' ConfigSource codes (DescribeConfigsResponse.json). */
export const ConfigSource = {
  DynamicTopicConfig: 1,
  DynamicBrokerConfig: 2,
  DynamicDefaultBrokerConfig: 3,
  StaticBrokerConfig: 4,
  DefaultConfig: 5,
  DynamicBrokerLoggerConfig: 6,
  ClientMetricsConfig: 7,
  GroupConfig: 8,
} as const
export type ConfigSource = (typeof ConfigSource)[keyof typeof ConfigSource]

/**
 * Checks a parsed value. Returns null when valid, else Kafka's complete message, e.g.
 * `Invalid value -5 for configuration retention.ms: Value must be at least -1`.
 */
export type ConfigValidator = (value: ConfigValue, name: string) => string | null

/** One config key. Every field is Kafka's unless the doc says "Weir". */
export interface ConfigDef {
  /** Kafka's name, e.g. `retention.ms`. */
  readonly name: string
  readonly type: ConfigType
  /**
   * The default as DescribeConfigs shows it (Kafka's ConfigDef.convertToString of the default),
   * e.g. `'604800000'`, `'9223372036854775807'`, `'0.5'`, `''` (an empty list); null: no value.
   */
  readonly default: string | null
  /** Kafka's documentation (HTML fragments as Kafka has them), plus Weir's notes where Weir differs. */
  readonly doc: string
  /** Range or enumeration checks beyond the type; absent: any value of the type. */
  readonly validate?: ConfigValidator
  /** Kafka's description of the valid values (its validator's toString), e.g. `[1,...]`. */
  readonly validValues?: string
  readonly importance: ConfigImportance
  /** For broker keys: cannot be changed dynamically in Weir. Topic keys are never read-only. */
  readonly readOnly: boolean
  /** DescribeConfigs shows no value (password type). */
  readonly sensitive: boolean
}

/** The parts of a ConfigDef a validator factory supplies. */
export interface ValidatorSpec {
  readonly validate: ConfigValidator
  readonly validValues: string
}

// ---------------------------------------------------------------------------------------------
// Parsing: Kafka's ConfigDef.parseType, one function per type. Each returns undefined when the
// text is not a value of its type.
// ---------------------------------------------------------------------------------------------

/** Java's String.trim(): strips every char <= U+0020 at both ends (not Unicode spaces). */
export function javaTrim(text: string): string {
  let start = 0
  let end = text.length
  while (start < end && text.charCodeAt(start) <= 0x20) start++
  while (end > start && text.charCodeAt(end - 1) <= 0x20) end--
  return text.slice(start, end)
}

const INTEGER = /^[+-]?[0-9]+$/

function parseIntegerIn(text: string, min: bigint, max: bigint): bigint | undefined {
  const t = javaTrim(text)
  if (!INTEGER.test(t)) return undefined
  const n = BigInt(t)
  return n < min || n > max ? undefined : n
}

/** `true`/`false` in any case, trimmed (Kafka: equalsIgnoreCase). */
export function parseBooleanValue(text: string): boolean | undefined {
  const t = javaTrim(text).toLowerCase()
  if (t === 'true') return true
  if (t === 'false') return false
  return undefined
}

/** Java's Integer.parseInt of the trimmed text: optional sign, decimal digits, 32-bit range. */
export function parseIntValue(text: string): number | undefined {
  const n = parseIntegerIn(text, -(2n ** 31n), 2n ** 31n - 1n)
  return n === undefined ? undefined : Number(n)
}

/** Java's Short.parseShort of the trimmed text. */
export function parseShortValue(text: string): number | undefined {
  const n = parseIntegerIn(text, -(2n ** 15n), 2n ** 15n - 1n)
  return n === undefined ? undefined : Number(n)
}

/** Java's Long.parseLong of the trimmed text, exact. */
export function parseLongValue(text: string): bigint | undefined {
  return parseIntegerIn(text, -(2n ** 63n), 2n ** 63n - 1n)
}

const DECIMAL_FLOAT = /^[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)$/
const HEX_FLOAT = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?[0-9]+)[fFdD]?$/

/**
 * Java's Double.parseDouble of the trimmed text: decimal with optional exponent and `f`/`d`
 * suffix, `NaN`, `Infinity`, and hexadecimal floats (`0x1.8p1`; rounded through a JS number).
 */
export function parseDoubleValue(text: string): number | undefined {
  const t = javaTrim(text)
  if (DECIMAL_FLOAT.test(t)) return Number(t.replace(/[fFdD]$/, ''))
  const hex = HEX_FLOAT.exec(t)
  if (hex === null) return undefined
  const [, sign = '', int = '', frac = '', exp = '0'] = hex
  if (int === '' && frac === '') return undefined
  const mantissa = Number.parseInt(`${int}${frac}` || '0', 16)
  const value = mantissa * 2 ** (Number(exp) - 4 * frac.length)
  return sign === '-' ? -value : value
}

/** Kafka's LIST: trimmed; empty -> []; else split on commas with any whitespace around them. */
export function parseListValue(text: string): readonly string[] {
  const t = javaTrim(text)
  return t === '' ? [] : t.split(/\s*,\s*/)
}

/** STRING, CLASS and PASSWORD: the trimmed text. Weir loads no classes, so any name parses. */
export function parseStringValue(text: string): string {
  return javaTrim(text)
}

// ---------------------------------------------------------------------------------------------
// Rendering: Kafka's ConfigDef.convertToString (what DescribeConfigs shows) and Java's toString
// (what error messages show).
// ---------------------------------------------------------------------------------------------

/**
 * Java's Double.toString: plain decimal for 1e-3 <= |d| < 1e7 (`0.5`, `1.0`), else computerized
 * scientific notation (`1.0E-4`, `1.7976931348623157E308`). Digits are the shortest that identify
 * the double, at least two in scientific notation, as Java 19+ prints them (Java 17 occasionally
 * prints one digit more).
 */
export function javaDoubleToString(d: number): string {
  if (Number.isNaN(d)) return 'NaN'
  if (d === Number.POSITIVE_INFINITY) return 'Infinity'
  if (d === Number.NEGATIVE_INFINITY) return '-Infinity'
  if (d === 0) return Object.is(d, -0) ? '-0.0' : '0.0'
  const sign = d < 0 ? '-' : ''
  const abs = Math.abs(d)
  const [mantissa = '', exponent = '0'] = abs.toExponential().split('e')
  const digits = mantissa.replace('.', '')
  const exp = Number(exponent)
  if (abs >= 1e-3 && abs < 1e7) {
    if (exp >= 0) {
      const int = digits.slice(0, exp + 1).padEnd(exp + 1, '0')
      const frac = digits.slice(exp + 1)
      return `${sign}${int}.${frac === '' ? '0' : frac}`
    }
    return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`
  }
  // One digit is never enough: Java prints the two-digit decimal closest to the double (4.9E-324).
  const [two = '', twoExp = '0'] = digits.length > 1 ? [mantissa, exponent] : abs.toExponential(1).split('e')
  return `${sign}${two}E${Number(twoExp)}`
}

/** Kafka's ConfigDef.convertToString: how DescribeConfigs shows a parsed value. */
export function renderConfigValue(type: ConfigType, value: ConfigValue): string {
  if (Array.isArray(value)) return value.join(',')
  if (type === 'double' && typeof value === 'number') return javaDoubleToString(value)
  return String(value)
}

/** Java's toString of a parsed value, as Kafka's "Invalid value X ..." messages show it. */
export function javaToString(type: ConfigType, value: ConfigValue): string {
  if (Array.isArray(value)) return `[${value.join(', ')}]`
  return renderConfigValue(type, value)
}

/** A long as a JS number, saturated at ±Number.MAX_SAFE_INTEGER (Long.MAX_VALUE -> "never"). */
export function longToNumber(value: bigint): number {
  const max = BigInt(Number.MAX_SAFE_INTEGER)
  if (value > max) return Number.MAX_SAFE_INTEGER
  if (value < -max) return -Number.MAX_SAFE_INTEGER
  return Number(value)
}

/** A parsed and validated value, with its canonical text (what DescribeConfigs shows). */
export interface ParsedConfigValue {
  readonly ok: true
  readonly value: ConfigValue
  readonly text: string
}

/** A value that does not parse or validate, with Kafka's complete message. */
export interface InvalidConfigValue {
  readonly ok: false
  readonly error: string
}

/** The message of Kafka's ConfigException(name, value, reason). */
export function invalidValueMessage(name: string, shown: string, reason: string): string {
  return `Invalid value ${shown} for configuration ${name}: ${reason}`
}

/** Parses `text` by type only (no validator): Kafka's ConfigDef.parseType. */
export function parseTyped(type: ConfigType, text: string): ConfigValue | undefined {
  switch (type) {
    case 'boolean':
      return parseBooleanValue(text)
    case 'int':
      return parseIntValue(text)
    case 'short':
      return parseShortValue(text)
    case 'long':
      return parseLongValue(text)
    case 'double':
      return parseDoubleValue(text)
    case 'list':
      return parseListValue(text)
    case 'string':
    case 'class':
    case 'password':
      return parseStringValue(text)
  }
}

function typeError(type: ConfigType): string {
  if (type === 'boolean') return 'Expected value to be either true or false'
  return `Not a number of type ${type.toUpperCase()}`
}

/**
 * Parses and validates `text` for `def` as Kafka does (parse the trimmed text by type, then run
 * the validator). Example: `parseConfigValue(segmentBytes, '10')` gives
 * `{ ok: false, error: 'Invalid value 10 for configuration segment.bytes: Value must be at least 14' }`.
 */
export function parseConfigValue(def: ConfigDef, text: string): ParsedConfigValue | InvalidConfigValue {
  const value = parseTyped(def.type, text)
  if (value === undefined)
    return { ok: false, error: invalidValueMessage(def.name, text, typeError(def.type)) }
  const error = def.validate?.(value, def.name) ?? null
  if (error !== null) return { ok: false, error }
  return { ok: true, value, text: renderConfigValue(def.type, value) }
}

// ---------------------------------------------------------------------------------------------
// Validators: Kafka's, with its messages and descriptions. Spread into a definition:
// `{ name: 'segment.bytes', ...atLeast(14), ... }`.
// ---------------------------------------------------------------------------------------------

function numeric(value: ConfigValue): number | bigint {
  if (typeof value === 'number' || typeof value === 'bigint') return value
  throw new TypeError(`a range validator got a ${typeof value}`)
}

function shownNumber(value: number | bigint): string {
  return typeof value === 'bigint'
    ? value.toString()
    : Number.isInteger(value)
      ? String(value)
      : javaDoubleToString(value)
}

function shownValue(value: number | bigint, isDouble: boolean): string {
  return isDouble && typeof value === 'number' ? javaDoubleToString(value) : shownNumber(value)
}

function below(value: number | bigint, bound: number): boolean {
  return typeof value === 'bigint' ? value < BigInt(bound) : value < bound
}

function above(value: number | bigint, bound: number): boolean {
  return typeof value === 'bigint' ? value > BigInt(bound) : value > bound
}

/**
 * Kafka's Range.between(min, max) (either bound may be null). Bounds are integers, as all of
 * Kafka's are; a double outside shows as Java prints it (`Invalid value 2.0 ...`).
 */
export function range(
  min: number | null,
  max: number | null,
  options: { double?: boolean } = {},
): ValidatorSpec {
  const isDouble = options.double === true
  const validValues = max === null ? `[${min},...]` : min === null ? `[...,${max}]` : `[${min},...,${max}]`
  return {
    validValues,
    validate: (value, name) => {
      const n = numeric(value)
      if (min !== null && below(n, min)) {
        return invalidValueMessage(name, shownValue(n, isDouble), `Value must be at least ${min}`)
      }
      if (max !== null && above(n, max)) {
        return invalidValueMessage(name, shownValue(n, isDouble), `Value must be no more than ${max}`)
      }
      return null
    },
  }
}

/** Kafka's Range.atLeast(min). */
export function atLeast(min: number): ValidatorSpec {
  return range(min, null)
}

/** Kafka's Range.between(min, max). */
export function between(min: number, max: number, options: { double?: boolean } = {}): ValidatorSpec {
  return range(min, max, options)
}

/** Kafka's ValidString.in(...): case-sensitive, the order shown in messages is Kafka's. */
export function oneOf(values: readonly string[]): ValidatorSpec {
  const allowed = new Set(values)
  return {
    validValues: `[${values.join(', ')}]`,
    validate: (value, name) =>
      typeof value === 'string' && allowed.has(value)
        ? null
        : invalidValueMessage(name, String(value), `String must be one of: ${values.join(', ')}`),
  }
}

/** Kafka's ValidList.in(...): every element one of `values` (an empty list is valid; repeats too). */
export function eachOneOf(values: readonly string[]): ValidatorSpec {
  const element = oneOf(values)
  return {
    validValues: element.validValues,
    validate: (value, name) => {
      for (const item of value as readonly string[]) {
        const error = element.validate(item, name)
        if (error !== null) return error
      }
      return null
    },
  }
}

/** Kafka's GzipCompression.LevelValidator: 1..9 or -1 (Deflater's default). */
export function gzipLevel(): ValidatorSpec {
  return {
    validValues: '[1,...,9] or -1',
    validate: (value, name) => {
      const n = Number(numeric(value))
      return n > 9 || (n < 1 && n !== -1)
        ? invalidValueMessage(name, String(n), 'Value must be between 1 and 9 or equal to -1')
        : null
    },
  }
}

const THROTTLED_REPLICA = /^(?:[0-9]+:[0-9]+)?$/

/** Kafka's ThrottledReplicaListValidator: `*`, or `partition:broker` entries. */
export function throttledReplicas(): ValidatorSpec {
  return {
    validValues: '[partitionId]:[brokerId],[partitionId]:[brokerId],...',
    validate: (value, name) => {
      const list = value as readonly string[]
      const trimmed = list.map(javaTrim)
      if (trimmed.every((s) => THROTTLED_REPLICA.test(s)) || trimmed.join('') === '*') return null
      return invalidValueMessage(
        name,
        javaToString('list', list),
        `${name} must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...`,
      )
    },
  }
}

/** Kafka's Utils.HOST_PORT_PATTERN: optional `scheme://`, host (maybe in brackets), `:port`. */
const HOST_PORT = /^(?:[0-9a-zA-Z\-%._]*:\/\/)?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$/
const VALID_HOST = /^[0-9a-zA-Z\-%._:]*$/

/** The host and port of `host:port` as Kafka's Utils.getHost/getPort read them, or undefined. */
export function parseHostPort(text: string): { host: string; port: number } | undefined {
  const match = HOST_PORT.exec(text)
  if (match === null) return undefined
  const [, host = '', port = ''] = match
  return VALID_HOST.test(host) ? { host, port: Number(port) } : undefined
}

/** Kafka's ControllerQuorumVotersValidator: `{id}@{host}:{port}` entries (an empty list is valid). */
export function quorumVoters(): ValidatorSpec {
  const form = 'Each entry should be in the form `{id}@{host}:{port}`.'
  return {
    validValues: 'non-empty list',
    validate: (value) => {
      for (const entry of value as readonly string[]) {
        const parts = javaSplit(entry, '@')
        if (parts.length !== 2) return `Invalid configuration value for controller.quorum.voters. ${form}`
        const [id = '', address = ''] = parts
        if (parseIntValue(id) === undefined || javaTrim(id) !== id) {
          return `Failed to parse voter ID as an integer from ${id}`
        }
        const hostPort = parseHostPort(address)
        if (hostPort === undefined) {
          return `Failed to parse host name from entry ${entry} for the configuration controller.quorum.voters. ${form}`
        }
        if (hostPort.port > 65535) return portOutOfRange(hostPort.port)
      }
      return null
    },
  }
}

/** Kafka's ControllerQuorumBootstrapServersValidator: `{host}:{port}` entries. */
export function bootstrapServers(): ValidatorSpec {
  return {
    validValues: 'non-empty list',
    validate: (value) => {
      for (const entry of value as readonly string[]) {
        const hostPort = parseHostPort(entry)
        if (hostPort === undefined) {
          return `Failed to parse host name from ${entry} for the configuration controller.quorum.bootstrap.servers. Each entry should be in the form "{host}:{port}"`
        }
        if (hostPort.port > 65535) return portOutOfRange(hostPort.port)
      }
      return null
    },
  }
}

/** Java's InetSocketAddress refuses the port (Kafka lets that IllegalArgumentException through). */
function portOutOfRange(port: number): string {
  return `port out of range:${port}`
}

/** Java's String.split(literal): no match gives [text]; otherwise trailing empty strings are dropped. */
function javaSplit(text: string, separator: string): string[] {
  if (!text.includes(separator)) return [text]
  const parts = text.split(separator)
  while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop()
  return parts
}
