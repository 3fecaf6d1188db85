/**
 * A test-only fault injector on the Disk port: every write, sync and directory sync of the disk it
 * wraps waits `delayMs()` first (reads are not slowed: a slow disk shows first in its writes and
 * fsyncs, and the page cache serves most reads). With a delay of 0 it adds nothing but a call.
 *
 * Off unless asked for: `weir start` wraps its disk only when the environment variable
 * `WEIR_TEST_SLOW_DISK_FILE` names a control file (see `controlledDelay`), which the fault harness
 * (test/faults) writes a number of milliseconds into and 0 to heal. Never set it in production.
 */
import { readFileSync } from 'node:fs'
import type { Disk, DiskFile, DiskStat, OpenOptions } from './disk.ts'

export class SlowDisk implements Disk {
  readonly #inner: Disk
  readonly #delayMs: () => number

  constructor(inner: Disk, delayMs: () => number) {
    this.#inner = inner
    this.#delayMs = delayMs
  }

  async #wait(): Promise<void> {
    const ms = this.#delayMs()
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms))
  }

  async open(path: string, options?: OpenOptions): Promise<DiskFile> {
    return new SlowDiskFile(await this.#inner.open(path, options), () => this.#wait())
  }
  readFile(path: string): Promise<Buffer> {
    return this.#inner.readFile(path)
  }
  async rename(from: string, to: string): Promise<void> {
    await this.#wait()
    return this.#inner.rename(from, to)
  }
  remove(path: string): Promise<void> {
    return this.#inner.remove(path)
  }
  removeTree(path: string): Promise<void> {
    return this.#inner.removeTree(path)
  }
  list(dir: string): Promise<string[]> {
    return this.#inner.list(dir)
  }
  mkdir(path: string): Promise<void> {
    return this.#inner.mkdir(path)
  }
  async syncDir(path: string): Promise<void> {
    await this.#wait()
    return this.#inner.syncDir(path)
  }
  exists(path: string): Promise<boolean> {
    return this.#inner.exists(path)
  }
  stat(path: string): Promise<DiskStat> {
    return this.#inner.stat(path)
  }
}

class SlowDiskFile implements DiskFile {
  readonly #inner: DiskFile
  readonly #wait: () => Promise<void>

  constructor(inner: DiskFile, wait: () => Promise<void>) {
    this.#inner = inner
    this.#wait = wait
  }

  get path(): string {
    return this.#inner.path
  }
  size(): number {
    return this.#inner.size()
  }
  read(into: Buffer, position: number, length: number, intoOffset?: number): Promise<number> {
    return this.#inner.read(into, position, length, intoOffset)
  }
  async append(buffers: readonly Buffer[]): Promise<void> {
    await this.#wait()
    return this.#inner.append(buffers)
  }
  async write(buffers: readonly Buffer[], position: number): Promise<void> {
    await this.#wait()
    return this.#inner.write(buffers, position)
  }
  async truncate(size: number): Promise<void> {
    await this.#wait()
    return this.#inner.truncate(size)
  }
  async sync(): Promise<void> {
    await this.#wait()
    return this.#inner.sync()
  }
  close(): Promise<void> {
    return this.#inner.close()
  }
}

/**
 * The delay named by a control file: its content in milliseconds (0 when it is missing, empty or
 * not a number), re-read at most every `refreshMs`, so the harness can slow a running node down and
 * heal it without a restart.
 */
export function controlledDelay(path: string, refreshMs = 200): () => number {
  let value = 0
  let readAt = Number.NEGATIVE_INFINITY
  return () => {
    const now = performance.now()
    if (now - readAt >= refreshMs) {
      readAt = now
      try {
        const n = Number(readFileSync(path, 'utf8').trim())
        value = Number.isFinite(n) && n > 0 ? n : 0
      } catch {
        value = 0
      }
    }
    return value
  }
}
