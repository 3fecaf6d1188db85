/**
 * The Disk port on the real file system (node:fs/promises): file handles stay open, writes are
 * positional (pwrite, pwritev: several may be in flight on one file; small ones made at once on the
 * calling thread), `sync` is fdatasync and `syncDir` fsyncs the directory.
 */

import { readFileSync, writeSync, writevSync } from 'node:fs'
import {
  constants,
  type FileHandle,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  unlink,
} from 'node:fs/promises'
import {
  baseName,
  type Disk,
  DiskError,
  type DiskFile,
  type DiskStat,
  joinPath,
  type OpenOptions,
  parentDir,
} from './disk.ts'

/** Node's errors carry `code`; anything else becomes EIO. */
function wrap(e: unknown, path: string): DiskError {
  if (e instanceof DiskError) return e
  const code =
    typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : 'EIO'
  const message = e instanceof Error ? e.message : String(e)
  return new DiskError(code, path, message)
}

async function guard<T>(path: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op()
  } catch (e) {
    throw wrap(e, path)
  }
}

/**
 * Writes up to this many bytes run on the calling (event-loop) thread by default, larger ones in
 * libuv's thread pool. A small pwrite into the page cache takes microseconds; handing it to the pool
 * costs a wake-up of a pool thread and a completion callback, which on a busy machine is most of
 * what such a write spends (measured in docs/performance.md). Large writes stay in the pool so that
 * the log's CPU work overlaps them.
 */
export const SYNC_WRITE_BYTES_MAX_DEFAULT = 65_536

/** The longest an open waits for a busy file of its disk to go idle before it passes the bound. */
const SLOT_WAIT_MS = 10_000

/** Whether `e` says the process or the system is out of file descriptors. */
function outOfDescriptors(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code
  return code === 'EMFILE' || code === 'ENFILE'
}

/**
 * The files of one NodeDisk that hold a descriptor: at most `max` at once, where it can. A file
 * idle the longest gives its descriptor back when another needs one, and opens again by its path
 * when next used; a busy file (an operation under way) keeps its own. A node can so hold many more
 * partitions than its open-file limit, each idle one costing no descriptor, as Kafka's cannot.
 *
 * Closing an idle file drops nothing written: its pages stay in the page cache, and Linux (4.16
 * and later) reports a write-back error that no descriptor has seen yet to the next fsync through
 * any descriptor, so a later `sync` of the reopened file still fails as it must.
 */
class OpenFiles {
  readonly max: number
  /** Files holding a descriptor, least recently used first (a Set keeps insertion order). */
  readonly #open = new Set<NodeDiskFile>()
  /** Opens under way: they count against the bound before their descriptor exists. */
  #opening = 0
  /** Closes under way: they count until their descriptor is gone. */
  #closing = 0
  /** Opens waiting for a busy file to go idle. */
  readonly #waiting: Array<() => void> = []
  /** Every file not closed, by the directory of its current path: for renames and removals. */
  readonly #byDir = new Map<string, Set<NodeDiskFile>>()

  constructor(max: number) {
    this.max = Math.max(1, max)
  }

  /** How many files hold a descriptor now. */
  get openCount(): number {
    return this.#open.size
  }

  /**
   * Run `op`, which opens a descriptor (and registers it with `used`, or closes it, before it
   * returns), counted against the bound from start to end: idle files close for it, else it waits
   * for a busy one to go idle; `pastBound` skips that wait (the caller holds descriptors already).
   * Out of descriptors (EMFILE, ENFILE: the process's or the system's limit, others holding the
   * rest), it closes a share of its idle files, or waits once for a busy one, and runs `op` again;
   * with none of its own to give back it gives the error to the caller.
   */
  async withSlot<T>(op: () => Promise<T>, pastBound = false): Promise<T> {
    if (pastBound) this.#opening++
    else await this.#slot()
    try {
      for (let waited = false; ; ) {
        try {
          return await op()
        } catch (e) {
          if (!outOfDescriptors(e)) throw e
          if ((await this.#evict(Math.ceil(this.#open.size / 4))) > 0) continue
          if (waited || !(await this.#freed())) throw e
          waited = true
        }
      }
    } finally {
      this.#opening--
    }
  }

  /**
   * Until an open may start within the bound: idle files close for it, else it waits for a busy
   * file to go idle (each holds its descriptor only for an operation under way, and no operation
   * waits here while it holds one). Should none go idle within SLOT_WAIT_MS (files in use without
   * a pause), the open goes ahead past the bound rather than stall.
   */
  async #slot(): Promise<void> {
    for (;;) {
      const held = this.#open.size + this.#opening + this.#closing
      if (held < this.max) break
      if ((await this.#evict(held + 1 - this.max)) > 0) continue
      if (!(await this.#freed())) break
    }
    // Taken in the turn that checked: opens resuming together must not all see the same free slot.
    this.#opening++
  }

  /** Wait until a file of this disk goes idle or closes; false after SLOT_WAIT_MS without one. */
  #freed(): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        resolve(true)
      }
      const timer = setTimeout(() => {
        const i = this.#waiting.indexOf(wake)
        if (i >= 0) this.#waiting.splice(i, 1)
        resolve(false)
      }, SLOT_WAIT_MS)
      this.#waiting.push(wake)
    })
  }

  /** A file went idle: an open waiting for a descriptor takes it, else the bound is restored. */
  idle(): void {
    const waiting = this.#waiting.shift()
    if (waiting !== undefined) {
      waiting()
      return
    }
    const over = this.#open.size - this.max
    if (over > 0) void this.#evict(over)
  }

  /** Close up to `n` idle files, least recently used first. Returns how many were closed. */
  async #evict(n: number): Promise<number> {
    if (n <= 0) return 0
    const closing: Promise<void>[] = []
    for (const f of this.#open) {
      if (closing.length >= n) break
      const c = f.park()
      if (c !== null) closing.push(c)
    }
    await Promise.all(closing)
    return closing.length
  }

  added(f: NodeDiskFile): void {
    const dir = parentDir(f.currentPath)
    const files = this.#byDir.get(dir)
    if (files === undefined) this.#byDir.set(dir, new Set([f]))
    else files.add(f)
  }

  /** Close a descriptor given back; an open waiting for one may go once it is gone. */
  async close(fh: FileHandle): Promise<void> {
    this.#closing++
    try {
      await fh.close()
    } finally {
      this.#closing--
      this.#waiting.shift()?.()
    }
  }

  removed(f: NodeDiskFile): void {
    this.#open.delete(f)
    const dir = parentDir(f.currentPath)
    const files = this.#byDir.get(dir)
    if (files === undefined) return
    files.delete(f)
    if (files.size === 0) this.#byDir.delete(dir)
  }

  /** `f` holds a descriptor and was just used: last to be closed (a pinned file is never). */
  used(f: NodeDiskFile): void {
    if (f.pinned) return
    this.#open.delete(f)
    this.#open.add(f)
  }

  unused(f: NodeDiskFile): void {
    this.#open.delete(f)
  }

  /**
   * The files a rename or removal of `path` touches: a file of that name, or those directly inside
   * a directory of that name (a log renames or removes its directory only after closing its files).
   */
  touching(path: string): NodeDiskFile[] {
    const inside = this.#byDir.get(path)
    const out = inside === undefined ? [] : [...inside]
    for (const f of this.#byDir.get(parentDir(path)) ?? []) if (f.currentPath === path) out.push(f)
    return out
  }

  /** `from` was renamed `to`: the files it touched follow it. */
  moved(files: readonly NodeDiskFile[], from: string, to: string): void {
    for (const f of files) {
      this.removed(f)
      f.currentPath = f.currentPath === from ? to : joinPath(to, baseName(f.currentPath))
      this.added(f)
      if (f.holdsDescriptor) this.used(f)
    }
  }
}

class NodeDiskFile implements DiskFile {
  readonly path: string
  /** Where the file is now: renames through the disk move it (reopening uses it). */
  currentPath: string
  readonly #files: OpenFiles
  #handle: FileHandle | null
  #reopening: Promise<FileHandle> | null = null
  #closed = false
  /** Operations under way (the file keeps its descriptor meanwhile). */
  #busy = 0
  /** Removed, or renamed or removed with it: never gives its descriptor back (no name to reopen). */
  #pinned = false
  #size: number
  readonly #syncWriteBytesMax: number

  constructor(path: string, handle: FileHandle, size: number, syncWriteBytesMax: number, files: OpenFiles) {
    this.path = path
    this.currentPath = path
    this.#files = files
    this.#handle = handle
    this.#size = size
    this.#syncWriteBytesMax = syncWriteBytesMax
    files.added(this)
    files.used(this)
  }

  size(): number {
    return this.#size
  }

  get holdsDescriptor(): boolean {
    return this.#handle !== null
  }

  /** Give the descriptor back if idle; returns the close under way, or null when it stays open. */
  park(): Promise<void> | null {
    const fh = this.#handle
    if (fh === null || this.#busy > 0 || this.#pinned) return null
    this.#handle = null
    this.#files.unused(this)
    return this.#files.close(fh).catch(() => undefined)
  }

  /**
   * Hold the descriptor (reopening it, past the bound: the caller may hold others already) until
   * `release`; with `pin`, for good: the name is about to go away, and the file leaves the bound.
   */
  async hold(pin: boolean): Promise<void> {
    this.#busy++
    try {
      await this.#fh(true)
    } catch (e) {
      this.#busy--
      throw e
    }
    if (pin && !this.#pinned) {
      this.#pinned = true
      this.#files.unused(this)
      this.#files.idle()
    }
  }

  get pinned(): boolean {
    return this.#pinned
  }

  release(): void {
    if (--this.#busy === 0) this.#files.idle()
  }

  /** The handle, reopened when it was given back (EBADF once closed). */
  #fh(pastBound = false): FileHandle | Promise<FileHandle> {
    if (this.#closed) throw new DiskError('EBADF', this.path, `file is closed: ${this.path}`)
    const fh = this.#handle
    if (fh !== null) {
      this.#files.used(this)
      return fh
    }
    this.#reopening ??= this.#reopen(pastBound)
    return this.#reopening
  }

  async #reopen(pastBound: boolean): Promise<FileHandle> {
    try {
      return await this.#files.withSlot(async () => {
        const fh = await open(this.currentPath, constants.O_RDWR)
        if (this.#closed) {
          await fh.close().catch(() => undefined)
          throw new DiskError('EBADF', this.path, `file is closed: ${this.path}`)
        }
        this.#handle = fh
        this.#files.used(this)
        return fh
      }, pastBound)
    } finally {
      this.#reopening = null
    }
  }

  /** Run `op` on the handle, holding it (never given back meanwhile); errors become DiskErrors. */
  async #use<T>(op: (fh: FileHandle) => Promise<T> | T): Promise<T> {
    this.#busy++
    try {
      return await op(await this.#fh())
    } catch (e) {
      throw wrap(e, this.path)
    } finally {
      if (--this.#busy === 0) this.#files.idle()
    }
  }

  read(into: Buffer, position: number, length: number, intoOffset = 0): Promise<number> {
    return this.#use(async (fh) => {
      let done = 0
      while (done < length) {
        const { bytesRead } = await fh.read(into, intoOffset + done, length - done, position + done)
        if (bytesRead === 0) break
        done += bytesRead
      }
      return done
    })
  }

  append(buffers: readonly Buffer[]): Promise<void> {
    return this.write(buffers, this.#size)
  }

  write(buffers: readonly Buffer[], position: number): Promise<void> {
    let total = 0
    for (const b of buffers) total += b.length
    if (total === 0) return Promise.resolve()
    if (total <= this.#syncWriteBytesMax) {
      // On the calling thread when the file holds its descriptor (the write is done on return).
      if (this.#handle !== null && !this.#closed) {
        try {
          this.#files.used(this)
          this.#writeSync(this.#handle, buffers, position, total)
          return Promise.resolve()
        } catch (e) {
          return Promise.reject(wrap(e, this.path))
        }
      }
      return this.#use((fh) => this.#writeSync(fh, buffers, position, total))
    }
    return this.#use(async (fh) => {
      // One buffer: a plain pwrite (no iovec array); several: pwritev. libuv loops over IOV_MAX and
      // short writes; re-check anyway.
      let written =
        buffers.length === 1
          ? (await fh.write(buffers[0]!, 0, total, position)).bytesWritten
          : (await fh.writev(buffers as Buffer[], position)).bytesWritten
      if (written < total) {
        const rest = Buffer.concat(buffers as Buffer[]).subarray(written)
        let done = 0
        while (done < rest.length) {
          const { bytesWritten } = await fh.write(rest, done, rest.length - done, position + written + done)
          if (bytesWritten === 0) throw new DiskError('EIO', this.path, 'write made no progress')
          done += bytesWritten
        }
        written += done
      }
      const end = position + written
      if (end > this.#size) this.#size = end
    })
  }

  /** A write on the calling thread: pwrite/pwritev, then pwrite for the rest of a short write. */
  #writeSync(fh: FileHandle, buffers: readonly Buffer[], position: number, total: number): void {
    const fd = fh.fd
    let written =
      buffers.length === 1
        ? writeSync(fd, buffers[0]!, 0, total, position)
        : writevSync(fd, buffers as Buffer[], position)
    if (written < total) {
      const rest = Buffer.concat(buffers as Buffer[]).subarray(written)
      let done = 0
      while (done < rest.length) {
        const n = writeSync(fd, rest, done, rest.length - done, position + written + done)
        if (n === 0) throw new DiskError('EIO', this.path, 'write made no progress')
        done += n
      }
      written += done
    }
    const end = position + written
    if (end > this.#size) this.#size = end
  }

  truncate(size: number): Promise<void> {
    return this.#use(async (fh) => {
      await fh.truncate(size)
      this.#size = size
    })
  }

  sync(): Promise<void> {
    return this.#use((fh) => fh.datasync())
  }

  close(): Promise<void> {
    return guard(this.path, async () => {
      if (this.#closed) return
      this.#closed = true
      this.#files.removed(this)
      const fh = this.#handle
      this.#handle = null
      if (fh !== null) await this.#files.close(fh)
    })
  }
}

/**
 * The process's open-file limit (the soft RLIMIT_NOFILE, which Node raises to the hard limit as it
 * starts), or null where /proc does not say.
 */
export function openFileLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'latin1')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0]
    if (soft === undefined) return null
    return soft === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number.parseInt(soft, 10) || null
  } catch {
    return null
  }
}

/**
 * How many files a NodeDisk keeps open by default: half the open-file limit (the rest is for
 * connections, the metadata log's and other short-lived files), 4,096 where the limit is unknown.
 */
export function openFilesMaxDefault(limit: number | null = openFileLimit()): number {
  return limit === null ? 4096 : Math.max(16, Math.floor(Math.min(limit, 1 << 30) / 2))
}

/** The real file system. One instance serves every log directory of a node (one bound on open files). */
export class NodeDisk implements Disk {
  readonly #syncWriteBytesMax: number
  readonly #files: OpenFiles

  /**
   * `syncWriteBytesMax`: writes of at most this many bytes are made on the calling thread (the
   * promise is settled when `write` returns, when the file holds its descriptor), larger ones in the
   * thread pool; 0 sends all to the pool. `openFilesMax`: the files kept open at once (the least
   * recently used idle ones are closed past it and reopened when next used).
   */
  constructor(
    options: { readonly syncWriteBytesMax?: number; readonly openFilesMax?: number | undefined } = {},
  ) {
    this.#syncWriteBytesMax = options.syncWriteBytesMax ?? SYNC_WRITE_BYTES_MAX_DEFAULT
    this.#files = new OpenFiles(options.openFilesMax ?? openFilesMaxDefault())
  }

  /** The bound on open files, and how many are open now. */
  get openFiles(): { readonly max: number; readonly open: number } {
    return { max: this.#files.max, open: this.#files.openCount }
  }

  open(path: string, options: OpenOptions = {}): Promise<DiskFile> {
    return guard(path, async () => {
      let flags = constants.O_RDWR
      if (options.create === true) flags |= constants.O_CREAT
      if (options.create === true && options.exclusive === true) flags |= constants.O_EXCL
      if (options.truncate === true) flags |= constants.O_TRUNC
      return await this.#files.withSlot(async () => {
        const fh = await open(path, flags, 0o644)
        try {
          const { size } = await fh.stat()
          return new NodeDiskFile(path, fh, size, this.#syncWriteBytesMax, this.#files)
        } catch (e) {
          await fh.close()
          throw e
        }
      })
    })
  }

  readFile(path: string): Promise<Buffer> {
    return guard(path, () => this.#files.withSlot(() => readFile(path)))
  }

  rename(from: string, to: string): Promise<void> {
    return guard(from, () => this.#touching(from, false, () => rename(from, to), to))
  }

  remove(path: string): Promise<void> {
    return guard(path, () => this.#touching(path, true, () => unlink(path)))
  }

  removeTree(path: string): Promise<void> {
    return guard(path, () => this.#touching(path, true, () => rm(path, { recursive: true, force: true })))
  }

  /**
   * Run a rename or removal of `path` with every open file it touches holding its descriptor, so
   * that none reopens by a name that is changing; a removed file keeps its descriptor for good
   * (its data stays readable until it is closed). A renamed file follows its new name (`to`).
   */
  async #touching(path: string, pin: boolean, op: () => Promise<void>, to?: string): Promise<void> {
    const files = this.#files.touching(path)
    const held: NodeDiskFile[] = []
    try {
      for (const f of files) {
        await f.hold(pin)
        held.push(f)
      }
      await op()
      if (to !== undefined) this.#files.moved(held, path, to)
    } finally {
      for (const f of held) f.release()
    }
  }

  list(dir: string): Promise<string[]> {
    return guard(dir, async () => (await this.#files.withSlot(() => readdir(dir))).sort())
  }

  mkdir(path: string): Promise<void> {
    return guard(path, async () => {
      await mkdir(path, { recursive: true })
    })
  }

  syncDir(path: string): Promise<void> {
    return guard(path, async () => {
      await this.#files.withSlot(async () => {
        const fh = await open(path, constants.O_RDONLY)
        try {
          await fh.sync()
        } finally {
          await fh.close()
        }
      })
    })
  }

  exists(path: string): Promise<boolean> {
    return guard(path, async () => {
      try {
        await stat(path)
        return true
      } catch (e) {
        if ((e as { code?: unknown }).code === 'ENOENT') return false
        throw e
      }
    })
  }

  stat(path: string): Promise<DiskStat> {
    return guard(path, async () => {
      const s = await stat(path)
      return { size: s.size, isDirectory: s.isDirectory() }
    })
  }
}
