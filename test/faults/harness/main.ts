/**
 * `npm run faults -- --duration <s> [--seed N] [--nodes 3] [--partitions 12] [--rf 3] [--min-isr 2]
 *  [--kinds kill,pause,...] [--network auto|netns|loopback] [--security PLAINTEXT|SASL_SSL]`: the long fault run. Prints the seed,
 * the command that replays it, what happened, and the results table; exits 1 when anything was
 * lost, duplicated, reordered or inconsistent.
 */
import { parseArgs } from 'node:util'
import type { NetworkMode } from './cluster.ts'
import { FAULT_KINDS, type FaultKind } from './faults.ts'
import { runHarness } from './run.ts'
import { clean, formatProblems } from './table.ts'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    seed: { type: 'string' },
    nodes: { type: 'string', default: '3' },
    partitions: { type: 'string', default: '12' },
    rf: { type: 'string' },
    'min-isr': { type: 'string' },
    kinds: { type: 'string' },
    network: { type: 'string', default: 'auto' },
    security: { type: 'string', default: 'PLAINTEXT' },
    help: { type: 'boolean', short: 'h' },
  },
})
if (values.help === true) {
  console.log(
    'npm run faults -- --duration <s> [--seed N] [--nodes 3] [--partitions 12] [--rf 3] [--min-isr 2]\n' +
      `  [--kinds ${FAULT_KINDS.join(',')}] [--network auto|netns|loopback] [--security PLAINTEXT|SASL_SSL]\n` +
      'Runs a seeded fault schedule against real nodes, prints the replay command and the results table;\n' +
      'exits 1 when anything was lost, duplicated, reordered or inconsistent. See test/faults/harness/README.md.',
  )
  process.exit(0)
}
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31)
const kinds = values.kinds?.split(',').map((k) => {
  if (!(FAULT_KINDS as readonly string[]).includes(k))
    throw new Error(`unknown fault kind ${k}: ${FAULT_KINDS.join(', ')}`)
  return k as FaultKind
})
// SIGINT/SIGTERM exit through process.exit, so the cluster's 'exit' handler kills the nodes,
// unmounts their tmpfs and removes the namespaces.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    console.log(`faults: ${signal}, cleaning up`)
    process.exit(130)
  })
const started = new Date()
console.log(`faults: seed ${seed}`)
const report = await runHarness({
  seed,
  durationMs: Number(values.duration) * 1000,
  nodes: Number(values.nodes),
  partitions: Number(values.partitions),
  ...(values.rf !== undefined ? { replicationFactor: Number(values.rf) } : {}),
  ...(values['min-isr'] !== undefined ? { insyncReplicasMin: Number(values['min-isr']) } : {}),
  ...(kinds !== undefined ? { kinds } : {}),
  network: values.network as NetworkMode | 'auto',
  security: values.security === 'SASL_SSL' ? 'SASL_SSL' : 'PLAINTEXT',
  log: (line) => console.log(`  ${line}`),
})
console.log(
  `\nstarted ${started.toISOString()}, ${Math.round(report.wallMs / 1000)} s wall, network ${report.network}, RF ${report.replicationFactor}`,
)
console.log(`replay: ${report.replay}`)
console.log(report.table)
const problems = formatProblems(report.verdict)
if (problems !== '') console.log(problems)
process.exitCode = clean(report.verdict) ? 0 : 1
