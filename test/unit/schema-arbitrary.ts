/**
 * fast-check arbitraries built straight from Kafka's JSON schemas (not from the generated code), so
 * round-trip properties check the generator against the specification it was made from.
 */
import fc from 'fast-check'
import type { Field, FieldType, Range, Schema, Struct } from '../../tools/codegen/schema.ts'

export function inRange(r: Range, v: number): boolean {
  return v >= r.min && v <= r.max
}

function camel(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1)
}

const INT_BOUNDS: Record<string, [number, number]> = {
  int8: [-128, 127],
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
}

function primitive(name: string): fc.Arbitrary<unknown> {
  const bounds = INT_BOUNDS[name]
  if (bounds !== undefined) return fc.integer({ min: bounds[0], max: bounds[1] })
  switch (name) {
    case 'bool':
      return fc.boolean()
    case 'int64':
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
    case 'float64':
      return fc.double({ noNaN: true })
    case 'string':
      return fc.string({ maxLength: 12, unit: 'binary' })
    case 'bytes':
    case 'records':
      return fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a))
    case 'uuid':
      return fc.uint8Array({ minLength: 16, maxLength: 16 }).map((a) => Buffer.from(a).toString('base64url'))
  }
  throw new Error(`no arbitrary for ${name}`)
}

/** An arbitrary value of `schema` at version `v`, filling exactly the fields that version carries. */
export function messageArbitrary(schema: Schema, v: number): fc.Arbitrary<Record<string, unknown>> {
  const structs = new Map<string, Struct>(schema.structs.map((s) => [s.name, s]))
  const flexible = inRange(schema.flexibleVersions, v)
  const ofType = (t: FieldType, depth: number): fc.Arbitrary<unknown> => {
    if (t.kind === 'primitive') return primitive(t.name)
    if (t.kind === 'array') return fc.array(ofType(t.element, depth + 1), { maxLength: depth > 2 ? 1 : 3 })
    const s = structs.get(t.name)
    if (s === undefined) throw new Error(`unknown struct ${t.name}`)
    return ofStruct(s.fields, depth + 1)
  }
  const ofField = (f: Field, depth: number): fc.Arbitrary<unknown> => {
    const a = ofType(f.type, depth)
    return inRange(f.nullableVersions, v) ? fc.option(a, { nil: null }) : a
  }
  const ofStruct = (fields: readonly Field[], depth: number): fc.Arbitrary<Record<string, unknown>> => {
    const model: Record<string, fc.Arbitrary<unknown>> = {}
    for (const f of fields) {
      if (!inRange(f.versions, v)) continue
      if (f.tag !== undefined && !flexible) continue
      model[camel(f.name)] = ofField(f, depth)
    }
    return fc.record(model)
  }
  return ofStruct(schema.fields, 0)
}

/** Asserts every field given in `expected` came back the same in `actual`. */
export function subsetMismatch(expected: unknown, actual: unknown, path = '$'): string | null {
  if (Buffer.isBuffer(expected)) {
    return Buffer.isBuffer(actual) && expected.equals(actual) ? null : `${path}: bytes differ`
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${path}: array length differs`
    for (let i = 0; i < expected.length; i++) {
      const m = subsetMismatch(expected[i], actual[i], `${path}[${i}]`)
      if (m !== null) return m
    }
    return null
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') return `${path}: expected an object`
    for (const [k, e] of Object.entries(expected)) {
      const m = subsetMismatch(e, (actual as Record<string, unknown>)[k], `${path}.${k}`)
      if (m !== null) return m
    }
    return null
  }
  return Object.is(expected, actual) ? null : `${path}: ${String(expected)} became ${String(actual)}`
}
