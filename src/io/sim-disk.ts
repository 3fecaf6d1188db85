/**
 * An in-memory Disk for tests and simulation. It keeps, per file, the bytes written and the bytes
 * synced, and per directory the names as seen and as synced; `crash()` keeps what was synced, and
 * of each unsynced write (completed or still in flight) nothing, all or a torn part.
 */
import { assert } from '../model/index.ts'
import { type Disk, DiskError, type DiskFile, type DiskStat, type OpenOptions, parentDir } from './disk.ts'
import type { Random } from './random.ts'

interface SimInode {
  readonly kind: 'file'
  /** Current contents: `data[0, size)`. */
  data: Buffer
  size: number
  /** Contents as of the last sync: `durable[0, durableSize)`. */
  durable: Buffer
  durableSize: number
  /** Lowest position changed since the last sync (Infinity when clean). */
  dirtyFrom: number
  /**
   * Writes not covered by a sync, in the order issued: completed ones (bytes in `data`) and ones
   * in flight (bytes still in `pending`). A crash keeps nothing, all or a torn part of each.
   */
  unsynced: SimWrite[]
}

interface SimWrite {
  position: number
  length: number
  /** The caller's buffers while the write is in flight; null once its bytes are in `data`. */
  pending: readonly Buffer[] | null
}

interface SimDir {
  readonly kind: 'dir'
}

type SimNode = SimInode | SimDir

/** Operations the fault hook sees. */
export type SimDiskOp =
  | 'open'
  | 'read'
  | 'append'
  | 'write'
  | 'truncate'
  | 'sync'
  | 'close'
  | 'readFile'
  | 'rename'
  | 'remove'
  | 'removeTree'
  | 'list'
  | 'mkdir'
  | 'syncDir'
  | 'exists'
  | 'stat'

/**
 * Called before every operation; may wait (to hold an fsync) or return an error code to fail it
 * (`'EIO'`, `'ENOSPC'`): the operation then changes nothing.
 */
export type SimDiskHook = (op: SimDiskOp, path: string) => undefined | string | Promise<undefined | string>

export interface CrashOptions {
  /** Draws what survives of each unsynced write; without it every unsynced write is lost. */
  readonly random?: Random
  /**
   * Let unsynced writes survive (default true when `random` given): each one independently is
   * lost, kept whole, kept as a prefix, or kept as a random subset of its 512-byte sectors.
   */
  readonly tear?: boolean
  /** After a torn write, add random junk bytes, as a file whose size reached disk before its data. */
  readonly garbage?: boolean
  /**
   * Only the process died (kill -9), not the machine: every completed write and every name change
   * stays, as the page cache still holds them; writes still in flight are lost. Default false.
   */
  readonly processOnly?: boolean
}

/** A crash keeps or loses each sector of a torn write independently (disks write sectors). */
const SECTOR_BYTES = 512

function normalize(path: string): string {
  let p = path.replace(/\/+/g, '/')
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1)
  return p
}

function isRoot(path: string): boolean {
  return path === '/' || path === '.' || path === ''
}

function copyGrow(src: Buffer, srcSize: number, capacityMin: number): Buffer {
  let capacity = Math.max(64, src.length)
  while (capacity < capacityMin) capacity *= 2
  if (capacity === src.length) return src
  const next = Buffer.alloc(capacity)
  src.copy(next, 0, 0, srcSize)
  return next
}

/**
 * In-memory file system with crash semantics:
 * - file contents become durable at `DiskFile.sync()` (the writes completed when it completes); a
 *   crash reverts each file to them, except that (given a seeded `Random`) each unsynced write,
 *   completed or in flight, independently survives whole, in part (a prefix or some sectors, the
 *   rest of its range reading as before or as zeros past the old end) or not at all;
 * - names (create, rename, remove, mkdir) become durable at `syncDir(parent)`; a crash reverts each
 *   directory to its last synced entries, so an unsynced create or rename vanishes and an unsynced
 *   remove comes back;
 * - a crash closes every open handle (the process died).
 * Counters (`syncs`, `dirSyncs`, `appends`, `writes`) let tests check group commit.
 */
export class SimDisk implements Disk {
  #entries = new Map<string, SimNode>()
  #durableEntries = new Map<string, SimNode>()
  #generation = 0
  /** Bumped by each crash: handles of an older generation are dead. */
  get generation(): number {
    return this.#generation
  }
  #hook: SimDiskHook | null = null
  /** File syncs performed. */
  syncs = 0
  /** Directory syncs performed. */
  dirSyncs = 0
  /** Appends performed. */
  appends = 0
  /** Bytes appended. */
  bytesAppended = 0
  /** Positional writes performed. */
  writes = 0
  /** File reads performed. */
  reads = 0
  /** Bytes written by positional writes (counted as each completes). */
  bytesWritten = 0
  /** Most positional writes in flight at once on one file. */
  writesInFlightMax = 0

  /** Install (or clear with null) the hook run before each operation. */
  setHook(hook: SimDiskHook | null): void {
    this.#hook = hook
  }

  async #before(op: SimDiskOp, path: string): Promise<void> {
    await null // every operation completes asynchronously, as a real one does
    if (this.#hook === null) return
    const code = await this.#hook(op, path)
    if (code !== undefined) throw new DiskError(code, path, `${code} (injected): ${op} ${path}`)
  }

  #checkParent(path: string): void {
    const parent = parentDir(path)
    if (isRoot(parent)) return
    const node = this.#entries.get(parent)
    if (node === undefined) throw new DiskError('ENOENT', path, `ENOENT: no such directory: ${parent}`)
    if (node.kind !== 'dir') throw new DiskError('ENOTDIR', path)
  }

  #file(path: string): SimInode {
    const node = this.#entries.get(path)
    if (node === undefined) throw new DiskError('ENOENT', path)
    if (node.kind !== 'file') throw new DiskError('EISDIR', path)
    return node
  }

  async open(path: string, options: OpenOptions = {}): Promise<DiskFile> {
    const p = normalize(path)
    await this.#before('open', p)
    let node = this.#entries.get(p)
    if (node !== undefined && options.create === true && options.exclusive === true) {
      throw new DiskError('EEXIST', p)
    }
    if (node === undefined) {
      if (options.create !== true) throw new DiskError('ENOENT', p)
      this.#checkParent(p)
      node = {
        kind: 'file',
        data: Buffer.alloc(0),
        size: 0,
        durable: Buffer.alloc(0),
        durableSize: 0,
        dirtyFrom: Number.POSITIVE_INFINITY,
        unsynced: [],
      }
      this.#entries.set(p, node)
    }
    if (node.kind !== 'file') throw new DiskError('EISDIR', p)
    if (options.truncate === true) truncateInode(node, 0)
    return new SimFile(this, p, node, this.#generation)
  }

  /** @internal used by SimFile */
  async fileOp(file: SimFile, op: SimDiskOp): Promise<SimInode> {
    await this.#before(op, file.path)
    if (file.closed || file.generation !== this.#generation) {
      throw new DiskError('EBADF', file.path, `EBADF: ${op} on a closed file ${file.path}`)
    }
    return file.inode
  }

  async readFile(path: string): Promise<Buffer> {
    const p = normalize(path)
    await this.#before('readFile', p)
    const node = this.#file(p)
    return Buffer.from(node.data.subarray(0, node.size))
  }

  async rename(from: string, to: string): Promise<void> {
    const f = normalize(from)
    const t = normalize(to)
    await this.#before('rename', f)
    const node = this.#entries.get(f)
    if (node === undefined) throw new DiskError('ENOENT', f)
    this.#checkParent(t)
    const target = this.#entries.get(t)
    if (target !== undefined && target.kind !== node.kind) throw new DiskError('EISDIR', t)
    if (node.kind === 'dir') {
      if (target !== undefined && this.#childrenOf(t).length > 0) throw new DiskError('ENOTEMPTY', t)
      const prefix = `${f}/`
      for (const [path, child] of [...this.#entries]) {
        if (path.startsWith(prefix)) {
          this.#entries.delete(path)
          this.#entries.set(`${t}/${path.slice(prefix.length)}`, child)
        }
      }
    }
    this.#entries.delete(f)
    this.#entries.set(t, node)
  }

  async remove(path: string): Promise<void> {
    const p = normalize(path)
    await this.#before('remove', p)
    this.#file(p)
    this.#entries.delete(p)
  }

  async removeTree(path: string): Promise<void> {
    const p = normalize(path)
    await this.#before('removeTree', p)
    const prefix = `${p}/`
    for (const key of [...this.#entries.keys()]) {
      if (key === p || key.startsWith(prefix)) this.#entries.delete(key)
    }
  }

  #childrenOf(dir: string): string[] {
    const names: string[] = []
    for (const key of this.#entries.keys()) {
      if (key !== dir && parentDir(key) === dir) names.push(key.slice(dir === '/' ? 1 : dir.length + 1))
    }
    return names.sort()
  }

  async list(dir: string): Promise<string[]> {
    const d = normalize(dir)
    await this.#before('list', d)
    if (!isRoot(d)) {
      const node = this.#entries.get(d)
      if (node === undefined) throw new DiskError('ENOENT', d)
      if (node.kind !== 'dir') throw new DiskError('ENOTDIR', d)
    }
    return this.#childrenOf(d)
  }

  async mkdir(path: string): Promise<void> {
    const p = normalize(path)
    await this.#before('mkdir', p)
    const parts: string[] = []
    for (let at = p; !isRoot(at); at = parentDir(at)) parts.unshift(at)
    for (const part of parts) {
      const node = this.#entries.get(part)
      if (node === undefined) this.#entries.set(part, { kind: 'dir' })
      else if (node.kind !== 'dir') throw new DiskError('EEXIST', part)
    }
  }

  async syncDir(path: string): Promise<void> {
    const d = normalize(path)
    await this.#before('syncDir', d)
    if (!isRoot(d)) {
      const node = this.#entries.get(d)
      if (node === undefined) throw new DiskError('ENOENT', d)
      if (node.kind !== 'dir') throw new DiskError('ENOTDIR', d)
    }
    this.dirSyncs++
    for (const key of [...this.#durableEntries.keys()]) {
      if (key !== d && parentDir(key) === d && !this.#entries.has(key)) this.#durableEntries.delete(key)
    }
    for (const [key, node] of this.#entries) {
      if (key !== d && parentDir(key) === d) this.#durableEntries.set(key, node)
    }
  }

  async exists(path: string): Promise<boolean> {
    const p = normalize(path)
    await this.#before('exists', p)
    return isRoot(p) || this.#entries.has(p)
  }

  async stat(path: string): Promise<DiskStat> {
    const p = normalize(path)
    await this.#before('stat', p)
    if (isRoot(p)) return { size: 0, isDirectory: true }
    const node = this.#entries.get(p)
    if (node === undefined) throw new DiskError('ENOENT', p)
    return node.kind === 'dir' ? { size: 0, isDirectory: true } : { size: node.size, isDirectory: false }
  }

  /**
   * Simulate a power loss: every file reverts to its synced contents (possibly keeping some of each
   * unsynced write: whole, a prefix, some sectors), every directory to its synced entries, and every
   * open handle dies. Returns the paths with a write kept only in part (once per such write).
   */
  crash(options: CrashOptions = {}): string[] {
    if (options.processOnly === true) {
      for (const node of this.#entries.values()) {
        if (node.kind !== 'file') continue
        node.durable = Buffer.from(node.data.subarray(0, node.size))
        node.durableSize = node.size
        node.dirtyFrom = Number.POSITIVE_INFINITY
        node.unsynced = []
      }
      this.#durableEntries = new Map(this.#entries)
      this.#generation++
      return []
    }
    const random = options.random
    const tear = random !== undefined && options.tear !== false
    const torn: string[] = []
    const inodes = new Set<SimInode>()
    for (const node of this.#entries.values()) if (node.kind === 'file') inodes.add(node)
    for (const node of this.#durableEntries.values()) if (node.kind === 'file') inodes.add(node)
    // Decide what survives in a stable order (by durable path), so a seed replays.
    const ordered = [...this.#durableEntries]
      .filter(([, n]) => n.kind === 'file')
      .sort(([a], [b]) => (a < b ? -1 : 1))
    const piecesOf = new Map<SimInode, { position: number; bytes: Buffer }[]>()
    if (tear) {
      for (const [path, node] of ordered) {
        const inode = node as SimInode
        if (inode.unsynced.length === 0 || piecesOf.has(inode)) continue
        const pieces: { position: number; bytes: Buffer }[] = []
        for (const w of inode.unsynced) {
          if (w.length === 0) continue
          const bytes =
            w.pending === null
              ? Buffer.from(inode.data.subarray(w.position, w.position + w.length))
              : Buffer.concat(w.pending as Buffer[])
          const kept = surviving(bytes, random, options.garbage === true)
          pieces.push(...kept.pieces.map((p) => ({ position: w.position + p.at, bytes: p.bytes })))
          if (kept.torn) torn.push(path)
        }
        piecesOf.set(inode, pieces)
      }
    }
    for (const inode of inodes) {
      const pieces = piecesOf.get(inode) ?? []
      inode.data = Buffer.from(inode.durable.subarray(0, inode.durableSize))
      inode.size = inode.durableSize
      for (const piece of pieces) {
        const end = piece.position + piece.bytes.length
        if (end > inode.size) {
          inode.data = copyGrow(inode.data, inode.size, end)
          inode.data.fill(0, inode.size, end) // a hole reads as zeros
          inode.size = end
        }
        piece.bytes.copy(inode.data, piece.position)
      }
      if (pieces.length > 0) {
        // The surviving bytes are on the medium now: as durable as the rest.
        inode.durable = Buffer.from(inode.data.subarray(0, inode.size))
        inode.durableSize = inode.size
      }
      inode.dirtyFrom = Number.POSITIVE_INFINITY
      inode.unsynced = []
    }
    // Names: only synced entries whose every ancestor is a synced directory survive.
    const survivors = new Map<string, SimNode>()
    for (const [path, node] of this.#durableEntries) {
      let ok = true
      for (let at = parentDir(path); !isRoot(at); at = parentDir(at)) {
        if (this.#durableEntries.get(at)?.kind !== 'dir') {
          ok = false
          break
        }
      }
      if (ok) survivors.set(path, node)
    }
    this.#entries = new Map(survivors)
    this.#durableEntries = new Map(survivors)
    this.#generation++
    return torn
  }

  /** Every path (files and directories), sorted: for test assertions. */
  paths(): string[] {
    return [...this.#entries.keys()].sort()
  }

  /** Unsynced bytes of a file (0 when clean or absent): for test assertions. */
  unsyncedBytes(path: string): number {
    const node = this.#entries.get(normalize(path))
    if (node === undefined || node.kind !== 'file' || node.dirtyFrom === Number.POSITIVE_INFINITY) return 0
    return Math.max(node.size, node.durableSize) - node.dirtyFrom
  }

  /**
   * Overwrite bytes of a file in place, durably, as bit rot or a bad sector would: for corruption
   * tests. The file's size does not change.
   */
  corrupt(path: string, position: number, bytes: Buffer): void {
    const inode = this.#file(normalize(path))
    assert(position + bytes.length <= inode.size, 'corrupt: range beyond end of file')
    bytes.copy(inode.data, position)
    if (position < inode.durableSize) {
      bytes.copy(inode.durable, position, 0, Math.min(bytes.length, inode.durableSize - position))
    }
  }
}

function truncateInode(inode: SimInode, size: number): void {
  if (size > inode.size) {
    inode.data = copyGrow(inode.data, inode.size, size)
    inode.data.fill(0, inode.size, size)
  }
  inode.dirtyFrom = Math.min(inode.dirtyFrom, Math.min(size, inode.size))
  inode.size = size
  // A completed write's bytes past the cut are gone from the file (a crash reverts the cut itself).
  const kept: SimWrite[] = []
  for (const w of inode.unsynced) {
    if (w.pending !== null) kept.push(w)
    else if (w.position < size) kept.push({ ...w, length: Math.min(w.length, size - w.position) })
  }
  inode.unsynced = kept
}

/**
 * What a power loss leaves of one unsynced write's `bytes`: nothing, all, a prefix, or a subset of
 * its sectors (each piece at its offset `at` in the write); with `garbage`, a torn write may be
 * followed by junk where its missing bytes were.
 */
function surviving(
  bytes: Buffer,
  random: Random,
  garbage: boolean,
): { pieces: { at: number; bytes: Buffer }[]; torn: boolean } {
  const mode = random.int(4)
  if (mode === 0) return { pieces: [], torn: false }
  if (mode === 1) return { pieces: [{ at: 0, bytes }], torn: false }
  const pieces: { at: number; bytes: Buffer }[] = []
  let covered = 0
  if (mode === 2) {
    covered = random.int(bytes.length + 1)
    if (covered > 0) pieces.push({ at: 0, bytes: bytes.subarray(0, covered) })
  } else {
    for (let at = 0; at < bytes.length; at += SECTOR_BYTES) {
      const end = Math.min(bytes.length, at + SECTOR_BYTES)
      if (random.int(2) === 1) {
        pieces.push({ at, bytes: bytes.subarray(at, end) })
        covered = end
      }
    }
  }
  if (garbage && covered < bytes.length) {
    const junk = Buffer.alloc(random.int(bytes.length - covered + 1))
    for (let i = 0; i < junk.length; i++) junk[i] = random.int(256)
    if (junk.length > 0) pieces.push({ at: covered, bytes: junk })
  }
  const torn = pieces.length > 0 && !(pieces.length === 1 && pieces[0]!.bytes.length === bytes.length)
  return { pieces, torn }
}

class SimFile implements DiskFile {
  readonly #disk: SimDisk
  readonly path: string
  readonly inode: SimInode
  readonly generation: number
  closed = false
  #inFlight = 0

  constructor(disk: SimDisk, path: string, inode: SimInode, generation: number) {
    this.#disk = disk
    this.path = path
    this.inode = inode
    this.generation = generation
  }

  size(): number {
    return this.inode.size
  }

  async read(into: Buffer, position: number, length: number, intoOffset = 0): Promise<number> {
    const inode = await this.#disk.fileOp(this, 'read')
    this.#disk.reads++
    assert(intoOffset + length <= into.length, 'read: length beyond the target buffer')
    const n = Math.max(0, Math.min(length, inode.size - position))
    if (n > 0) inode.data.copy(into, intoOffset, position, position + n)
    return n
  }

  async append(buffers: readonly Buffer[]): Promise<void> {
    const inode = await this.#disk.fileOp(this, 'append')
    let total = 0
    for (const b of buffers) total += b.length
    const position = inode.size
    inode.data = copyGrow(inode.data, inode.size, position + total)
    let at = position
    for (const b of buffers) {
      b.copy(inode.data, at)
      at += b.length
    }
    inode.size = at
    inode.dirtyFrom = Math.min(inode.dirtyFrom, position)
    if (total > 0) inode.unsynced.push({ position, length: total, pending: null })
    this.#disk.appends++
    this.#disk.bytesAppended += total
  }

  async write(buffers: readonly Buffer[], position: number): Promise<void> {
    let total = 0
    for (const b of buffers) total += b.length
    // In flight from now: a crash before it completes may still leave any part of it on disk.
    const w: SimWrite = { position, length: total, pending: buffers }
    const inode = this.inode
    const live = !this.closed && this.generation === this.#disk.generation
    if (live && total > 0) {
      inode.unsynced.push(w)
      this.#inFlight++
      if (this.#inFlight > this.#disk.writesInFlightMax) this.#disk.writesInFlightMax = this.#inFlight
    }
    try {
      await this.#disk.fileOp(this, 'write')
    } catch (e) {
      // Failed (or the machine died): the write changed nothing, unless a crash already kept it.
      const at = inode.unsynced.indexOf(w)
      if (at >= 0) inode.unsynced.splice(at, 1)
      throw e
    } finally {
      if (live && total > 0) this.#inFlight--
    }
    if (total === 0) return
    const end = position + total
    if (end > inode.size) {
      inode.data = copyGrow(inode.data, inode.size, end)
      inode.data.fill(0, inode.size, position) // a gap reads as zeros
      inode.size = end
    }
    let at = position
    for (const b of buffers) {
      b.copy(inode.data, at)
      at += b.length
    }
    w.pending = null
    inode.dirtyFrom = Math.min(inode.dirtyFrom, position)
    this.#disk.writes++
    this.#disk.bytesWritten += total
  }

  async truncate(size: number): Promise<void> {
    const inode = await this.#disk.fileOp(this, 'truncate')
    truncateInode(inode, size)
  }

  async sync(): Promise<void> {
    const inode = await this.#disk.fileOp(this, 'sync')
    this.#disk.syncs++
    // Writes still in flight are not covered: their bytes reach `data` after this sync.
    inode.unsynced = inode.unsynced.filter((w) => w.pending !== null)
    if (inode.dirtyFrom === Number.POSITIVE_INFINITY && inode.durableSize === inode.size) return
    const from = Math.min(inode.dirtyFrom, inode.size, inode.durableSize)
    inode.durable = copyGrow(inode.durable, Math.min(from, inode.durableSize), inode.size)
    inode.data.copy(inode.durable, from, from, inode.size)
    inode.durableSize = inode.size
    inode.dirtyFrom = Number.POSITIVE_INFINITY
  }

  async close(): Promise<void> {
    await this.#disk.fileOp(this, 'close').catch(() => undefined)
    this.closed = true
  }
}
