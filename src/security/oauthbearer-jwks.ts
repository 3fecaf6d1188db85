/**
 * Signed OAuth tokens checked against a JWKS, as Kafka's OAuthBearerValidatorCallbackHandler with
 * ValidatorAccessTokenValidator (jose4j): signature by a key of the set (asymmetric algorithms
 * only, never `none`), `exp` and `iat` required, `sasl.oauthbearer.expected.audience` and
 * `.expected.issuer`, `sasl.oauthbearer.clock.skew.seconds`, the subject and scope claims named by
 * `sasl.oauthbearer.sub.claim.name` and `.scope.claim.name`. The JWS and claim checks are `jose`'s
 * (docs/decisions.md). `RefreshingJwks` keeps the key set, fetched through an injected function
 * and refreshed on the Clock as Kafka's RefreshingHttpsJwks.
 */
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTPayload, jwtVerify } from 'jose'
import type { Clock, TimerHandle } from '../io/index.ts'
import {
  type OAuthBearerToken,
  OAuthBearerValidationError,
  type OAuthBearerValidator,
} from './oauthbearer.ts'

/** The algorithms a JWKS key may sign with: jose4j's DISALLOW_NONE less the shared-secret HMACs. */
export const JWKS_ALGORITHMS: readonly string[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]

/** Where the validator finds keys: a `RefreshingJwks`, or a fixed set in tests. */
export interface JwksKeySource {
  keySet(): JSONWebKeySet
  /** Called when no key matched a token's `kid`; may schedule an early refresh. */
  maybeExpediteRefresh?(keyId: string): boolean
}

export interface JwksValidatorOptions {
  readonly keys: JwksKeySource
  /** `sasl.oauthbearer.expected.audience`; empty: a token with an `aud` claim is refused (jose4j). */
  readonly expectedAudiences?: readonly string[]
  /** `sasl.oauthbearer.expected.issuer`, or null for any. */
  readonly expectedIssuer?: string | null
  /** `sasl.oauthbearer.sub.claim.name`, default `sub`. */
  readonly subClaimName?: string
  /** `sasl.oauthbearer.scope.claim.name`, default `scope`. */
  readonly scopeClaimName?: string
  /** `sasl.oauthbearer.clock.skew.seconds`, default 30. */
  readonly clockSkewSeconds?: number
  readonly nowMs: () => number
}

/** SerializedJwt: three non-empty sections. */
function checkSerialized(token: string): string {
  const trimmed = token.trim()
  if (trimmed === '') {
    throw new OAuthBearerValidationError(
      'Empty JWT provided; expected three sections (header, payload, and signature)',
    )
  }
  const sections = trimmed.split('.')
  if (sections.length !== 3) {
    throw new OAuthBearerValidationError(
      `Malformed JWT provided; expected three sections (header, payload, and signature), but ${sections.length} sections provided`,
    )
  }
  const names = ['header', 'payload', 'signature']
  sections.forEach((section, i) => {
    if (section.trim() === '') {
      throw new OAuthBearerValidationError(
        `Malformed JWT provided; expected at least three sections (header, payload, and signature), but ${names[i]} section missing`,
      )
    }
  })
  return trimmed
}

/** ClaimValidationUtils.validateString. */
function checkString(name: string, value: unknown): string {
  if (value === undefined || value === null)
    throw new OAuthBearerValidationError(`${name} value must be non-null`)
  if (typeof value !== 'string') {
    throw new OAuthBearerValidationError(`Could not extract the '${name}' claim from the access token`)
  }
  if (value === '') throw new OAuthBearerValidationError(`${name} value must be non-empty`)
  if (value.trim() === '')
    throw new OAuthBearerValidationError(`${name} value must not contain only whitespace`)
  return value.trim()
}

/** A string is one scope item, an array its items, anything else none; no duplicates. */
function scopeOf(payload: JWTPayload, name: string): Set<string> {
  const raw = payload[name]
  const items = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw : []
  const scope = new Set<string>()
  for (const item of items) {
    const value = checkString(name, item)
    if (scope.has(value)) {
      throw new OAuthBearerValidationError(
        `${name} value must not contain duplicates - ${value} already present`,
      )
    }
    scope.add(value)
  }
  return scope
}

function tokenFrom(payload: JWTPayload, subClaimName: string, scopeClaimName: string): OAuthBearerToken {
  const scope = scopeOf(payload, scopeClaimName)
  const exp = payload.exp!
  if (exp < 0)
    throw new OAuthBearerValidationError(`exp value must be non-negative; value given was "${exp}"`)
  const principalName = checkString(subClaimName, payload[subClaimName])
  const iat = payload.iat ?? null
  if (iat !== null && iat < 0) {
    throw new OAuthBearerValidationError(`iat value must be null or non-negative; value given was "${iat}"`)
  }
  return { principalName, lifetimeMs: exp * 1000, startTimeMs: iat === null ? null : iat * 1000, scope }
}

/** Caches jose's key lookup per key set, so each key is imported once. */
class KeyLookup {
  readonly #source: JwksKeySource
  #set: JSONWebKeySet | null = null
  #lookup: ReturnType<typeof createLocalJWKSet> | null = null

  constructor(source: JwksKeySource) {
    this.#source = source
  }

  current(): ReturnType<typeof createLocalJWKSet> {
    const set = this.#source.keySet()
    if (set !== this.#set || this.#lookup === null) {
      this.#set = set
      this.#lookup = createLocalJWKSet(set)
    }
    return this.#lookup
  }
}

function describeJoseError(error: unknown): OAuthBearerValidationError {
  if (error instanceof OAuthBearerValidationError) return error
  const detail = error instanceof errors.JOSEError ? `${error.code}: ${error.message}` : 'unexpected error'
  return new OAuthBearerValidationError(`Could not validate the access token: ${detail}`)
}

/** The validator for signed tokens (`OAuthBearerValidatorCallbackHandler`). */
export function jwksValidator(options: JwksValidatorOptions): OAuthBearerValidator {
  const lookup = new KeyLookup(options.keys)
  const audiences = options.expectedAudiences ?? []
  return {
    async validate(token) {
      try {
        const serialized = checkSerialized(token)
        const { payload } = await jwtVerify(serialized, (header, jws) => lookup.current()(header, jws), {
          algorithms: [...JWKS_ALGORITHMS],
          ...(audiences.length > 0 ? { audience: [...audiences] } : {}),
          ...(options.expectedIssuer != null ? { issuer: options.expectedIssuer } : {}),
          clockTolerance: options.clockSkewSeconds ?? 30,
          currentDate: new Date(options.nowMs()),
          requiredClaims: ['exp', 'iat'],
        })
        if (audiences.length === 0 && payload.aud !== undefined) {
          throw new OAuthBearerValidationError(
            'Audience (aud) claim present in the JWT but no expected audience value(s) were provided',
          )
        }
        return tokenFrom(payload, options.subClaimName ?? 'sub', options.scopeClaimName ?? 'scope')
      } catch (error) {
        if (error instanceof errors.JWKSNoMatchingKey || error instanceof JwksUnavailableError) {
          expedite(options.keys, token)
        }
        throw describeJoseError(error)
      }
    },
  }
}

function expedite(keys: JwksKeySource, token: string): void {
  const header = token.trim().split('.')[0] ?? ''
  try {
    const kid: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')).kid
    if (typeof kid === 'string') keys.maybeExpediteRefresh?.(kid)
  } catch {
    // No readable header: nothing to refresh for.
  }
}

// ---------------------------------------------------------------------------------------------

/** Fetches the JWKS document (the broker wires an HTTP GET of `sasl.oauthbearer.jwks.endpoint.url`). */
export type JwksFetcher = () => Promise<unknown>

export interface RefreshingJwksOptions {
  readonly fetch: JwksFetcher
  readonly clock: Clock
  /** `sasl.oauthbearer.jwks.endpoint.refresh.ms`, default one hour. */
  readonly refreshMs?: number
  /** `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`, default 100. */
  readonly retryBackoffMs?: number
  /** `sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms`, default 10000: the whole retry's budget. */
  readonly retryBackoffMsMax?: number
}

/** No key set yet: the first fetch has not succeeded (RefreshingHttpsJwks before its init). */
export class JwksUnavailableError extends OAuthBearerValidationError {
  override name = 'JwksUnavailableError'
}

/** RefreshingHttpsJwks's limits on early refreshes for unknown key ids. */
const MISSING_KEY_IDS_MAX = 16
const MISSING_KEY_ID_IN_FLIGHT_MS = 60_000
const MISSING_KEY_ID_CHARS_MAX = 1000

function isKeySet(value: unknown): value is JSONWebKeySet {
  return typeof value === 'object' && value !== null && Array.isArray((value as { keys?: unknown }).keys)
}

/**
 * The key set of a JWKS endpoint, fetched on `init()`, refreshed every `refreshMs`, and early
 * (at most once a minute per key id, 16 ids remembered) when a token names a key it lacks. A
 * failed refresh retries with doubling backoff within `retryBackoffMsMax`, then keeps the old set.
 */
export class RefreshingJwks implements JwksKeySource {
  readonly #options: RefreshingJwksOptions
  #keys: JSONWebKeySet | null = null
  #timer: TimerHandle | null = null
  #refreshing = false
  #closed = false
  /** Why the last fetch failed, for the refusal's log line (never the document itself). */
  #lastError: string | null = null
  /** Key id -> monotonic ms before which no early refresh is made for it again; oldest first. */
  readonly #missingKeyIds = new Map<string, number>()

  constructor(options: RefreshingJwksOptions) {
    const refreshMs = options.refreshMs ?? 3_600_000
    if (!(refreshMs > 0)) {
      throw new RangeError(
        'JWKS validation key refresh configuration value retryWaitMs value must be positive',
      )
    }
    this.#options = options
  }

  /** The first fetch; rejects if it fails or is not a key set. Then refreshes on the clock. */
  async init(): Promise<void> {
    this.#keys = await this.#fetchKeySet()
    if (this.#timer === null) this.#schedule(this.#options.refreshMs ?? 3_600_000)
  }

  /**
   * The broker's start: the first fetch (with retries) in the background, then refreshes on the
   * clock whether it succeeded or not. Until a set arrives, `keySet()` throws JwksUnavailableError
   * (logins are refused) and each unknown key id asks for an early refresh.
   */
  start(): void {
    void this.refresh()
    if (this.#timer === null) this.#schedule(this.#options.refreshMs ?? 3_600_000)
  }

  keySet(): JSONWebKeySet {
    if (this.#keys === null) {
      const cause = this.#lastError === null ? '' : ` (${this.#lastError})`
      throw new JwksUnavailableError(`Refreshing JWKs was not initialized${cause}`)
    }
    return this.#keys
  }

  maybeExpediteRefresh(keyId: string): boolean {
    if (keyId.length > MISSING_KEY_ID_CHARS_MAX) return false
    const nowMs = this.#options.clock.monotonicMs()
    const next = this.#missingKeyIds.get(keyId)
    if (next !== undefined && next > nowMs) return false
    this.#missingKeyIds.delete(keyId)
    this.#missingKeyIds.set(keyId, nowMs + MISSING_KEY_ID_IN_FLIGHT_MS)
    while (this.#missingKeyIds.size > MISSING_KEY_IDS_MAX) {
      this.#missingKeyIds.delete(this.#missingKeyIds.keys().next().value!)
    }
    void this.refresh()
    return true
  }

  /** Refresh now, with retries; never rejects. Resolves once the set was replaced or given up on. */
  async refresh(): Promise<void> {
    if (this.#refreshing || this.#closed) return
    this.#refreshing = true
    try {
      const keys = await this.#fetchWithRetry()
      if (keys === null) return
      for (const key of keys.keys) if (typeof key.kid === 'string') this.#missingKeyIds.delete(key.kid)
      this.#keys = keys
    } finally {
      this.#refreshing = false
    }
  }

  close(): void {
    this.#closed = true
    if (this.#timer !== null) this.#options.clock.clearTimer(this.#timer)
    this.#timer = null
  }

  async #fetchKeySet(): Promise<JSONWebKeySet> {
    try {
      const document = await this.#options.fetch()
      if (!isKeySet(document)) throw new Error('Could not refresh JWKS: not a JSON Web Key Set')
      this.#lastError = null
      return document
    } catch (error) {
      this.#lastError = error instanceof Error ? error.message : 'Could not refresh JWKS'
      throw error
    }
  }

  /** Kafka's Retry: waits of retryBackoffMs doubling, all within retryBackoffMsMax; null if all failed. */
  async #fetchWithRetry(): Promise<JSONWebKeySet | null> {
    const clock = this.#options.clock
    const endMs = clock.monotonicMs() + (this.#options.retryBackoffMsMax ?? 10_000)
    let waitMs = this.#options.retryBackoffMs ?? 100
    for (;;) {
      try {
        return await this.#fetchKeySet()
      } catch {
        const leftMs = endMs - clock.monotonicMs()
        if (leftMs <= 0 || this.#closed) return null
        await new Promise<void>((resolve) => clock.setTimer(Math.min(waitMs, leftMs), resolve))
        waitMs *= 2
      }
    }
  }

  #schedule(delayMs: number): void {
    if (this.#closed) return
    this.#timer = this.#options.clock.setTimer(delayMs, () => {
      void this.refresh().then(() => this.#schedule(delayMs))
    })
  }
}
