/**
 * A listener's TLS and SASL settings from the broker configs, by Kafka's names: each key read
 * first as `listener.name.<lower-case name>.<key>` (and, for the SASL keys of one mechanism,
 * `listener.name.<name>.<mechanism>.<key>`), then as the key itself. Files are read here, once, at
 * start. Refusals are StartupErrors that name the key and never hold a password or a key.
 */
import { readFileSync } from 'node:fs'
import type { SecureVersion, TlsOptions } from 'node:tls'
import { brokerConfigDef, type ConfigLayer, type EffectiveConfig } from '../config/index.ts'
import type { Clock, Random } from '../io/index.ts'
import {
  createSaslServer,
  enabledSaslMechanisms,
  isSaslMechanism,
  JaasConfigError,
  OAuthBearerConfigError,
  parseServerJaasConfig,
  plainAuthenticatorFromUsers,
  plainUsersFromJaas,
  type SaslMechanism,
  type SaslServerConfig,
  type ScramCredentialLookup,
  type ScramMechanism,
  SslPrincipalMapper,
  SslPrincipalRuleError,
  unsecuredValidator,
  unsecuredValidatorOptionsFromJaas,
} from '../security/index.ts'
import type { ListenerTls, SaslListenerOptions, SslClientAuth } from '../server/index.ts'
import type { ListenerSpec } from './node-config.ts'

export class ListenerSecurityError extends Error {
  override name = 'ListenerSecurityError'
}

export interface ListenerSecuritySources {
  /** server.properties with `--set`: where the `listener.name.` keys are. */
  readonly staticBroker: ConfigLayer
  readonly effective: EffectiveConfig
  readonly clock: Clock
  readonly random: Random
  readonly scramCredential: ScramCredentialLookup
  /** Reads a keystore or truststore file (default: readFileSync). */
  readonly readFile?: (path: string) => Buffer
}

export interface ListenerSecurity {
  readonly tls?: ListenerTls
  readonly sasl?: SaslListenerOptions
}

/** The TLS and SASL of one listener; none for PLAINTEXT. */
export function listenerSecurity(spec: ListenerSpec, sources: ListenerSecuritySources): ListenerSecurity {
  const keys = new ListenerKeys(spec.name, sources)
  const protocol = spec.protocolName
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL' ? listenerTls(keys, sources) : undefined
  const sasl =
    protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL' ? listenerSasl(keys, sources) : undefined
  return { ...(tls === undefined ? {} : { tls }), ...(sasl === undefined ? {} : { sasl }) }
}

/**
 * An SSL or SASL_SSL listener's TLS alone, from `sources` (for a reload: the static layer with the
 * dynamic broker configs over it); throws ListenerSecurityError as at start.
 */
export function listenerTlsOf(spec: ListenerSpec, sources: ListenerSecuritySources): ListenerTls {
  return listenerTls(new ListenerKeys(spec.name, sources), sources)
}

/** The keys of one listener: its prefixed value first, then the broker-wide one. */
class ListenerKeys {
  readonly name: string
  readonly prefix: string
  readonly #sources: ListenerSecuritySources

  constructor(listenerName: string, sources: ListenerSecuritySources) {
    this.name = listenerName
    this.prefix = `listener.name.${listenerName.toLowerCase()}.`
    this.#sources = sources
  }

  /** The text of `key`, or null when neither the listener's nor the broker's is set. */
  text(key: string, mechanism?: string): string | null {
    const layer = this.#sources.staticBroker
    if (mechanism !== undefined) {
      const own = layer.get(`${this.prefix}${mechanism.toLowerCase()}.${key}`)
      if (own !== undefined) return own
    }
    const prefixed = layer.get(`${this.prefix}${key}`)
    if (prefixed !== undefined) return prefixed
    return this.#sources.effective.text(key)
  }

  /** The listener-and-mechanism key itself (`listener.name.<l>.<mechanism>.<key>`), or null. */
  ofMechanism(key: string, mechanism: string): string | null {
    return this.#sources.staticBroker.get(`${this.prefix}${mechanism.toLowerCase()}.${key}`) ?? null
  }

  list(key: string): string[] {
    return (this.text(key) ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
  }

  /** The key as the listener's error messages name it. */
  named(key: string): string {
    return this.#sources.staticBroker.has(`${this.prefix}${key}`) ? `${this.prefix}${key}` : key
  }
}

// ---------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------

function listenerTls(keys: ListenerKeys, sources: ListenerSecuritySources): ListenerTls {
  const read = sources.readFile ?? ((path: string) => readFileSync(path))
  const clientAuth = keys.text('ssl.client.auth') ?? 'none'
  if (clientAuth !== 'none' && clientAuth !== 'requested' && clientAuth !== 'required') {
    throw new ListenerSecurityError(
      `${keys.named('ssl.client.auth')}: ${clientAuth} is not none, requested or required`,
    )
  }
  let principalMapper: SslPrincipalMapper
  try {
    principalMapper = SslPrincipalMapper.fromRules(keys.text('ssl.principal.mapping.rules') ?? undefined)
  } catch (e) {
    if (!(e instanceof SslPrincipalRuleError)) throw e
    throw new ListenerSecurityError(`${keys.named('ssl.principal.mapping.rules')}: ${e.message}`)
  }
  const options: TlsOptions = {
    ...keystore(keys, read),
    ...truststore(keys, read),
    ...protocolVersions(keys),
    ...cipherSuites(keys),
  }
  return { options, clientAuth: clientAuth as SslClientAuth, principalMapper }
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

function unsupportedStoreType(key: string, type: string): ListenerSecurityError {
  return new ListenerSecurityError(
    `${key}: ${type} is not supported; use PEM${key.endsWith('keystore.type') ? ' or PKCS12' : ''} (docs/security.md)`,
  )
}

/** `ssl.keystore.*` and `ssl.key.password`: PKCS12 (node's pfx) or PEM per KIP-651. */
function keystore(keys: ListenerKeys, read: (path: string) => Buffer): TlsOptions {
  const location = keys.text('ssl.keystore.location')
  const inlineKey = keys.text('ssl.keystore.key')
  const inlineChain = keys.text('ssl.keystore.certificate.chain')
  const storePassword = keys.text('ssl.keystore.password')
  const keyPassword = keys.text('ssl.key.password')
  const typeKey = keys.named('ssl.keystore.type')
  const type = (keys.text('ssl.keystore.type') ?? 'JKS').toUpperCase()
  const passphrase = keyPassword === null ? {} : { passphrase: keyPassword }
  if (inlineKey !== null || inlineChain !== null) {
    if (type !== 'PEM') throw new ListenerSecurityError(`${typeKey} must be PEM with ssl.keystore.key`)
    if (inlineKey === null || inlineChain === null) {
      throw new ListenerSecurityError(
        `listener ${keys.name}: ssl.keystore.key and ssl.keystore.certificate.chain are set together`,
      )
    }
    return { key: inlineKey, cert: inlineChain, ...passphrase }
  }
  if (location === null) {
    throw new ListenerSecurityError(
      `listener ${keys.name} uses TLS: set ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain)`,
    )
  }
  const bytes = readStore(read, keys.named('ssl.keystore.location'), location)
  if (type === 'PKCS12') {
    return { pfx: bytes, ...(storePassword === null ? {} : { passphrase: storePassword }) }
  }
  if (type !== 'PEM') throw unsupportedStoreType(typeKey, type)
  if (storePassword !== null) {
    throw new ListenerSecurityError(
      'SSL key store password cannot be specified with PEM format, only key password may be specified',
    )
  }
  const blocks = pemBlocks(bytes.toString('utf8'))
  if (blocks.keys.length !== 1 || blocks.certificates.length === 0) {
    throw new ListenerSecurityError(
      `${keys.named('ssl.keystore.location')}: a PEM key store holds one private key and its certificate chain`,
    )
  }
  return { key: blocks.keys[0]!, cert: blocks.certificates.join('\n'), ...passphrase }
}

/** `ssl.truststore.*`: the CAs a client certificate is verified against (PEM). */
function truststore(keys: ListenerKeys, read: (path: string) => Buffer): TlsOptions {
  const location = keys.text('ssl.truststore.location')
  const inline = keys.text('ssl.truststore.certificates')
  const typeKey = keys.named('ssl.truststore.type')
  const type = (keys.text('ssl.truststore.type') ?? 'JKS').toUpperCase()
  if (inline !== null) {
    if (type !== 'PEM')
      throw new ListenerSecurityError(`${typeKey} must be PEM with ssl.truststore.certificates`)
    return { ca: pemBlocks(inline).certificates }
  }
  if (location === null) return {}
  if (type !== 'PEM') throw unsupportedStoreType(typeKey, type)
  const certificates = pemBlocks(
    readStore(read, keys.named('ssl.truststore.location'), location).toString('utf8'),
  ).certificates
  if (certificates.length === 0) {
    throw new ListenerSecurityError(
      `${keys.named('ssl.truststore.location')}: no PEM certificate in ${location}`,
    )
  }
  return { ca: certificates }
}

function readStore(read: (path: string) => Buffer, key: string, path: string): Buffer {
  try {
    return read(path)
  } catch (e) {
    throw new ListenerSecurityError(
      `${key}: cannot read ${path} (${(e as { code?: string }).code ?? 'error'})`,
    )
  }
}

const TLS_VERSIONS: readonly SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3']

/** `ssl.enabled.protocols` as node's min and max version (the span of the listed ones). */
function protocolVersions(keys: ListenerKeys): TlsOptions {
  const listed = keys.list('ssl.enabled.protocols')
  const indexes = listed.map((p) => {
    const i = TLS_VERSIONS.indexOf(p as SecureVersion)
    if (i < 0) {
      throw new ListenerSecurityError(`${keys.named('ssl.enabled.protocols')}: unknown protocol ${p}`)
    }
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
function cipherSuites(keys: ListenerKeys): TlsOptions {
  const suites = keys.list('ssl.cipher.suites')
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

// ---------------------------------------------------------------------------------------------
// SASL
// ---------------------------------------------------------------------------------------------

function listenerSasl(keys: ListenerKeys, sources: ListenerSecuritySources): SaslListenerOptions {
  const mechanisms = keys.list('sasl.enabled.mechanisms')
  if (mechanisms.length === 0) {
    throw new ListenerSecurityError(`listener ${keys.name}: sasl.enabled.mechanisms names no mechanism`)
  }
  const config: {
    -readonly [K in keyof SaslServerConfig]: SaslServerConfig[K]
  } = { clock: sources.clock, random: sources.random, connectionsReauthMsMax: {} }
  const reauth: Partial<Record<SaslMechanism, number>> = {}
  const scram: ScramMechanism[] = []
  for (const mechanism of mechanisms) {
    if (!isSaslMechanism(mechanism)) {
      throw new ListenerSecurityError(
        `listener ${keys.name}: SASL mechanism ${mechanism} is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are)`,
      )
    }
    const jaas = jaasEntry(keys, mechanism)
    reauth[mechanism] = Number(keys.text('connections.max.reauth.ms', mechanism) ?? '0')
    if (mechanism === 'PLAIN') {
      config.plain = { authenticate: plainAuthenticatorFromUsers(plainUsersFromJaas([jaas])) }
    } else if (mechanism === 'OAUTHBEARER') {
      config.oauthbearer = { validator: oauthValidator(keys, jaas, sources.clock) }
    } else {
      scram.push(mechanism)
    }
  }
  if (scram.length > 0) config.scram = { mechanisms: scram, credential: sources.scramCredential }
  config.connectionsReauthMsMax = reauth
  const enabled = enabledSaslMechanisms(config)
  return {
    mechanisms: mechanisms.filter((m) => (enabled as readonly string[]).includes(m)),
    newServer: (mechanism) => createSaslServer(mechanism, config),
    clock: sources.clock,
    failedAuthenticationDelayMs: sources.effective.int('connection.failed.authentication.delay.ms'),
  }
}

/** `listener.name.<l>.<mechanism>.sasl.jaas.config`: brokers take no other form (no JAAS files). */
function jaasEntry(keys: ListenerKeys, mechanism: string) {
  const key = `${keys.prefix}${mechanism.toLowerCase()}.sasl.jaas.config`
  const text = keys.ofMechanism('sasl.jaas.config', mechanism)
  if (text === null) {
    throw new ListenerSecurityError(
      `listener ${keys.name}: ${mechanism} needs ${key} (a broker reads no un-prefixed sasl.jaas.config and no JAAS file)`,
    )
  }
  try {
    return parseServerJaasConfig(text)
  } catch (e) {
    if (!(e instanceof JaasConfigError)) throw e
    throw new ListenerSecurityError(`${key}: ${e.message}`)
  }
}

function oauthValidator(keys: ListenerKeys, jaas: ReturnType<typeof jaasEntry>, clock: Clock) {
  try {
    return unsecuredValidator(unsecuredValidatorOptionsFromJaas(jaas), () => clock.nowMs())
  } catch (e) {
    if (!(e instanceof OAuthBearerConfigError)) throw e
    throw new ListenerSecurityError(`${keys.prefix}oauthbearer.sasl.jaas.config: ${e.message}`)
  }
}

/**
 * Whether `key` is a listener-prefixed form of a key Weir knows (`listener.name.<l>.ssl.keystore.location`,
 * `listener.name.<l>.plain.sasl.jaas.config`): not an unknown config.
 */
export function isListenerPrefixedKey(key: string): boolean {
  const m = /^listener\.name\.[^.]+\.(.+)$/.exec(key)
  if (m === null) return false
  const rest = m[1]!
  if (brokerConfigDef(rest) !== undefined) return true
  const mechanism = /^(?:plain|scram-sha-256|scram-sha-512|oauthbearer|gssapi)\.(.+)$/.exec(rest)
  return mechanism !== null && brokerConfigDef(mechanism[1]!) !== undefined
}
