// The golden fixtures (test/fixtures/golden, captured by tools/capture/run-all.ts) load and are
// well-formed: meta lines parse, frame headers agree with them, every response has its request. The
// codec's round-trip tests build on loadGoldenFixtures; this file checks only the fixtures themselves.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  formatFixture,
  type GoldenFixture,
  loadGoldenFixtures,
  parseFixture,
} from '../../tools/capture/fixtures.ts'

const goldenDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'golden')

describe('golden fixtures', () => {
  const fixtures = loadGoldenFixtures(goldenDir)
  const byFile = new Map(fixtures.map((f) => [f.file, f]))

  test('there are fixtures from several clients, requests and responses', () => {
    const clients = new Set(fixtures.map((f) => f.client))
    assert.ok(clients.size >= 5, `clients: ${[...clients].join(', ')}`)
    assert.ok(fixtures.some((f) => f.direction === 'request'))
    assert.ok(fixtures.some((f) => f.direction === 'response'))
  })

  test('every fixture names its client, broker, api, step and scenario note', () => {
    for (const f of fixtures) {
      for (const key of ['client', 'broker', 'api', 'clientId', 'scenario', 'step', 'note']) {
        assert.ok(f.meta[key], `${f.file}: no '${key}'`)
      }
      assert.match(f.meta.api!, new RegExp(`^\\w+ \\(${f.apiKey}\\) v${f.apiVersion}$`), f.file)
      const apiName = f.meta.api!.split(' ')[0]!
      assert.ok(basename(f.file).startsWith(`${apiName}-v${f.apiVersion}-`), `${f.file} vs ${f.meta.api}`)
      assert.ok(basename(f.file).endsWith(`-${f.direction}.hex`), f.file)
    }
  })

  test('request headers carry the annotated apiKey, apiVersion, correlationId and clientId', () => {
    for (const f of fixtures.filter((x) => x.direction === 'request')) {
      assert.equal(f.bytes.readInt16BE(0), f.apiKey, f.file)
      assert.equal(f.bytes.readInt16BE(2), f.apiVersion, f.file)
      assert.equal(f.bytes.readInt32BE(4), f.correlationId, f.file)
      const length = f.bytes.readInt16BE(8)
      const clientId = length < 0 ? '(null)' : f.bytes.toString('utf8', 10, 10 + length)
      assert.equal(clientId, f.meta.clientId, f.file)
    }
  })

  test('every response has its request beside it, with the same api, version and correlationId', () => {
    for (const f of fixtures.filter((x) => x.direction === 'response')) {
      assert.equal(f.bytes.readInt32BE(0), f.correlationId, f.file)
      const requestFile = join(dirname(f.file), f.meta.request ?? '')
      const request: GoldenFixture | undefined = byFile.get(requestFile)
      assert.ok(request, `${f.file}: request ${requestFile} missing`)
      assert.equal(request.direction, 'request')
      assert.deepEqual(
        [request.apiKey, request.apiVersion, request.correlationId, request.client],
        [f.apiKey, f.apiVersion, f.correlationId, f.client],
        f.file,
      )
    }
  })

  test('the fixture set stays modest', () => {
    const bytes = fixtures.reduce((sum, f) => sum + f.bytes.length, 0)
    assert.ok(fixtures.length <= 1000, `${fixtures.length} files`)
    assert.ok(bytes <= 2 * 1024 * 1024, `${bytes} frame bytes`)
    assert.ok(existsSync(join(goldenDir, 'INDEX.md')))
  })
})

describe('fixture format', () => {
  const frame = Buffer.from('0003000c0000002a0004746573740000000000', 'hex')
  const meta = {
    client: 'test 1.0',
    apiKey: '3',
    apiVersion: '12',
    direction: 'request',
    correlationId: '42',
  }

  test('format then parse gives back the bytes and the meta', () => {
    const long = Buffer.concat([frame, Buffer.alloc(70, 0x41)])
    const body = Buffer.concat([Buffer.from([0, 3, 0, 12, 0, 0, 0, 42]), long.subarray(8)])
    const parsed = parseFixture(formatFixture(meta, body), 'x.hex')
    assert.deepEqual(parsed.bytes, body)
    assert.equal(parsed.client, 'test')
    assert.equal(parsed.meta.bytes, String(body.length))
    assert.equal(parsed.correlationId, 42)
  })

  test('a frame whose header disagrees with the meta is refused', () => {
    const text = formatFixture({ ...meta, correlationId: '41' }, frame)
    assert.throws(() => parseFixture(text, 'x.hex'), /meta says/)
  })

  test('a hex line at the wrong offset is refused', () => {
    const text = formatFixture(meta, Buffer.concat([frame, Buffer.alloc(40)])).replace(
      '\n00000020',
      '\n00000021',
    )
    assert.throws(() => parseFixture(text, 'x.hex'), /offset/)
  })
})
