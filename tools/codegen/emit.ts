/**
 * Emits one TypeScript module per schema: interfaces (decoded form and the `In` form an encoder
 * accepts, whose fields all default), a reader, a writer and default/isDefault helpers per struct.
 * Version differences are runtime branches on `v`, as in Kafka's own generated Java.
 */
import type { Field, FieldType, Range, Schema, Struct } from './schema.ts'
import { isEmpty } from './schema.ts'

const BRANDS: Record<string, { base: string; brand: string }> = {
  brokerId: { base: 'int32', brand: 'm.BrokerId' },
  topicName: { base: 'string', brand: 'm.TopicName' },
  groupId: { base: 'string', brand: 'm.GroupId' },
  transactionalId: { base: 'string', brand: 'm.TransactionalId' },
  producerId: { base: 'int64', brand: 'm.ProducerId' },
}

export function camel(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1)
}

export function kebab(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1-$2')
    .toLowerCase()
}

/** Emits code for one schema. */
export class Emitter {
  private readonly s: Schema
  private readonly structs: Map<string, Struct>
  private readonly out: string[] = []
  private uses = { zeroUuid: false }

  constructor(schema: Schema) {
    this.s = schema
    this.structs = new Map(schema.structs.map((x) => [x.name, x]))
  }

  /** A boolean expression in `v` for "v is in r", simplified against the valid versions. */
  cond(r: Range): string {
    if (isEmpty(r)) return 'false'
    const valid = this.s.validVersions
    const lo = Math.max(r.min, valid.min)
    const hi = Math.min(r.max, valid.max)
    if (lo > hi) return 'false'
    if (lo <= valid.min && hi >= valid.max) return 'true'
    if (lo <= valid.min) return `v <= ${hi}`
    if (hi >= valid.max) return `v >= ${lo}`
    if (lo === hi) return `v === ${lo}`
    return `v >= ${lo} && v <= ${hi}`
  }

  private flexOf(f: Field): string {
    return f.flexibleVersions === undefined ? 'flex' : this.cond(f.flexibleVersions)
  }

  private brandOf(f: Field, prim: string): string | undefined {
    if (f.entityType === undefined) return undefined
    const b = BRANDS[f.entityType]
    if (b === undefined) throw new Error(`${this.s.name}.${f.name}: unknown entityType ${f.entityType}`)
    return b.base === prim ? b.brand : undefined
  }

  private scalarTs(f: Field, prim: string): string {
    const brand = this.brandOf(f, prim)
    if (brand !== undefined) return brand
    switch (prim) {
      case 'bool':
        return 'boolean'
      case 'int64':
        return 'bigint'
      case 'string':
        return 'string'
      case 'bytes':
      case 'records':
        return 'Buffer'
      case 'uuid':
        return 'm.Uuid'
      default:
        return 'number'
    }
  }

  private typeTs(f: Field, t: FieldType, input: boolean): string {
    if (t.kind === 'primitive') return this.scalarTs(f, t.name)
    if (t.kind === 'struct') return input ? `${t.name}In` : t.name
    const inner = this.typeTs(f, t.element, input)
    return input ? `readonly ${inner}[]` : `${inner}[]`
  }

  private nullable(f: Field): boolean {
    return this.cond(f.nullableVersions) !== 'false'
  }

  private fieldTs(f: Field, input: boolean): string {
    const base = this.typeTs(f, f.type, input)
    return this.nullable(f) ? `${base} | null` : base
  }

  /** A fresh default value for a field. */
  defaultExpr(f: Field): string {
    const dv = f.defaultValue
    const where = `${this.s.name}.${f.name}`
    if (dv === 'null') {
      if (!this.nullable(f)) throw new Error(`${where}: default null on a non-nullable field`)
      return 'null'
    }
    const t = f.type
    if (t.kind === 'array') {
      if (dv !== undefined && dv !== '') throw new Error(`${where}: array default ${dv}`)
      return '[]'
    }
    if (t.kind === 'struct') return `default${t.name}()`
    const brand = this.brandOf(f, t.name)
    const cast = (e: string): string => (brand === undefined ? e : `(${e} as ${brand})`)
    switch (t.name) {
      case 'bool':
        if (dv !== undefined && dv !== 'true' && dv !== 'false')
          throw new Error(`${where}: bool default ${dv}`)
        return dv === 'true' ? 'true' : 'false'
      case 'int64': {
        const n = BigInt(dv ?? '0')
        return cast(`${n}n`)
      }
      case 'int8':
      case 'int16':
      case 'uint16':
      case 'int32':
      case 'uint32':
      case 'float64': {
        const n = Number(dv ?? '0')
        if (Number.isNaN(n)) throw new Error(`${where}: numeric default ${dv}`)
        return cast(String(n))
      }
      case 'string':
        return cast(JSON.stringify(dv ?? ''))
      case 'bytes':
      case 'records':
        if (dv !== undefined && dv !== '') throw new Error(`${where}: bytes default ${dv}`)
        return 'rt.EMPTY_BYTES'
      case 'uuid':
        if (dv !== undefined && dv !== '' && dv !== 'AAAAAAAAAAAAAAAAAAAAAA')
          throw new Error(`${where}: uuid default ${dv}`)
        this.uses.zeroUuid = true
        return 'ZERO_UUID'
    }
  }

  /** An expression true when `x` (of the In type, not undefined) equals the field's default. */
  isDefaultExpr(f: Field, x: string): string {
    const d = this.defaultExpr(f)
    if (d === 'null') return `${x} === null`
    const t = f.type
    const nn = this.nullable(f) ? `${x} !== null && ` : ''
    if (t.kind === 'array') return `${nn}${x}.length === 0`
    if (t.kind === 'struct') return `${nn}isDefault${t.name}(${x})`
    if (t.name === 'bytes' || t.name === 'records') return `${nn}${x}.length === 0`
    return `${x} === ${d}`
  }

  private ternary(c: string, a: string, b: string): string {
    if (c === 'true') return a
    if (c === 'false') return b
    return `(${c} ? ${a} : ${b})`
  }

  /** Reads one element (never nullable) of primitive type. */
  private readPrim(f: Field, prim: string, fx: string, nc: string): string {
    let e: string
    switch (prim) {
      case 'string':
        e = this.ternary(
          fx,
          this.ternary(nc, 'r.compactNullableString()', 'r.compactString()'),
          this.ternary(nc, 'r.nullableString()', 'r.string()'),
        )
        break
      case 'bytes':
      case 'records':
        e = this.ternary(
          fx,
          this.ternary(nc, 'r.compactNullableBytes()', 'r.compactBytes()'),
          this.ternary(nc, 'r.nullableBytes()', 'r.bytes()'),
        )
        break
      default:
        e = `r.${prim}()`
    }
    const brand = this.brandOf(f, prim)
    return brand === undefined ? e : `(${e} as ${brand}${nc === 'false' ? '' : ' | null'})`
  }

  /** An expression reading field `f` at version `v` (with `flex` in scope). */
  readExpr(f: Field, fx: string): string {
    const nc = this.cond(f.nullableVersions)
    const t = f.type
    const where = `${this.s.name}.${f.name}`
    if (t.kind === 'primitive') return this.readPrim(f, t.name, fx, nc)
    if (t.kind === 'struct') {
      if (nc === 'false') return `read${t.name}(r, v)`
      return `(${nc === 'true' ? '' : `${nc} && `}r.int8() < 0 ? null : read${t.name}(r, v))`
    }
    const el = t.element
    const elRead =
      el.kind === 'struct'
        ? `read${el.name}(r, v)`
        : el.kind === 'primitive'
          ? this.readPrim(f, el.name, fx, 'false')
          : (() => {
              throw new Error(`${where}: nested arrays`)
            })()
    const ts = this.fieldTs(f, false)
    return `(rt.readArray(r, ${fx}, ${nc}, '${where}', (r) => ${elRead}) as ${ts})`
  }

  private writePrim(prim: string, x: string, fx: string, nullableWrite: boolean): string {
    switch (prim) {
      case 'string':
        return nullableWrite
          ? this.stmtTernary(fx, `w.compactNullableString(${x})`, `w.nullableString(${x})`)
          : this.stmtTernary(fx, `w.compactString(${x})`, `w.string(${x})`)
      case 'bytes':
      case 'records':
        return nullableWrite
          ? this.stmtTernary(fx, `w.compactNullableBytes(${x})`, `w.nullableBytes(${x})`)
          : this.stmtTernary(fx, `w.compactBytes(${x})`, `w.bytes(${x})`)
      default:
        return `w.${prim}(${x})`
    }
  }

  private stmtTernary(c: string, a: string, b: string): string {
    if (c === 'true') return a
    if (c === 'false') return b
    return `if (${c}) ${a}\n    else ${b}`
  }

  /** Statements writing value `x` (already defaulted) of field `f`. */
  writeStmts(f: Field, x: string, fx: string): string {
    const nc = this.cond(f.nullableVersions)
    const t = f.type
    const where = `${this.s.name}.${f.name}`
    const nullable = this.nullable(f)
    const guard =
      nullable && nc !== 'true' ? `if (${x} === null && !(${nc})) rt.nullInNonNullable('${where}')\n    ` : ''
    if (t.kind === 'primitive') return guard + this.writePrim(t.name, x, fx, nullable)
    if (t.kind === 'struct') {
      if (!nullable) return `write${t.name}(w, ${x}, v)`
      return `${guard}if (${x} === null) w.int8(-1)\n    else {\n      ${nc === 'true' ? 'w.int8(1)' : `if (${nc}) w.int8(1)`}\n      write${t.name}(w, ${x}, v)\n    }`
    }
    const el = t.element
    const elWrite =
      el.kind === 'struct'
        ? `write${el.name}(w, e, v)`
        : el.kind === 'primitive'
          ? this.writePrim(el.name, 'e', fx, false)
          : ''
    const elTs = this.typeTs(f, el, true)
    return `rt.writeArray(w, ${x}, ${fx}, ${nc}, '${where}', (w, e: ${elTs}) => {\n      ${elWrite.replace(/\n/g, '\n  ')}\n    })`
  }

  private emitInterfaces(name: string, fields: readonly Field[], doc: string): void {
    const tagged = this.cond(this.s.flexibleVersions) !== 'false'
    for (const input of [false, true]) {
      const iname = input ? `${name}In` : name
      this.out.push(
        input
          ? `/** ${name} as an encoder accepts it: every field may be left out and takes its default. */`
          : `/** ${doc} */`,
      )
      this.out.push(`export interface ${iname} {`)
      for (const f of fields) {
        const about = f.about.replace(/\*\//g, '* /').trim()
        const ver = `versions ${rangeText(f.versions)}${f.tag !== undefined ? `, tag ${f.tag}` : ''}${
          this.nullable(f) ? `, nullable ${rangeText(f.nullableVersions)}` : ''
        }`
        this.out.push(`  /** ${about}${about ? ' ' : ''}(${ver}) */`)
        this.out.push(
          `  ${camel(f.name)}${input ? '?' : ''}: ${this.fieldTs(f, input)}${input ? ' | undefined' : ''}`,
        )
      }
      if (tagged)
        this.out.push('  /** Tagged fields this codec does not know, kept so re-encoding preserves them. */')
      if (tagged) this.out.push(`  _unknownTaggedFields?: ${input ? 'readonly ' : ''}rt.RawTaggedField[]`)
      this.out.push('}', '')
    }
  }

  private emitStruct(name: string, fields: readonly Field[], doc: string): void {
    const flexCond = this.cond(this.s.flexibleVersions)
    this.emitInterfaces(name, fields, doc)

    // default
    this.out.push(`export function default${name}(): ${name} {`)
    this.out.push('  return {')
    for (const f of fields) this.out.push(`    ${camel(f.name)}: ${this.defaultExpr(f)},`)
    this.out.push('  }', '}', '')

    // isDefault
    this.out.push(`export function isDefault${name}(o: ${name}In): boolean {`)
    const checks = fields.map((f) => {
      const x = `o.${camel(f.name)}`
      return `(${x} === undefined || ${this.isDefaultExpr(f, x)})`
    })
    this.out.push(`  return ${checks.length === 0 ? 'true' : checks.join(' &&\n    ')}`)
    this.out.push('}', '')

    // read
    const usesV = true
    this.out.push(`export function read${name}(r: Reader, ${usesV ? 'v' : '_v'}: number): ${name} {`)
    if (flexCond !== 'false' && flexCond !== 'true') this.out.push(`  const flex = ${flexCond}`)
    else this.out.push(`  const flex = ${flexCond}`)
    this.out.push(`  const o: ${name} = {`)
    for (const f of fields) {
      const key = camel(f.name)
      if (f.tag !== undefined) {
        this.out.push(`    ${key}: ${this.defaultExpr(f)},`)
        continue
      }
      const present = this.cond(f.versions)
      this.out.push(
        `    ${key}: ${this.ternary(present, this.readExpr(f, this.flexOf(f)), this.defaultExpr(f))},`,
      )
    }
    this.out.push('  }')
    if (flexCond !== 'false') {
      const taggedFields = fields.filter((f) => f.tag !== undefined)
      this.out.push(`  if (flex) {`)
      if (taggedFields.length === 0) {
        this.out.push('    const unknown = rt.readTaggedFields(r, () => false)')
      } else {
        this.out.push('    const unknown = rt.readTaggedFields(r, (tag, r) => {')
        this.out.push('      switch (tag) {')
        for (const f of taggedFields) {
          this.out.push(`        case ${f.tag}:`)
          this.out.push(`          if (!(${this.cond(f.versions)})) return false`)
          this.out.push(`          o.${camel(f.name)} = ${this.readExpr(f, 'true')}`)
          this.out.push('          return true')
        }
        this.out.push('        default:', '          return false', '      }', '    })')
      }
      this.out.push('    if (unknown !== undefined) o._unknownTaggedFields = unknown', '  }')
    } else {
      this.out.push('  void flex')
    }
    this.out.push('  return o', '}', '')

    // write
    this.out.push(`export function write${name}(w: Writer, o: ${name}In, v: number): void {`)
    this.out.push(`  const flex = ${flexCond}`)
    let pendingTagged = false
    for (const f of fields) {
      const key = camel(f.name)
      const where = `${this.s.name}.${name}.${f.name}`
      const present = this.cond(f.versions)
      const d = this.defaultExpr(f)
      if (f.tag !== undefined) {
        if (!pendingTagged) {
          this.out.push('  let tagged: rt.PendingTaggedField[] | null = null')
          pendingTagged = true
        }
        this.out.push('  {')
        this.out.push(`    const x = o.${key}`)
        this.out.push(`    if (x !== undefined && !(${this.isDefaultExpr(f, 'x')})) {`)
        this.out.push(`      if (${present}) {`)
        this.out.push(`        ;(tagged ??= []).push({ tag: ${f.tag}, write: (w) => {`)
        this.out.push(`          ${this.writeStmts(f, 'x', 'true').replace(/\n/g, '\n      ')}`)
        this.out.push('        } })')
        this.out.push(`      }${f.ignorable ? '' : ` else rt.unsupported('${where}', v)`}`)
        this.out.push('    }', '  }')
        continue
      }
      if (present === 'false') {
        if (!f.ignorable) {
          this.out.push(
            `  if (o.${key} !== undefined && !(${this.isDefaultExpr(f, `o.${key}`)})) rt.unsupported('${where}', v)`,
          )
        }
        continue
      }
      const nullable = this.nullable(f)
      const value = nullable ? `o.${key} === undefined ? ${d} : o.${key}` : `o.${key} ?? ${d}`
      this.out.push(present === 'true' ? '  {' : `  if (${present}) {`)
      this.out.push(`    const x = ${value}`)
      this.out.push(`    ${this.writeStmts(f, 'x', this.flexOf(f))}`)
      if (present !== 'true' && !f.ignorable) {
        this.out.push(`  } else if (o.${key} !== undefined && !(${this.isDefaultExpr(f, `o.${key}`)})) {`)
        this.out.push(`    rt.unsupported('${where}', v)`)
      }
      this.out.push('  }')
    }
    if (flexCond !== 'false') {
      this.out.push(
        `  if (flex) rt.writeTaggedFields(w, ${pendingTagged ? 'tagged' : 'null'}, o._unknownTaggedFields)`,
      )
    } else {
      this.out.push('  void flex')
    }
    this.out.push('}', '')
  }

  emit(sourcePath: string, depth: number): string {
    const up = '../'.repeat(depth)
    const s = this.s
    const body: string[] = []
    this.out.length = 0
    this.emitStruct(s.name, s.fields, `${s.name}${s.apiKey === undefined ? '' : ` (api key ${s.apiKey})`}.`)
    for (const st of s.structs) this.emitStruct(st.name, st.fields, `${st.name}, part of ${s.name}.`)
    body.push(...this.out)
    const flexMin = isEmpty(s.flexibleVersions) ? -1 : s.flexibleVersions.min
    if (!isEmpty(s.flexibleVersions) && s.flexibleVersions.max !== Number.POSITIVE_INFINITY)
      throw new Error(`${s.name}: flexible versions must be open-ended`)
    const metaLines = [
      `/** What the schema says of ${s.name} as a whole. */`,
      `export const ${camel(s.name)}Schema = {`,
      `  name: '${s.name}',`,
      `  type: '${s.type}',`,
      ...(s.apiKey === undefined ? [] : [`  apiKey: ${s.apiKey},`]),
      `  minVersion: ${s.validVersions.min},`,
      `  maxVersion: ${s.validVersions.max},`,
      `  /** The first flexible version, or -1 when none is. */`,
      `  flexibleMin: ${flexMin},`,
      `  /** The last deprecated version, or -1 when none is. */`,
      `  deprecatedMax: ${isEmpty(s.deprecatedVersions) ? -1 : s.deprecatedVersions.max},`,
      `  listeners: ${JSON.stringify(s.listeners).replace(/"/g, "'").replace(/,/g, ', ')},`,
      `  latestVersionUnstable: ${s.latestVersionUnstable},`,
      '} as const',
      '',
    ]
    const head = [
      `// Generated by tools/codegen from ${sourcePath}. Do not edit: run \`npm run codegen\`.`,
      '/* eslint-disable */',
      `import type * as m from '${up}../model/index.ts'`,
      ...(this.uses.zeroUuid ? [`import { ZERO_UUID } from '${up}../model/index.ts'`] : []),
      `import type { Reader } from '${up}wire/reader.ts'`,
      `import * as rt from '${up}wire/support.ts'`,
      `import type { Writer } from '${up}wire/writer.ts'`,
      '',
    ]
    const text = [...head, ...metaLines, ...body].join('\n')
    // Drop the model import when nothing uses it.
    return /\bm\.[A-Z]/.test(text)
      ? text
      : text.replace(`import type * as m from '${up}../model/index.ts'\n`, '')
  }
}

function rangeText(r: Range): string {
  if (isEmpty(r)) return 'none'
  if (r.max === Number.POSITIVE_INFINITY) return `${r.min}+`
  return r.min === r.max ? `${r.min}` : `${r.min}-${r.max}`
}
