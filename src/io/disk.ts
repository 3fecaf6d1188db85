/**
 * The Disk port: the file operations a partition log needs, all async, with durability explicit
 * (`sync`, `syncDir`). `node-disk.ts` implements it with node:fs; `sim-disk.ts` in memory with crashes.
 */

/**
 * An operating error from a disk. `code` follows POSIX/Node names (`ENOENT`, `EEXIST`, `EIO`,
 * `ENOTEMPTY`, `EBADF`, ...), so callers test `e.code`, never the message.
 */
export class DiskError extends Error {
  override name = 'DiskError'
  readonly code: string
  readonly path: string

  constructor(code: string, path: string, message?: string) {
    super(message ?? `${code}: ${path}`)
    this.code = code
    this.path = path
  }
}

/** True when `e` is a disk error saying the path does not exist. */
export function isNotFound(e: unknown): boolean {
  return e instanceof DiskError && e.code === 'ENOENT'
}

/**
 * True when `e` says the process ran out of a resource, not that the disk failed: descriptors
 * (EMFILE for the process, ENFILE for the system) or kernel memory (ENOMEM). Such a failure is
 * refused and retried later; it never takes a log directory offline.
 */
export function isResourceExhausted(e: unknown): boolean {
  return e instanceof DiskError && (e.code === 'EMFILE' || e.code === 'ENFILE' || e.code === 'ENOMEM')
}

export interface OpenOptions {
  /** Create the file when it does not exist (default false: ENOENT). */
  readonly create?: boolean
  /** With `create`, fail with EEXIST when the file exists. */
  readonly exclusive?: boolean
  /** Truncate to zero bytes on open. */
  readonly truncate?: boolean
}

/**
 * An open file, readable and writable. Writes append at the end (the size this handle tracks) or
 * go to a given position (`write`, several in flight at once on disjoint ranges), or truncate;
 * nothing is durable until `sync()`, and a new name is durable only after `syncDir` of its
 * directory. One writer per file: the size is tracked by the handle.
 */
export interface DiskFile {
  /** The path the file was opened with (it may have been renamed since; the handle stays valid). */
  readonly path: string
  /** Size in bytes, including writes not yet synced. */
  size(): number
  /**
   * Read up to `length` bytes at file `position` into `into[intoOffset...]`. Returns the bytes read,
   * fewer than `length` only at end of file.
   */
  read(into: Buffer, position: number, length: number, intoOffset?: number): Promise<number>
  /**
   * Append `buffers` at the end, in order, as one vectored write; all bytes or an error. Not to be
   * mixed with `write`s still in flight (the end is the size when the append completes).
   */
  append(buffers: readonly Buffer[]): Promise<void>
  /**
   * Write `buffers`, in order, at file `position` as one positional vectored write (pwritev); all
   * bytes or an error. The file grows to `position + bytes` if shorter (a gap reads as zeros).
   * Several writes may be in flight at once on disjoint ranges: each completes on its own, in any
   * order, and `size()` then counts the furthest completed end. Until a `sync()` that started after
   * a write completed, a crash may lose or tear each unsynced write independently of the others (a
   * later one may survive where an earlier one is lost), as a real disk's write-back does.
   */
  write(buffers: readonly Buffer[], position: number): Promise<void>
  /** Shrink (or zero-extend) the file to `size` bytes. Not durable until `sync()`. */
  truncate(size: number): Promise<void>
  /** Make contents and size durable (fdatasync). Does not make the file's name durable. */
  sync(): Promise<void>
  /** Release the handle. Further calls fail with EBADF. */
  close(): Promise<void>
}

export interface DiskStat {
  /** Size in bytes. */
  readonly size: number
  readonly isDirectory: boolean
}

/**
 * File-system operations on `/`-separated paths. Name changes (create, rename, remove, mkdir) are
 * durable only after `syncDir` on the directory that holds them: a crash may undo them.
 */
export interface Disk {
  /** Open a file for reading and appending. */
  open(path: string, options?: OpenOptions): Promise<DiskFile>
  /** The whole contents of a (small) file. ENOENT if it does not exist. */
  readFile(path: string): Promise<Buffer>
  /** Atomically replace `to` with `from` (same directory or file system). */
  rename(from: string, to: string): Promise<void>
  /** Remove a file. ENOENT if it does not exist. Open handles stay valid until closed. */
  remove(path: string): Promise<void>
  /** Remove a directory and everything under it; nothing if it does not exist. */
  removeTree(path: string): Promise<void>
  /** Names (not paths) of the entries in a directory, sorted. ENOENT if it does not exist. */
  list(dir: string): Promise<string[]>
  /** Create a directory and its missing parents; nothing if it exists. */
  mkdir(path: string): Promise<void>
  /** Make the entries of directory `path` durable (creations, renames, removals inside it). */
  syncDir(path: string): Promise<void>
  /** Whether a file or directory exists at `path`. */
  exists(path: string): Promise<boolean>
  /** Size and kind of `path`. ENOENT if it does not exist. */
  stat(path: string): Promise<DiskStat>
}

/** The directory part of a `/`-separated path (`a/b/c` -> `a/b`, `c` -> `.`). */
export function parentDir(path: string): string {
  const at = path.lastIndexOf('/')
  if (at < 0) return '.'
  if (at === 0) return '/'
  return path.slice(0, at)
}

/** The last part of a `/`-separated path (`a/b/c` -> `c`). */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1)
}

/** Join path parts with `/`. */
export function joinPath(dir: string, name: string): string {
  return dir.endsWith('/') ? `${dir}${name}` : `${dir}/${name}`
}
