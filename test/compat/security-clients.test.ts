// compat-cluster: skip one node with its own secured listener and JWKS server (secured inter-broker listeners are refused)
/**
 * SASL_SSL against the remaining real, unmodified clients: one `weir start` process whose SASL_SSL
 * listener serves SCRAM-SHA-512 (a user from `--add-scram`) and OAUTHBEARER with Kafka's
 * OAuthBearerValidatorCallbackHandler, its keys fetched from a JWKS served over HTTP by this test.
 * Clients: the Java client (Kafka 4.4's console producer and consumer, SCRAM), @platformatic/kafka
 * (SCRAM and OAUTHBEARER), franz-go (SCRAM), librdkafka through confluent-kafka (OAUTHBEARER, an
 * `oauth_cb` handing it a JWT signed here). Refused as Kafka refuses them: an expired token, a
 * badly signed one, one for another audience; a token whose key id the JWKS did not hold at start
 * is accepted once the endpoint serves it (the unknown kid refetches the set).
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { generateKeyPairSync } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { Producer, stringSerializers } from '@platformatic/kafka'
import { jwkOf, pythonOf, SCRAM_JAAS, signedJwt } from '../support/security-clients.ts'
import { makeTestCerts, type TestCerts } from '../support/tls-certs.ts'
import { freePorts, REPO, tempDir, WeirProcess, writeProperties } from '../support/weir-process.ts'

const run = promisify(execFile)
const CAROL = { username: 'carol', password: 'carol-scram-pw-61d0' }
const AUDIENCE = 'weir-brokers'
const ISSUER = 'https://idp.weir.test'
const VALIDATOR = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler'

describe('SASL_SSL with SCRAM and signed OAUTHBEARER tokens against real clients', () => {
  const dir = tempDir('weir-sec-clients-')
  let certs: TestCerts
  let weir: WeirProcess
  let bootstrap = ''
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const rotated = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 })
  let served = [jwkOf(signing.publicKey, 'k1')]
  let jwksFetches = 0
  const jwks = createServer((_req, res) => {
    jwksFetches++
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ keys: served }))
  })

  const nowS = () => Math.floor(Date.now() / 1000)
  const claims = (extra: Record<string, unknown> = {}) => ({
    sub: 'svc-jwt',
    iss: ISSUER,
    aud: AUDIENCE,
    iat: nowS() - 5,
    exp: nowS() + 600,
    scope: 'kafka',
    ...extra,
  })

  before(async () => {
    certs = makeTestCerts(dir.path, 'clients-store-secret-3b7a')
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve))
    const [plain, controller, saslSsl] = (await freePorts(3)) as [number, number, number]
    bootstrap = `127.0.0.1:${saslSsl}`
    const config = writeProperties(dir.path, 'server.properties', {
      listeners: `PLAINTEXT://127.0.0.1:${plain},CONTROLLER://127.0.0.1:${controller},SASL_SSL://127.0.0.1:${saslSsl}`,
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL',
      'controller.quorum.voters': `1@127.0.0.1:${controller}`,
      'inter.broker.listener.name': 'PLAINTEXT',
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': certs.serverPemStore,
      'listener.name.sasl_ssl.sasl.enabled.mechanisms': 'SCRAM-SHA-512,OAUTHBEARER',
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': SCRAM_JAAS,
      'listener.name.sasl_ssl.oauthbearer.sasl.jaas.config':
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
      'listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class': VALIDATOR,
      'sasl.oauthbearer.jwks.endpoint.url': `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
      'sasl.oauthbearer.expected.audience': AUDIENCE,
      'sasl.oauthbearer.expected.issuer': ISSUER,
      'connection.failed.authentication.delay.ms': 100,
      'auto.create.topics.enable': 'true',
      'offsets.topic.replication.factor': 1,
      'group.initial.rebalance.delay.ms': 0,
    })
    weir = new WeirProcess([
      '--config',
      config,
      '--data-dir',
      join(dir.path, 'data'),
      '--add-scram',
      `SCRAM-SHA-512=[name=${CAROL.username},password=${CAROL.password}]`,
    ])
    await weir.start()
  })

  after(async () => {
    await weir?.kill()
    jwks.closeAllConnections()
    jwks.close()
    dir.remove()
  })

  test("the Java client: Kafka's console producer and consumer over SASL_SSL with SCRAM-SHA-512", async () => {
    const props = writeProperties(dir.path, 'java-scram.properties', {
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.jaas.config': `org.apache.kafka.common.security.scram.ScramLoginModule required username="${CAROL.username}" password="${CAROL.password}";`,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': certs.caPem,
    })
    const tool = join(REPO, 'tools/kafka/tool.sh')
    const producer = run(
      tool,
      [
        'kafka-console-producer',
        '--bootstrap-server',
        bootstrap,
        '--command-config',
        props,
        '--topic',
        'sec-java',
      ],
      { timeout: 120_000 },
    )
    producer.child.stdin?.end('java-one\njava-two\n')
    await producer
    const { stdout } = await run(
      tool,
      [
        'kafka-console-consumer',
        '--bootstrap-server',
        bootstrap,
        '--command-config',
        props,
        '--topic',
        'sec-java',
        '--from-beginning',
        '--max-messages',
        '2',
        '--timeout-ms',
        '60000',
      ],
      { timeout: 120_000 },
    )
    assert.deepEqual(stdout.trim().split('\n'), ['java-one', 'java-two'])
  })

  test('@platformatic/kafka with SCRAM-SHA-512 and OAUTHBEARER, franz-go with SCRAM-SHA-512; each reads what the others wrote', async () => {
    const tls = { ca: readFileSync(certs.caPem) }
    const produceWith = async (sasl: Record<string, string>, value: string) => {
      const producer = new Producer({
        clientId: `sec-platformatic-${sasl.mechanism}`,
        bootstrapBrokers: [bootstrap],
        tls,
        sasl: sasl as never,
        serializers: stringSerializers,
        autocreateTopics: true,
        retries: 5,
      })
      try {
        await producer.send({ messages: [{ topic: 'sec-mixed', value }] })
      } finally {
        await producer.close()
      }
    }
    await produceWith({ mechanism: 'SCRAM-SHA-512', ...CAROL }, 'platformatic-scram')
    await produceWith(
      { mechanism: 'OAUTHBEARER', token: signedJwt(claims(), signing.privateKey, 'k1') },
      'platformatic-oauth',
    )
    const franz = execFileSync(join(REPO, 'tools/compat-install.sh'), ['franz-go'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .at(-1)!
    const env = {
      ...process.env,
      BOOTSTRAP: bootstrap,
      SCRAM_USER: CAROL.username,
      SCRAM_PASSWORD: CAROL.password,
      TLS_CA: certs.caPem,
    }
    await run(franz, ['more', 'sec-mixed', '2'], { env, timeout: 120_000 })
    const { stdout } = await run(franz, ['read', 'sec-mixed'], { env, timeout: 120_000 })
    const values = (
      JSON.parse(stdout.trim().split('\n').at(-1)!) as { records: { value: string }[] }
    ).records.map((r) => Buffer.from(r.value, 'hex').toString())
    assert.equal(values.length, 4, stdout)
    assert.deepEqual(values.slice(0, 2), ['platformatic-scram', 'platformatic-oauth'])
  })

  test('librdkafka (confluent-kafka) with a signed JWT from oauth_cb; expired, badly signed and wrong-audience tokens are refused; an unknown kid refetches the JWKS', async () => {
    const script = `
import sys, json, time
from confluent_kafka import Producer
conf = json.loads(sys.argv[1])
token = sys.argv[2]
conf['oauth_cb'] = lambda _config: (token, time.time() + 300)
errors = []
conf['error_cb'] = lambda e: errors.append(e.name())
delivered = []
p = Producer(conf)
p.produce('sec-rdkafka', value=b'via-jwt', on_delivery=lambda err, msg: delivered.append(err is None))
p.flush(15)
print(json.dumps({'delivered': delivered == [True], 'errors': errors}))
`
    const conf = JSON.stringify({
      'bootstrap.servers': bootstrap,
      'security.protocol': 'SASL_SSL',
      'sasl.mechanisms': 'OAUTHBEARER',
      'ssl.ca.location': certs.caPem,
      'message.timeout.ms': 6000,
    })
    const python = pythonOf()
    const produce = async (token: string) => {
      const { stdout } = await run(python, ['-c', script, conf, token], { timeout: 60_000 })
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as { delivered: boolean; errors: string[] }
    }
    assert.deepEqual(await produce(signedJwt(claims(), signing.privateKey, 'k1')), {
      delivered: true,
      errors: [],
    })
    const refusals = await Promise.all([
      produce(signedJwt(claims({ iat: nowS() - 600, exp: nowS() - 300 }), signing.privateKey, 'k1')),
      produce(signedJwt(claims(), stranger.privateKey, 'k1')),
      produce(signedJwt(claims({ aud: 'someone-else' }), signing.privateKey, 'k1')),
    ])
    for (const r of refusals) {
      assert.equal(r.delivered, false)
      assert.ok(r.errors.includes('_AUTHENTICATION'), JSON.stringify(r))
    }
    assert.match(weir.output, /authentication with OAUTHBEARER failed: .*"exp" claim timestamp check failed/)
    assert.match(weir.output, /authentication with OAUTHBEARER failed: .*signature verification failed/)
    assert.match(weir.output, /authentication with OAUTHBEARER failed: .*unexpected "aud" claim value/)
    // A key the endpoint starts serving after the broker's first fetch.
    const fetchesBefore = jwksFetches
    served = [jwkOf(signing.publicKey, 'k1'), jwkOf(rotated.publicKey, 'k2')]
    const rotatedToken = signedJwt(claims(), rotated.privateKey, 'k2')
    let r = await produce(rotatedToken)
    if (!r.delivered) r = await produce(rotatedToken) // the refetch may land after the first try
    assert.equal(r.delivered, true, JSON.stringify(r))
    assert.ok(jwksFetches > fetchesBefore)
  })

  test('no password, key or token in any log line', () => {
    // Every token here starts with the same header: none of it may reach the log.
    const header = signedJwt(claims(), signing.privateKey, 'k1').split('.')[0]!
    for (const secret of [CAROL.password, 'PRIVATE KEY', header]) {
      assert.ok(!weir.output.includes(secret), `the log holds ${secret}`)
    }
  })
})
