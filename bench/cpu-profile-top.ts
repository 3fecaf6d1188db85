/**
 * Summarizes V8 .cpuprofile files (node --cpu-prof): the top frames by self time, merged over every
 * profile in a directory, as a share of the non-idle samples.
 *
 *   node bench/cpu-profile-top.ts DIR_OR_FILE [N]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

interface ProfileNode {
  readonly id: number
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
  }
  readonly hitCount?: number
}

const target = process.argv[2]
const n = Number(process.argv[3] ?? 25)
if (target === undefined) throw new Error('usage: cpu-profile-top.ts DIR_OR_FILE [N]')
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => join(target, f))
  : [target]
const root = join(import.meta.dirname, '..')
const self = new Map<string, number>()
let total = 0
let idle = 0
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[] }
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0
    if (hits === 0) continue
    const { functionName, url, lineNumber } = node.callFrame
    if (functionName === '(idle)') {
      idle += hits
      continue
    }
    total += hits
    const where =
      url === '' ? '' : ` ${url.startsWith('file://') ? relative(root, url.slice(7)) : url}:${lineNumber + 1}`
    const key = `${functionName || '(anonymous)'}${where}`
    self.set(key, (self.get(key) ?? 0) + hits)
  }
}
console.log(
  `${files.length} profile(s), ${total} busy samples, idle ${((100 * idle) / (idle + total)).toFixed(1)}% of all`,
)
const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, n)
for (const [key, hits] of top) console.log(`${((100 * hits) / total).toFixed(1).padStart(5)}%  ${key}`)
