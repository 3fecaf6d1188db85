/**
 * Reads Kafka's primitive types from a byte range. Every length is checked against the bytes that
 * remain before anything is allocated, so a hostile length fails with `DecodeError`, never a huge
 * allocation. Byte fields are views (`subarray`) into the source buffer: no copy.
 */
import { Uuid } from '../../model/index.ts'

/** The input is not a valid encoding. The only error a decoder throws for bad bytes. */
export class DecodeError extends Error {
  override name = 'DecodeError'
}

const UUID_BYTES = 16

export class Reader {
  readonly buf: Buffer
  offset: number
  readonly end: number

  constructor(buf: Buffer, offset = 0, end = buf.length) {
    if (offset < 0 || end > buf.length || offset > end) throw new DecodeError('reader range out of bounds')
    this.buf = buf
    this.offset = offset
    this.end = end
  }

  get remaining(): number {
    return this.end - this.offset
  }

  /** Advance past `n` bytes after checking they exist; returns the start position. */
  private take(n: number): number {
    const at = this.offset
    if (n > this.end - at) throw new DecodeError(`need ${n} bytes at offset ${at}, ${this.end - at} remain`)
    this.offset = at + n
    return at
  }

  int8(): number {
    return this.buf.readInt8(this.take(1))
  }
  uint8(): number {
    return this.buf[this.take(1)]!
  }
  bool(): boolean {
    return this.buf[this.take(1)] !== 0
  }
  int16(): number {
    return this.buf.readInt16BE(this.take(2))
  }
  uint16(): number {
    return this.buf.readUInt16BE(this.take(2))
  }
  int32(): number {
    return this.buf.readInt32BE(this.take(4))
  }
  uint32(): number {
    return this.buf.readUInt32BE(this.take(4))
  }
  int64(): bigint {
    return this.buf.readBigInt64BE(this.take(8))
  }
  float64(): number {
    return this.buf.readDoubleBE(this.take(8))
  }

  uuid(): Uuid {
    const at = this.take(UUID_BYTES)
    return Uuid(this.buf.toString('base64url', at, at + UUID_BYTES))
  }

  /** Unsigned LEB128 of at most 32 bits (5 bytes). */
  uvarint(): number {
    let value = 0
    let shift = 0
    for (let i = 0; i < 5; i++) {
      const b = this.uint8()
      value |= (b & 0x7f) << shift
      if ((b & 0x80) === 0) return value >>> 0
      shift += 7
    }
    throw new DecodeError('unsigned varint longer than 5 bytes')
  }

  /** Zigzag varint of at most 32 bits. */
  varint(): number {
    const raw = this.uvarint()
    return (raw >>> 1) ^ -(raw & 1)
  }

  /** Zigzag varlong of at most 64 bits (10 bytes). */
  varlong(): bigint {
    let raw = 0n
    let shift = 0n
    for (let i = 0; i < 10; i++) {
      const b = this.uint8()
      raw |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return BigInt.asIntN(64, (raw >> 1n) ^ -(raw & 1n))
      shift += 7n
    }
    throw new DecodeError('varlong longer than 10 bytes')
  }

  /** A length that must fit in what remains; `-1` (or compact `0`) means null. */
  private length(n: number, what: string): number {
    if (n < -1) throw new DecodeError(`negative ${what} length ${n}`)
    if (n > this.end - this.offset)
      throw new DecodeError(`${what} length ${n} exceeds ${this.end - this.offset} remaining bytes`)
    return n
  }

  private text(n: number): string {
    const at = this.take(n)
    return this.buf.toString('utf8', at, at + n)
  }

  string(): string {
    const n = this.length(this.int16(), 'string')
    if (n < 0) throw new DecodeError('null string in a non-nullable field')
    return this.text(n)
  }
  nullableString(): string | null {
    const n = this.length(this.int16(), 'string')
    return n < 0 ? null : this.text(n)
  }
  compactString(): string {
    const n = this.length(this.uvarint() - 1, 'string')
    if (n < 0) throw new DecodeError('null string in a non-nullable field')
    return this.text(n)
  }
  compactNullableString(): string | null {
    const n = this.length(this.uvarint() - 1, 'string')
    return n < 0 ? null : this.text(n)
  }

  /** `n` raw bytes as a view into the source. */
  raw(n: number): Buffer {
    const at = this.take(n)
    return this.buf.subarray(at, at + n)
  }
  bytes(): Buffer {
    const n = this.length(this.int32(), 'bytes')
    if (n < 0) throw new DecodeError('null bytes in a non-nullable field')
    return this.raw(n)
  }
  nullableBytes(): Buffer | null {
    const n = this.length(this.int32(), 'bytes')
    return n < 0 ? null : this.raw(n)
  }
  compactBytes(): Buffer {
    const n = this.length(this.uvarint() - 1, 'bytes')
    if (n < 0) throw new DecodeError('null bytes in a non-nullable field')
    return this.raw(n)
  }
  compactNullableBytes(): Buffer | null {
    const n = this.length(this.uvarint() - 1, 'bytes')
    return n < 0 ? null : this.raw(n)
  }

  /**
   * An array count, -1 for null. Every element takes at least one byte, so a count larger than
   * what remains is refused before any allocation.
   */
  arrayLength(): number {
    return this.length(this.int32(), 'array')
  }
  compactArrayLength(): number {
    return this.length(this.uvarint() - 1, 'array')
  }

  /** Skip `n` bytes (an unknown tagged field). */
  skip(n: number): void {
    this.take(n)
  }
}
