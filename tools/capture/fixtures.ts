// The annotated-hex golden fixture format: writes (capture) and reads (codec tests) one Kafka frame per
// file. It knows only the frame headers (apiKey, apiVersion, correlationId); decoding bodies is the
// codec's job, which these fixtures test.
//
// A fixture file:
//   # Weir golden fixture (tools/capture/README.md): one Kafka frame ...   <- free comment lines
//   # client: kafkajs 2.2.4                                                 <- `# key: value` meta lines
//   # api: Produce (0) v9
//   # apiKey: 0
//   # apiVersion: 9
//   # direction: request
//   # correlationId: 5
//   # bytes: 120
//   00000000  00 00 00 09 00 00 00 05 ...  |........|                       <- 32 bytes a line
// The frame is written without its 4-byte size prefix. A response carries no apiKey/apiVersion on the
// wire, so its meta gives those of the request it answers.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export type Direction = 'request' | 'response'

export interface GoldenFixture {
  /** Path relative to the directory given to loadGoldenFixtures, e.g. `kafkajs/Produce-v7-produce-gzip-request.hex`. */
  file: string
  /** The `client` meta's first word, e.g. `kafkajs` (the rest is its version). */
  client: string
  apiKey: number
  apiVersion: number
  direction: Direction
  correlationId: number
  /** The frame without its size prefix. */
  bytes: Buffer
  /** Every `# key: value` line, as written. */
  meta: Record<string, string>
}

/** Bytes a hex line holds. */
export const bytesPerLine = 32

const metaLine = /^# ([a-zA-Z][a-zA-Z0-9]*): (.*)$/
const hexLine = /^([0-9a-f]{8}) {2}((?:[0-9a-f]{2} )*[0-9a-f]{2})(?: +\|.*\|)?$/

/** Renders one fixture: the meta lines in the given order, then the bytes as offset-annotated hex. */
export function formatFixture(meta: Record<string, string>, bytes: Buffer): string {
  const lines = [
    '# Weir golden fixture (tools/capture/README.md): one Kafka frame without its 4-byte size prefix,',
    '# as captured on the wire between a real client and a real broker. Re-capture, never edit.',
  ]
  for (const [key, value] of Object.entries({ ...meta, bytes: String(bytes.length) })) {
    if (!/^[a-zA-Z][a-zA-Z0-9]*$/.test(key) || /[\r\n]/.test(value)) throw new Error(`bad meta ${key}`)
    lines.push(`# ${key}: ${value}`)
  }
  for (let at = 0; at < bytes.length; at += bytesPerLine) {
    const line = bytes.subarray(at, at + bytesPerLine)
    const hex = [...line].map((b) => b.toString(16).padStart(2, '0')).join(' ')
    const ascii = [...line].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('')
    lines.push(`${at.toString(16).padStart(8, '0')}  ${hex.padEnd(bytesPerLine * 3 - 1)}  |${ascii}|`)
  }
  return `${lines.join('\n')}\n`
}

/** Parses one fixture file's text; throws with the file and line on anything malformed. */
export function parseFixture(text: string, file: string): GoldenFixture {
  const meta: Record<string, string> = {}
  const chunks: Buffer[] = []
  let offset = 0
  let lastShort = false
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  for (const [index, line] of lines.entries()) {
    const where = `${file}:${index + 1}`
    if (line.startsWith('#')) {
      const m = metaLine.exec(line)
      if (m === null) continue
      const [, key, value] = m as unknown as [string, string, string]
      if (key in meta) throw new Error(`${where}: meta '${key}' given twice`)
      meta[key] = value
      continue
    }
    const m = hexLine.exec(line)
    if (m === null) throw new Error(`${where}: neither a '#' line nor a hex line`)
    const [, at, hex] = m as unknown as [string, string, string]
    if (Number.parseInt(at, 16) !== offset)
      throw new Error(`${where}: offset ${at}, expected ${offset.toString(16)}`)
    if (lastShort) throw new Error(`${where}: a hex line after a short one`)
    const chunk = Buffer.from(hex.replaceAll(' ', ''), 'hex')
    if (chunk.length > bytesPerLine) throw new Error(`${where}: more than ${bytesPerLine} bytes on a line`)
    lastShort = chunk.length < bytesPerLine
    chunks.push(chunk)
    offset += chunk.length
  }
  const bytes = Buffer.concat(chunks)
  const need = (key: string): string => {
    const value = meta[key]
    if (value === undefined) throw new Error(`${file}: no '# ${key}:' line`)
    return value
  }
  const int = (key: string): number => {
    const value = need(key)
    if (!/^-?\d+$/.test(value)) throw new Error(`${file}: '${key}' is not an integer: ${value}`)
    return Number(value)
  }
  const direction = need('direction')
  if (direction !== 'request' && direction !== 'response')
    throw new Error(`${file}: bad direction ${direction}`)
  if (int('bytes') !== bytes.length)
    throw new Error(`${file}: 'bytes' says ${meta.bytes}, hex has ${bytes.length}`)
  const fixture: GoldenFixture = {
    file,
    client: need('client').split(' ')[0]!,
    apiKey: int('apiKey'),
    apiVersion: int('apiVersion'),
    direction,
    correlationId: int('correlationId'),
    bytes,
    meta,
  }
  checkFrameHeader(fixture)
  return fixture
}

/** Checks that the frame's own header agrees with the meta lines. */
function checkFrameHeader(f: GoldenFixture): void {
  if (f.direction === 'request') {
    if (f.bytes.length < 10) throw new Error(`${f.file}: a request shorter than its header`)
    const seen = [f.bytes.readInt16BE(0), f.bytes.readInt16BE(2), f.bytes.readInt32BE(4)]
    const said = [f.apiKey, f.apiVersion, f.correlationId]
    if (seen.join() !== said.join()) throw new Error(`${f.file}: header ${seen} but meta says ${said}`)
  } else {
    if (f.bytes.length < 4) throw new Error(`${f.file}: a response shorter than its header`)
    const seen = f.bytes.readInt32BE(0)
    if (seen !== f.correlationId)
      throw new Error(`${f.file}: correlationId ${seen}, meta says ${f.correlationId}`)
  }
}

/**
 * Loads every `*.hex` fixture under `dir` (recursively), sorted by path; throws on a malformed one.
 *
 * @example
 *   for (const f of loadGoldenFixtures('test/fixtures/golden'))
 *     if (f.direction === 'request') decodeRequest(f.apiKey, f.apiVersion, f.bytes)
 */
export function loadGoldenFixtures(dir: string): GoldenFixture[] {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.hex'))
    .sort()
  return files.map((name) => parseFixture(readFileSync(join(dir, name), 'utf8'), name))
}
