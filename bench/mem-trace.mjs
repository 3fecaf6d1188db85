// Where a process's memory goes, over time: preload it into a `weir start` (or any node process)
// with NODE_OPTIONS="--import=/abs/path/bench/mem-trace.mjs" and MEM_TRACE=/tmp/trace.jsonl. Every
// MEM_TRACE_MS (25) it samples process.memoryUsage(); every 250 ms it appends one JSON line with
// the window's peak RSS and the breakdown at that peak (heap used / total, external, arrayBuffers,
// V8's new-space size; where build/native/malloc-tuning.node loads, glibc's mmapped, in-use and free
// arena bytes), in MB, and the GC pauses so far by kind (count/total ms). Plain JavaScript so that it does not load type stripping into a
// compiled build. Only processes whose argv has MEM_TRACE_ARG ('start' unless set) are traced.
import { appendFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { PerformanceObserver } from 'node:perf_hooks'
import { getHeapSpaceStatistics } from 'node:v8'

const file = process.env.MEM_TRACE
const arg = process.env.MEM_TRACE_ARG ?? 'start'
if (file && process.argv.includes(arg)) {
  const everyMs = Number(process.env.MEM_TRACE_MS ?? 25)
  const mb = (n) => Math.round(n / 1e5) / 10
  // GC pauses by kind (perf_hooks 'gc' entries): count and total ms, since the start.
  const gc = { minor: [0, 0], major: [0, 0], incremental: [0, 0], weak: [0, 0] }
  const kinds = { 1: 'minor', 4: 'major', 8: 'incremental', 16: 'weak' }
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const k = gc[kinds[e.detail?.kind] ?? 'weak']
      k[0]++
      k[1] += e.duration
    }
  }).observe({ entryTypes: ['gc'] })
  // glibc's allocator at the peak (Weir's addon, src/server/native/malloc-tuning.c; absent: no fields).
  let mallinfo = null
  try {
    mallinfo = createRequire(import.meta.url)('../build/native/malloc-tuning.node').mallinfo ?? null
  } catch {}
  let peak = null
  let lastFlush = Date.now()
  const sample = () => {
    const m = process.memoryUsage()
    if (peak === null || m.rss > peak.rss) {
      const spaces = getHeapSpaceStatistics()
      const space = (name) => spaces.find((s) => s.space_name === name)?.space_size ?? 0
      peak = { ...m, newSpace: space('new_space'), oldSpace: space('old_space'), code: space('code_space') }
      // [arena, mmapped, in use, free]: bytes of glibc's arenas (sbrk and mmapped arenas), mmapped chunks, in use, free
      if (mallinfo !== null) peak.malloc = mallinfo()
    }
    const now = Date.now()
    if (now - lastFlush >= 250) {
      const p = peak
      appendFileSync(
        file,
        `${JSON.stringify({
          pid: process.pid,
          t: now / 1000,
          rss: mb(p.rss),
          heapUsed: mb(p.heapUsed),
          heapTotal: mb(p.heapTotal),
          external: mb(p.external),
          arrayBuffers: mb(p.arrayBuffers),
          newSpace: mb(p.newSpace),
          oldSpace: mb(p.oldSpace),
          code: mb(p.code),
          ...(p.malloc
            ? { mallocMmapped: mb(p.malloc[1]), mallocInUse: mb(p.malloc[2]), mallocFree: mb(p.malloc[3]) }
            : {}),
          gc: Object.fromEntries(Object.entries(gc).map(([k, [n, ms]]) => [k, `${n}/${Math.round(ms)}ms`])),
        })}\n`,
      )
      peak = null
      lastFlush = now
    }
  }
  setInterval(sample, everyMs).unref()
}
