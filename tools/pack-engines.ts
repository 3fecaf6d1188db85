/**
 * Puts the installed package's Node requirement (package.json's `publishEngines`) into `engines`
 * while `npm pack` or `npm publish` packs, and takes it out again afterwards.
 *
 *   node tools/pack-engines.ts add      # prepack
 *   node tools/pack-engines.ts remove   # postpack (except under npm publish) and postpublish
 *
 * Why two fields: a checkout brings its own Node 24 (the `node` devDependency, first on PATH for
 * every npm script and for npx), so it runs whatever Node the machine has, and its `engines` names
 * only npm. npm checks a checkout's `engines` against the system Node all the same (npx installs the
 * checkout into its cache to run its bin, and warns EBADENGINE there), so `engines.node` in the
 * checkout would warn on every machine with an older system Node. An installed package runs on the
 * user's Node and needs 24: the tarball, and what the registry lists, say so.
 *
 * `npm publish` reads package.json again after postpack to send it to the registry, so under publish
 * postpack leaves it and postpublish removes it. A pack or publish that fails half-way leaves the
 * `engines.node` line in package.json (git shows it); `remove` takes it out.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

type Engines = Record<string, string>
interface Manifest {
  engines?: Engines
  publishEngines?: Engines
}

const path = join(import.meta.dirname, '..', 'package.json')
const before = readFileSync(path, 'utf8')
const manifest = JSON.parse(before) as Manifest
const wanted = manifest.publishEngines ?? {}
const engines: Engines = { ...manifest.engines }
const mode = process.argv[2]

if (mode === 'add') {
  Object.assign(engines, wanted)
} else if (mode === 'remove') {
  if (process.env.npm_command === 'publish' && process.env.npm_lifecycle_event === 'postpack') process.exit(0)
  for (const [name, range] of Object.entries(wanted)) if (engines[name] === range) delete engines[name]
} else {
  console.error('usage: node tools/pack-engines.ts add|remove')
  process.exit(2)
}

if (manifest.engines !== undefined || Object.keys(engines).length > 0) manifest.engines = engines
const after = `${JSON.stringify(manifest, null, 2)}\n`
if (after !== before) writeFileSync(path, after)
