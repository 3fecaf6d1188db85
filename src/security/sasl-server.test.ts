import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ManualClock, SeededRandom } from '../io/index.ts'
import { ErrorCode } from '../protocol/index.ts'
import { unsecuredValidator } from './oauthbearer.ts'
import { plainAuthenticatorFromUsers } from './plain.ts'
import { failureFrom, SaslError, sessionLifetimeMs } from './sasl.ts'
import { createSaslServer, enabledSaslMechanisms, type SaslServerConfig } from './sasl-server.ts'
import { scramCredentialFromPassword } from './scram-credentials.ts'

const clock = new ManualClock({ nowMs: 1_000_000 })
const credential = scramCredentialFromPassword('SCRAM-SHA-512', 'pw', 4096, new SeededRandom(2))

const config: SaslServerConfig = {
  clock,
  random: new SeededRandom(1),
  connectionsReauthMsMax: { PLAIN: 120_000 },
  plain: { authenticate: plainAuthenticatorFromUsers(new Map([['alice', 'alice-secret']])) },
  scram: {
    mechanisms: ['SCRAM-SHA-512'],
    credential: (mechanism, user) => (mechanism === 'SCRAM-SHA-512' && user === 'u' ? credential : null),
  },
  oauthbearer: {
    validator: unsecuredValidator(
      { principalClaimName: 'sub', scopeClaimName: 'scope', requiredScope: [], clockSkewMs: 0 },
      () => clock.nowMs(),
    ),
  },
}

describe('createSaslServer', () => {
  it('lists the enabled mechanisms', () => {
    assert.deepEqual(enabledSaslMechanisms(config), ['PLAIN', 'SCRAM-SHA-512', 'OAUTHBEARER'])
    assert.deepEqual(enabledSaslMechanisms({ clock, random: new SeededRandom(1) }), [])
  })

  it('makes a server per mechanism, with its connections.max.reauth.ms', async () => {
    const plain = createSaslServer('PLAIN', config)
    assert.ok('evaluate' in plain)
    if (!('evaluate' in plain)) return
    assert.equal(plain.mechanism, 'PLAIN')
    const step = await plain.evaluate(Buffer.from('\0alice\0alice-secret'))
    assert.equal(step.kind === 'complete' && step.sessionLifetimeMs, 120_000)
    const scram = createSaslServer('SCRAM-SHA-512', config)
    assert.ok('evaluate' in scram && scram.mechanism === 'SCRAM-SHA-512')
    if ('evaluate' in scram) {
      const first = await scram.evaluate(Buffer.from('n,,n=u,r=abc'))
      assert.equal(first.kind, 'challenge')
    }
    const oauth = createSaslServer('OAUTHBEARER', config)
    assert.ok('evaluate' in oauth && oauth.mechanism === 'OAUTHBEARER')
  })

  it('answers UNSUPPORTED_SASL_MECHANISM for a mechanism not enabled or unknown', () => {
    for (const name of ['SCRAM-SHA-256', 'GSSAPI', 'plain', '']) {
      const result = createSaslServer(name, config)
      assert.ok(!('evaluate' in result))
      if ('evaluate' in result) continue
      assert.equal(result.errorCode, ErrorCode.UnsupportedSaslMechanism)
      assert.equal(result.message, `Unsupported SASL mechanism ${name}`)
    }
  })
})

describe('sessionLifetimeMs (KIP-368)', () => {
  it("is Kafka's: the lesser of connections.max.reauth.ms and the credential's remaining life, 0 for none", () => {
    const at = (connectionsReauthMsMax: number, credentialExpiryMs: number | null) =>
      sessionLifetimeMs({ nowMs: 1000, connectionsReauthMsMax, credentialExpiryMs })
    assert.equal(at(0, null), 0)
    assert.equal(at(-1, null), 0)
    assert.equal(at(5000, null), 5000)
    assert.equal(at(0, 3000), 2000)
    assert.equal(at(5000, 3000), 2000)
    assert.equal(at(1500, 3000), 1500)
    assert.equal(at(0, 500), 0)
  })
})

describe('failureFrom', () => {
  it('hides a message that is not client-visible, and an internal error', () => {
    const hidden = failureFrom(new SaslError('user bob does not exist'), 'PLAIN', true)
    assert.equal(
      hidden.message,
      'Authentication failed during re-authentication due to invalid credentials with SASL mechanism PLAIN',
    )
    assert.equal(hidden.reason, 'user bob does not exist')
    const internal = failureFrom(new TypeError('secret detail'), 'PLAIN')
    assert.ok(!internal.reason.includes('secret detail'))
    const state = failureFrom(new SaslError('bad state', { errorCode: ErrorCode.IllegalSaslState }), 'PLAIN')
    assert.equal(state.message, 'bad state')
  })
})
