/**
 * An in-memory Disk for tests and simulation. It keeps, per file, the bytes written and the bytes
 * synced, and per directory the names as seen and as synced; `crash()` keeps only what was synced.
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
  /** The last append since the last sync or truncate, the one a crash may tear. */
  lastWrite: { position: number; length: number } | null
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
  /** Draws the tear points; without it nothing is torn. */
  readonly random?: Random
  /** Keep a random prefix of each file's last unsynced append (default true when `random` given). */
  readonly tear?: boolean
  /** After a torn prefix, add random junk bytes, as a file whose size reached disk before its data. */
  readonly garbage?: boolean
}

function normalize(path: string): string {
  let p = path.replace(/\/+/g, '/')
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1)
  return p
}

function isRoot(path: string): boolean {
  return path === '/' || path === '.' || path === ''
}

function copyGrow(src: Buffer, srcSize: number, minCapacity: number): Buffer {
  let capacity = Math.max(64, src.length)
  while (capacity < minCapacity) capacity *= 2
  if (capacity === src.length) return src
  const next = Buffer.alloc(capacity)
  src.copy(next, 0, 0, srcSize)
  return next
}

/**
 * In-memory file system with crash semantics:
 * - file contents become durable at `DiskFile.sync()`; a crash reverts each file to them, except
 *   that (given a seeded `Random`) the last unsynced append may survive as a torn prefix;
 * - names (create, rename, remove, mkdir) become durable at `syncDir(parent)`; a crash reverts each
 *   directory to its last synced entries, so an unsynced create or rename vanishes and an unsynced
 *   remove comes back;
 * - a crash closes every open handle (the process died).
 * Counters (`syncs`, `dirSyncs`, `appends`) let tests check group commit.
 */
export class SimDisk implements Disk {
  #entries = new Map<string, SimNode>()
  #durableEntries = new Map<string, SimNode>()
  #generation = 0
  #hook: SimDiskHook | null = null
  /** File syncs performed. */
  syncs = 0
  /** Directory syncs performed. */
  dirSyncs = 0
  /** Appends performed. */
  appends = 0
  /** Bytes appended. */
  bytesAppended = 0

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
        lastWrite: null,
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
   * Simulate a power loss: every file reverts to its synced contents (possibly keeping a torn
   * prefix of its last unsynced append), every directory to its synced entries, and every open
   * handle dies. Returns the paths whose last write was torn.
   */
  crash(options: CrashOptions = {}): string[] {
    const random = options.random
    const tear = random !== undefined && options.tear !== false
    const torn: string[] = []
    const inodes = new Set<SimInode>()
    for (const node of this.#entries.values()) if (node.kind === 'file') inodes.add(node)
    for (const node of this.#durableEntries.values()) if (node.kind === 'file') inodes.add(node)
    // Decide tears in a stable order (by durable path), so a seed replays.
    const ordered = [...this.#durableEntries]
      .filter(([, n]) => n.kind === 'file')
      .sort(([a], [b]) => (a < b ? -1 : 1))
    const tears = new Map<SimInode, Buffer>()
    if (tear) {
      for (const [path, node] of ordered) {
        const inode = node as SimInode
        const w = inode.lastWrite
        if (w === null || w.length === 0 || tears.has(inode)) continue
        const keep = random.int(w.length + 1)
        if (keep === 0 && options.garbage !== true) continue
        let piece = Buffer.from(inode.data.subarray(w.position, w.position + keep))
        if (options.garbage === true && keep < w.length) {
          const junk = Buffer.alloc(random.int(w.length - keep + 1))
          for (let i = 0; i < junk.length; i++) junk[i] = random.int(256)
          piece = Buffer.concat([piece, junk])
        }
        if (piece.length === 0) continue
        tears.set(inode, piece)
        torn.push(path)
      }
    }
    for (const inode of inodes) {
      const piece = tears.get(inode)
      const w = inode.lastWrite
      inode.data = Buffer.from(inode.durable.subarray(0, inode.durableSize))
      inode.size = inode.durableSize
      if (piece !== undefined && w !== null) {
        const end = w.position + piece.length
        inode.data = copyGrow(inode.data, inode.size, end)
        inode.data.fill(0, inode.size, w.position) // a hole reads as zeros
        piece.copy(inode.data, w.position)
        inode.size = Math.max(inode.size, end)
        // The torn bytes are on the medium now: as durable as the rest.
        inode.durable = Buffer.from(inode.data.subarray(0, inode.size))
        inode.durableSize = inode.size
      }
      inode.dirtyFrom = Number.POSITIVE_INFINITY
      inode.lastWrite = null
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
  inode.lastWrite = null
}

class SimFile implements DiskFile {
  readonly #disk: SimDisk
  readonly path: string
  readonly inode: SimInode
  readonly generation: number
  closed = false

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
    inode.lastWrite = { position, length: total }
    this.#disk.appends++
    this.#disk.bytesAppended += total
  }

  async truncate(size: number): Promise<void> {
    const inode = await this.#disk.fileOp(this, 'truncate')
    truncateInode(inode, size)
  }

  async sync(): Promise<void> {
    const inode = await this.#disk.fileOp(this, 'sync')
    this.#disk.syncs++
    if (inode.dirtyFrom === Number.POSITIVE_INFINITY && inode.durableSize === inode.size) return
    const from = Math.min(inode.dirtyFrom, inode.size, inode.durableSize)
    inode.durable = copyGrow(inode.durable, Math.min(from, inode.durableSize), inode.size)
    inode.data.copy(inode.durable, from, from, inode.size)
    inode.durableSize = inode.size
    inode.dirtyFrom = Number.POSITIVE_INFINITY
    inode.lastWrite = null
  }

  async close(): Promise<void> {
    await this.#disk.fileOp(this, 'close').catch(() => undefined)
    this.closed = true
  }
}
