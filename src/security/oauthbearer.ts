/**
 * SASL/OAUTHBEARER's server side (RFC 7628), as Kafka's OAuthBearerSaslServer: the client's
 * initial response `n,[a=authzid],\x01auth=Bearer <token>\x01[key=value\x01]*\x01`, a token
 * validator, and on a bad token the JSON error challenge (`{"status":"invalid_token"}`) that the
 * client acknowledges with `\x01` before the failure. The unsecured-token validator
 * (OAuthBearerUnsecuredValidatorCallbackHandler) is here; the JWKS one is in `oauthbearer-jwks.ts`.
 */
import type { JaasEntry } from './jaas.ts'
import {
  failureFrom,
  illegalStateFailure,
  SaslError,
  type SaslServer,
  type SaslStep,
  saslComplete,
} from './sasl.ts'

export interface OAuthBearerInitialResponse {
  readonly authorizationId: string
  /** The token; a bearer secret, never to be logged. */
  readonly token: string
  /** The kvpairs other than `auth`. */
  readonly extensions: ReadonlyMap<string, string>
}

const SASLNAME = /^(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+$/
const KEY = /^[A-Za-z]+$/
const VALUE = /^[\x21-\x7e \t\r\n]+$/
const AUTH = /^(\w+) +([-_~+/.a-zA-Z0-9]+=*)$/

function invalid(detail = ''): SaslError {
  return new SaslError(`Invalid OAUTHBEARER client first message${detail}`)
}

function parseAuthzid(gs2: readonly string[]): string {
  if (gs2.length !== 3 || gs2[0] !== 'n' || gs2[2] !== '') throw invalid()
  const authzid = gs2[1]!
  if (authzid === '') return ''
  if (!authzid.startsWith('a=') || !SASLNAME.test(authzid.slice(2))) throw invalid()
  return authzid.slice(2)
}

/** `key=value` pairs, each ended by \x01; the last of a repeated key wins (Kafka's Utils.parseMap). */
function parseKvPairs(pairs: readonly string[]): Map<string, string> {
  const map = new Map<string, string>()
  for (const pair of pairs) {
    const eq = pair.indexOf('=')
    const key = pair.slice(0, eq)
    const value = pair.slice(eq + 1)
    if (eq < 0 || !KEY.test(key) || !VALUE.test(value)) throw invalid()
    map.set(key, value)
  }
  return map
}

/** Parse the client's initial response. Throws SaslError only. */
export function parseOAuthBearerInitialResponse(response: Buffer): OAuthBearerInitialResponse {
  for (const byte of response) if (byte >= 0x80) throw invalid()
  const text = response.toString('latin1')
  const separator = text.indexOf('\x01')
  if (separator < 0 || !text.endsWith('\x01\x01') || text.length < separator + 2) throw invalid()
  const authorizationId = parseAuthzid(text.slice(0, separator).split(','))
  const body = text.slice(separator + 1, -1)
  const pairs = body === '' ? [] : body.slice(0, -1).split('\x01')
  if (body !== '' && !body.endsWith('\x01')) throw invalid()
  const kv = parseKvPairs(pairs)
  const auth = kv.get('auth')
  if (auth === undefined) throw invalid(": 'auth' not specified")
  kv.delete('auth')
  const match = AUTH.exec(auth)
  if (match === null) throw invalid(": invalid 'auth' format")
  if (match[1]!.toLowerCase() !== 'bearer')
    throw new SaslError('Invalid scheme in OAUTHBEARER client first message')
  return { authorizationId, token: match[2]!, extensions: kv }
}

/** A validated token: what the session keeps. */
export interface OAuthBearerToken {
  readonly principalName: string
  /** The `exp` claim in ms: when the credential expires. */
  readonly lifetimeMs: number
  /** The `iat` claim in ms, or null. */
  readonly startTimeMs: number | null
  readonly scope: ReadonlySet<string>
}

/**
 * A token the validator refused: `status` and `scope` go into the JSON challenge (RFC 7628
 * section 3.2.2); `message` is for the debug log and holds no token.
 */
export class OAuthBearerValidationError extends Error {
  readonly status: 'invalid_token' | 'insufficient_scope'
  readonly scope: string | null

  constructor(
    message: string,
    status: 'invalid_token' | 'insufficient_scope' = 'invalid_token',
    scope: string | null = null,
  ) {
    super(message)
    this.name = 'OAuthBearerValidationError'
    this.status = status
    this.scope = scope
  }
}

/** Validates a token; rejects with OAuthBearerValidationError for a bad one. */
export interface OAuthBearerValidator {
  validate(token: string): Promise<OAuthBearerToken>
}

/** Kafka's jsonErrorResponse, byte for byte (its `, ` before each later member included). */
export function oauthBearerErrorJson(
  status: string,
  scope: string | null,
  openIdConfiguration: string | null = null,
): string {
  let json = `{"status":"${status}"`
  if (scope !== null) json += `, "scope":"${scope}"`
  if (openIdConfiguration !== null) json += `, "openid-configuration":"${openIdConfiguration}"`
  return `${json}}`
}

export interface OAuthBearerServerOptions {
  readonly validator: OAuthBearerValidator
  readonly nowMs: () => number
  readonly connectionsReauthMsMax?: number
}

export class OAuthBearerSaslServer implements SaslServer {
  readonly mechanism = 'OAUTHBEARER' as const
  readonly #options: OAuthBearerServerOptions
  #state: 'RECEIVE_RESPONSE' | 'COMPLETE' | 'FAILED' = 'RECEIVE_RESPONSE'
  /** The JSON error sent as the last challenge, awaiting the client's \x01. */
  #errorMessage: string | null = null
  /** Why the validator refused the token, for the failure's log reason (never sent to the client). */
  #refusal = ''

  constructor(options: OAuthBearerServerOptions) {
    this.#options = options
  }

  get isComplete(): boolean {
    return this.#state === 'COMPLETE'
  }

  async evaluate(response: Buffer): Promise<SaslStep> {
    if (this.#state !== 'RECEIVE_RESPONSE') return illegalStateFailure(this.mechanism, this.#state)
    try {
      if (response.length === 1 && response[0] === 0x01 && this.#errorMessage !== null) {
        this.#state = 'FAILED'
        const failure = failureFrom(
          new SaslError(this.#errorMessage, { clientVisible: true }),
          this.mechanism,
        )
        return { ...failure, reason: `${this.#errorMessage}: ${this.#refusal}` }
      }
      this.#errorMessage = null
      return await this.#process(parseOAuthBearerInitialResponse(response))
    } catch (error) {
      this.#state = 'FAILED'
      return failureFrom(error, this.mechanism)
    }
  }

  async #process(initial: OAuthBearerInitialResponse): Promise<SaslStep> {
    let token: OAuthBearerToken
    try {
      token = await this.#options.validator.validate(initial.token)
    } catch (error) {
      if (!(error instanceof OAuthBearerValidationError)) throw error
      this.#errorMessage = oauthBearerErrorJson(error.status, error.scope)
      this.#refusal = error.message
      return { kind: 'challenge', challenge: Buffer.from(this.#errorMessage, 'utf8') }
    }
    if (initial.authorizationId !== '' && initial.authorizationId !== token.principalName) {
      throw new SaslError(
        "Authentication failed: Client requested an authorization id that is different from the token's principal name",
        { clientVisible: true },
      )
    }
    this.#state = 'COMPLETE'
    return saslComplete(this.#options, token.principalName, token.lifetimeMs, undefined, initial.extensions)
  }
}

// ---------------------------------------------------------------------------------------------
// Unsecured tokens (alg "none"), for development: OAuthBearerUnsecuredValidatorCallbackHandler.
// ---------------------------------------------------------------------------------------------

export interface UnsecuredValidatorOptions {
  /** `unsecuredValidatorPrincipalClaimName`, default `sub`. */
  readonly principalClaimName: string
  /** `unsecuredValidatorScopeClaimName`, default `scope`. */
  readonly scopeClaimName: string
  /** `unsecuredValidatorRequiredScope`, space-separated. */
  readonly requiredScope: readonly string[]
  /** `unsecuredValidatorAllowableClockSkewMs`, default 0. */
  readonly clockSkewMs: number
}

/** A bad `unsecuredValidator*` option. */
export class OAuthBearerConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'OAuthBearerConfigError'
  }
}

const SCOPE_ITEM = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** OAuthBearerScopeUtils.parseScope. */
export function parseScope(spaceDelimited: string): string[] {
  const scope: string[] = []
  for (const item of spaceDelimited.split(' ')) {
    if (item === '') continue
    if (!SCOPE_ITEM.test(item)) throw new OAuthBearerConfigError(`Invalid scope value: ${item}`)
    scope.push(item)
  }
  return scope
}

function blankOr(value: string | undefined, fallback: string): string {
  return value === undefined || value.trim() === '' ? fallback : value.trim()
}

/** The validator's options from the OAuthBearerLoginModule's JAAS entry. */
export function unsecuredValidatorOptionsFromJaas(entry: JaasEntry): UnsecuredValidatorOptions {
  const skewText = blankOr(entry.options.get('unsecuredValidatorAllowableClockSkewMs'), '0')
  if (!/^[+-]?[0-9]{1,10}$/.test(skewText) || Math.abs(Number(skewText)) > 2 ** 31 - 1) {
    throw new OAuthBearerConfigError(`For input string: "${skewText}"`)
  }
  const clockSkewMs = Number(skewText)
  if (clockSkewMs < 0) {
    throw new OAuthBearerConfigError(`Allowable clock skew millis must not be negative: ${skewText}`)
  }
  const required = entry.options.get('unsecuredValidatorRequiredScope')
  return {
    principalClaimName: blankOr(entry.options.get('unsecuredValidatorPrincipalClaimName'), 'sub'),
    scopeClaimName: blankOr(entry.options.get('unsecuredValidatorScopeClaimName'), 'scope'),
    requiredScope: required === undefined || required.trim() === '' ? [] : parseScope(required.trim()),
    clockSkewMs,
  }
}

/** Either alphabet: RFC 7515 says base64url, Kafka 4.0 decodes with Java's basic (standard) decoder. */
const BASE64_EITHER = /^[A-Za-z0-9+/_-]*={0,2}$/

/** One JOSE section as a JSON object. */
function decodeSection(section: string): Record<string, unknown> {
  if (!BASE64_EITHER.test(section)) throw new OAuthBearerValidationError('malformed Base64 URL encoded value')
  let value: unknown
  try {
    // Node's base64 decoder reads both alphabets.
    value = JSON.parse(Buffer.from(section, 'base64').toString('utf8'))
  } catch {
    throw new OAuthBearerValidationError('malformed JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new OAuthBearerValidationError('malformed JSON')
  }
  return value as Record<string, unknown>
}

/** Header and claims of an unsecured JWS (`<header>.<claims>.`), checked as OAuthBearerUnsecuredJws. */
export function decodeUnsecuredJws(token: string): {
  header: Record<string, unknown>
  claims: Record<string, unknown>
} {
  if (token.includes('..'))
    throw new OAuthBearerValidationError("Malformed compact serialization contains '..'")
  const splits = token.split('.')
  if (splits.length !== 3) {
    throw new OAuthBearerValidationError(
      'Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values',
    )
  }
  const header = decodeSection(splits[0]!)
  const claims = decodeSection(splits[1]!)
  if (header.alg !== 'none')
    throw new OAuthBearerValidationError("Unsecured JWS must have 'none' for an algorithm")
  if (splits[2] !== '')
    throw new OAuthBearerValidationError('Unsecured JWS must not contain a digital signature')
  return { header, claims }
}

function numberClaim(claims: Record<string, unknown>, name: string): number | null {
  const value = claims[name]
  if (value === undefined || value === null) return null
  if (typeof value !== 'number')
    throw new OAuthBearerValidationError(`The '${name}' claim was not of type Number`)
  return value
}

/** The scope claim: a string is one scope item (as Kafka reads it), an array its items. */
function scopeClaim(claims: Record<string, unknown>, name: string): Set<string> {
  const value = claims[name]
  if (typeof value === 'string') return new Set(value.trim() === '' ? [] : [value.trim()])
  if (value === undefined || value === null) return new Set()
  if (!Array.isArray(value)) throw new OAuthBearerValidationError(`The '${name}' claim was not of type List`)
  const scope = new Set<string>()
  for (const item of value) {
    const text = typeof item === 'string' ? item : JSON.stringify(item)
    if (text.trim() !== '') scope.add(text.trim())
  }
  return scope
}

function checkTimes(exp: number, iat: number | null, nowMs: number, skewMs: number): void {
  if (iat !== null && 1000 * iat > nowMs + skewMs) {
    throw new OAuthBearerValidationError(
      `The Issued At value (${iat} seconds) was after the indicated time (${nowMs} ms) plus allowable clock skew (${skewMs} ms)`,
    )
  }
  if (nowMs - skewMs >= 1000 * exp) {
    throw new OAuthBearerValidationError(
      `The indicated time (${nowMs} ms) minus allowable clock skew (${skewMs} ms) was on or after the Expiration Time value (${exp} seconds)`,
    )
  }
  if (iat !== null && exp <= iat) {
    throw new OAuthBearerValidationError(
      `The Expiration Time time (${exp} seconds) was not after the Issued At time (${iat} seconds)`,
    )
  }
}

function checkScope(scope: ReadonlySet<string>, required: readonly string[]): void {
  for (const item of required) {
    if (!scope.has(item)) {
      throw new OAuthBearerValidationError(
        `The provided scope was missing a required scope (${item})`,
        'insufficient_scope',
        `[${required.join(', ')}]`,
      )
    }
  }
}

/** Kafka's unsecured validator: alg none, a string principal claim, `exp` required, skew, scope. */
export function unsecuredValidator(
  options: UnsecuredValidatorOptions,
  nowMs: () => number,
): OAuthBearerValidator {
  return {
    async validate(token) {
      const { claims } = decodeUnsecuredJws(token)
      const scope = scopeClaim(claims, options.scopeClaimName)
      const exp = numberClaim(claims, 'exp')
      if (exp === null) throw new OAuthBearerValidationError('No expiration time in JWT')
      const principal = claims[options.principalClaimName]
      if (principal !== undefined && typeof principal !== 'string') {
        throw new OAuthBearerValidationError(
          `The '${options.principalClaimName}' claim was not of type String`,
        )
      }
      if (principal === undefined || principal.trim() === '') {
        throw new OAuthBearerValidationError(`No principal name in JWT claim: ${options.principalClaimName}`)
      }
      const iat = numberClaim(claims, 'iat')
      checkTimes(exp, iat, nowMs(), options.clockSkewMs)
      checkScope(scope, options.requiredScope)
      return {
        principalName: principal,
        lifetimeMs: Math.round(exp * 1000),
        startTimeMs: iat === null ? null : Math.round(iat * 1000),
        scope,
      }
    },
  }
}
