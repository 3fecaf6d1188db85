import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ErrorCode } from '../protocol/index.ts'
import { parseJaasConfig } from './jaas.ts'
import {
  OAuthBearerConfigError,
  OAuthBearerSaslServer,
  OAuthBearerValidationError,
  type OAuthBearerValidator,
  oauthBearerErrorJson,
  parseOAuthBearerInitialResponse,
  parseScope,
  unsecuredValidator,
  unsecuredValidatorOptionsFromJaas,
} from './oauthbearer.ts'
import { SaslError } from './sasl.ts'

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const unsecured = (claims: Record<string, unknown>, header: Record<string, unknown> = { alg: 'none' }) =>
  `${b64(header)}.${b64(claims)}.`
const initial = (token: string, extra = '', gs2 = 'n,,') =>
  Buffer.from(`${gs2}\x01auth=Bearer ${token}\x01${extra}\x01`)

const NOW_MS = 1_700_000_000_000
const NOW_S = NOW_MS / 1000

const jaas = (options: string) =>
  unsecuredValidatorOptionsFromJaas(
    parseJaasConfig(
      `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ${options};`,
    )[0]!,
  )

describe('parseOAuthBearerInitialResponse', () => {
  it('reads the token, the authzid and the extensions', () => {
    const parsed = parseOAuthBearerInitialResponse(
      initial('abc.def.', 'traceId=123\x01a=x=y\x01', 'n,a=alice,'),
    )
    assert.equal(parsed.token, 'abc.def.')
    assert.equal(parsed.authorizationId, 'alice')
    assert.deepEqual(
      [...parsed.extensions],
      [
        ['traceId', '123'],
        ['a', 'x=y'],
      ],
    )
  })

  it('takes the scheme in any case', () => {
    assert.equal(
      parseOAuthBearerInitialResponse(Buffer.from('n,,\x01auth=bEaReR  t0k~+/=\x01\x01')).token,
      't0k~+/=',
    )
  })

  it("refuses malformed responses with Kafka's messages", () => {
    const cases: [string, string][] = [
      ['', 'Invalid OAUTHBEARER client first message'],
      ['n,,\x01auth=Bearer t\x01', 'Invalid OAUTHBEARER client first message'],
      ['y,,\x01auth=Bearer t\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,b=x,\x01auth=Bearer t\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,,x\x01auth=Bearer t\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,,\x01auth=Bearer t\x01\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,,\x01auth=Bearer t\x01k1=v\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,,\x01auth=Bearer t\x01k=\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,,\x01auth=Bearer t\x01kv\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,,\x01auth=Bearer tök\x01\x01', 'Invalid OAUTHBEARER client first message'],
      ['n,,\x01\x01', "Invalid OAUTHBEARER client first message: 'auth' not specified"],
      ['n,,\x01k=v\x01\x01', "Invalid OAUTHBEARER client first message: 'auth' not specified"],
      ['n,,\x01auth=Bearer\x01\x01', "Invalid OAUTHBEARER client first message: invalid 'auth' format"],
      ['n,,\x01auth=Bearer a b\x01\x01', "Invalid OAUTHBEARER client first message: invalid 'auth' format"],
      ['n,,\x01auth=Basic abc\x01\x01', 'Invalid scheme in OAUTHBEARER client first message'],
    ]
    for (const [text, message] of cases) {
      assert.throws(
        () => parseOAuthBearerInitialResponse(Buffer.from(text)),
        { name: 'SaslError', message },
        text,
      )
    }
  })

  it('never throws anything but SaslError (fuzz)', () => {
    const alphabet = fc.constantFrom(...'n,a=\x01authBearer xy.-_~+/ \tü\0'.split(''))
    const texts = fc.array(alphabet, { maxLength: 50 }).map((c) => Buffer.from(c.join('')))
    fc.assert(
      fc.property(
        fc.oneof(
          texts,
          fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
        ),
        (bytes) => {
          try {
            parseOAuthBearerInitialResponse(bytes)
          } catch (error) {
            assert.ok(error instanceof SaslError, String(error))
          }
        },
      ),
      { numRuns: 3000 },
    )
  })
})

describe('unsecured validator', () => {
  const defaults = jaas('')

  it("reads Kafka's options with their defaults", () => {
    assert.deepEqual(defaults, {
      principalClaimName: 'sub',
      scopeClaimName: 'scope',
      requiredScope: [],
      clockSkewMs: 0,
    })
    assert.deepEqual(
      jaas(
        'unsecuredValidatorPrincipalClaimName=" name " unsecuredValidatorScopeClaimName="scp" unsecuredValidatorRequiredScope="a  b" unsecuredValidatorAllowableClockSkewMs="500"',
      ),
      { principalClaimName: 'name', scopeClaimName: 'scp', requiredScope: ['a', 'b'], clockSkewMs: 500 },
    )
    assert.throws(() => jaas('unsecuredValidatorAllowableClockSkewMs="-1"'), {
      message: 'Allowable clock skew millis must not be negative: -1',
    })
    assert.throws(() => jaas('unsecuredValidatorAllowableClockSkewMs="x"'), OAuthBearerConfigError)
    assert.throws(() => parseScope('a "b'), { message: 'Invalid scope value: "b' })
  })

  it('accepts a good token and gives its principal, lifetime and scope', async () => {
    const token = await unsecuredValidator(defaults, () => NOW_MS).validate(
      unsecured({ sub: 'alice', exp: NOW_S + 60, iat: NOW_S, scope: ['a', ' b ', ''] }),
    )
    assert.equal(token.principalName, 'alice')
    assert.equal(token.lifetimeMs, NOW_MS + 60_000)
    assert.equal(token.startTimeMs, NOW_MS)
    assert.deepEqual([...token.scope], ['a', 'b'])
  })

  it("accepts a token made by Kafka 4.0's OAuthBearerUnsecuredLoginCallbackHandler", async () => {
    // jshell, kafka-clients-4.0.0.jar: unsecuredLoginStringClaim_sub="al?ce>>",
    // unsecuredLoginListClaim_scope=",read,write", unsecuredLoginLifetimeSeconds="3600"
    const kafkaToken =
      'eyJhbGciOiJub25lIn0.eyJleHAiOjEuNzk2MTc2MTgyMjE5RTksImlhdCI6MS43OTYxNzI1ODIyMjFFOSwic2NvcGUiOlsicmVhZCIsIndyaXRlIl0sInN1YiI6ImFsP2NlPj4ifQ.'
    const v = unsecuredValidator({ ...defaults, requiredScope: ['write'] }, () => 1_796_172_583_130)
    const token = await v.validate(kafkaToken)
    assert.equal(token.principalName, 'al?ce>>')
    assert.equal(token.lifetimeMs, 1_796_176_182_219)
    assert.equal(token.startTimeMs, 1_796_172_582_221)
    assert.deepEqual([...token.scope], ['read', 'write'])
    const step = await new OAuthBearerSaslServer({ validator: v, nowMs: () => 1_796_172_583_130 }).evaluate(
      initial(kafkaToken),
    )
    assert.equal(step.kind === 'complete' && step.sessionLifetimeMs, 3_599_089)
  })

  it('reads sections in either base64 alphabet', async () => {
    const v = unsecuredValidator(defaults, () => NOW_MS)
    const claims = { sub: '??>>', exp: NOW_S + 60 } // encodes with '/' and '+', or '_' and '-'
    const standard = `${Buffer.from('{"alg":"none"}').toString('base64')}.${Buffer.from(JSON.stringify(claims)).toString('base64')}.`
    assert.match(standard, /[+/]/)
    assert.equal((await v.validate(standard)).principalName, '??>>')
    assert.equal((await v.validate(unsecured(claims))).principalName, '??>>')
  })

  it("refuses bad tokens with Kafka's reasons", async () => {
    const v = unsecuredValidator({ ...defaults, requiredScope: ['write'], clockSkewMs: 1000 }, () => NOW_MS)
    const good = { sub: 'alice', exp: NOW_S + 60, scope: 'write' }
    const cases: [string, RegExp][] = [
      ['a..b', /contains '\.\.'/],
      ['a.b', /3 dot-separated/],
      [`${b64({ alg: 'none' })}.${b64(good)}.sig`, /must not contain a digital signature/],
      [unsecured(good, { alg: 'RS256' }), /must have 'none'/],
      ['###.e30.', /malformed Base64 URL/],
      [`${Buffer.from('{').toString('base64url')}.e30.`, /malformed JSON/],
      [`${b64([1])}.e30.`, /malformed JSON/],
      [unsecured({ sub: 'alice' }), /No expiration time/],
      [unsecured({ ...good, exp: 'soon' }), /'exp' claim was not of type Number/],
      [unsecured({ ...good, sub: 7 }), /'sub' claim was not of type String/],
      [unsecured({ ...good, sub: ' ' }), /No principal name in JWT claim: sub/],
      [unsecured({ ...good, exp: NOW_S - 1 }), /was on or after the Expiration Time/],
      [unsecured({ ...good, iat: NOW_S + 2 }), /Issued At value .* was after the indicated time/],
      [unsecured({ ...good, iat: NOW_S + 61 - 60, exp: NOW_S + 1 }), /was not after the Issued At time/],
      [unsecured({ ...good, scope: 'read' }), /missing a required scope \(write\)/],
      [unsecured({ ...good, scope: 5 }), /'scope' claim was not of type List/],
    ]
    for (const [token, reason] of cases) {
      await assert.rejects(
        v.validate(token),
        (e: Error) => e instanceof OAuthBearerValidationError && reason.test(e.message),
        token,
      )
    }
    // Within the skew: expired half a second ago, issued half a second ahead.
    await v.validate(unsecured({ ...good, exp: NOW_S - 0.5, iat: NOW_S - 10 }))
    await v.validate(unsecured({ ...good, iat: NOW_S + 0.5 }))
  })
})

describe('OAuthBearerSaslServer', () => {
  const validator = unsecuredValidator({ ...jaas(''), requiredScope: ['write'] }, () => NOW_MS)
  const make = (v: OAuthBearerValidator = validator, connectionsReauthMsMax = 0) =>
    new OAuthBearerSaslServer({ validator: v, nowMs: () => NOW_MS, connectionsReauthMsMax })
  const token = unsecured({ sub: 'alice', exp: NOW_S + 60, scope: ['write'] })

  it('completes with the token principal and its remaining lifetime, capped by connections.max.reauth.ms', async () => {
    const step = await make().evaluate(initial(token, 'traceId=1\x01'))
    assert.equal(step.kind, 'complete')
    if (step.kind !== 'complete') return
    assert.equal(step.principal, 'alice')
    assert.equal(step.sessionLifetimeMs, 60_000)
    assert.equal(step.credentialExpiryMs, NOW_MS + 60_000)
    assert.equal(step.extensions.get('traceId'), '1')
    const capped = await make(validator, 5_000).evaluate(initial(token))
    assert.equal(capped.kind === 'complete' && capped.sessionLifetimeMs, 5_000)
  })

  it("sends the JSON error as a challenge, then fails on the client's \\x01 with it", async () => {
    const s = make()
    const expired = unsecured({ sub: 'alice', exp: NOW_S - 60, scope: ['write'] })
    const challenge = await s.evaluate(initial(expired))
    assert.equal(challenge.kind, 'challenge')
    assert.equal(
      challenge.kind === 'challenge' && challenge.challenge.toString(),
      '{"status":"invalid_token"}',
    )
    const failure = await s.evaluate(Buffer.from([1]))
    assert.equal(failure.kind, 'failure')
    if (failure.kind !== 'failure') return
    assert.equal(failure.errorCode, ErrorCode.SaslAuthenticationFailed)
    assert.equal(failure.message, '{"status":"invalid_token"}')
    assert.ok(!failure.reason.includes(expired))
  })

  it('names the required scope in an insufficient_scope error', async () => {
    const step = await make().evaluate(initial(unsecured({ sub: 'alice', exp: NOW_S + 60, scope: 'read' })))
    assert.equal(
      step.kind === 'challenge' && step.challenge.toString(),
      '{"status":"insufficient_scope", "scope":"[write]"}',
    )
    assert.equal(
      oauthBearerErrorJson('invalid_token', null, 'https://x'),
      '{"status":"invalid_token", "openid-configuration":"https://x"}',
    )
  })

  it('lets the client retry with a new token after an error challenge', async () => {
    const s = make()
    await s.evaluate(initial(unsecured({ sub: 'alice', exp: NOW_S - 60 })))
    const step = await s.evaluate(initial(token))
    assert.equal(step.kind, 'complete')
  })

  it('fails a malformed response, a foreign authzid and an internal error', async () => {
    const generic =
      'Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER'
    const malformed = await make().evaluate(Buffer.from('junk'))
    assert.equal(malformed.kind === 'failure' && malformed.message, generic)
    const stray = await make().evaluate(Buffer.from([1]))
    assert.equal(stray.kind === 'failure' && stray.message, generic)
    const foreign = await make().evaluate(initial(token, '', 'n,a=bob,'))
    assert.equal(
      foreign.kind === 'failure' && foreign.message,
      "Authentication failed: Client requested an authorization id that is different from the token's principal name",
    )
    const broken = await make({ validate: () => Promise.reject(new TypeError('boom')) }).evaluate(
      initial(token),
    )
    assert.equal(broken.kind === 'failure' && broken.message, generic)
    const s = make()
    await s.evaluate(initial(token))
    const after = await s.evaluate(initial(token))
    assert.equal(after.kind === 'failure' && after.errorCode, ErrorCode.IllegalSaslState)
  })

  it('never rejects, whatever it is sent (fuzz)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 80 }),
        fc.string({ maxLength: 40 }),
        async (bytes, tokenText) => {
          const s = make()
          for (const m of [Buffer.from(bytes), initial(tokenText), Buffer.from([1])]) {
            const step = await s.evaluate(m)
            assert.ok(['challenge', 'failure', 'complete'].includes(step.kind))
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})
