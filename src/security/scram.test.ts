import assert from 'node:assert/strict'
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { SeededRandom } from '../io/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { SaslError, type SaslStep } from './sasl.ts'
import {
  parseScramClientFinal,
  parseScramClientFirst,
  ScramSaslServer,
  type ScramServerOptions,
  scramSaslName,
  scramUsername,
} from './scram.ts'
import {
  credentialFromSaltedPassword,
  randomBase36,
  SCRAM_ALGORITHMS,
  type ScramCredential,
  ScramCredentialError,
  type ScramMechanism,
  saltedPassword,
  scramCredentialFromPassword,
  scramCredentialFromString,
  scramCredentialToString,
} from './scram-credentials.ts'

/** A SCRAM client written from RFC 5802 with node:crypto alone, independent of the server's helpers. */
function clientFinal(
  mechanism: ScramMechanism,
  password: string,
  clientFirstBare: string,
  serverFirst: string,
  gs2Header = 'n,,',
): { message: string; serverSignature: string } {
  const h = mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512'
  const attrs = new Map(serverFirst.split(',').map((a) => [a[0], a.slice(2)] as const))
  const salt = Buffer.from(attrs.get('s')!, 'base64')
  const salted = pbkdf2Sync(password, salt, Number(attrs.get('i')), h === 'sha256' ? 32 : 64, h)
  const clientKey = createHmac(h, salted).update('Client Key').digest()
  const storedKey = createHash(h).update(clientKey).digest()
  const withoutProof = `c=${Buffer.from(gs2Header).toString('base64')},r=${attrs.get('r')}`
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`
  const signature = createHmac(h, storedKey).update(authMessage).digest()
  const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!))
  const serverKey = createHmac(h, salted).update('Server Key').digest()
  return {
    message: `${withoutProof},p=${proof.toString('base64')}`,
    serverSignature: createHmac(h, serverKey).update(authMessage).digest('base64'),
  }
}

function credentialFor(mechanism: ScramMechanism, password: string, salt: Buffer, iterations = 4096) {
  const algorithm = SCRAM_ALGORITHMS[mechanism]
  return credentialFromSaltedPassword(
    algorithm,
    salt,
    saltedPassword(algorithm, password, salt, iterations),
    iterations,
  )
}

function server(
  mechanism: ScramMechanism,
  users: Record<string, ScramCredential>,
  extra: Partial<ScramServerOptions> = {},
): ScramSaslServer {
  return new ScramSaslServer({
    mechanism,
    credential: (name) => users[name] ?? null,
    random: new SeededRandom(1),
    nowMs: () => 1_000,
    ...extra,
  })
}

const ascii = (text: string) => Buffer.from(text, 'latin1')
const text = (step: SaslStep) => (step.kind === 'failure' ? '' : step.challenge.toString('latin1'))

describe('SCRAM credentials', () => {
  it('match a credential made by Kafka 4.0 (ScramFormatter, ScramCredentialUtils)', () => {
    // jshell with kafka-clients-4.0.0.jar: generateCredential("weir-fixed-salt", saltedPassword("alice-secret", salt, 8192), 8192)
    const salt = Buffer.from('weir-fixed-salt')
    assert.equal(
      scramCredentialToString(credentialFor('SCRAM-SHA-256', 'alice-secret', salt, 8192)),
      'salt=d2Vpci1maXhlZC1zYWx0,stored_key=YeNzZQtkD22gz/2pwEAqzc5cErWGOOGvWJyGsaeCAcE=,server_key=u8Q97xWJ2Vk6NffW8JJYLOGlI6h9zb8okS3JgOmxzuU=,iterations=8192',
    )
    assert.equal(
      scramCredentialToString(credentialFor('SCRAM-SHA-512', 'alice-secret', salt, 8192)),
      'salt=d2Vpci1maXhlZC1zYWx0,stored_key=7LpX5yNU7J1GvL5YmV+lsDfvOkqdZzvYNYhFq7BQN9X9Z+lPw8mEraXU003k1GvIMRvBmsHf3a19mSTvfKO+Kw==,server_key=7igdSKvpW/95FO0Qy542OH1EEac43up1BUKQ+4swbw056Egmy2s0UwKjGYlCmd6ehtUtID2aMiE+NuJIAd1U6w==,iterations=8192',
    )
  })

  it('round-trip through the stored form, and refuse a malformed one', () => {
    const credential = scramCredentialFromPassword('SCRAM-SHA-256', 'pw', 4096, new SeededRandom(7))
    assert.deepEqual(scramCredentialFromString(scramCredentialToString(credential)), credential)
    for (const bad of [
      '',
      'salt=AA==',
      'salt=AA==,stored_key=AA==,server_key=AA==,iterations=x',
      '=a,b=c,d=e,f=g',
    ]) {
      assert.throws(() => scramCredentialFromString(bad), ScramCredentialError, bad)
    }
  })

  it("bound iterations to Kafka's 4096..16384 and draw salts from the Random port", () => {
    assert.throws(() => scramCredentialFromPassword('SCRAM-SHA-256', 'pw', 4095, new SeededRandom(1)), {
      message: 'Too few iterations: 4095 is less than the minimum 4096 for SCRAM-SHA-256',
    })
    assert.throws(() => scramCredentialFromPassword('SCRAM-SHA-512', 'pw', 16385, new SeededRandom(1)), {
      message: 'Too many iterations: 16385 is more than the maximum 16384 for SCRAM-SHA-512',
    })
    const a = scramCredentialFromPassword('SCRAM-SHA-512', 'pw', 4096, new SeededRandom(3))
    const b = scramCredentialFromPassword('SCRAM-SHA-512', 'pw', 4096, new SeededRandom(3))
    assert.deepEqual(a, b)
    assert.match(a.salt.toString(), /^[0-9a-z]{1,26}$/)
    assert.match(randomBase36(new SeededRandom(9)), /^[0-9a-z]{1,26}$/)
  })
})

describe('usernames', () => {
  it('decode =2C and =3D as Kafka does, and refuse any other =', () => {
    assert.equal(scramUsername('a=2Cb=3Dc'), 'a,b=c') // Kafka 4.0's ScramFormatter.username gives the same
    assert.equal(scramSaslName('a,b=c'), 'a=2Cb=3Dc')
    assert.throws(() => scramUsername('a=41'), SaslError)
  })
})

describe('SCRAM-SHA-256 against RFC 7677', () => {
  it('answers the RFC exchange byte for byte', async () => {
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64')
    const s = server(
      'SCRAM-SHA-256',
      { user: credentialFor('SCRAM-SHA-256', 'pencil', salt) },
      {
        serverNonce: () => '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
      },
    )
    const first = await s.evaluate(ascii('n,,n=user,r=rOprNGfwEbeRWgbNEkqO'))
    assert.equal(
      text(first),
      'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
    )
    const final = await s.evaluate(
      ascii(
        'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
      ),
    )
    assert.equal(final.kind, 'complete')
    assert.equal(text(final), 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=')
    assert.equal(final.kind === 'complete' && final.principal, 'user')
    assert.ok(s.isComplete)
  })
})

describe('SCRAM exchanges', () => {
  for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const) {
    it(`${mechanism}: RFC 5802's SHA-1 example, adapted, checked by an independent client`, async () => {
      const salt = Buffer.from('QSXCR+Q6sek8bf92', 'base64')
      const s = server(
        mechanism,
        { user: credentialFor(mechanism, 'pencil', salt) },
        { serverNonce: () => '3rfcNHYJY1ZVvWVs7j' },
      )
      const bare = 'n=user,r=fyko+d2lbbFgONRv9qkxdawL'
      const first = text(await s.evaluate(ascii(`n,,${bare}`)))
      assert.equal(first, 'r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096')
      const expected = clientFinal(mechanism, 'pencil', bare, first)
      const final = await s.evaluate(ascii(expected.message))
      assert.equal(text(final), `v=${expected.serverSignature}`)
    })

    it(`${mechanism}: a full exchange with a drawn nonce, an escaped name, an authzid and a lifetime`, async () => {
      const credential = scramCredentialFromPassword(mechanism, 'sécret', 8192, new SeededRandom(5))
      const s = server(mechanism, { 'a,b=c': credential }, { connectionsReauthMsMax: 30_000 })
      const bare = 'n=a=2Cb=3Dc,r=clientnonce,ext=value'
      const first = text(await s.evaluate(ascii(`n,a=a=2Cb=3Dc,${bare}`)))
      assert.match(first, /^r=clientnonce[0-9a-z]+,s=[A-Za-z0-9+/=]+,i=8192$/)
      const final = await s.evaluate(
        ascii(clientFinal(mechanism, 'sécret', bare, first, 'n,a=a=2Cb=3Dc,').message),
      )
      assert.equal(final.kind, 'complete')
      if (final.kind !== 'complete') return
      assert.equal(final.principal, 'a,b=c')
      assert.equal(final.sessionLifetimeMs, 30_000)
      assert.equal(final.credentialExpiryMs, null)
      assert.deepEqual([...final.extensions], [])
    })
  }

  it('authenticates a delegation token (tokenauth) as its owner, with its expiry as lifetime', async () => {
    const credential = credentialFor('SCRAM-SHA-256', 'hmac', Buffer.from('salt'))
    const s = server(
      'SCRAM-SHA-256',
      {},
      {
        tokenCredential: (id) =>
          id === 'token1' ? { credential, owner: 'alice', expiryTimestampMs: 11_000 } : null,
      },
    )
    const bare = 'n=token1,r=abc,tokenauth=true'
    const first = text(await s.evaluate(ascii(`n,,${bare}`)))
    const final = await s.evaluate(ascii(clientFinal('SCRAM-SHA-256', 'hmac', bare, first).message))
    assert.equal(final.kind, 'complete')
    if (final.kind !== 'complete') return
    assert.equal(final.principal, 'alice')
    assert.equal(final.sessionLifetimeMs, 10_000)
    assert.equal(final.extensions.get('tokenauth'), 'true')
  })

  it('accepts the gs2 flag y (no -PLUS is offered) with its own channel binding', async () => {
    const credential = credentialFor('SCRAM-SHA-256', 'pw', Buffer.from('salt'))
    const s = server('SCRAM-SHA-256', { u: credential })
    const first = text(await s.evaluate(ascii('y,,n=u,r=abc')))
    const final = await s.evaluate(
      ascii(clientFinal('SCRAM-SHA-256', 'pw', 'n=u,r=abc', first, 'y,,').message),
    )
    assert.equal(final.kind, 'complete')
  })
})

describe('SCRAM failures', () => {
  const credential = credentialFor('SCRAM-SHA-256', 'pw', Buffer.from('salt'))
  const generic =
    'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256'

  async function firstFailure(message: string, extra: Partial<ScramServerOptions> = {}) {
    const step = await server(
      'SCRAM-SHA-256',
      { u: credential, low: { ...credential, iterations: 4095 } },
      extra,
    ).evaluate(ascii(message))
    assert.equal(step.kind, 'failure', message)
    return step.kind === 'failure' ? step : assert.fail()
  }

  it('refuses every malformed client-first message', async () => {
    const cases: [string, string][] = [
      ['', 'Invalid SCRAM client first message format'],
      ['n,,n=u', 'Invalid SCRAM client first message format'],
      ['n,,n=u,r=', 'Invalid SCRAM client first message format'],
      ['n,,n=,r=abc', 'Invalid SCRAM client first message format'],
      ['n,,u=u,r=abc', 'Invalid SCRAM client first message format'],
      ['x,,n=u,r=abc', 'Invalid SCRAM client first message format'],
      ['n', 'Invalid SCRAM client first message format'],
      ['n,b=u,n=u,r=abc', 'Invalid SCRAM client first message format'],
      ['n,,n=u,r=abc,1=2', 'Invalid SCRAM client first message format'],
      ['n,,n=u,r=abc,k', 'Invalid SCRAM client first message format'],
      ['n,,n=u,r=a\x7fc', 'Invalid SCRAM client first message format'],
      ['n,,n=ü,r=abc', 'Invalid SCRAM client first message format'],
      ['n,,n=u\0,r=abc', 'Invalid SCRAM client first message format'],
      ['p=tls-unique,,n=u,r=abc', 'Channel binding is not supported'],
      ['n,,m=x,n=u,r=abc', 'Mandatory extensions are not supported'],
      ['n,,n=a=41,r=abc', 'Invalid SCRAM client first message format'],
    ]
    for (const [message, reason] of cases) {
      const failure = await firstFailure(message)
      assert.equal(failure.reason, reason, message)
      assert.equal(failure.message, generic)
      assert.equal(failure.errorCode, ErrorCode.SaslAuthenticationFailed)
    }
    assert.equal(
      (await firstFailure('p=tls-unique,,n=u,r=abc')).serverError?.toString(),
      'e=channel-binding-not-supported',
    )
  })

  it('refuses unknown users, tokens without a store, low iterations, and a foreign authzid', async () => {
    assert.equal(
      (await firstFailure('n,,n=nobody,r=abc')).reason,
      'Authentication failed: Invalid user credentials',
    )
    assert.equal(
      (await firstFailure('n,,n=u,r=abc,tokenauth=true')).reason,
      'Token Authentication failed: Invalid tokenId',
    )
    assert.equal(
      (await firstFailure('n,,n=low,r=abc')).reason,
      'Iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256',
    )
    const foreign = await firstFailure('n,a=other,n=u,r=abc')
    assert.equal(
      foreign.message,
      'Authentication failed: Client requested an authorization id that is different from username',
    )
  })

  async function finalFailure(final: (first: string) => string) {
    const s = server('SCRAM-SHA-256', { u: credential })
    const first = text(await s.evaluate(ascii('n,,n=u,r=abc')))
    const step = await s.evaluate(ascii(final(first)))
    assert.equal(step.kind, 'failure')
    assert.equal(s.isComplete, false)
    return step.kind === 'failure' ? step : assert.fail()
  }

  it('refuses every malformed or wrong client-final message', async () => {
    const good = (first: string) => clientFinal('SCRAM-SHA-256', 'pw', 'n=u,r=abc', first).message
    const nonce = (first: string) => first.split(',')[0]!.slice(2)
    const cases: [(first: string) => string, string][] = [
      [() => '', 'Invalid SCRAM client final message format'],
      [(f) => `c=biws,r=${nonce(f)}`, 'Invalid SCRAM client final message format'],
      [(f) => `c=biws,r=${nonce(f)},p=***`, 'Invalid SCRAM client final message format'],
      [(f) => `c=bi,r=${nonce(f)},p=AAAA`, 'Invalid SCRAM client final message format'],
      [(f) => `r=${nonce(f)},c=biws,p=AAAA`, 'Invalid SCRAM client final message format'],
      [(f) => good(f).replace('c=biws', 'c=eSws'), 'Invalid channel binding in the final client message'],
      [(f) => good(f).replace(`r=${nonce(f)}`, 'r=abc'), 'Invalid client nonce in the final client message.'],
      [
        (f) => good(f).replace(`r=${nonce(f)}`, `r=x${nonce(f)}`),
        'Invalid client nonce in the final client message.',
      ],
      [(f) => good(f).replace(/p=.*/, 'p=AAAA'), 'Invalid client credentials'],
      [(f) => clientFinal('SCRAM-SHA-256', 'wrong', 'n=u,r=abc', f).message, 'Invalid client credentials'],
      [
        (f) => `${good(f).replace(/,p=.*/, '')},x=1,p=${good(f).split('p=')[1]}`,
        'Invalid client credentials',
      ],
    ]
    for (const [final, reason] of cases) {
      const failure = await finalFailure(final)
      assert.equal(failure.reason, reason)
      assert.equal(failure.message, generic)
    }
    assert.equal(
      (
        await finalFailure((f) => clientFinal('SCRAM-SHA-256', 'x', 'n=u,r=abc', f).message)
      ).serverError?.toString(),
      'e=invalid-proof',
    )
  })

  it('answers ILLEGAL_SASL_STATE after completion or failure', async () => {
    const s = server('SCRAM-SHA-256', { u: credential })
    await s.evaluate(ascii('n,,n=nobody,r=abc'))
    const step = await s.evaluate(ascii('n,,n=u,r=abc'))
    assert.equal(step.kind === 'failure' && step.errorCode, ErrorCode.IllegalSaslState)
  })
})

describe('SCRAM parsers (fuzz)', () => {
  const alphabet = fc.constantFrom(...'nyprcsiamv=,ab2CD3+/ \x01\x7f\0é'.split(''))
  const messages = fc.array(alphabet, { maxLength: 48 }).map((chars) => Buffer.from(chars.join('')))

  it('throw nothing but SaslError', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          messages,
          fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
        ),
        (bytes) => {
          for (const parse of [parseScramClientFirst, parseScramClientFinal]) {
            try {
              parse(bytes)
            } catch (error) {
              assert.ok(error instanceof SaslError, String(error))
            }
          }
        },
      ),
      { numRuns: 3000 },
    )
  })

  it('a server never throws, whatever its two messages', async () => {
    const credential = credentialFor('SCRAM-SHA-256', 'pw', Buffer.from('salt'))
    await fc.assert(
      fc.asyncProperty(messages, messages, async (a, b) => {
        const s = server('SCRAM-SHA-256', { u: credential, a: credential })
        for (const m of [Buffer.concat([Buffer.from('n,,n=u,r='), a]), b]) {
          const step = await s.evaluate(m)
          assert.ok(['challenge', 'failure', 'complete'].includes(step.kind))
        }
      }),
      { numRuns: 500 },
    )
  })
})
