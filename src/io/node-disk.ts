/**
 * The Disk port on the real file system (node:fs/promises): file handles stay open, writes are
 * positional (pwrite, pwritev: several may be in flight on one file; small ones made at once on the
 * calling thread), `sync` is fdatasync and `syncDir` fsyncs the directory.
 */

import { writeSync, writevSync } from 'node:fs'
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
import { type Disk, DiskError, type DiskFile, type DiskStat, type OpenOptions } from './disk.ts'

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

class NodeDiskFile implements DiskFile {
  readonly path: string
  #handle: FileHandle | null
  #size: number
  readonly #syncWriteBytesMax: number

  constructor(path: string, handle: FileHandle, size: number, syncWriteBytesMax: number) {
    this.path = path
    this.#handle = handle
    this.#size = size
    this.#syncWriteBytesMax = syncWriteBytesMax
  }

  size(): number {
    return this.#size
  }

  #fh(): FileHandle {
    if (this.#handle === null) throw new DiskError('EBADF', this.path, `file is closed: ${this.path}`)
    return this.#handle
  }

  read(into: Buffer, position: number, length: number, intoOffset = 0): Promise<number> {
    return guard(this.path, async () => {
      const fh = this.#fh()
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
      try {
        this.#writeSync(buffers, position, total)
        return Promise.resolve()
      } catch (e) {
        return Promise.reject(wrap(e, this.path))
      }
    }
    return guard(this.path, async () => {
      const fh = this.#fh()
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
  #writeSync(buffers: readonly Buffer[], position: number, total: number): void {
    const fd = this.#fh().fd
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
    return guard(this.path, async () => {
      await this.#fh().truncate(size)
      this.#size = size
    })
  }

  sync(): Promise<void> {
    return guard(this.path, () => this.#fh().datasync())
  }

  close(): Promise<void> {
    return guard(this.path, async () => {
      const fh = this.#handle
      this.#handle = null
      if (fh !== null) await fh.close()
    })
  }
}

/** The real file system. Stateless: one instance serves every log directory. */
export class NodeDisk implements Disk {
  readonly #syncWriteBytesMax: number

  /**
   * `syncWriteBytesMax`: writes of at most this many bytes are made on the calling thread (the
   * promise is settled when `write` returns), larger ones in the thread pool; 0 sends all to the pool.
   */
  constructor(options: { readonly syncWriteBytesMax?: number } = {}) {
    this.#syncWriteBytesMax = options.syncWriteBytesMax ?? SYNC_WRITE_BYTES_MAX_DEFAULT
  }

  open(path: string, options: OpenOptions = {}): Promise<DiskFile> {
    return guard(path, async () => {
      let flags = constants.O_RDWR
      if (options.create === true) flags |= constants.O_CREAT
      if (options.create === true && options.exclusive === true) flags |= constants.O_EXCL
      if (options.truncate === true) flags |= constants.O_TRUNC
      const fh = await open(path, flags, 0o644)
      try {
        const { size } = await fh.stat()
        return new NodeDiskFile(path, fh, size, this.#syncWriteBytesMax)
      } catch (e) {
        await fh.close()
        throw e
      }
    })
  }

  readFile(path: string): Promise<Buffer> {
    return guard(path, () => readFile(path))
  }

  rename(from: string, to: string): Promise<void> {
    return guard(from, () => rename(from, to))
  }

  remove(path: string): Promise<void> {
    return guard(path, () => unlink(path))
  }

  removeTree(path: string): Promise<void> {
    return guard(path, () => rm(path, { recursive: true, force: true }))
  }

  list(dir: string): Promise<string[]> {
    return guard(dir, async () => (await readdir(dir)).sort())
  }

  mkdir(path: string): Promise<void> {
    return guard(path, async () => {
      await mkdir(path, { recursive: true })
    })
  }

  syncDir(path: string): Promise<void> {
    return guard(path, async () => {
      const fh = await open(path, constants.O_RDONLY)
      try {
        await fh.sync()
      } finally {
        await fh.close()
      }
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
