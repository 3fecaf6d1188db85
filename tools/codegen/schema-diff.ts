/**
 * Lists what changes between two schema directories laid out as kafka-schemas.ts extracts them:
 * schemas added or removed, and per schema its valid, flexible and deprecated versions, listeners,
 * fields added or removed (by path, common structs in braces) and each field attribute that
 * changes. Documentation (`about`, comments) is only counted. For choosing a Kafka release:
 *
 *   node tools/codegen/schema-diff.ts <old dir> <new dir>
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { stripComments } from './schema.ts'

const FOLDERS = ['messages', 'metadata', 'group-coordinator', 'transaction-coordinator', 'raft']
const TOP = ['apiKey', 'type', 'validVersions', 'flexibleVersions', 'deprecatedVersions', 'listeners']
const TOP_FLAGS = ['latestVersionUnstable']
const FIELD = ['type', 'versions', 'nullableVersions', 'taggedVersions', 'tag', 'default', 'ignorable']
const FIELD_MORE = ['entityType', 'mapKey', 'flexibleVersions', 'zeroCopy']

type Json = Record<string, unknown>

function load(path: string): Json {
  return JSON.parse(stripComments(readFileSync(path, 'utf8'))) as Json
}

/** Every field by its path: `Topics.Partitions.Index`, common structs' as `{Struct}.Field`. */
function fields(schema: Json): Map<string, Json> {
  const out = new Map<string, Json>()
  const walk = (list: unknown, prefix: string): void => {
    for (const f of (list as Json[] | undefined) ?? []) {
      out.set(`${prefix}${f.name as string}`, f)
      walk(f.fields, `${prefix}${f.name as string}.`)
    }
  }
  walk(schema.fields, '')
  for (const c of (schema.commonStructs as Json[] | undefined) ?? []) walk(c.fields, `{${c.name as string}}.`)
  return out
}

const show = (v: unknown): string => (v === undefined ? '-' : JSON.stringify(v))

function describeField(f: Json): string {
  const tagged = f.taggedVersions === undefined ? '' : `, tagged ${f.tag as number}`
  const nullable = f.nullableVersions === undefined ? '' : `, nullable ${f.nullableVersions as string}`
  return `${f.type as string} v${(f.versions ?? f.taggedVersions) as string}${nullable}${tagged}`
}

/** The changes of one schema, one line each. */
function changes(before: Json, after: Json): { lines: string[]; docs: number } {
  const lines: string[] = []
  let docs = 0
  for (const k of TOP)
    if (show(before[k]) !== show(after[k])) lines.push(`${k}: ${show(before[k])} -> ${show(after[k])}`)
  for (const k of TOP_FLAGS)
    if ((before[k] === true) !== (after[k] === true))
      lines.push(`${k}: ${before[k] === true} -> ${after[k] === true}`)
  const a = fields(before)
  const b = fields(after)
  for (const [path, f] of a) if (!b.has(path)) lines.push(`- ${path} (${describeField(f)})`)
  for (const [path, f] of b) if (!a.has(path)) lines.push(`+ ${path} (${describeField(f)})`)
  for (const [path, f] of a) {
    const g = b.get(path)
    if (g === undefined) continue
    for (const k of [...FIELD, ...FIELD_MORE])
      if (String(f[k] ?? '') !== String(g[k] ?? ''))
        lines.push(`~ ${path}.${k}: ${show(f[k])} -> ${show(g[k])}`)
    if (f.about !== g.about) docs++
  }
  return { lines, docs }
}

function main(argv: string[]): number {
  const [from, to] = argv
  if (from === undefined || to === undefined) {
    console.error('usage: node tools/codegen/schema-diff.ts <old schema dir> <new schema dir>')
    return 2
  }
  let docs = 0
  for (const folder of FOLDERS) {
    const names = (dir: string): string[] =>
      existsSync(join(dir, folder)) ? readdirSync(join(dir, folder)).filter((n) => n.endsWith('.json')) : []
    for (const name of [...new Set([...names(from), ...names(to)])].sort()) {
      const a = join(from, folder, name)
      const b = join(to, folder, name)
      if (!existsSync(a)) console.log(`${folder}/${name}: added (versions ${show(load(b).validVersions)})`)
      else if (!existsSync(b)) console.log(`${folder}/${name}: removed`)
      else {
        const c = changes(load(a), load(b))
        docs += c.docs
        if (c.lines.length > 0) console.log(`${folder}/${name}:\n${c.lines.map((l) => `  ${l}`).join('\n')}`)
      }
    }
  }
  console.log(`(${docs} field descriptions changed besides)`)
  return 0
}

if (import.meta.main) process.exitCode = main(process.argv.slice(2))
