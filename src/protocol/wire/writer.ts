/**
 * Writes Kafka's primitive types into a growable buffer. Large byte fields (record batches) are
 * kept as references, not copied: `chunks()` returns the pieces for a vectored write.
 */
import type { Uuid } from '../../model/index.ts'

/** A value cannot be encoded in the version asked for (Kafka's UnsupportedVersionException). */
export class EncodeError extends Error {
  override name = 'EncodeError'
}

/** Byte fields at least this long are referenced instead of copied. */
export const ZERO_COPY_BYTES_MIN = 4096
const INITIAL_BYTES = 256
const UUID_BYTES = 16

export class Writer {
  private done: Buffer[] = []
  private doneBytes = 0
  private buf: Buffer
  private start = 0
  private pos = 0

  constructor(initialBytes = INITIAL_BYTES) {
    this.buf = Buffer.allocUnsafe(initialBytes)
  }

  /** Bytes written so far. */
  get length(): number {
    return this.doneBytes + this.pos - this.start
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const pending = this.pos - this.start
    const size = Math.max(this.buf.length * 2, pending + n, INITIAL_BYTES)
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, this.start, this.pos)
    this.buf = next
    this.start = 0
    this.pos = pending
  }

  int8(v: number): void {
    this.ensure(1)
    this.pos = this.buf.writeInt8(v, this.pos)
  }
  uint8(v: number): void {
    this.ensure(1)
    this.buf[this.pos++] = v
  }
  bool(v: boolean): void {
    this.uint8(v ? 1 : 0)
  }
  int16(v: number): void {
    this.ensure(2)
    this.pos = this.buf.writeInt16BE(v, this.pos)
  }
  uint16(v: number): void {
    this.ensure(2)
    this.pos = this.buf.writeUInt16BE(v, this.pos)
  }
  int32(v: number): void {
    this.ensure(4)
    this.pos = this.buf.writeInt32BE(v, this.pos)
  }
  uint32(v: number): void {
    this.ensure(4)
    this.pos = this.buf.writeUInt32BE(v, this.pos)
  }
  int64(v: bigint): void {
    this.ensure(8)
    this.pos = this.buf.writeBigInt64BE(v, this.pos)
  }
  float64(v: number): void {
    this.ensure(8)
    this.pos = this.buf.writeDoubleBE(v, this.pos)
  }
  uuid(v: Uuid): void {
    this.ensure(UUID_BYTES)
    const n = this.buf.write(v, this.pos, UUID_BYTES, 'base64url')
    if (n !== UUID_BYTES || v.length !== 22) throw new EncodeError(`not a Kafka uuid: ${v}`)
    this.pos += UUID_BYTES
  }

  uvarint(v: number): void {
    this.ensure(5)
    let x = v >>> 0
    while (x > 0x7f) {
      this.buf[this.pos++] = (x & 0x7f) | 0x80
      x >>>= 7
    }
    this.buf[this.pos++] = x
  }
  varint(v: number): void {
    this.uvarint((v << 1) ^ (v >> 31))
  }
  varlong(v: bigint): void {
    this.ensure(10)
    let x = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n))
    while (x > 0x7fn) {
      this.buf[this.pos++] = Number(x & 0x7fn) | 0x80
      x >>= 7n
    }
    this.buf[this.pos++] = Number(x)
  }

  private text(v: string): void {
    const n = Buffer.byteLength(v, 'utf8')
    this.ensure(n)
    this.pos += this.buf.write(v, this.pos, n, 'utf8')
  }
  string(v: string): void {
    const n = Buffer.byteLength(v, 'utf8')
    if (n > 0x7fff) throw new EncodeError(`string of ${n} bytes is longer than 32767`)
    this.int16(n)
    this.ensure(n)
    this.pos += this.buf.write(v, this.pos, n, 'utf8')
  }
  nullableString(v: string | null): void {
    if (v === null) this.int16(-1)
    else this.string(v)
  }
  compactString(v: string): void {
    this.uvarint(Buffer.byteLength(v, 'utf8') + 1)
    this.text(v)
  }
  compactNullableString(v: string | null): void {
    if (v === null) this.uvarint(0)
    else this.compactString(v)
  }

  /** Raw bytes with no length: copied when small, referenced when large. */
  raw(v: Uint8Array): void {
    if (v.length >= ZERO_COPY_BYTES_MIN) {
      this.seal()
      const b = Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.length)
      this.done.push(b)
      this.doneBytes += b.length
      return
    }
    this.ensure(v.length)
    this.buf.set(v, this.pos)
    this.pos += v.length
  }
  bytes(v: Uint8Array): void {
    this.int32(v.length)
    this.raw(v)
  }
  nullableBytes(v: Uint8Array | null): void {
    if (v === null) this.int32(-1)
    else this.bytes(v)
  }
  compactBytes(v: Uint8Array): void {
    this.uvarint(v.length + 1)
    this.raw(v)
  }
  compactNullableBytes(v: Uint8Array | null): void {
    if (v === null) this.uvarint(0)
    else this.compactBytes(v)
  }
  arrayLength(n: number | null): void {
    this.int32(n === null ? -1 : n)
  }
  compactArrayLength(n: number | null): void {
    this.uvarint(n === null ? 0 : n + 1)
  }

  /** Append everything another writer holds (a tagged field's body). */
  append(other: Writer): void {
    for (const chunk of other.chunks()) this.raw(chunk)
  }

  /** Move the pending bytes into the finished list. */
  private seal(): void {
    if (this.pos === this.start) return
    const piece = this.buf.subarray(this.start, this.pos)
    this.done.push(piece)
    this.doneBytes += piece.length
    this.start = this.pos
  }

  /** The encoded bytes as pieces, in order, for a vectored write. The writer stays usable. */
  chunks(): Buffer[] {
    this.seal()
    return this.done
  }

  /** The encoded bytes as one buffer (copies only when there is more than one piece). */
  toBuffer(): Buffer {
    const pieces = this.chunks()
    if (pieces.length === 1) return pieces[0]!
    return Buffer.concat(pieces, this.doneBytes)
  }

  /** Overwrite an int32 at absolute position `at` (for a size prefix written before its body). */
  patchInt32(at: number, v: number): void {
    this.seal()
    let base = 0
    for (const piece of this.done) {
      if (at < base + piece.length) {
        if (at + 4 > base + piece.length) throw new EncodeError('patch spans pieces')
        piece.writeInt32BE(v, at - base)
        return
      }
      base += piece.length
    }
    throw new EncodeError(`patch position ${at} is past the end`)
  }
}
