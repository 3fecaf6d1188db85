/**
 * Loads Kafka's JSON message schemas (with their `//` comments) into a checked model the emitter
 * walks. Every schema feature the emitter does not handle is refused here, loudly.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** An inclusive version range; `max` is Infinity for "N+"; empty when min > max. */
export interface Range {
  readonly min: number
  readonly max: number
}

export const NONE: Range = { min: 1, max: 0 }

export function parseRange(spec: string | undefined, what: string): Range {
  if (spec === undefined || spec === 'none') return NONE
  let m = /^(\d+)\+$/.exec(spec)
  if (m) return { min: Number(m[1]), max: Number.POSITIVE_INFINITY }
  m = /^(\d+)-(\d+)$/.exec(spec)
  if (m) return { min: Number(m[1]), max: Number(m[2]) }
  m = /^(\d+)$/.exec(spec)
  if (m) return { min: Number(m[1]), max: Number(m[1]) }
  throw new Error(`${what}: bad version range ${JSON.stringify(spec)}`)
}

export function isEmpty(r: Range): boolean {
  return r.min > r.max
}

export const PRIMITIVES = [
  'bool',
  'int8',
  'int16',
  'uint16',
  'int32',
  'uint32',
  'int64',
  'float64',
  'string',
  'bytes',
  'records',
  'uuid',
] as const
export type Primitive = (typeof PRIMITIVES)[number]

export type FieldType =
  | { readonly kind: 'primitive'; readonly name: Primitive }
  | { readonly kind: 'struct'; readonly name: string }
  | { readonly kind: 'array'; readonly element: FieldType }

export interface Field {
  readonly name: string
  readonly type: FieldType
  readonly versions: Range
  readonly nullableVersions: Range
  readonly taggedVersions: Range
  readonly tag: number | undefined
  readonly defaultValue: string | undefined
  readonly ignorable: boolean
  readonly entityType: string | undefined
  /** A per-field override of the message's flexible versions ("none" for the request header's ClientId). */
  readonly flexibleVersions: Range | undefined
  readonly about: string
}

export interface Struct {
  readonly name: string
  readonly fields: readonly Field[]
}

export interface Schema {
  readonly file: string
  readonly name: string
  readonly type: string
  readonly apiKey: number | undefined
  readonly validVersions: Range
  readonly flexibleVersions: Range
  readonly deprecatedVersions: Range
  readonly listeners: readonly string[]
  readonly latestVersionUnstable: boolean
  /** The top-level fields. */
  readonly fields: readonly Field[]
  /** Every named struct: inline ones and common ones, in order of first appearance. */
  readonly structs: readonly Struct[]
}

/** Strip `//` comments outside strings. */
export function stripComments(text: string): string {
  let out = ''
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      out += c
      if (c === '\\') {
        out += text[i + 1] ?? ''
        i++
      } else if (c === '"') inString = false
    } else if (c === '"') {
      inString = true
      out += c
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++
      out += '\n'
    } else out += c
  }
  return out
}

const KNOWN_KEYS = new Set([
  'name',
  'type',
  'versions',
  'nullableVersions',
  'taggedVersions',
  'tag',
  'default',
  'ignorable',
  'entityType',
  'mapKey',
  'fields',
  'about',
  'flexibleVersions',
  'zeroCopy',
])

type Json = Record<string, unknown>

function parseType(spec: string, where: string): FieldType {
  if (spec.startsWith('[]')) return { kind: 'array', element: parseType(spec.slice(2), where) }
  if ((PRIMITIVES as readonly string[]).includes(spec)) return { kind: 'primitive', name: spec as Primitive }
  if (/^[A-Z][A-Za-z0-9]*$/.test(spec)) return { kind: 'struct', name: spec }
  throw new Error(`${where}: unknown type ${spec}`)
}

function structName(t: FieldType): string | undefined {
  if (t.kind === 'struct') return t.name
  if (t.kind === 'array') return structName(t.element)
  return undefined
}

export function loadSchema(path: string): Schema {
  const json = JSON.parse(stripComments(readFileSync(path, 'utf8'))) as Json
  const name = json.name as string
  const structs: Struct[] = []
  const seen = new Map<string, Struct>()
  const addStruct = (s: Struct): void => {
    if (seen.has(s.name)) throw new Error(`${path}: struct ${s.name} defined twice`)
    seen.set(s.name, s)
    structs.push(s)
  }
  const parseFields = (list: unknown, where: string): Field[] => {
    if (!Array.isArray(list)) throw new Error(`${where}: fields is not an array`)
    return list.map((raw: Json) => {
      for (const k of Object.keys(raw)) if (!KNOWN_KEYS.has(k)) throw new Error(`${where}: unknown key ${k}`)
      const fname = raw.name as string
      const at = `${where}.${fname}`
      const type = parseType(raw.type as string, at)
      const taggedVersions = parseRange(raw.taggedVersions as string | undefined, at)
      // A tagged field may leave out `versions`: it is then present exactly in its tagged versions.
      const versions =
        raw.versions === undefined && !isEmpty(taggedVersions)
          ? taggedVersions
          : parseRange(raw.versions as string, at)
      const tag = raw.tag as number | undefined
      if ((tag === undefined) !== isEmpty(taggedVersions))
        throw new Error(`${at}: tag and taggedVersions go together`)
      if (tag !== undefined && (taggedVersions.min !== versions.min || taggedVersions.max !== versions.max))
        throw new Error(`${at}: taggedVersions must equal versions`)
      const field: Field = {
        name: fname,
        type,
        versions,
        nullableVersions: parseRange(raw.nullableVersions as string | undefined, at),
        taggedVersions,
        tag,
        defaultValue: raw.default === undefined ? undefined : String(raw.default),
        ignorable: raw.ignorable === true,
        entityType: raw.entityType as string | undefined,
        flexibleVersions:
          raw.flexibleVersions === undefined ? undefined : parseRange(raw.flexibleVersions as string, at),
        about: (raw.about as string | undefined) ?? '',
      }
      if (raw.fields !== undefined) {
        const sname = structName(type)
        if (sname === undefined) throw new Error(`${at}: fields on a non-struct type`)
        addStruct({ name: sname, fields: parseFields(raw.fields, `${where}.${sname}`) })
      }
      return field
    })
  }
  // A removed API keeps its file, with no versions and no fields, so that its key is never reused.
  const fields =
    json.validVersions === 'none' && json.fields === undefined ? [] : parseFields(json.fields, name)
  for (const common of (json.commonStructs as Json[] | undefined) ?? []) {
    addStruct({ name: common.name as string, fields: parseFields(common.fields, `${name}.${common.name}`) })
  }
  // Every referenced struct must be defined.
  const check = (list: readonly Field[]): void => {
    for (const f of list) {
      const s = structName(f.type)
      if (s !== undefined && !seen.has(s)) throw new Error(`${path}: struct ${s} is not defined`)
    }
  }
  check(fields)
  for (const s of structs) check(s.fields)
  return {
    file: path,
    name,
    type: json.type as string,
    apiKey: json.apiKey as number | undefined,
    validVersions: parseRange(json.validVersions as string, name),
    flexibleVersions: parseRange(json.flexibleVersions as string, name),
    deprecatedVersions: parseRange(json.deprecatedVersions as string | undefined, name),
    listeners: (json.listeners as string[] | undefined) ?? [],
    latestVersionUnstable: json.latestVersionUnstable === true,
    fields,
    structs,
  }
}

/** The schemas in `dir`, by file name; those of removed APIs (no valid versions) left out. */
export function loadDir(dir: string): Schema[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => loadSchema(join(dir, f)))
    .filter((s) => !isEmpty(s.validVersions))
}
