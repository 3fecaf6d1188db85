/**
 * V8 settings a broker process runs with, set at start-up by `weir start` (never by an embedding
 * process, whose heap is its own business).
 *
 * `--external-memory-accounted-in-global-limit`: a broker's memory is mostly ArrayBuffers (request
 * and response frames, replicated batches, the write tail) beside a JS heap of 15-35 MB. By
 * default V8 starts a full mark-compact every time external memory grows ~64 MB past the last one
 * ("external memory pressure"), whatever the heap: a follower replicating 100 MB/s ran one every
 * 70-100 ms, 17-38% of its main thread in the collector (bench/peers/repl-probe.ts with --cpu-prof,
 * docs/performance.md). With external memory counted in V8's global allocation limit instead, the
 * young generation's scavenges free the dead frames and full collections follow the live size.
 * WEIR_V8_EXTERNAL_IN_GLOBAL_LIMIT=0 leaves V8's default (for comparisons).
 *
 * `--semi-space-growth-factor=1` after a memory-reducing full collection: the young generation stays
 * at its smallest (2 MB). V8 grows it (by default up to 64 MB here) when many objects survive a
 * scavenge, as a broker's in-flight requests do, and its pages stay resident: it held 34 MB of a
 * 176 MB peak in a bench:peers run. A broker allocates little on its JS heap (batches stay bytes;
 * the read pacer scavenges every 8 MiB of requests anyway), so once warm the small young generation
 * costs nothing measurable; a fresh process spends ~40% more CPU on its first few million records
 * (docs/performance.md, "Memory"). The flag cannot cap the size (V8
 * reads `--max-semi-space-size` only when the heap is set up), hence the collection first, which
 * also drops what start-up left: ~20-30 ms, once. WEIR_V8_YOUNG_GENERATION_PINNED=0 leaves V8's
 * default.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let externalInGlobalLimit = false

/** Applies the broker's V8 settings; returns the flags set (for the start-up log). */
export function tuneV8ForBroker(env: NodeJS.ProcessEnv = process.env): string[] {
  const set: string[] = []
  if (env.WEIR_V8_EXTERNAL_IN_GLOBAL_LIMIT !== '0') {
    setFlagsFromString('--external-memory-accounted-in-global-limit')
    externalInGlobalLimit = true
    set.push('--external-memory-accounted-in-global-limit')
  }
  if (env.WEIR_V8_YOUNG_GENERATION_PINNED !== '0' && pinYoungGeneration())
    set.push('--semi-space-growth-factor=1')
  return set
}

/** Shrinks V8's young generation to its minimum and keeps it there; false where no GC can be had. */
function pinYoungGeneration(): boolean {
  let gc: ((options: { type: 'major'; flavor: 'last-resort' }) => void) | undefined
  try {
    // As read-gc-pacer.ts: `--expose-gc` at run time installs `gc` only in contexts made afterwards.
    setFlagsFromString('--expose-gc')
    gc = runInNewContext('gc')
  } catch {
    return false
  }
  if (typeof gc !== 'function') return false
  setFlagsFromString('--semi-space-growth-factor=1')
  // V8's memory-reducing collection (CollectAllAvailableGarbage) shrinks the young generation.
  gc({ type: 'major', flavor: 'last-resort' })
  return true
}

/**
 * Whether this process counts external memory in V8's global limit (then, with
 * `WEIR_READ_GC_MAJORS=1`, the node paces full GCs itself: `GC_MAJOR_EVERY_COLLECTIONS`).
 */
export function externalMemoryInGlobalLimit(): boolean {
  return externalInGlobalLimit
}
