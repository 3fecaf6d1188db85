import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  JaasConfigError,
  jaasOption,
  PLAIN_LOGIN_MODULE,
  parseJaasConfig,
  parseServerJaasConfig,
  plainUsersFromJaas,
} from './jaas.ts'

const PLAIN = `${PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

describe('parseJaasConfig', () => {
  it('reads the login module, its flag and its options', () => {
    const [entry, ...rest] = parseJaasConfig(PLAIN)
    assert.equal(rest.length, 0)
    assert.equal(entry!.loginModule, PLAIN_LOGIN_MODULE)
    assert.equal(entry!.controlFlag, 'required')
    assert.deepEqual(
      [...entry!.options],
      [
        ['username', 'admin'],
        ['password', 'admin-secret'],
        ['user_admin', 'admin-secret'],
        ['user_alice', 'alice-secret'],
      ],
    )
  })

  it('takes unquoted words, single quotes, Java escapes and comments', () => {
    const [entry] = parseJaasConfig(
      `/* lead */ a.b.C-d_$ OPTIONAL // to the end of the line
       k1=word.with-dots k2='single "q"' k3="tab\\there\\n\\\\ \\101\\7\\477 \\q" k1=last;`,
    )
    assert.equal(entry!.loginModule, 'a.b.C-d_$')
    assert.equal(entry!.controlFlag, 'optional')
    assert.equal(entry!.options.get('k1'), 'last')
    assert.equal(entry!.options.get('k2'), 'single "q"')
    assert.equal(entry!.options.get('k3'), 'tab\there\n\\ A\x07\x277 q')
  })

  it('reads several entries, and every control flag in any case', () => {
    const entries = parseJaasConfig('a Required; b REQUISITE; c sufficient x="1";')
    assert.deepEqual(
      entries.map((e) => e.controlFlag),
      ['required', 'requisite', 'sufficient'],
    )
  })

  it("fails with Kafka's messages", () => {
    const cases: [string, string][] = [
      ['', 'Login module not specified in JAAS config'],
      ['  // only a comment', 'Login module not specified in JAAS config'],
      ['a', 'Login module control flag not specified in JAAS config'],
      ['a ;', 'Login module control flag is not available in the JAAS config'],
      ['a maybe;', "Invalid login module control flag 'maybe' in JAAS config"],
      ['a "hunter2";', 'Invalid login module control flag in JAAS config'],
      ['a required k="v"', 'JAAS config entry not terminated by semi-colon'],
      ['a required k=3600;', "Value not specified for key 'k' in JAAS config"],
      ['a required k;', "Value not specified for key 'k' in JAAS config"],
      ['a required k=;', "Value not specified for key 'k' in JAAS config"],
      ['a required = "v";', "Value not specified for key 'null' in JAAS config"],
      ['; a required;', 'Login module name not specified in JAAS config'],
      ['42 required;', 'Login module name not specified in JAAS config'],
    ]
    for (const [text, message] of cases) {
      assert.throws(() => parseJaasConfig(text), { name: 'JaasConfigError', message }, text)
    }
  })

  it("parses as Kafka 4.0's JaasConfig does (its results captured with jshell)", () => {
    const ok = (text: string) =>
      parseJaasConfig(text).map((e) => [e.loginModule, e.controlFlag, Object.fromEntries(e.options)])
    assert.deepEqual(ok('a required k="unterminated\n;'), [['a', 'required', { k: 'unterminated' }]])
    assert.deepEqual(ok('a required \u00e9=\u00fc;'), [['a', 'required', { '\u00e9': '\u00fc' }]])
    assert.deepEqual(ok("a required;b required k='v';"), [
      ['a', 'required', {}],
      ['b', 'required', { k: 'v' }],
    ])
    const failures: [string, string][] = [
      ['a required k=-x;', "Value not specified for key 'k' in JAAS config"],
      ['a required k=1abc;', "Value not specified for key 'k' in JAAS config"],
      ['a required k=x/y;', 'JAAS config entry not terminated by semi-colon'],
    ]
    for (const [text, message] of failures) assert.throws(() => parseJaasConfig(text), { message }, text)
  })

  it('never names a value in an error', () => {
    assert.throws(
      () => parseJaasConfig('a required password="hunter2" user_x'),
      (e: Error) => !e.message.includes('hunter2'),
    )
  })

  it('never throws anything but JaasConfigError (fuzz)', () => {
    const alphabet = fc.constantFrom(...'ab.-_$"\'\\=;/* \n0123456789'.split(''))
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 60 }), (chars) => {
        try {
          parseJaasConfig(chars.join(''))
        } catch (error) {
          assert.ok(error instanceof JaasConfigError, String(error))
        }
      }),
      { numRuns: 2000 },
    )
  })
})

describe('parseServerJaasConfig', () => {
  it('wants exactly one module', () => {
    assert.equal(parseServerJaasConfig(PLAIN).loginModule, PLAIN_LOGIN_MODULE)
    assert.throws(() => parseServerJaasConfig('a required; b required;'), {
      message: 'JAAS config property contains 2 login modules, should be 1 module',
    })
  })

  it('refuses the disallowed JndiLoginModule', () => {
    assert.throws(() => parseServerJaasConfig('com.sun.security.auth.module.JndiLoginModule required;'), {
      message:
        "com.sun.security.auth.module.JndiLoginModule is not allowed. Update System property 'org.apache.kafka.disallowed.login.modules' to allow com.sun.security.auth.module.JndiLoginModule",
    })
  })
})

describe('options', () => {
  it('finds an option, optionally of one module', () => {
    const entries = parseJaasConfig('a required k="1"; b required k="2" j="3";')
    assert.equal(jaasOption(entries, 'k'), '1')
    assert.equal(jaasOption(entries, 'k', 'b'), '2')
    assert.equal(jaasOption(entries, 'missing'), null)
  })

  it('lists the PLAIN users of PlainLoginModule entries only', () => {
    const entries = parseJaasConfig(`${PLAIN} other required user_bob="x";`)
    assert.deepEqual(
      [...plainUsersFromJaas(entries)],
      [
        ['admin', 'admin-secret'],
        ['alice', 'alice-secret'],
      ],
    )
  })
})
