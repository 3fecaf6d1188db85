/**
 * Kafka's offset checkpoint files (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
 * `cleaner-offset-checkpoint`): text, version 0, a count, then `topic partition offset` lines.
 */
import { type Disk, isNotFound, parentDir } from '../io/index.ts'

/** `topic-partition` -> offset. Keys as the partition directory names them. */
export type OffsetCheckpoint = Map<string, { topic: string; partition: number; offset: bigint }>

const VERSION = 0

/** A checkpoint file that does not parse (the caller treats it as absent, and warns). */
export class CheckpointFormatError extends Error {
  override name = 'CheckpointFormatError'
}

/** The key of a partition in a checkpoint map: its directory name. */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}-${partition}`
}

/** Parse a checkpoint file's text. */
export function parseOffsetCheckpoint(text: string, path = 'checkpoint'): OffsetCheckpoint {
  const lines = text.split('\n').filter((l, i, all) => !(i === all.length - 1 && l === ''))
  if (lines.length < 2) throw new CheckpointFormatError(`${path}: fewer than two lines`)
  if (lines[0]!.trim() !== String(VERSION))
    throw new CheckpointFormatError(`${path}: unknown version ${lines[0]}`)
  const count = Number(lines[1]!.trim())
  if (!Number.isInteger(count) || count < 0 || count !== lines.length - 2) {
    throw new CheckpointFormatError(`${path}: expected ${lines[1]} entries, found ${lines.length - 2}`)
  }
  const out: OffsetCheckpoint = new Map()
  for (const line of lines.slice(2)) {
    const parts = line.trim().split(/\s+/)
    if (parts.length !== 3 || !/^\d+$/.test(parts[1]!) || !/^-?\d+$/.test(parts[2]!)) {
      throw new CheckpointFormatError(`${path}: malformed entry "${line}"`)
    }
    const topic = parts[0]!
    const partition = Number(parts[1])
    out.set(partitionKey(topic, partition), { topic, partition, offset: BigInt(parts[2]!) })
  }
  return out
}

/** The text of a checkpoint file, entries sorted for stable output. */
export function formatOffsetCheckpoint(
  entries: Iterable<{ topic: string; partition: number; offset: bigint }>,
): string {
  const list = [...entries].sort((a, b) =>
    a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1,
  )
  const lines = [
    String(VERSION),
    String(list.length),
    ...list.map((e) => `${e.topic} ${e.partition} ${e.offset}`),
  ]
  return `${lines.join('\n')}\n`
}

/** Read a checkpoint file; an absent file is an empty map. Throws CheckpointFormatError when damaged. */
export async function readOffsetCheckpoint(disk: Disk, path: string): Promise<OffsetCheckpoint> {
  let bytes: Buffer
  try {
    bytes = await disk.readFile(path)
  } catch (e) {
    if (isNotFound(e)) return new Map()
    throw e
  }
  return parseOffsetCheckpoint(bytes.toString('utf8'), path)
}

/**
 * Replace a file atomically and durably: write `<path>.tmp`, sync it, rename over `path`, sync the
 * directory. After a crash the file is either the old or the new contents.
 */
export async function writeFileDurably(disk: Disk, path: string, bytes: Buffer): Promise<void> {
  const tmp = `${path}.tmp`
  const f = await disk.open(tmp, { create: true, truncate: true })
  try {
    await f.append([bytes])
    await f.sync()
  } finally {
    await f.close()
  }
  await disk.rename(tmp, path)
  await disk.syncDir(parentDir(path))
}

/** Write a checkpoint file durably. */
export function writeOffsetCheckpoint(
  disk: Disk,
  path: string,
  entries: Iterable<{ topic: string; partition: number; offset: bigint }>,
): Promise<void> {
  return writeFileDurably(disk, path, Buffer.from(formatOffsetCheckpoint(entries), 'utf8'))
}
