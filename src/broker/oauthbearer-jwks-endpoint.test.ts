import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { JwksEndpointError, jwksEndpointFetcher, parseJwksEndpointUrl } from './oauthbearer-jwks-endpoint.ts'

const SET = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'AAAA', kid: 'k1' }] }

describe('jwksEndpointFetcher', () => {
  let server: Server
  let base = ''
  const dir = mkdtempSync(join(tmpdir(), 'weir-jwks-'))

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/jwks') res.end(JSON.stringify(SET))
      else if (req.url === '/big') res.end('x'.repeat(2000))
      else if (req.url === '/text') res.end('not json')
      else if (req.url === '/slow')
        res.writeHead(200) // headers, then never a body
      else res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://user:secret@127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => {
    server.closeAllConnections()
    server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const refused = async (url: string, reason: RegExp, limits = {}) =>
    assert.rejects(jwksEndpointFetcher(new URL(url), limits)(), (e: Error) => {
      assert.ok(e instanceof JwksEndpointError)
      assert.match(e.message, reason)
      assert.doesNotMatch(e.message, /secret|127\.0\.0\.1/)
      return true
    })

  it('reads the document over HTTP and from a file: URL', async () => {
    assert.deepEqual(await jwksEndpointFetcher(new URL(`${base}/jwks`))(), SET)
    const file = join(dir, 'jwks.json')
    writeFileSync(file, JSON.stringify(SET))
    assert.deepEqual(await jwksEndpointFetcher(pathToFileURL(file))(), SET)
  })

  it('refuses a bad status, a body beyond the bound, no JSON, no answer in time, a missing file', async () => {
    await refused(`${base}/nothing`, /HTTP status 404/)
    await refused(`${base}/big`, /exceeds 1000 bytes/, { bytesMax: 1000 })
    await refused(`${base}/text`, /not JSON/)
    await refused(`${base}/slow`, /no answer within 200 ms/, { timeoutMs: 200 })
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    await refused(`http://127.0.0.1:${port}/jwks`, /ECONNREFUSED/)
    await refused(pathToFileURL(join(dir, 'absent.json')).href, /ENOENT/)
    const big = join(dir, 'big.json')
    writeFileSync(big, 'x'.repeat(2000))
    await refused(pathToFileURL(big).href, /exceeds 1000 bytes/, { bytesMax: 1000 })
  })

  it('takes http, https and file URLs only', () => {
    for (const url of ['https://idp.example/jwks', 'file:///etc/jwks.json']) parseJwksEndpointUrl(url)
    assert.throws(() => parseJwksEndpointUrl('ftp://idp.example/jwks'), /ftp: URLs are not supported/)
    assert.throws(() => parseJwksEndpointUrl('/etc/jwks.json'), /is not a URL/)
  })
})
