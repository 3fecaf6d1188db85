/**
 * The C allocator's settings for a broker process, set at start-up by `weir start` (never by an
 * embedding process, whose allocator is its own business), through Weir's addon
 * `native/malloc-tuning.c` (glibc only; elsewhere, or where the addon was not built, nothing is set).
 *
 * Node Buffers above V8's pooled sizes (socket reads, produce frames, fetch read buffers) are
 * malloc'd. glibc serves a request of at least its mmap threshold with its own mmap, unmapped again
 * at free; below it, from an arena, where freed memory stays resident until the top of the heap is
 * free past the trim threshold. The threshold starts at 128 KiB but is dynamic: each free of an
 * mmapped chunk raises it to that chunk's size (up to 32 MiB) and the trim threshold to twice that,
 * so after the first 10 MiB fetch buffer is freed every 1 MiB produce frame comes from an arena, and
 * the arenas keep their high-water mark, fragmented. `M_MMAP_THRESHOLD` set explicitly stops the
 * rise: frames and fetch buffers of 128 KiB or more are mmapped and returned at free.
 * WEIR_MALLOC_TUNING=0 leaves glibc's defaults, WEIR_MALLOC_MMAP_THRESHOLD=bytes sets another threshold
 * (for comparisons).
 */
import { createRequire } from 'node:module'

/** glibc's mallopt parameters (malloc.h). */
export const M_MMAP_THRESHOLD = -3

/**
 * 128 KiB: glibc's own starting threshold, fixed. Socket reads (64 KiB) stay in the arenas, where
 * they are reused at once; produce frames and fetch read buffers are mmapped.
 */
export const MMAP_THRESHOLD_BYTES = 128 * 1024

interface MallocAddon {
  readonly mallopt: (param: number, value: number) => number
  readonly mallocTrim: (pad: number) => number
  readonly mallinfo?: () => number[]
}

/** Where the addon may be: build/native/ of the checkout, from src/server/ or dist/src/server/. */
const ADDON_CANDIDATES = ['../../build/native/malloc-tuning.node', '../../../build/native/malloc-tuning.node']

let loaded: MallocAddon | null | undefined

/** The addon, or null where it was not built, does not load, or the C library is not glibc. */
function addon(): MallocAddon | null {
  if (loaded !== undefined) return loaded
  loaded = null
  const require = createRequire(import.meta.url)
  for (const candidate of ADDON_CANDIDATES) {
    try {
      const mod = require(candidate) as Partial<MallocAddon>
      if (typeof mod.mallopt === 'function' && typeof mod.mallocTrim === 'function') {
        loaded = mod as MallocAddon
        break
      }
      return loaded
    } catch {}
  }
  return loaded
}

/** Whether the allocator's settings can be changed in this process (glibc and the addon). */
export function mallocTunable(): boolean {
  return addon() !== null
}

/**
 * Applies the broker's allocator settings; returns what was set (for the start-up log), empty where
 * nothing could be.
 */
export function tuneMallocForBroker(env: NodeJS.ProcessEnv = process.env): string[] {
  const a = addon()
  if (a === null || env.WEIR_MALLOC_TUNING === '0') return []
  const set: string[] = []
  const mmapThreshold = Number(env.WEIR_MALLOC_MMAP_THRESHOLD ?? MMAP_THRESHOLD_BYTES)
  if (mmapThreshold > 0 && a.mallopt(M_MMAP_THRESHOLD, mmapThreshold) === 1)
    set.push(`M_MMAP_THRESHOLD=${mmapThreshold}`)
  return set
}

/** glibc's malloc_trim(0): returns free arena memory to the system; false where nothing was (or can be). */
export function mallocTrim(): boolean {
  const a = addon()
  return a !== null && a.mallocTrim(0) === 1
}

/** What glibc's allocator holds, in bytes (mallinfo2), or null where it cannot be read. */
export interface MallocInfo {
  /** Main arena from sbrk. */
  readonly arenaBytes: number
  /** In mmapped chunks. */
  readonly mmappedBytes: number
  /** Allocated from the arenas. */
  readonly inUseBytes: number
  /** Free in the arenas (resident unless trimmed). */
  readonly freeBytes: number
}

export function mallocInfo(): MallocInfo | null {
  const m = addon()?.mallinfo?.()
  if (m === undefined || m.length < 4) return null
  return { arenaBytes: m[0]!, mmappedBytes: m[1]!, inUseBytes: m[2]!, freeBytes: m[3]! }
}
