/**
 * Young-generation collections paced by the bytes read from sockets. Every socket read is a new
 * Buffer (Node gives server sockets no reusable read buffer), and a produce frame that spans reads
 * is assembled into one more: they die within a request, but V8 frees their memory only at a GC,
 * and the JS allocation that normally starts one is small beside them, so tens of MB of dead reads
 * piled up before the external-memory volume started a full collection (docs/performance.md,
 * "Memory"). A minor GC every `everyBytes` frees them young, for about a millisecond each.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** 8 MiB of requests between minor GCs: a 1 ms scavenge per 8 MiB is ~1% of a core at 100 MB/s. */
export const GC_EVERY_READ_BYTES_DEFAULT = 8 * 1024 * 1024
/**
 * With `WEIR_READ_GC_MAJORS=1` (off by default: with produce frames pooled, the full GCs cost
 * produce CPU for no lower peak RSS), where V8 counts ArrayBuffers in its global limit
 * (`tuneV8ForBroker`), every 8th collection (64 MiB of requests) is a full one. Frames that outlived a few scavenges (held by an acks=all request or
 * the write tail) are promoted, and once dead only a full GC frees them; the global limit lets them
 * pile up (peak RSS of a 1M x 100 B kcat produce 133 MB without the flag, 172 with it, 139 with it
 * and a full GC per 64 MiB read). A broker's heap is small: a full GC takes ~5-15 ms, about 1.5 per
 * second at 100 MB/s, where V8's own external-memory rule ran several per second.
 */
export const GC_MAJOR_EVERY_COLLECTIONS = 8

export type GcKind = 'minor' | 'major'
type GcFunction = (options: { type: GcKind }) => void

/**
 * V8's GC as a function (a minor one: a scavenge; a major one: a full mark-compact), or null where
 * it cannot be had. `--expose-gc` set at run time installs `gc` only in contexts created
 * afterwards: the main context's global is untouched.
 */
export function v8Gc(): ((kind: GcKind) => void) | null {
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
  return (kind) => collect({ type: kind })
}

/**
 * Counts the bytes a node's connections read and collects the young generation every `everyBytes`,
 * and with `majorEvery` > 0 the whole heap every `majorEvery`-th time instead.
 */
export class ReadGcPacer {
  readonly everyBytes: number
  readonly majorEvery: number
  readonly #collect: (kind: GcKind) => void
  #bytes = 0
  /** Collections started (minor and major). */
  collections = 0
  /** Of which major. */
  majorCollections = 0

  constructor(collect: (kind: GcKind) => void, everyBytes = GC_EVERY_READ_BYTES_DEFAULT, majorEvery = 0) {
    this.#collect = collect
    this.everyBytes = everyBytes
    this.majorEvery = majorEvery
  }

  /** `bytes` more were read from a socket. */
  read(bytes: number): void {
    this.#bytes += bytes
    if (this.#bytes < this.everyBytes) return
    this.#bytes = 0
    this.collections++
    const major = this.majorEvery > 0 && this.collections % this.majorEvery === 0
    if (major) this.majorCollections++
    this.#collect(major ? 'major' : 'minor')
  }
}
