/**
 * Young-generation collections paced by the bytes read from sockets. Every socket read is a new
 * Buffer (Node gives server sockets no reusable read buffer), and a produce frame that spans reads
 * is assembled into one more: they die within a request, but V8 frees their memory only at a GC,
 * and the JS allocation that normally starts one is small beside them, so tens of MB of dead reads
 * piled up before the external-memory volume started a full collection (docs/performance.md, "Peak
 * RSS under load"). A minor GC every `everyBytes` frees them young, for about a millisecond each.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** 8 MiB of requests between minor GCs: a 1 ms scavenge per 8 MiB is ~1% of a core at 100 MB/s. */
export const GC_EVERY_READ_BYTES_DEFAULT = 8 * 1024 * 1024

type GcFunction = (options: { type: 'minor' | 'major' }) => void

/**
 * V8's minor (scavenge) GC as a function, or null where it cannot be had. `--expose-gc` set at run
 * time installs `gc` only in contexts created afterwards: the main context's global is untouched.
 */
export function minorGc(): (() => void) | null {
  let gc = (globalThis as { gc?: GcFunction }).gc
  if (typeof gc !== 'function') {
    try {
      setFlagsFromString('--expose-gc')
      gc = runInNewContext('gc') as GcFunction | undefined
    } catch {
      return null
    }
  }
  if (typeof gc !== 'function') return null
  const collect = gc
  return () => collect({ type: 'minor' })
}

/** Counts the bytes a node's connections read and collects the young generation every `everyBytes`. */
export class ReadGcPacer {
  readonly everyBytes: number
  readonly #collect: () => void
  #bytes = 0
  /** Collections started. */
  collections = 0

  constructor(collect: () => void, everyBytes = GC_EVERY_READ_BYTES_DEFAULT) {
    this.#collect = collect
    this.everyBytes = everyBytes
  }

  /** `bytes` more were read from a socket. */
  read(bytes: number): void {
    this.#bytes += bytes
    if (this.#bytes < this.everyBytes) return
    this.#bytes = 0
    this.collections++
    this.#collect()
  }
}
