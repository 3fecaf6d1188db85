/**
 * Kafka's protocol schemas, taken from Apache Kafka's published jars on Maven Central: the release
 * and each jar's sha256 are pinned in kafka-schemas.json beside this file. `kafkaSchemaDir()`
 * downloads the jars into `.cache/kafka-schemas/<version>/jars/` (once; a cached jar is checked
 * again on every extraction), extracts the JSON schemas and derives the error table into
 * `.cache/kafka-schemas/<version>/schemas-<hash>/`, and returns that directory:
 *
 *   messages/                 kafka-clients  common/message/*.json (requests, responses, headers)
 *   metadata/                 kafka-metadata common/metadata/*.json (KRaft records)
 *   group-coordinator/        kafka-group-coordinator common/message/*.json (__consumer_offsets)
 *   transaction-coordinator/  kafka-transaction-coordinator common/message/*.json
 *   raft/                     kafka-raft common/message/*.json (the quorum-state file)
 *   errors.json               from kafka-clients' sources jar (kafka-errors.ts)
 *
 * As a program: `node tools/codegen/kafka-schemas.ts` prints the directory (fetching if needed);
 * `--pin <version>` downloads that release's jars, checks each against the .sha512 Maven Central
 * publishes beside it, and rewrites kafka-schemas.json with their sha256.
 */
import { createHash, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { kafkaErrors } from './kafka-errors.ts'
import { type ZipEntry, zipEntries } from './zip.ts'

const ROOT = join(import.meta.dirname, '../..')
const PINS_FILE = join(import.meta.dirname, 'kafka-schemas.json')
const MAVEN_CENTRAL = 'https://repo1.maven.org/maven2'
const DOWNLOAD_TIMEOUT_MS = 120_000

export interface Pin {
  readonly artifactId: string
  readonly classifier?: string
  readonly sha256: string
}

export interface Pins {
  readonly version: string
  readonly artifacts: readonly Pin[]
}

/** Where each schema folder comes from: an artifact and the jar folder holding its JSON files. */
const FOLDERS: readonly { folder: string; artifactId: string; prefix: string }[] = [
  { folder: 'messages', artifactId: 'kafka-clients', prefix: 'common/message/' },
  { folder: 'metadata', artifactId: 'kafka-metadata', prefix: 'common/metadata/' },
  { folder: 'group-coordinator', artifactId: 'kafka-group-coordinator', prefix: 'common/message/' },
  {
    folder: 'transaction-coordinator',
    artifactId: 'kafka-transaction-coordinator',
    prefix: 'common/message/',
  },
  { folder: 'raft', artifactId: 'kafka-raft', prefix: 'common/message/' },
]
const ERRORS_ARTIFACT = { artifactId: 'kafka-clients', classifier: 'sources' }

export function readPins(): Pins {
  return JSON.parse(readFileSync(PINS_FILE, 'utf8')) as Pins
}

function fileName(pin: Omit<Pin, 'sha256'>, version: string): string {
  return `${pin.artifactId}-${version}${pin.classifier === undefined ? '' : `-${pin.classifier}`}.jar`
}

function url(pin: Omit<Pin, 'sha256'>, version: string, suffix = ''): string {
  return `${MAVEN_CENTRAL}/org/apache/kafka/${pin.artifactId}/${version}/${fileName(pin, version)}${suffix}`
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

async function download(from: string): Promise<Buffer> {
  let res: Response
  try {
    res = await fetch(from, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) })
  } catch (e) {
    const cause = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e)
    throw new Error(`cannot download ${from}: ${cause}`)
  }
  if (!res.ok) throw new Error(`cannot download ${from}: HTTP ${res.status}`)
  return Buffer.from(await res.arrayBuffer())
}

/** Writes through a temporary file and a rename, so a concurrent reader never sees half a file. */
function writeAtomically(path: string, bytes: Buffer | string): void {
  const tmp = `${path}.${randomUUID()}.tmp`
  writeFileSync(tmp, bytes)
  renameSync(tmp, path)
}

/** The pinned jar's bytes: from the cache when its checksum holds, else from Maven Central. */
async function jar(pin: Pin, version: string, dir: string): Promise<Buffer> {
  const path = join(dir, fileName(pin, version))
  if (existsSync(path)) {
    const cached = readFileSync(path)
    if (sha256(cached) === pin.sha256) return cached
    rmSync(path) // a damaged or foreign file: fetch it again
  }
  let bytes: Buffer
  try {
    bytes = await download(url(pin, version))
  } catch (e) {
    throw new Error(
      `kafka schemas: ${(e as Error).message}. The codec's schemas come from Apache Kafka ${version}'s jars on ` +
        `Maven Central; without network, put ${fileName(pin, version)} (sha256 ${pin.sha256}) at ${relative(ROOT, path)}.`,
    )
  }
  const got = sha256(bytes)
  if (got !== pin.sha256) {
    throw new Error(
      `kafka schemas: ${url(pin, version)} has sha256 ${got}, but ${relative(ROOT, PINS_FILE)} pins ${pin.sha256}. ` +
        'Refusing it: a mirror or proxy altered it, or the pin is wrong.',
    )
  }
  mkdirSync(dir, { recursive: true })
  writeAtomically(path, bytes)
  return bytes
}

function pinFor(pins: Pins, artifactId: string, classifier?: string): Pin {
  const pin = pins.artifacts.find((p) => p.artifactId === artifactId && p.classifier === classifier)
  if (pin === undefined)
    throw new Error(`kafka schemas: ${relative(ROOT, PINS_FILE)} pins no ${artifactId} ${classifier ?? ''}`)
  return pin
}

/** Extracts every folder and the error table into `out`. */
async function extract(pins: Pins, jarsDir: string, out: string): Promise<void> {
  const entries = new Map<string, ZipEntry[]>()
  const entriesOf = async (artifactId: string, classifier?: string): Promise<ZipEntry[]> => {
    const key = `${artifactId}:${classifier ?? ''}`
    if (!entries.has(key)) {
      entries.set(key, zipEntries(await jar(pinFor(pins, artifactId, classifier), pins.version, jarsDir)))
    }
    return entries.get(key)!
  }
  for (const { folder, artifactId, prefix } of FOLDERS) {
    const files = (await entriesOf(artifactId)).filter(
      (e) =>
        e.name.startsWith(prefix) && e.name.endsWith('.json') && !e.name.slice(prefix.length).includes('/'),
    )
    if (files.length === 0) throw new Error(`kafka schemas: ${artifactId} has no ${prefix}*.json`)
    mkdirSync(join(out, folder), { recursive: true })
    for (const e of files) writeFileSync(join(out, folder, e.name.slice(prefix.length)), e.read())
  }
  const sources = new Map(
    (await entriesOf(ERRORS_ARTIFACT.artifactId, ERRORS_ARTIFACT.classifier)).map((e) => [e.name, e]),
  )
  const errors = kafkaErrors((path) => sources.get(path)?.read().toString('utf8'))
  writeFileSync(join(out, 'errors.json'), `${JSON.stringify(errors, null, 1)}\n`)
}

/**
 * The directory of the pinned Kafka release's schemas (layout in this file's header), fetched and
 * extracted on first use. Its name carries a hash of the pins and of the code that extracts and
 * derives (a changed pin or parser gets a fresh directory; a finished one is never rewritten), so
 * several processes may call this at once: each extracts into a directory of its own and the first
 * to finish renames it into place.
 */
export async function kafkaSchemaDir(pins: Pins = readPins()): Promise<string> {
  const key = createHash('sha256').update(JSON.stringify(pins))
  for (const f of ['kafka-schemas.ts', 'kafka-errors.ts', 'zip.ts'])
    key.update(readFileSync(join(import.meta.dirname, f)))
  const base = join(ROOT, '.cache/kafka-schemas', pins.version)
  const dir = join(base, `schemas-${key.digest('hex').slice(0, 12)}`)
  if (existsSync(dir)) return dir
  const tmp = `${dir}.${randomUUID()}.tmp`
  try {
    await extract(pins, join(base, 'jars'), tmp)
    try {
      renameSync(tmp, dir)
    } catch (e) {
      if (!existsSync(dir)) throw e // else another process renamed its copy in first
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
  return dir
}

/** Pins a release: downloads its jars, checks them against Maven Central's .sha512, writes the pins. */
async function pin(version: string): Promise<void> {
  const wanted = [...new Set(FOLDERS.map((f) => f.artifactId))].map((artifactId) => ({ artifactId }))
  const artifacts: Pin[] = []
  for (const a of [...wanted, ERRORS_ARTIFACT]) {
    const bytes = await download(url(a, version))
    const published = (await download(url(a, version, '.sha512'))).toString('utf8').trim().split(/\s+/)[0]
    const got = createHash('sha512').update(bytes).digest('hex')
    if (got !== published)
      throw new Error(`${url(a, version)}: sha512 ${got}, Maven Central publishes ${published}`)
    artifacts.push({ ...a, sha256: sha256(bytes) })
    console.log(`${fileName(a, version)}: ${bytes.length} bytes, sha256 ${sha256(bytes)}`)
  }
  writeAtomically(PINS_FILE, `${JSON.stringify({ version, artifacts }, null, 2)}\n`)
  console.log(`pinned Apache Kafka ${version} in ${relative(ROOT, PINS_FILE)}`)
}

async function main(argv: string[]): Promise<number> {
  try {
    if (argv[0] === '--pin' && argv[1] !== undefined) await pin(argv[1])
    else if (argv.length === 0) console.log(await kafkaSchemaDir())
    else {
      console.error('usage: node tools/codegen/kafka-schemas.ts [--pin <kafka version>]')
      return 2
    }
    return 0
  } catch (e) {
    console.error((e as Error).message)
    return 1
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2))
