import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { mallocTunable, tuneMallocForBroker } from './malloc-tuning.ts'

/**
 * A child process (the allocator is process-wide) frees one 10 MiB Buffer, as a fetch read buffer,
 * then allocates 200 x 1 MiB Buffers, as produce frames, keeping 100 of them alive at the end, then
 * one longer-lived 256 KiB Buffer (a broker always has allocations younger than its last frames),
 * frees the frames and collects; prints its resident set (MiB) with the frames alive and after the
 * frees. Without that younger allocation the arena's top could be the freed frames themselves, and
 * glibc then trims them whether tuned or not (a run under load freed 89 of 194 MiB untuned).
 */
function rssAfterFreeingFrames(tune: boolean): { alive: number; freed: number; set: string[] } {
  const script = `
    import { readFileSync } from 'node:fs'
    import { tuneMallocForBroker } from ${JSON.stringify(new URL('./malloc-tuning.ts', import.meta.url).href)}
    const set = ${tune} ? tuneMallocForBroker({}) : []
    const rssMiB = () => Number(readFileSync('/proc/self/statm', 'utf8').split(' ')[1]) * 4096 / 1048576
    let fetch = Buffer.alloc(10 << 20, 1)
    fetch = null
    gc()
    const frames = []
    for (let i = 0; i < 200; i++) {
      const frame = Buffer.alloc(1 << 20, 1)
      if (i % 2 === 1) frames.push(frame)
    }
    const younger = Buffer.allocUnsafeSlow(256 << 10).fill(1)
    const alive = rssMiB()
    frames.length = 0
    gc()
    await new Promise((r) => setTimeout(r, 50))
    gc()
    console.log(JSON.stringify({ alive, freed: rssMiB(), set, younger: younger.length }))
  `
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  })
  return JSON.parse(out) as { alive: number; freed: number; set: string[] }
}

describe('tuneMallocForBroker', () => {
  it('sets nothing with WEIR_MALLOC_TUNING=0', () => {
    assert.deepEqual(tuneMallocForBroker({ WEIR_MALLOC_TUNING: '0' }), [])
  })

  it('returns freed 1 MiB frames to the system after a large buffer was freed', {
    skip: mallocTunable() ? false : 'no glibc or no addon (npm run build:native): nothing to tune',
  }, () => {
    const untuned = rssAfterFreeingFrames(false)
    const tuned = rssAfterFreeingFrames(true)
    assert.deepEqual(tuned.set, ['M_MMAP_THRESHOLD=131072'])
    // glibc's default: the freed 10 MiB buffer raised the mmap threshold, so the frames came from
    // an arena, which keeps them resident once free.
    assert.ok(
      untuned.alive - untuned.freed < 30,
      `untuned: ${untuned.alive} MiB alive, ${untuned.freed} freed`,
    )
    assert.ok(tuned.alive - tuned.freed > 80, `tuned: ${tuned.alive} MiB alive, ${tuned.freed} freed`)
  })
})
