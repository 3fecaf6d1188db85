/**
 * Reads the entries of a zip archive (a jar) held in memory: just what extracting Kafka's schemas
 * needs, with no dependency and no `unzip` binary on the machine. Stored and deflated entries only;
 * zip64, encryption and multi-disk archives are refused (a jar of a few MB uses none of them).
 */
import { crc32, inflateRawSync } from 'node:zlib'

const EOCD = 0x06054b50
const CENTRAL = 0x02014b50
const LOCAL = 0x04034b50
const STORED = 0
const DEFLATED = 8

export interface ZipEntry {
  readonly name: string
  /** The entry's uncompressed bytes. */
  read(): Buffer
}

function endOfCentralDirectory(zip: Buffer): number {
  // The record is 22 bytes plus a comment of at most 65535 bytes, at the very end.
  const floor = Math.max(0, zip.length - 22 - 0xffff)
  for (let i = zip.length - 22; i >= floor; i--) if (zip.readUInt32LE(i) === EOCD) return i
  throw new Error('zip: no end of central directory record (not a zip file?)')
}

/** The archive's file entries (directories left out), in central directory order. */
export function zipEntries(zip: Buffer): ZipEntry[] {
  const eocd = endOfCentralDirectory(zip)
  const count = zip.readUInt16LE(eocd + 10)
  const offset = zip.readUInt32LE(eocd + 16)
  if (count === 0xffff || offset === 0xffffffff) throw new Error('zip: zip64 archives are not supported')
  if (zip.readUInt16LE(eocd + 4) !== 0 || zip.readUInt16LE(eocd + 6) !== 0)
    throw new Error('zip: multi-disk archives are not supported')
  const entries: ZipEntry[] = []
  let at = offset
  for (let n = 0; n < count; n++) {
    if (zip.readUInt32LE(at) !== CENTRAL) throw new Error(`zip: bad central directory entry at ${at}`)
    const flags = zip.readUInt16LE(at + 8)
    const method = zip.readUInt16LE(at + 10)
    const crc = zip.readUInt32LE(at + 16)
    const compressed = zip.readUInt32LE(at + 20)
    const size = zip.readUInt32LE(at + 24)
    const nameLength = zip.readUInt16LE(at + 28)
    const extraLength = zip.readUInt16LE(at + 30)
    const commentLength = zip.readUInt16LE(at + 32)
    const local = zip.readUInt32LE(at + 42)
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength)
    at += 46 + nameLength + extraLength + commentLength
    if (name.endsWith('/')) continue
    if ((flags & 1) !== 0) throw new Error(`zip: ${name} is encrypted`)
    if (method !== STORED && method !== DEFLATED)
      throw new Error(`zip: ${name} uses compression method ${method}`)
    entries.push({
      name,
      read(): Buffer {
        if (zip.readUInt32LE(local) !== LOCAL) throw new Error(`zip: bad local header for ${name}`)
        // The local header's own name and extra lengths may differ from the central directory's.
        const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28)
        const raw = zip.subarray(start, start + compressed)
        const out = method === STORED ? Buffer.from(raw) : inflateRawSync(raw)
        if (out.length !== size)
          throw new Error(`zip: ${name} inflated to ${out.length} bytes, expected ${size}`)
        if (crc32(out) !== crc) throw new Error(`zip: ${name} fails its CRC-32`)
        return out
      },
    })
  }
  return entries
}
