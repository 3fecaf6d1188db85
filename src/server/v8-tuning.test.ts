import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { tuneV8ForBroker } from './v8-tuning.ts'

/**
 * A child process (V8 flags are process-wide) allocates 800 x 1 MiB Buffers, keeping the last 16
 * alive, as frames through a broker, and prints how many full (mark-compact) collections ran.
 */
function majorGcsFor800MiB(tune: boolean): number {
  const script = `
    import { PerformanceObserver, constants } from 'node:perf_hooks'
    import { tuneV8ForBroker } from ${JSON.stringify(new URL('./v8-tuning.ts', import.meta.url).href)}
    if (${tune}) tuneV8ForBroker({})
    let majors = 0
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++
    }).observe({ entryTypes: ['gc'] })
    const keep = []
    for (let i = 0; i < 800; i++) {
      const b = Buffer.allocUnsafe(1 << 20)
      b[0] = i
      keep.push(b)
      if (keep.length > 16) keep.shift()
      if (i % 20 === 0) await new Promise((r) => setImmediate(r))
    }
    await new Promise((r) => setTimeout(r, 50))
    console.log(majors)
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
  return Number(out.trim())
}

/**
 * A child process allocates 3,000,000 small objects, up to 200,000 alive at a time (as a broker's
 * in-flight requests keep theirs), and prints the size of V8's young generation (new space) in MB.
 */
function youngGenerationMBAfterChurn(tune: boolean): number {
  const script = `
    import { getHeapSpaceStatistics } from 'node:v8'
    import { tuneV8ForBroker } from ${JSON.stringify(new URL('./v8-tuning.ts', import.meta.url).href)}
    if (${tune}) tuneV8ForBroker({ WEIR_V8_EXTERNAL_IN_GLOBAL_LIMIT: '0' })
    let alive = []
    for (let i = 0; i < 3e6; i++) {
      alive.push({ i })
      if (alive.length > 200000) alive = []
    }
    console.log(getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576)
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
  return Number(out.trim())
}

describe('tuneV8ForBroker', () => {
  it('sets nothing with WEIR_V8_EXTERNAL_IN_GLOBAL_LIMIT=0 and WEIR_V8_YOUNG_GENERATION_PINNED=0', () => {
    assert.deepEqual(
      tuneV8ForBroker({ WEIR_V8_EXTERNAL_IN_GLOBAL_LIMIT: '0', WEIR_V8_YOUNG_GENERATION_PINNED: '0' }),
      [],
    )
  })

  it('keeps the young generation at its smallest where V8 would grow it', () => {
    const untuned = youngGenerationMBAfterChurn(false)
    const tuned = youngGenerationMBAfterChurn(true)
    assert.ok(untuned >= 16, `V8's default: ${untuned} MB`)
    // Pinned: 2-2.5 MB alone, 6 MB once under the full suite's load; V8's default grows to 32 MB here.
    assert.ok(tuned <= 8, `pinned: ${tuned} MB`)
  })

  it('stops dead frames from starting a full collection every ~64 MB of ArrayBuffers', () => {
    const untuned = majorGcsFor800MiB(false)
    const tuned = majorGcsFor800MiB(true)
    assert.ok(untuned >= 3, `V8's default: ${untuned} full collections for 800 MiB`)
    assert.ok(tuned < untuned / 2, `tuned: ${tuned} full collections, untuned ${untuned}`)
  })
})
