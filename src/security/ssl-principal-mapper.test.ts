import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { NoMatchingRuleError, SslPrincipalMapper, SslPrincipalRuleError } from './ssl-principal-mapper.ts'

/** Kafka's SslPrincipalMapperTest.testRulesSplitting: how a rules value prints once split and parsed. */
const splitting: readonly [string, string][] = [
  ['[]', ''],
  ['[DEFAULT]', 'DEFAULT'],
  ['[RULE:/]', 'RULE://'],
  ['[RULE:/.*]', 'RULE:/.*/'],
  ['[RULE:/.*/L]', 'RULE:/.*/L'],
  ['[RULE:/, DEFAULT]', 'RULE://,DEFAULT'],
  ['[RULE:/, DEFAULT]', '  RULE:// ,  DEFAULT  '],
  ['[RULE:   /     , DEFAULT]', '  RULE:   /     / ,  DEFAULT  '],
  ['[RULE:  /     /U, DEFAULT]', '  RULE:  /     /U   ,DEFAULT  '],
  [
    '[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]',
    '  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ',
  ],
  ['[]', ',   , , ,      , , ,   '],
  ['[RULE:/, DEFAULT]', ',,RULE://,,,DEFAULT,,'],
  ['[RULE: /   , DEFAULT]', ',  , RULE: /   /    ,,,   DEFAULT, ,   '],
  ['[RULE:   /  /U, DEFAULT]', '     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,'],
  ['[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]', 'RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//'],
  ['[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]', 'RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/'],
  [
    '[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]',
    'RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT',
  ],
]

/**
 * Rules and names with the outcome of Kafka 4.0's own SslPrincipalMapper (kafka-clients-4.0.0.jar
 * on OpenJDK 17): the name, or the Java exception and its message.
 */
const kafkaOutcomes: readonly [string, string, { name: string } | { javaError: string; message: string }][] =
  [
    [
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT',
      'CN=Duke,OU=ServiceUsers,O=Org,C=US',
      { name: 'duke' },
    ],
    [
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT',
      'CN=Duke,OU=Other,O=Org,C=US',
      { name: 'CN=Duke,OU=Other,O=Org,C=US' },
    ],
    [
      'RULE:^CN=(.*?),.*$/$1/',
      'O=Org',
      { javaError: 'NoMatchingRule', message: 'No rules apply to O=Org, rules [RULE:^CN=(.*?),.*$/$1]' },
    ],
    ['RULE:^CN=([^,]*),(.*)$/$1@$4/', 'CN=a,OU=b', { name: 'a@$4' }],
    [
      'RULE:^CN=([^,]*),(.*)$/$1@$4$5/',
      'CN=a,OU=b',
      { javaError: 'IndexOutOfBoundsException', message: 'No group 5' },
    ],
    ['RULE:^CN=([^,]*),(.*)$/$12/', 'CN=a,OU=b', { name: 'a2' }],
    ['RULE:^CN=([^,]*),(.*)$/$21x/', 'CN=a,OU=b', { name: 'OU=b1x' }],
    ['RULE:^CN=([^,]*),(.*)$/\\$1/', 'CN=a,OU=b', { name: '$1' }],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Java's named-group reference
    ['RULE:^CN=(?<user>[^,]*),.*$/${user}/U', 'CN=a,OU=b', { name: 'A' }],
    [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Java's named-group reference
      'RULE:^CN=(?<user>[^,]*),.*$/${nope}/',
      'CN=a,OU=b',
      { javaError: 'IllegalArgumentException', message: 'No group with name {nope}' },
    ],
    ['RULE:(.*)/x$1/', 'abc', { name: 'xabcx' }],
    ['RULE:.*/$1/', 'abc', { javaError: 'IndexOutOfBoundsException', message: 'No group 1' }],
    ['RULE:^(a)(b)?c$/$1-$2-$0/', 'ac', { name: 'a--ac' }],
    ['RULE:(?i)^cn=([^,]*).*$/$1/', 'CN=Alice,O=x', { name: 'Alice' }],
    ['RULE:^CN=(.*?)$/$1/L', 'CN=\u00c9MILE', { name: '\u00e9mile' }],
    [
      'RULE:[a/$1/',
      'x',
      { javaError: 'PatternSyntaxException', message: 'Unclosed character class near index 1' },
    ],
    [
      'RULE:^(.*)$/$/',
      'x',
      { javaError: 'IllegalArgumentException', message: 'Illegal group reference: group index is missing' },
    ],
    [
      'RULE:^(.*)$/a\\/',
      'x',
      {
        javaError: 'IllegalArgumentException',
        message: 'Invalid rule: `RULE:^(.*)$/a\\/`, unmatched substring: `RULE:^(.*)$/a\\/`',
      },
    ],
    [
      'RULE:b/X/',
      'abba',
      { javaError: 'NoMatchingRule', message: 'No rules apply to abba, rules [RULE:b/X]' },
    ],
    ['RULE:^.*$/$0$0/', 'ab', { name: 'abab' }],
  ]

describe('SslPrincipalMapper', () => {
  test("Kafka's valid rules parse", () => {
    for (const rules of [
      'DEFAULT',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT',
      'RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/',
      'RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L',
      'RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U',
      'RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/',
      'RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/',
    ]) {
      SslPrincipalMapper.fromRules(rules)
    }
  })

  test("Kafka's invalid rules are refused", () => {
    for (const rules of [
      'default',
      'DEFAUL',
      'DEFAULT/L',
      'DEFAULT/U',
      'RULE:CN=(.*?),OU=ServiceUsers.*/$1',
      'rule:^CN=(.*?),OU=ServiceUsers.*$/$1/',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/L',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/U',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/LU',
    ]) {
      assert.throws(() => SslPrincipalMapper.fromRules(rules), SslPrincipalRuleError, rules)
    }
  })

  test("Kafka's mapping cases", () => {
    const mapper = SslPrincipalMapper.fromRules(
      [
        'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L',
        'RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L',
        'RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U',
        'RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U',
        'DEFAULT',
      ].join(', '),
    )
    assert.equal(mapper.getName('CN=Duke,OU=ServiceUsers,O=Org,C=US'), 'duke')
    assert.equal(mapper.getName('CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US'), 'duke@sme')
    assert.equal(mapper.getName('cn=duke,ou=sme,dc=mycp,dc=com'), 'DUKE@SME')
    assert.equal(mapper.getName('cN=duke,OU=JavaSoft,O=Sun Microsystems'), 'DUKE')
    assert.equal(mapper.getName('OU=JavaSoft,O=Sun Microsystems,C=US'), 'OU=JavaSoft,O=Sun Microsystems,C=US')
  })

  test('a comma with whitespace inside a pattern', () => {
    const mapper = SslPrincipalMapper.fromRules('RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT')
    assert.equal(mapper.getName('CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz'), 'Tkac\\, Adam')
  })

  test('rules split and print as Kafka prints them', () => {
    for (const [printed, rules] of splitting) {
      assert.equal(
        SslPrincipalMapper.fromRules(rules).toString(),
        `SslPrincipalMapper(rules = ${printed})`,
        rules,
      )
    }
  })

  test('unset is DEFAULT', () => {
    assert.equal(SslPrincipalMapper.fromRules(undefined).getName('CN=a,O=b'), 'CN=a,O=b')
  })

  test("outcomes as Kafka's own mapper gives them", () => {
    for (const [rules, dn, want] of kafkaOutcomes) {
      if ('name' in want) {
        assert.equal(SslPrincipalMapper.fromRules(rules).getName(dn), want.name, rules)
        continue
      }
      const expected = want.javaError === 'NoMatchingRule' ? NoMatchingRuleError : SslPrincipalRuleError
      assert.throws(
        () => SslPrincipalMapper.fromRules(rules).getName(dn),
        (error: Error) => {
          assert.ok(error instanceof expected, `${rules}: ${error.name}`)
          if (want.javaError !== 'PatternSyntaxException') assert.equal(error.message, want.message, rules)
          return true
        },
      )
    }
  })
})
