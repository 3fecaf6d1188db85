/**
 * How a connection to a listener is secured, from the properties a Kafka client takes
 * (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.*`, `ssl.keystore.*`,
 * `ssl.key.password`, `ssl.endpoint.identification.algorithm`, `ssl.enabled.protocols`,
 * `ssl.cipher.suites`): a `ClientSecurity` value, read once (files included), then used for every
 * connection: its transport (TLS or not) and its SASL credentials, which `KafkaConnection.open`
 * authenticates with before handing the connection out. A broker derives one from its listener
 * configs for its own connections; the `weir` command from `--command-config`.
 */
import { type TlsClientOptions, type Transport, tlsTransport } from '../io/index.ts'
import {
  isSaslMechanism,
  JaasConfigError,
  OAuthBearerConfigError,
  type SaslClientCredentials,
  saslClientCredentialsFromJaas,
} from '../security/index.ts'

export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL'

export const SECURITY_PROTOCOLS: readonly SecurityProtocol[] = [
  'PLAINTEXT',
  'SSL',
  'SASL_PLAINTEXT',
  'SASL_SSL',
]

export interface ClientSecurity {
  readonly protocol: SecurityProtocol
  /** SSL and SASL_SSL: what the TLS client trusts and presents; null otherwise. */
  readonly tls: TlsClientOptions | null
  /** SASL_PLAINTEXT and SASL_SSL: the credentials; null otherwise. */
  readonly sasl: SaslClientCredentials | null
}

export const PLAINTEXT_SECURITY: ClientSecurity = { protocol: 'PLAINTEXT', tls: null, sasl: null }

/** A bad security property. The message names keys, never a password, key or token. */
export class ClientSecurityError extends Error {
  override name = 'ClientSecurityError'
}

/**
 * Where `ssl.*` keys are read from, so a broker's listener (`listener.name.<l>.` prefixes) and a
 * client's properties share one reader.
 */
export interface SslKeySource {
  /** The key's text, or null when unset. */
  text(key: string): string | null
  /** The key as a message names it (with its prefix, if that is where it was set). */
  named(key: string): string
}

export interface ClientSecurityInput {
  readonly properties: ReadonlyMap<string, string>
  /** Reads a keystore or truststore file (node:fs's readFileSync, from an edge module). */
  readonly readFile: (path: string) => Buffer
}

function protocolOf(text: string | null, key: string): SecurityProtocol {
  const protocol = (text ?? 'PLAINTEXT').trim().toUpperCase()
  if (!(SECURITY_PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new ClientSecurityError(`${key}: ${text} is not one of ${SECURITY_PROTOCOLS.join(', ')}`)
  }
  return protocol as SecurityProtocol
}

/** A client's security from its properties, as Kafka's clients read them. Throws ClientSecurityError. */
export function clientSecurityFromProperties(input: ClientSecurityInput): ClientSecurity {
  const keys: SslKeySource = {
    text: (key) => {
      const v = input.properties.get(key)
      return v === undefined ? null : v
    },
    named: (key) => key,
  }
  const protocol = protocolOf(keys.text('security.protocol'), 'security.protocol')
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL' ? tlsClientOptions(keys, input.readFile) : null
  const sasl =
    protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL'
      ? saslCredentials(
          keys.text('sasl.mechanism') ?? 'GSSAPI',
          'sasl.mechanism',
          keys.text('sasl.jaas.config'),
          'sasl.jaas.config',
        )
      : null
  return { protocol, tls, sasl }
}

/**
 * The credentials of `mechanism` from a client `sasl.jaas.config` (`jaasKey` names where it was
 * read, for messages). Throws ClientSecurityError.
 */
export function saslCredentials(
  mechanism: string,
  mechanismKey: string,
  jaas: string | null,
  jaasKey: string,
): SaslClientCredentials {
  if (!isSaslMechanism(mechanism)) {
    throw new ClientSecurityError(
      `${mechanismKey}: SASL mechanism ${mechanism} is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are)`,
    )
  }
  if (jaas === null || jaas.trim() === '') {
    throw new ClientSecurityError(`${mechanism} needs ${jaasKey} (no JAAS file is read)`)
  }
  try {
    return saslClientCredentialsFromJaas(mechanism, jaas)
  } catch (e) {
    if (!(e instanceof JaasConfigError) && !(e instanceof OAuthBearerConfigError)) throw e
    throw new ClientSecurityError(`${jaasKey}: ${e.message}`)
  }
}

/** The transport for `security`: TLS for SSL and SASL_SSL, `plain` (TCP or a simulation's) otherwise. */
export function securedTransport(security: ClientSecurity, plain: Transport): Transport {
  return security.tls === null ? plain : tlsTransport(security.tls)
}

/**
 * `KafkaConnection.open`'s transport and SASL credentials for `security` (PLAINTEXT when none), to
 * spread into its options: `{ ...openOptions, ...connectionSecurity(security, transport) }`.
 */
export function connectionSecurity(
  security: ClientSecurity | undefined,
  plain: Transport,
): { readonly transport: Transport; readonly sasl: SaslClientCredentials | null } {
  const s = security ?? PLAINTEXT_SECURITY
  return { transport: securedTransport(s, plain), sasl: s.sasl }
}

// ---------------------------------------------------------------------------------------------
// TLS stores
// ---------------------------------------------------------------------------------------------

/** A TLS client's settings: trust (`ssl.truststore.*`), its own certificate if any (`ssl.keystore.*`). */
export function tlsClientOptions(keys: SslKeySource, read: (path: string) => Buffer): TlsClientOptions {
  const identification = (keys.text('ssl.endpoint.identification.algorithm') ?? 'https').trim()
  if (identification !== '' && identification.toLowerCase() !== 'https') {
    throw new ClientSecurityError(
      `${keys.named('ssl.endpoint.identification.algorithm')}: ${identification} is not https or empty`,
    )
  }
  return {
    ...sslKeystore(keys, read, false),
    ...sslTruststore(keys, read),
    ...sslProtocolVersions(keys),
    ...sslCipherSuites(keys),
    endpointIdentification: identification !== '',
  }
}

export interface SslStoreOptions {
  ca?: string[]
  key?: string
  cert?: string
  pfx?: Buffer
  passphrase?: string
  minVersion?: NonNullable<TlsClientOptions['minVersion']>
  maxVersion?: NonNullable<TlsClientOptions['maxVersion']>
  ciphers?: string
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g

/** The PEM blocks of a text, by kind: private keys and certificates. */
function pemBlocks(text: string): { keys: string[]; certificates: string[] } {
  const keys: string[] = []
  const certificates: string[] = []
  for (const m of text.matchAll(PEM_BLOCK)) {
    if (m[1]!.endsWith('PRIVATE KEY')) keys.push(m[0])
    else if (m[1] === 'CERTIFICATE') certificates.push(m[0])
  }
  return { keys, certificates }
}

function unsupportedStoreType(key: string, type: string): ClientSecurityError {
  return new ClientSecurityError(
    `${key}: ${type} is not supported; use PEM${key.endsWith('keystore.type') ? ' or PKCS12' : ''} (docs/security.md)`,
  )
}

function readStore(read: (path: string) => Buffer, key: string, path: string): Buffer {
  try {
    return read(path)
  } catch (e) {
    throw new ClientSecurityError(`${key}: cannot read ${path} (${(e as { code?: string }).code ?? 'error'})`)
  }
}

/**
 * `ssl.keystore.*` and `ssl.key.password`: PKCS12 (node's pfx) or PEM per KIP-651. `required`: a
 * server's listener must have one; a client's is optional (sent when the server asks).
 */
export function sslKeystore(
  keys: SslKeySource,
  read: (path: string) => Buffer,
  required: boolean,
): SslStoreOptions {
  const location = keys.text('ssl.keystore.location')
  const inlineKey = keys.text('ssl.keystore.key')
  const inlineChain = keys.text('ssl.keystore.certificate.chain')
  const storePassword = keys.text('ssl.keystore.password')
  const keyPassword = keys.text('ssl.key.password')
  const typeKey = keys.named('ssl.keystore.type')
  const type = (keys.text('ssl.keystore.type') ?? 'JKS').toUpperCase()
  const passphrase = keyPassword === null ? {} : { passphrase: keyPassword }
  if (inlineKey !== null || inlineChain !== null) {
    if (type !== 'PEM') throw new ClientSecurityError(`${typeKey} must be PEM with ssl.keystore.key`)
    if (inlineKey === null || inlineChain === null) {
      throw new ClientSecurityError('ssl.keystore.key and ssl.keystore.certificate.chain are set together')
    }
    return { key: inlineKey, cert: inlineChain, ...passphrase }
  }
  if (location === null) {
    if (!required) return {}
    throw new ClientSecurityError(
      'TLS needs ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain)',
    )
  }
  const bytes = readStore(read, keys.named('ssl.keystore.location'), location)
  if (type === 'PKCS12') {
    return { pfx: bytes, ...(storePassword === null ? {} : { passphrase: storePassword }) }
  }
  if (type !== 'PEM') throw unsupportedStoreType(typeKey, type)
  if (storePassword !== null) {
    throw new ClientSecurityError(
      'SSL key store password cannot be specified with PEM format, only key password may be specified',
    )
  }
  const blocks = pemBlocks(bytes.toString('utf8'))
  if (blocks.keys.length !== 1 || blocks.certificates.length === 0) {
    throw new ClientSecurityError(
      `${keys.named('ssl.keystore.location')}: a PEM key store holds one private key and its certificate chain`,
    )
  }
  return { key: blocks.keys[0]!, cert: blocks.certificates.join('\n'), ...passphrase }
}

/** `ssl.truststore.*`: the CAs the peer's certificate is verified against (PEM). */
export function sslTruststore(keys: SslKeySource, read: (path: string) => Buffer): SslStoreOptions {
  const location = keys.text('ssl.truststore.location')
  const inline = keys.text('ssl.truststore.certificates')
  const typeKey = keys.named('ssl.truststore.type')
  const type = (keys.text('ssl.truststore.type') ?? 'JKS').toUpperCase()
  if (inline !== null) {
    if (type !== 'PEM')
      throw new ClientSecurityError(`${typeKey} must be PEM with ssl.truststore.certificates`)
    return { ca: pemBlocks(inline).certificates }
  }
  if (location === null) return {}
  if (type !== 'PEM') throw unsupportedStoreType(typeKey, type)
  const certificates = pemBlocks(
    readStore(read, keys.named('ssl.truststore.location'), location).toString('utf8'),
  ).certificates
  if (certificates.length === 0) {
    throw new ClientSecurityError(
      `${keys.named('ssl.truststore.location')}: no PEM certificate in ${location}`,
    )
  }
  return { ca: certificates }
}

const TLS_VERSIONS = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] as const

function listOf(keys: SslKeySource, key: string): string[] {
  return (keys.text(key) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

/** `ssl.enabled.protocols` as node's min and max version (the span of the listed ones). */
export function sslProtocolVersions(keys: SslKeySource): SslStoreOptions {
  const indexes = listOf(keys, 'ssl.enabled.protocols').map((p) => {
    const i = (TLS_VERSIONS as readonly string[]).indexOf(p)
    if (i < 0) throw new ClientSecurityError(`${keys.named('ssl.enabled.protocols')}: unknown protocol ${p}`)
    return i
  })
  if (indexes.length === 0) return {}
  return { minVersion: TLS_VERSIONS[Math.min(...indexes)]!, maxVersion: TLS_VERSIONS[Math.max(...indexes)]! }
}

/**
 * `ssl.cipher.suites`, in Java's (IANA) names, as OpenSSL's: TLS 1.3 suites keep their names;
 * `TLS_<kx>_WITH_<cipher>` becomes OpenSSL's `<kx>-<cipher>` (`TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`
 * is `ECDHE-RSA-AES256-GCM-SHA384`). An empty list: node's defaults.
 */
export function sslCipherSuites(keys: SslKeySource): SslStoreOptions {
  const suites = listOf(keys, 'ssl.cipher.suites')
  if (suites.length === 0) return {}
  return { ciphers: suites.map(openSslCipherName).join(':') }
}

export function openSslCipherName(iana: string): string {
  const m = /^TLS_(.+)_WITH_(.+)$/.exec(iana)
  if (m === null) return iana
  const kx = m[1] === 'RSA' ? '' : `${m[1]!.replace(/_/g, '-')}-`
  const cipher = m[2]!
    .replace(/^AES_(\d+)_/, 'AES$1-')
    .replace(/^CHACHA20_POLY1305_SHA256$/, 'CHACHA20-POLY1305')
    .replace(/_/g, '-')
  return `${kx}${cipher}`
}
