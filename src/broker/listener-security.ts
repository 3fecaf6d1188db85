/**
 * A listener's TLS and SASL settings from the broker configs, by Kafka's names: each key read
 * first as `listener.name.<lower-case name>.<key>` (and, for the SASL keys of one mechanism,
 * `listener.name.<name>.<mechanism>.<key>`), then as the key itself. Files are read here, once, at
 * start. Refusals are StartupErrors that name the key and never hold a password or a key.
 */
import { readFileSync } from 'node:fs'
import type { TlsOptions } from 'node:tls'
import {
  type ClientSecurity,
  ClientSecurityError,
  openSslCipherName,
  saslCredentials,
  sslCipherSuites,
  sslKeystore,
  sslProtocolVersions,
  sslTruststore,
  tlsClientOptions,
} from '../client/index.ts'
import { brokerConfigDef, type ConfigLayer, type EffectiveConfig } from '../config/index.ts'
import type { Clock, Random } from '../io/index.ts'
import {
  createSaslServer,
  enabledSaslMechanisms,
  isSaslMechanism,
  JaasConfigError,
  jwksValidator,
  OAuthBearerConfigError,
  type OAuthBearerValidator,
  parseServerJaasConfig,
  plainAuthenticatorFromUsers,
  plainUsersFromJaas,
  RefreshingJwks,
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
import { JwksEndpointError, jwksEndpointFetcher, parseJwksEndpointUrl } from './oauthbearer-jwks-endpoint.ts'

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
 * How this node's own connections to a listener are secured, as Kafka's inter-broker and controller
 * clients are: the listener's security protocol; for TLS its `ssl.*` keys as a client's (the
 * truststore, the keystore as the client certificate, `ssl.endpoint.identification.algorithm`);
 * for SASL the mechanism `mechanismKey` names, with the `username` and `password` of the listener's
 * `listener.name.<l>.<mechanism>.sasl.jaas.config` (the server's own JAAS config, as KafkaServer's).
 */
export function outgoingSecurity(
  listener: { readonly name: string; readonly protocolName: ListenerSpec['protocolName'] },
  mechanismKey: 'sasl.mechanism.inter.broker.protocol' | 'sasl.mechanism.controller.protocol',
  sources: Pick<ListenerSecuritySources, 'staticBroker' | 'effective' | 'readFile'>,
): ClientSecurity {
  const keys = new ListenerKeys(listener.name, sources)
  const protocol = listener.protocolName
  const read = sources.readFile ?? ((path: string) => readFileSync(path))
  return withListenerName(keys, () => {
    const tls = protocol === 'SSL' || protocol === 'SASL_SSL' ? tlsClientOptions(keys, read) : null
    if (protocol !== 'SASL_PLAINTEXT' && protocol !== 'SASL_SSL') return { protocol, tls, sasl: null }
    const mechanism = sources.effective.text(mechanismKey) ?? 'GSSAPI'
    const jaasKey = `${keys.prefix}${mechanism.toLowerCase()}.sasl.jaas.config`
    const jaas = keys.ofMechanism('sasl.jaas.config', mechanism)
    return { protocol, tls, sasl: saslCredentials(mechanism, mechanismKey, jaas, jaasKey) }
  })
}

/**
 * How the node's web console connects to one of its own listeners: that listener's TLS as a
 * client trusts it (its truststore), and for a SASL listener the password mechanism users log in
 * with (the first of its sasl.enabled.mechanisms that takes a password), never the broker's own
 * credentials. Null when the listener enables only mechanisms without a password (OAUTHBEARER).
 */
export function consoleSecurity(
  listener: { readonly name: string; readonly protocolName: ListenerSpec['protocolName'] },
  sources: Pick<ListenerSecuritySources, 'staticBroker' | 'effective' | 'readFile'>,
): { security: ClientSecurity; credentials: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | null } | null {
  const keys = new ListenerKeys(listener.name, sources)
  const protocol = listener.protocolName
  const read = sources.readFile ?? ((path: string) => readFileSync(path))
  return withListenerName(keys, () => {
    const tls = protocol === 'SSL' || protocol === 'SASL_SSL' ? tlsClientOptions(keys, read) : null
    const security: ClientSecurity = { protocol, tls, sasl: null }
    if (protocol !== 'SASL_PLAINTEXT' && protocol !== 'SASL_SSL') return { security, credentials: null }
    const enabled = keys.list('sasl.enabled.mechanisms')
    const credentials = (['PLAIN', 'SCRAM-SHA-512', 'SCRAM-SHA-256'] as const).find((m) =>
      enabled.includes(m),
    )
    return credentials === undefined ? null : { security, credentials }
  })
}

/**
 * An SSL or SASL_SSL listener's TLS alone, from `sources` (for a reload: the static layer with the
 * dynamic broker configs over it); throws ListenerSecurityError as at start.
 */
export function listenerTlsOf(
  spec: Pick<ListenerSpec, 'name'>,
  sources: ListenerSecuritySources,
): ListenerTls {
  return listenerTls(new ListenerKeys(spec.name, sources), sources)
}

/** The keys of one listener: its prefixed value first, then the broker-wide one. */
class ListenerKeys {
  readonly name: string
  readonly prefix: string
  readonly #sources: Pick<ListenerSecuritySources, 'staticBroker' | 'effective'>

  constructor(listenerName: string, sources: Pick<ListenerSecuritySources, 'staticBroker' | 'effective'>) {
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
  const options: TlsOptions = withListenerName(keys, () => ({
    ...sslKeystore(keys, read, true),
    ...sslTruststore(keys, read),
    ...sslProtocolVersions(keys),
    ...sslCipherSuites(keys),
  }))
  return { options, clientAuth: clientAuth as SslClientAuth, principalMapper }
}

/** The client-side readers' errors (the same `ssl.*` keys) as this listener's. */
function withListenerName<T>(keys: ListenerKeys, read: () => T): T {
  try {
    return read()
  } catch (e) {
    if (!(e instanceof ClientSecurityError)) throw e
    throw new ListenerSecurityError(`listener ${keys.name}: ${e.message}`)
  }
}

export { openSslCipherName }

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
  const closers: (() => void)[] = []
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
      config.oauthbearer = { validator: oauthValidator(keys, jaas, sources.clock, closers) }
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
    ...(closers.length === 0
      ? {}
      : {
          close: () => {
            for (const close of closers) close()
          },
        }),
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

/** Kafka 4's validator of signed tokens; the unsecured one is Kafka's default for OAUTHBEARER. */
const OAUTHBEARER_VALIDATOR_HANDLER =
  'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler'
const OAUTHBEARER_UNSECURED_HANDLER =
  'org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler'

/**
 * `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`: Kafka's unsecured validator
 * (the default), or OAuthBearerValidatorCallbackHandler with the `sasl.oauthbearer.*` keys. Its key
 * set is fetched in the background from the start; until it arrives, logins are refused.
 */
function oauthValidator(
  keys: ListenerKeys,
  jaas: ReturnType<typeof jaasEntry>,
  clock: Clock,
  closers: (() => void)[],
): OAuthBearerValidator {
  const handlerKey = `${keys.prefix}oauthbearer.sasl.server.callback.handler.class`
  const handler = keys.text('sasl.server.callback.handler.class', 'OAUTHBEARER')
  if (handler === OAUTHBEARER_VALIDATOR_HANDLER) return jwksOauthValidator(keys, clock, closers)
  if (handler !== null && handler !== OAUTHBEARER_UNSECURED_HANDLER) {
    throw new ListenerSecurityError(
      `${handlerKey}: ${handler} is not supported (${OAUTHBEARER_VALIDATOR_HANDLER} or the unsecured validator)`,
    )
  }
  try {
    return unsecuredValidator(unsecuredValidatorOptionsFromJaas(jaas), () => clock.nowMs())
  } catch (e) {
    if (!(e instanceof OAuthBearerConfigError)) throw e
    throw new ListenerSecurityError(`${keys.prefix}oauthbearer.sasl.jaas.config: ${e.message}`)
  }
}

/** A non-negative whole number of a `sasl.oauthbearer.*` key, or its default. */
function oauthNumber(keys: ListenerKeys, key: string, fallback: number, least: number): number {
  const text = keys.text(key, 'OAUTHBEARER')
  if (text === null) return fallback
  const value = Number(text.trim())
  if (!Number.isSafeInteger(value) || value < least) {
    throw new ListenerSecurityError(`${keys.named(key)}: ${text} is not a whole number of at least ${least}`)
  }
  return value
}

function jwksOauthValidator(keys: ListenerKeys, clock: Clock, closers: (() => void)[]): OAuthBearerValidator {
  const urlKey = 'sasl.oauthbearer.jwks.endpoint.url'
  const urlText = keys.text(urlKey, 'OAUTHBEARER')
  if (urlText === null || urlText.trim() === '') {
    throw new ListenerSecurityError(
      `listener ${keys.name}: The OAuth configuration option ${urlKey} must be set for ${OAUTHBEARER_VALIDATOR_HANDLER}`,
    )
  }
  let url: URL
  try {
    url = parseJwksEndpointUrl(urlText.trim())
  } catch (e) {
    if (!(e instanceof JwksEndpointError)) throw e
    throw new ListenerSecurityError(`${keys.named(urlKey)}: ${e.message}`)
  }
  const jwks = new RefreshingJwks({
    fetch: jwksEndpointFetcher(url),
    clock,
    refreshMs: oauthNumber(keys, 'sasl.oauthbearer.jwks.endpoint.refresh.ms', 3_600_000, 1),
    retryBackoffMs: oauthNumber(keys, 'sasl.oauthbearer.jwks.endpoint.retry.backoff.ms', 100, 0),
    retryBackoffMsMax: oauthNumber(keys, 'sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms', 10_000, 0),
  })
  const audiences = (keys.text('sasl.oauthbearer.expected.audience', 'OAUTHBEARER') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '')
  const validator = jwksValidator({
    keys: jwks,
    expectedAudiences: audiences,
    expectedIssuer: keys.text('sasl.oauthbearer.expected.issuer', 'OAUTHBEARER'),
    subClaimName: keys.text('sasl.oauthbearer.sub.claim.name', 'OAUTHBEARER') ?? 'sub',
    scopeClaimName: keys.text('sasl.oauthbearer.scope.claim.name', 'OAUTHBEARER') ?? 'scope',
    clockSkewSeconds: oauthNumber(keys, 'sasl.oauthbearer.clock.skew.seconds', 30, 0),
    nowMs: () => clock.nowMs(),
  })
  jwks.start()
  closers.push(() => jwks.close())
  return validator
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
