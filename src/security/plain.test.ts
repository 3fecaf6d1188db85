import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ErrorCode } from '../protocol/index.ts'
import { parseJaasConfig, plainUsersFromJaas } from './jaas.ts'
import { PlainSaslServer, parsePlainMessage, plainAuthenticatorFromUsers } from './plain.ts'
import { SaslError } from './sasl.ts'

const users = plainUsersFromJaas(
  parseJaasConfig(
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";',
  ),
)

function server(connectionsReauthMsMax = 0): PlainSaslServer {
  return new PlainSaslServer({
    authenticate: plainAuthenticatorFromUsers(users),
    nowMs: () => 0,
    connectionsReauthMsMax,
  })
}

const message = (authzid: string, user: string, password: string) =>
  Buffer.from(`${authzid}\0${user}\0${password}`)

describe('parsePlainMessage', () => {
  it('splits authzid, authcid and password, keeping the password as bytes', () => {
    const parsed = parsePlainMessage(message('z', 'alice', 'pä\u00df'))
    assert.equal(parsed.authorizationId, 'z')
    assert.equal(parsed.username, 'alice')
    assert.ok(Buffer.isBuffer(parsed.password))
    assert.equal(parsed.password.toString('utf8'), 'pä\u00df')
  })

  it('wants exactly three tokens, as Kafka counts them', () => {
    for (const [text, count] of [
      ['alice', 1],
      ['\0alice', 2],
      ['a\0b\0c\0d', 4],
      ['a\0b\0c\0d\0e', 4],
    ] as const) {
      assert.throws(() => parsePlainMessage(Buffer.from(text)), {
        message: `Invalid SASL/PLAIN response: expected 3 tokens, got ${count}`,
      })
    }
  })

  it('never throws anything but SaslError (fuzz)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          parsePlainMessage(Buffer.from(bytes))
        } catch (error) {
          assert.ok(error instanceof SaslError)
        }
      }),
      { numRuns: 2000 },
    )
  })
})

describe('PlainSaslServer', () => {
  it('authenticates a user of the JAAS entry', async () => {
    const s = server()
    const step = await s.evaluate(message('', 'alice', 'alice-secret'))
    assert.equal(step.kind, 'complete')
    if (step.kind !== 'complete') return
    assert.equal(step.principal, 'alice')
    assert.equal(step.authorizationId, 'alice')
    assert.equal(step.challenge.length, 0)
    assert.equal(step.sessionLifetimeMs, 0)
    assert.ok(s.isComplete)
  })

  it('accepts an authzid equal to the username and gives connections.max.reauth.ms as lifetime', async () => {
    const step = await server(60_000).evaluate(message('alice', 'alice', 'alice-secret'))
    assert.equal(step.kind, 'complete')
    assert.equal(step.kind === 'complete' && step.sessionLifetimeMs, 60_000)
  })

  it("fails with Kafka's client-visible messages", async () => {
    const cases: [Buffer, string][] = [
      [message('', 'alice', 'wrong'), 'Authentication failed: Invalid username or password'],
      [message('', 'alice', 'alice-secre'), 'Authentication failed: Invalid username or password'],
      [message('', 'mallory', 'alice-secret'), 'Authentication failed: Invalid username or password'],
      [message('', '', 'x'), 'Authentication failed: username not specified'],
      [message('', 'alice', ''), 'Authentication failed: password not specified'],
      [
        message('admin', 'alice', 'alice-secret'),
        'Authentication failed: Client requested an authorization id that is different from username',
      ],
      [Buffer.from('alice'), 'Invalid SASL/PLAIN response: expected 3 tokens, got 1'],
    ]
    for (const [response, text] of cases) {
      const s = server()
      const step = await s.evaluate(response)
      assert.equal(step.kind, 'failure')
      if (step.kind !== 'failure') continue
      assert.equal(step.errorCode, ErrorCode.SaslAuthenticationFailed)
      assert.equal(step.message, text)
      assert.ok(!step.message.includes('alice-secret') && !step.reason.includes('alice-secret'))
      assert.equal(s.isComplete, false)
    }
  })

  it('refuses a second response with ILLEGAL_SASL_STATE', async () => {
    const s = server()
    await s.evaluate(message('', 'alice', 'alice-secret'))
    const step = await s.evaluate(message('', 'alice', 'alice-secret'))
    assert.equal(step.kind === 'failure' && step.errorCode, ErrorCode.IllegalSaslState)
    const failed = server()
    await failed.evaluate(message('', 'alice', 'no'))
    const again = await failed.evaluate(message('', 'alice', 'alice-secret'))
    assert.equal(again.kind === 'failure' && again.errorCode, ErrorCode.IllegalSaslState)
  })

  it('never throws, whatever it is sent (fuzz)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), async (bytes) => {
        const step = await server().evaluate(Buffer.from(bytes))
        assert.ok(step.kind === 'failure' || step.kind === 'complete')
      }),
      { numRuns: 500 },
    )
  })
})
