/**
 * Runtime support for the generated codecs: arrays, tagged fields and version errors. Shared by
 * every generated message so the generated files stay declarative.
 */
import { DecodeError, Reader } from './reader.ts'
import { EncodeError, Writer } from './writer.ts'

/** A tagged field this codec does not know, kept as bytes so re-encoding preserves it. */
export interface RawTaggedField {
  readonly tag: number
  readonly data: Buffer
}

/** A tagged field to write: its tag and a function that writes its body. */
export interface PendingTaggedField {
  readonly tag: number
  readonly write: (w: Writer) => void
}

export function readArray<T>(
  r: Reader,
  flexible: boolean,
  nullable: boolean,
  field: string,
  readElement: (r: Reader) => T,
): T[] | null {
  const n = flexible ? r.compactArrayLength() : r.arrayLength()
  if (n < 0) {
    if (nullable) return null
    throw new DecodeError(`non-nullable field ${field} was serialized as null`)
  }
  const out = new Array<T>(n)
  for (let i = 0; i < n; i++) out[i] = readElement(r)
  return out
}

export function writeArray<T>(
  w: Writer,
  value: readonly T[] | null,
  flexible: boolean,
  nullable: boolean,
  field: string,
  writeElement: (w: Writer, e: T) => void,
): void {
  if (value === null) {
    if (!nullable) throw new EncodeError(`non-nullable field ${field} was given null`)
    if (flexible) w.compactArrayLength(null)
    else w.arrayLength(null)
    return
  }
  if (flexible) w.compactArrayLength(value.length)
  else w.arrayLength(value.length)
  for (const e of value) writeElement(w, e)
}

/**
 * Reads a tagged-field section. `known(tag, r)` reads a known tag's body and returns true, or
 * returns false for a tag it does not know; unknown bodies are returned for re-encoding.
 */
export function readTaggedFields(
  r: Reader,
  known: (tag: number, r: Reader) => boolean,
): RawTaggedField[] | undefined {
  const count = r.uvarint()
  if (count > r.remaining) throw new DecodeError(`tagged field count ${count} exceeds remaining bytes`)
  let unknown: RawTaggedField[] | undefined
  for (let i = 0; i < count; i++) {
    const tag = r.uvarint()
    const size = r.uvarint()
    if (size > r.remaining) throw new DecodeError(`tagged field ${tag} size ${size} exceeds remaining bytes`)
    const start = r.offset
    const end = start + size
    const body = new Reader(r.buf, start, end)
    r.offset = end
    if (known(tag, body)) {
      if (body.offset !== end)
        throw new DecodeError(`tagged field ${tag} body does not match its size ${size}`)
    } else {
      if (unknown === undefined) unknown = []
      unknown.push({ tag, data: r.buf.subarray(start, end) })
    }
  }
  return unknown
}

/** Writes a tagged-field section: known and unknown fields in ascending tag order. */
export function writeTaggedFields(
  w: Writer,
  pending: PendingTaggedField[] | null,
  unknown: readonly RawTaggedField[] | undefined,
): void {
  if (pending === null && (unknown === undefined || unknown.length === 0)) {
    w.uvarint(0)
    return
  }
  const all: PendingTaggedField[] = pending ?? []
  if (unknown !== undefined) for (const u of unknown) all.push({ tag: u.tag, write: (x) => x.raw(u.data) })
  all.sort((a, b) => a.tag - b.tag)
  w.uvarint(all.length)
  let previous = -1
  for (const field of all) {
    if (field.tag === previous) throw new EncodeError(`tagged field ${field.tag} written twice`)
    previous = field.tag
    const body = new Writer(64)
    field.write(body)
    w.uvarint(field.tag)
    w.uvarint(body.length)
    w.append(body)
  }
}

export function unsupported(field: string, version: number): never {
  throw new EncodeError(`field ${field} has a non-default value, which version ${version} cannot carry`)
}

export function nullInNonNullable(field: string): never {
  throw new EncodeError(`non-nullable field ${field} was given null`)
}

export function decodeNullInNonNullable(field: string): never {
  throw new DecodeError(`non-nullable field ${field} was serialized as null`)
}

/** An empty buffer shared by every default `bytes` value; never written to. */
export const EMPTY_BYTES: Buffer = Buffer.alloc(0)
