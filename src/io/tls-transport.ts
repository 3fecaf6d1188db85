/**
 * The Transport port over TLS (node:tls), for connections to SSL and SASL_SSL listeners. PLAINTEXT
 * connections keep `nodeTransport`, whose reads land in one reused buffer; a TLS socket's reads are
 * the decrypted chunks node:tls hands out, each a fresh buffer (lent as every chunk is, so readers are
 * unchanged).
 */
import { isIP } from 'node:net'
import { checkServerIdentity, type SecureVersion, connect as tlsConnect } from 'node:tls'
import { SocketConnection, type Transport } from './transport.ts'

/** What a TLS client presents and trusts: `ssl.*` client settings, read into memory. */
export interface TlsClientOptions {
  /** `ssl.truststore.*`: the CAs the server's certificate must chain to (none: node's bundled CAs). */
  readonly ca?: readonly string[]
  /** `ssl.keystore.*` as PEM: sent when the server asks for a client certificate. */
  readonly key?: string
  readonly cert?: string
  /** `ssl.keystore.*` as PKCS12. */
  readonly pfx?: Buffer
  /** `ssl.key.password` (PEM) or `ssl.keystore.password` (PKCS12). */
  readonly passphrase?: string
  /** `ssl.enabled.protocols` as a span. */
  readonly minVersion?: SecureVersion
  readonly maxVersion?: SecureVersion
  /** `ssl.cipher.suites` in OpenSSL's names. */
  readonly ciphers?: string
  /**
   * `ssl.endpoint.identification.algorithm`: `https` (true) checks the host connected to (name or
   * IP) against the certificate; empty (false) checks only that it chains to a trusted CA.
   */
  readonly endpointIdentification: boolean
}

/**
 * The TLS handshake failed once TCP connected: the peer's certificate did not verify or match the
 * host, or the peer refused ours or the protocol. Not worth retrying at once, unlike a refused or
 * reset connection.
 */
export class TlsHandshakeError extends Error {
  override name = 'TlsHandshakeError'
}

/** node's system errors (ECONNRESET, EPIPE, ETIMEDOUT): the network, not the handshake's verdict. */
const SYSTEM_ERROR_CODE = /^E[A-Z]+$/

/** TLS through node:tls; the handshake counts in the connect timeout. */
export function tlsTransport(options: TlsClientOptions): Transport {
  return {
    connect(address, { timeoutMs }) {
      return new Promise((resolve, reject) => {
        const dataFns: Array<(chunk: Buffer) => void> = []
        const socket = tlsConnect({
          host: address.host,
          port: address.port,
          // SNI carries names only (RFC 6066); an IP is still checked, against the IP SANs.
          ...(isIP(address.host) === 0 ? { servername: address.host } : {}),
          ...(options.ca === undefined ? {} : { ca: [...options.ca] }),
          ...(options.key === undefined ? {} : { key: options.key }),
          ...(options.cert === undefined ? {} : { cert: options.cert }),
          ...(options.pfx === undefined ? {} : { pfx: options.pfx }),
          ...(options.passphrase === undefined ? {} : { passphrase: options.passphrase }),
          ...(options.minVersion === undefined ? {} : { minVersion: options.minVersion }),
          ...(options.maxVersion === undefined ? {} : { maxVersion: options.maxVersion }),
          ...(options.ciphers === undefined ? {} : { ciphers: options.ciphers }),
          rejectUnauthorized: true,
          checkServerIdentity: options.endpointIdentification ? checkServerIdentity : () => undefined,
        })
        socket.on('data', (chunk: Buffer) => {
          for (const fn of dataFns) fn(chunk)
        })
        const timer = setTimeout(() => {
          socket.destroy()
          reject(new Error(`connect to ${address.host}:${address.port} timed out after ${timeoutMs} ms`))
        }, timeoutMs)
        socket.once('secureConnect', () => {
          clearTimeout(timer)
          socket.removeAllListeners('error')
          // TLS 1.3 servers judge the client certificate after the client's handshake completes:
          // their refusal arrives as an alert on the open connection.
          resolve(
            new SocketConnection(socket, dataFns, (e: Error & { code?: string }) =>
              /^ERR_SSL_/.test(e.code ?? '') ? new TlsHandshakeError(`TLS refused: ${e.message}`) : e,
            ),
          )
        })
        let tcpConnected = false
        socket.once('connect', () => {
          tcpConnected = true
        })
        socket.once('error', (e: Error & { code?: string }) => {
          clearTimeout(timer)
          socket.destroy()
          const handshake = tcpConnected && !SYSTEM_ERROR_CODE.test(e.code ?? '')
          reject(handshake ? new TlsHandshakeError(`TLS handshake failed: ${e.message}`) : e)
        })
      })
    },
  }
}
