import assert from 'node:assert/strict'
import { createHmac, generateKeyPairSync, type KeyObject, sign } from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ManualClock } from '../io/index.ts'
import { OAuthBearerSaslServer, OAuthBearerValidationError } from './oauthbearer.ts'
import { type JwksKeySource, jwksValidator, RefreshingJwks } from './oauthbearer-jwks.ts'

const NOW_MS = 1_700_000_000_000
const NOW_S = NOW_MS / 1000

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
const other = generateKeyPairSync('rsa', { modulusLength: 2048 })

const jwk = (key: KeyObject, kid: string, alg: string) => ({
  ...key.export({ format: 'jwk' }),
  kid,
  alg,
  use: 'sig',
})
const keySet = { keys: [jwk(rsa.publicKey, 'rsa1', 'RS256'), jwk(ec.publicKey, 'ec1', 'ES256')] }
const fixedKeys: JwksKeySource = { keySet: () => keySet }

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/** A JWS signed with node:crypto alone, independent of the library under test. */
function jwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject | null,
): string {
  const input = `${b64(header)}.${b64(claims)}`
  if (key === null) return `${input}.`
  const alg = header.alg as string
  const signature = alg.startsWith('ES')
    ? sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' })
    : sign('sha256', Buffer.from(input), key)
  return `${input}.${signature.toString('base64url')}`
}

const claims = {
  sub: 'alice',
  iss: 'https://issuer.example',
  aud: 'kafka',
  exp: NOW_S + 300,
  iat: NOW_S - 10,
  scope: 'produce',
}
const rs = (c: Record<string, unknown> = claims, key: KeyObject = rsa.privateKey, kid = 'rsa1') =>
  jwt({ alg: 'RS256', kid, typ: 'JWT' }, c, key)

const validator = jwksValidator({
  keys: fixedKeys,
  expectedAudiences: ['kafka', 'other'],
  expectedIssuer: 'https://issuer.example',
  clockSkewSeconds: 30,
  nowMs: () => NOW_MS,
})

async function refused(token: string, reason: RegExp, v = validator): Promise<void> {
  await assert.rejects(
    v.validate(token),
    (e: Error) =>
      e instanceof OAuthBearerValidationError && e.status === 'invalid_token' && reason.test(e.message),
  )
}

describe('jwksValidator', () => {
  it('accepts RS256 and ES256 tokens signed by a key of the set', async () => {
    const token = await validator.validate(rs())
    assert.equal(token.principalName, 'alice')
    assert.equal(token.lifetimeMs, (NOW_S + 300) * 1000)
    assert.equal(token.startTimeMs, (NOW_S - 10) * 1000)
    assert.deepEqual([...token.scope], ['produce'])
    const es = await validator.validate(
      jwt({ alg: 'ES256', kid: 'ec1' }, { ...claims, scope: ['a', 'b'] }, ec.privateKey),
    )
    assert.deepEqual([...es.scope], ['a', 'b'])
  })

  it('refuses expired, wrong-audience, wrong-issuer and badly signed tokens', async () => {
    await refused(rs({ ...claims, exp: NOW_S - 31 }), /ERR_JWT_EXPIRED/)
    await refused(rs({ ...claims, aud: 'someone-else' }), /aud/)
    await refused(rs({ ...claims, iss: 'https://evil.example' }), /iss/)
    await refused(rs(claims, other.privateKey), /ERR_JWS_SIGNATURE_VERIFICATION_FAILED/)
    const tampered = rs().split('.')
    await refused(`${tampered[0]}.${b64({ ...claims, sub: 'admin' })}.${tampered[2]}`, /SIGNATURE/)
  })

  it('refuses alg none and shared-secret HMAC tokens', async () => {
    await refused(jwt({ alg: 'none', kid: 'rsa1' }, claims, null), /section missing|ERR_JOSE_ALG_NOT_ALLOWED/)
    await refused(`${jwt({ alg: 'none', kid: 'rsa1' }, claims, null)}x`, /ERR_JOSE_ALG_NOT_ALLOWED/)
    const input = `${b64({ alg: 'HS256', kid: 'rsa1' })}.${b64(claims)}`
    const mac = createHmac('sha256', 'secret').update(input).digest('base64url')
    await refused(`${input}.${mac}`, /ERR_JOSE_ALG_NOT_ALLOWED/)
  })

  it('allows the clock skew, and requires exp and iat', async () => {
    await validator.validate(rs({ ...claims, exp: NOW_S - 20 }))
    await refused(rs({ ...claims, exp: undefined }), /exp/)
    await refused(rs({ ...claims, iat: undefined }), /iat/)
  })

  it('refuses a token with an audience when none is expected, as jose4j does', async () => {
    const open = jwksValidator({ keys: fixedKeys, nowMs: () => NOW_MS })
    await refused(rs(), /no expected audience/, open)
    const token = await open.validate(rs({ ...claims, aud: undefined, iss: 'anyone' }))
    assert.equal(token.principalName, 'alice')
  })

  it('reads the subject and scope claims it is told to, and checks them', async () => {
    const custom = jwksValidator({
      keys: fixedKeys,
      subClaimName: 'client_id',
      scopeClaimName: 'scp',
      nowMs: () => NOW_MS,
    })
    const base = { ...claims, aud: undefined }
    const token = await custom.validate(rs({ ...base, client_id: 'svc', scp: ['x'] }))
    assert.equal(token.principalName, 'svc')
    assert.deepEqual([...token.scope], ['x'])
    await refused(rs({ ...base, client_id: 'svc', scp: ['x', 'x'] }), /must not contain duplicates/, custom)
    await refused(rs({ ...base, client_id: ' ' }), /client_id value must not contain only whitespace/, custom)
    await refused(rs(base), /client_id value must be non-null/, custom)
    await refused(rs({ ...base, client_id: 5 }), /Could not extract the 'client_id' claim/, custom)
  })

  it("refuses malformed serializations with Kafka's messages", async () => {
    await refused('', /Empty JWT provided/)
    await refused('a.b', /but 2 sections provided/)
    await refused('a..c', /but payload section missing/)
    await refused('a.b.c', /Could not validate the access token/)
  })

  it('asks the key source for an early refresh when no key matches the kid', async () => {
    const asked: string[] = []
    const v = jwksValidator({
      keys: { keySet: () => keySet, maybeExpediteRefresh: (kid) => asked.push(kid) > 0 },
      expectedAudiences: ['kafka'],
      nowMs: () => NOW_MS,
    })
    await refused(rs(claims, other.privateKey, 'rotated'), /ERR_JWKS_NO_MATCHING_KEY/, v)
    assert.deepEqual(asked, ['rotated'])
  })

  it('serves a SASL exchange, and never rejects on any token (fuzz)', async () => {
    const server = () => new OAuthBearerSaslServer({ validator, nowMs: () => NOW_MS })
    const good = await server().evaluate(Buffer.from(`n,,\x01auth=Bearer ${rs()}\x01\x01`))
    assert.equal(good.kind === 'complete' && good.principal, 'alice')
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[A-Za-z0-9_.-]{0,80}$/), async (token) => {
        const step = await server().evaluate(Buffer.from(`n,,\x01auth=Bearer ${token}\x01\x01`))
        assert.ok(step.kind === 'challenge' || step.kind === 'failure')
      }),
      { numRuns: 300 },
    )
  })
})

/** Lets pending promise callbacks run (each fetch settles in a microtask or two). */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve()
}

describe('RefreshingJwks', () => {
  function source(responses: (() => unknown)[]) {
    let calls = 0
    const fetch = async () => {
      const next = responses[Math.min(calls, responses.length - 1)]!
      calls++
      return next()
    }
    return { fetch, calls: () => calls }
  }
  const setA = { keys: [{ kid: 'a' }] }
  const setB = { keys: [{ kid: 'b' }] }
  const fail = () => {
    throw new Error('unreachable')
  }

  it('fetches on init and refreshes every refreshMs on the clock', async () => {
    const clock = new ManualClock()
    const s = source([() => setA, () => setB])
    const jwks = new RefreshingJwks({ fetch: s.fetch, clock, refreshMs: 1000 })
    assert.throws(() => jwks.keySet(), /init/)
    await jwks.init()
    assert.equal(jwks.keySet(), setA)
    clock.advance(999)
    await settle()
    assert.equal(s.calls(), 1)
    clock.advance(1)
    await settle()
    assert.equal(jwks.keySet(), setB)
    jwks.close()
    clock.advance(5000)
    await settle()
    assert.equal(s.calls(), 2)
  })

  it('fails init on a fetch error or a document that is no key set', async () => {
    const clock = new ManualClock()
    await assert.rejects(new RefreshingJwks({ fetch: async () => fail(), clock }).init())
    await assert.rejects(
      new RefreshingJwks({ fetch: async () => ({ nokeys: 1 }), clock }).init(),
      /not a JSON Web Key Set/,
    )
    assert.throws(() => new RefreshingJwks({ fetch: async () => setA, clock, refreshMs: 0 }), RangeError)
  })

  it('retries a failed refresh with doubling backoff within the budget, keeping the old set', async () => {
    const clock = new ManualClock()
    const s = source([() => setA, fail, fail, fail, fail, fail, fail, () => setB])
    const jwks = new RefreshingJwks({ fetch: s.fetch, clock, retryBackoffMs: 100, retryBackoffMsMax: 350 })
    await jwks.init()
    const done = jwks.refresh()
    for (const ms of [100, 200, 50]) {
      await settle()
      clock.advance(ms)
    }
    await done
    // Attempts at 0, 100 (after 100), 300 (after 200), 350 (cut to the budget): then given up.
    assert.equal(s.calls(), 5)
    assert.equal(jwks.keySet(), setA)
    jwks.close()
  })

  it('refreshes early for an unknown key id at most once a minute per id', async () => {
    const clock = new ManualClock()
    const s = source([() => setA, () => setB])
    const jwks = new RefreshingJwks({ fetch: s.fetch, clock })
    await jwks.init()
    assert.equal(jwks.maybeExpediteRefresh('b'), true)
    await settle()
    assert.equal(jwks.keySet(), setB)
    assert.equal(jwks.maybeExpediteRefresh('x'), true)
    await settle()
    assert.equal(jwks.maybeExpediteRefresh('x'), false)
    clock.advance(60_000)
    assert.equal(jwks.maybeExpediteRefresh('x'), true)
    assert.equal(jwks.maybeExpediteRefresh('k'.repeat(1001)), false)
    jwks.close()
  })
})

describe('RefreshingJwks.start', () => {
  it('refuses logins until the first set arrives, and fetches again for the kid of a refused token', async () => {
    const clock = new ManualClock({ nowMs: NOW_MS })
    let calls = 0
    const fetch = async () => {
      calls++
      if (calls === 1) throw new Error('Could not refresh JWKS: ECONNREFUSED')
      return keySet
    }
    const jwks = new RefreshingJwks({ fetch, clock, retryBackoffMsMax: 0 })
    const v = jwksValidator({ keys: jwks, expectedAudiences: ['kafka'], nowMs: () => clock.nowMs() })
    jwks.start()
    await settle()
    assert.equal(calls, 1)
    await refused(rs(), /Refreshing JWKs was not initialized \(Could not refresh JWKS: ECONNREFUSED\)/, v)
    await settle()
    assert.equal(calls, 2)
    const token = await v.validate(rs())
    assert.equal(token.principalName, 'alice')
    jwks.close()
  })
})
