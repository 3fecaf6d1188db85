/**
 * `npm run test:compat:cluster`: the compat tests (test/compat/*.test.ts) against a 3-node cluster
 * (`WEIR_COMPAT_NODES=3`, see compat-target.ts), one file at a time as `npm run test:compat` runs
 * them. A file opts out with a line `// compat-cluster: skip <reason>` (a test that is about one
 * node, or that starts its own cluster already); the runner prints each skipped file's reason.
 * Arguments narrow the run to files whose name contains one of them.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { NODE, REPO } from './weir-process.ts'

const dir = join(REPO, 'test/compat')
const only = process.argv.slice(2)
const files: string[] = []
for (const name of readdirSync(dir)
  .filter((n) => n.endsWith('.test.ts'))
  .sort()) {
  if (only.length > 0 && !only.some((o) => name.includes(o))) continue
  const skip = /^\/\/ compat-cluster: skip (.+)$/m.exec(readFileSync(join(dir, name), 'utf8'))
  if (skip !== null) console.log(`skipped ${name}: ${skip[1]}`)
  else files.push(join('test/compat', name))
}
const nodes = process.env.WEIR_COMPAT_NODES ?? '3'
console.log(`${files.length} files against ${nodes} nodes`)
if (files.length === 0) process.exit(1)
const res = spawnSync(NODE, ['--test', '--test-timeout=300000', '--test-concurrency=1', ...files], {
  cwd: REPO,
  stdio: 'inherit',
  env: { ...process.env, WEIR_COMPAT_NODES: nodes },
})
process.exit(res.status ?? 1)
