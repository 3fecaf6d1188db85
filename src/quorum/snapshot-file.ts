/**
 * Metadata snapshots on disk, named as Kafka names them (`<20-digit end offset>-<10-digit
 * epoch>.checkpoint` beside the log). The content is Weir's: a header with a CRC32C over the state
 * machine's bytes. The newest valid snapshot wins; older ones are removed once a newer is durable.
 */
import type { Disk } from '../io/index.ts'
import { isNotFound, joinPath } from '../io/index.ts'
import { crc32c } from '../protocol/index.ts'
import type { Snapshot } from '../raft/index.ts'
import { writeFileDurably } from '../storage/index.ts'

const SUFFIX = '.checkpoint'
const MAGIC = Buffer.from('WEIRSNAP')
const VERSION = 1
const HEADER_BYTES = MAGIC.length + 2 + 4

export function snapshotFileName(endOffset: bigint, epoch: number): string {
  return `${endOffset.toString().padStart(20, '0')}-${String(epoch).padStart(10, '0')}${SUFFIX}`
}

function parseName(name: string): { endOffset: bigint; epoch: number } | null {
  const m = /^(\d{20})-(\d{10})\.checkpoint$/.exec(name)
  return m === null ? null : { endOffset: BigInt(m[1]!), epoch: Number(m[2]) }
}

export async function writeSnapshot(disk: Disk, dir: string, snapshot: Snapshot): Promise<void> {
  const body = Buffer.from(snapshot.bytes.buffer, snapshot.bytes.byteOffset, snapshot.bytes.length)
  const header = Buffer.alloc(HEADER_BYTES)
  MAGIC.copy(header, 0)
  header.writeInt16BE(VERSION, MAGIC.length)
  header.writeUInt32BE(crc32c(body) >>> 0, MAGIC.length + 2)
  const name = snapshotFileName(snapshot.id.endOffset, snapshot.id.epoch)
  await writeFileDurably(disk, joinPath(dir, name), Buffer.concat([header, body]))
  for (const other of await disk.list(dir)) {
    const id = parseName(other)
    if (id !== null && other !== name && id.endOffset <= snapshot.id.endOffset) {
      await disk.remove(joinPath(dir, other)).catch((e: unknown) => {
        if (!isNotFound(e)) throw e
      })
    }
  }
}

/** The newest snapshot whose bytes check out, or undefined. Damaged ones are skipped. */
export async function readLatestSnapshot(disk: Disk, dir: string): Promise<Snapshot | undefined> {
  let names: string[]
  try {
    names = await disk.list(dir)
  } catch (e) {
    if (isNotFound(e)) return undefined
    throw e
  }
  const candidates = names
    .map((n) => ({ name: n, id: parseName(n) }))
    .filter((c): c is { name: string; id: { endOffset: bigint; epoch: number } } => c.id !== null)
    .sort((a, b) => (a.id.endOffset < b.id.endOffset ? 1 : a.id.endOffset > b.id.endOffset ? -1 : 0))
  for (const c of candidates) {
    const data = await disk.readFile(joinPath(dir, c.name))
    if (data.length < HEADER_BYTES || !data.subarray(0, MAGIC.length).equals(MAGIC)) continue
    if (data.readInt16BE(MAGIC.length) !== VERSION) continue
    const body = data.subarray(HEADER_BYTES)
    if (crc32c(body) >>> 0 !== data.readUInt32BE(MAGIC.length + 2)) continue
    return { id: c.id, bytes: body }
  }
  return undefined
}
