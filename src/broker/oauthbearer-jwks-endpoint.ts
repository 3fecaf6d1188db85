/**
 * The JWKS document behind `sasl.oauthbearer.jwks.endpoint.url`: an HTTP(S) GET or, as Kafka
 * allows, a `file:` URL read from disk. Bounded in time and size, so a slow or huge endpoint costs
 * one failed refresh, never the broker. The listener hands it to `security/`'s `RefreshingJwks`
 * as its fetcher.
 */
import { open } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

/** A key set is a few KiB; Kafka's jose4j reads the whole body, Weir refuses one beyond this. */
export const JWKS_DOCUMENT_BYTES_MAX = 1024 * 1024
/** How long one fetch may take, connection and body together. */
export const JWKS_FETCH_TIMEOUT_MS = 10_000

export class JwksEndpointError extends Error {
  override name = 'JwksEndpointError'
}

/** The URL if its scheme is http, https or file; else the error that names the key. */
export function parseJwksEndpointUrl(text: string): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new JwksEndpointError('is not a URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'file:') {
    throw new JwksEndpointError(`${url.protocol} URLs are not supported (http, https or file)`)
  }
  return url
}

export interface JwksFetchLimits {
  readonly timeoutMs?: number
  readonly bytesMax?: number
}

/**
 * A fetcher for `RefreshingJwks`: the parsed JSON of the document. Rejects with a message that
 * holds neither the URL (it may carry credentials) nor the body.
 */
export function jwksEndpointFetcher(url: URL, limits: JwksFetchLimits = {}): () => Promise<unknown> {
  const timeoutMs = limits.timeoutMs ?? JWKS_FETCH_TIMEOUT_MS
  const bytesMax = limits.bytesMax ?? JWKS_DOCUMENT_BYTES_MAX
  return async () => {
    const bytes =
      url.protocol === 'file:' ? await readFile(url, bytesMax) : await get(url, timeoutMs, bytesMax)
    try {
      return JSON.parse(bytes.toString('utf8'))
    } catch {
      throw new JwksEndpointError('Could not refresh JWKS: the document is not JSON')
    }
  }
}

async function readFile(url: URL, bytesMax: number): Promise<Buffer> {
  let handle: Awaited<ReturnType<typeof open>>
  try {
    handle = await open(fileURLToPath(url), 'r')
  } catch (e) {
    throw new JwksEndpointError(`Could not read the JWKS file (${(e as { code?: string }).code ?? 'error'})`)
  }
  try {
    const buffer = Buffer.alloc(bytesMax + 1)
    let length = 0
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null)
      if (bytesRead === 0) break
      length += bytesRead
      if (length > bytesMax) throw new JwksEndpointError(`The JWKS file exceeds ${bytesMax} bytes`)
    }
    return buffer.subarray(0, length)
  } finally {
    await handle.close()
  }
}

async function get(url: URL, timeoutMs: number, bytesMax: number): Promise<Buffer> {
  const signal = AbortSignal.timeout(timeoutMs)
  // fetch refuses a URL with user info; Java's URLConnection, behind Kafka's, ignores it.
  const target = new URL(url)
  target.username = ''
  target.password = ''
  let response: Response
  try {
    response = await fetch(target, { signal, headers: { accept: 'application/json' } })
  } catch (e) {
    throw new JwksEndpointError(`Could not refresh JWKS: ${fetchFailure(e, timeoutMs)}`)
  }
  if (response.status !== 200) {
    await response.body?.cancel()
    throw new JwksEndpointError(`Could not refresh JWKS: HTTP status ${response.status}`)
  }
  const declared = Number(response.headers.get('content-length') ?? '0')
  if (declared > bytesMax) {
    await response.body?.cancel()
    throw new JwksEndpointError(`Could not refresh JWKS: the document exceeds ${bytesMax} bytes`)
  }
  const chunks: Buffer[] = []
  let length = 0
  try {
    for await (const chunk of response.body ?? []) {
      length += chunk.byteLength
      // Leaving the loop by a throw cancels the body's stream.
      if (length > bytesMax) {
        throw new JwksEndpointError(`Could not refresh JWKS: the document exceeds ${bytesMax} bytes`)
      }
      chunks.push(Buffer.from(chunk))
    }
  } catch (e) {
    if (e instanceof JwksEndpointError) throw e
    throw new JwksEndpointError(`Could not refresh JWKS: ${fetchFailure(e, timeoutMs)}`)
  }
  return Buffer.concat(chunks, length)
}

/** The cause's code (ECONNREFUSED, a timeout), never its message: undici's may quote the URL. */
function fetchFailure(e: unknown, timeoutMs: number): string {
  if ((e as { name?: string }).name === 'TimeoutError') return `no answer within ${timeoutMs} ms`
  const code = (e as { cause?: { code?: unknown } }).cause?.code
  return typeof code === 'string' ? code : 'the request failed'
}
