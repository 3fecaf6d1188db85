/**
 * How long `startCluster()` takes to start a single node, until its broker serves: the median of
 * ROUNDS runs in one process (modules loaded once, as in a test file with several clusters), and
 * the first run's time including loading Weir's modules (a test file's first cluster).
 *
 * Run: `node bench/embedded-start.ts` (ROUNDS=15 by default; NODES=3 for a 3-node cluster).
 */
const rounds = Number(process.env.ROUNDS ?? 15)
const nodes = Number(process.env.NODES ?? 1)
const t0 = performance.now()
const { startCluster } = await import('weir')
const first = await startCluster({ nodes })
const cold = performance.now() - t0
await first.stop()
const times: number[] = []
for (let i = 0; i < rounds; i++) {
  const t = performance.now()
  const c = await startCluster({ nodes })
  times.push(performance.now() - t)
  await c.stop()
}
times.sort((a, b) => a - b)
const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(0)
console.log(
  `startCluster({ nodes: ${nodes} }): median ${at(0.5)} ms over ${rounds} runs (min ${times[0]!.toFixed(0)}, max ${times.at(-1)!.toFixed(0)}); first run with module loading ${cold.toFixed(0)} ms`,
)
