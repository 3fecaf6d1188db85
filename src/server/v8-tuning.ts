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
 */
import { setFlagsFromString } from 'node:v8'

let externalInGlobalLimit = false

/** Applies the broker's V8 settings; returns the flags set (for the start-up log). */
export function tuneV8ForBroker(env: NodeJS.ProcessEnv = process.env): string[] {
  const set: string[] = []
  if (env.WEIR_V8_EXTERNAL_IN_GLOBAL_LIMIT !== '0') {
    setFlagsFromString('--external-memory-accounted-in-global-limit')
    externalInGlobalLimit = true
    set.push('--external-memory-accounted-in-global-limit')
  }
  return set
}

/**
 * Whether this process counts external memory in V8's global limit (then the node paces full GCs
 * itself: `GC_MAJOR_EVERY_COLLECTIONS`).
 */
export function externalMemoryInGlobalLimit(): boolean {
  return externalInGlobalLimit
}
