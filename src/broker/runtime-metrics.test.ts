import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Registry, type RegistryContentType } from 'prom-client'
import { registerRuntimeMetrics } from './runtime-metrics.ts'

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

/** Allocates enough short-lived garbage for several minor collections. */
function churn(): void {
  let keep: Buffer[] = []
  for (let i = 0; i < 200_000; i++) {
    keep.push(Buffer.alloc(64))
    if (keep.length > 1000) keep = []
  }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 20))

test('runtime metrics: GC pauses and event-loop delay are measured, shared by registries and stopped with the last', async () => {
  const a = new Registry()
  const b = new Registry()
  const releaseA = registerRuntimeMetrics(a)
  const releaseB = registerRuntimeMetrics(b)
  const minor = 'nodejs_gc_duration_seconds_count{kind="minor"}'
  const before = sample(await b.metrics(), minor)!
  churn()
  await tick()
  // A loop iteration blocked for 60 ms is the delay's maximum.
  const until = Date.now() + 60
  while (Date.now() < until) {}
  await tick()
  const textA = await a.metrics()
  const textB = await b.metrics()
  assert.ok(sample(textB, minor)! > before, 'minor collections counted')
  // One monitor for both: B, scraped after A, has A's count (more only if a collection fell between).
  assert.ok(sample(textA, minor)! > before && sample(textB, minor)! >= sample(textA, minor)!, 'one monitor')
  assert.ok(
    sample(textA, 'nodejs_eventloop_lag_max_seconds')! >= 0.055,
    'a blocked iteration is the max delay',
  )
  assert.ok(
    sample(textA, 'nodejs_eventloop_lag_p50_seconds')! < 0.055,
    'the median is not the blocked iteration',
  )
  assert.ok(sample(textA, 'process_resident_memory_bytes')! > 0)
  assert.ok(sample(textA, 'process_open_fds')! > 0)
  assert.ok(sample(textA, 'process_max_fds')! >= sample(textA, 'process_open_fds')!)
  assert.ok(sample(textA, 'process_cpu_seconds_total')! > 0)
  assert.ok(sample(textA, 'nodejs_heap_size_used_bytes')! > 0)
  assert.ok(sample(textA, 'nodejs_heap_space_size_used_bytes{space="old"}')! > 0)
  assert.match(textA, /^# TYPE nodejs_gc_duration_seconds histogram$/m)
  assert.match(textA, /^nodejs_gc_duration_seconds_bucket\{kind="minor",le="\+Inf"\} \d+$/m)

  // B keeps the monitor after A lets go; after both, a new user starts from nothing.
  releaseA()
  releaseA()
  churn()
  await tick()
  const lastB = sample(await b.metrics(), minor)!
  assert.ok(lastB > sample(textB, minor)!, 'still observed for B')
  releaseB()
  // A scrape racing a node's stop still answers, from the stopped monitor's last counts.
  assert.equal(sample(await b.metrics(), minor), sample(await b.metrics(), minor))
  const c = new Registry()
  const releaseC = registerRuntimeMetrics(c)
  try {
    // A fresh monitor once the last user released it: it counts from nothing (a collection may
    // have fallen since it started).
    assert.ok(sample(await c.metrics(), minor)! < Math.min(3, lastB), 'a fresh monitor')
  } finally {
    releaseC()
  }
})

test('runtime metrics: counters follow the OpenMetrics naming when scraped as OpenMetrics', async () => {
  const r = new Registry<RegistryContentType>()
  const release = registerRuntimeMetrics(r)
  try {
    r.setContentType(Registry.OPENMETRICS_CONTENT_TYPE)
    const om = await r.metrics()
    assert.match(om, /^# TYPE process_cpu_seconds counter$/m)
    assert.match(om, /^process_cpu_seconds_total [\d.e-]+$/m)
  } finally {
    release()
  }
})
