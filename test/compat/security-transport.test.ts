// compat-cluster: skip one node with its own secured listeners (its PLAINTEXT inter-broker listener is part of what it tests)
/**
 * Secured listeners against real, unmodified clients: one `weir start` process with PLAINTEXT (the
 * inter-broker listener), SSL (PKCS12 key store, client certificates requested), MTLS (SSL with a
 * PEM key store, client certificates required), SASL_PLAINTEXT and SASL_SSL (PLAIN users from the
 * listener's JAAS config), and the controller listener. Clients: kcat (SSL, mTLS, SASL), the Java
 * client through Kafka's kafka-topics and console tools (SASL_SSL PLAIN, mTLS), confluent-kafka
 * (SASL_PLAINTEXT and SASL_SSL PLAIN), kafkajs (PLAIN over both). Bad input, each answered as Kafka
 * answers it while the node serves the others: a wrong password, clear text on a TLS port, TLS on a
 * plain port, a Produce before authenticating. No password or key reaches the node's log.
 * Certificates are made with openssl in a temp dir (test/support/tls-certs.ts).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect as connectTcp } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { connect as connectTls } from 'node:tls'
import { promisify } from 'node:util'
import kafkajs from 'kafkajs'
import { apis, encodeRequest } from '../../src/protocol/index.ts'
import { runKafkaTool } from '../support/kafka-tools.ts'
import { PLAIN_JAAS, pythonOf } from '../support/security-clients.ts'
import { makeTestCerts, type TestCerts } from '../support/tls-certs.ts'
import { freePorts, tempDir, WeirProcess, writeProperties } from '../support/weir-process.ts'

const run = promisify(execFile)
const { Kafka, logLevel } = kafkajs

const ALICE = { username: 'alice', password: 'alice-pw-7f3e' }
const KEY_PASSWORD_MARK = 'store-secret-91c2'
const WRONG_PASSWORD = 'wrong-pw-5d1a'
const SCRAM_PASSWORD = 'bob-scram-pw-0e44'

describe('secured listeners against real clients', () => {
  const dir = tempDir('weir-sec-')
  let certs: TestCerts
  let weir: WeirProcess
  const port: Record<string, number> = {}
  const address = (name: string) => `127.0.0.1:${port[name]}`

  before(async () => {
    certs = makeTestCerts(dir.path, KEY_PASSWORD_MARK)
    const names = ['PLAINTEXT', 'CONTROLLER', 'SSL', 'MTLS', 'SASL_PLAINTEXT', 'SASL_SSL', 'REAUTH']
    const ports = await freePorts(names.length)
    names.forEach((n, i) => {
      port[n] = ports[i]!
    })
    const config = writeProperties(dir.path, 'server.properties', {
      listeners: names.map((n) => `${n}://127.0.0.1:${port[n]}`).join(','),
      'listener.security.protocol.map':
        'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,REAUTH:SASL_PLAINTEXT',
      'controller.quorum.voters': `1@127.0.0.1:${port.CONTROLLER}`,
      'inter.broker.listener.name': 'PLAINTEXT',
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': certs.serverPemStore,
      'listener.name.ssl.ssl.keystore.type': 'PKCS12',
      'listener.name.ssl.ssl.keystore.location': certs.serverP12,
      'listener.name.ssl.ssl.keystore.password': certs.password,
      'listener.name.ssl.ssl.client.auth': 'requested',
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': certs.caPem,
      'listener.name.mtls.ssl.client.auth': 'required',
      'ssl.principal.mapping.rules': 'RULE:^CN=([^,]+),.*$/$1/L,DEFAULT',
      'sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.sasl_plaintext.sasl.enabled.mechanisms': 'PLAIN,OAUTHBEARER,SCRAM-SHA-256,SCRAM-SHA-512',
      'listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config':
        'org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config':
        'org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config':
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";',
      'listener.name.sasl_plaintext.plain.sasl.jaas.config': PLAIN_JAAS({ [ALICE.username]: ALICE.password }),
      'listener.name.sasl_ssl.plain.sasl.jaas.config': PLAIN_JAAS({ [ALICE.username]: ALICE.password }),
      'listener.name.reauth.plain.sasl.jaas.config': PLAIN_JAAS({ [ALICE.username]: ALICE.password }),
      'listener.name.reauth.plain.connections.max.reauth.ms': 1500,
      'connection.failed.authentication.delay.ms': 100,
      'auto.create.topics.enable': 'true',
      'offsets.topic.replication.factor': 1,
      'group.initial.rebalance.delay.ms': 0,
    })
    weir = new WeirProcess(['--config', config, '--data-dir', join(dir.path, 'data')])
    await weir.start()
  })

  after(async () => {
    await weir?.kill()
    dir.remove()
  })

  const kcat = async (
    bootstrap: string,
    settings: Record<string, string>,
    args: string[],
    input?: string,
  ) => {
    const x = Object.entries(settings).flatMap(([k, v]) => ['-X', `${k}=${v}`])
    const child = run('kcat', ['-b', bootstrap, ...x, ...args], { timeout: 60_000 })
    if (input !== undefined) child.child.stdin?.end(input)
    return (await child).stdout
  }
  const sslClient = () => ({ 'security.protocol': 'SSL', 'ssl.ca.location': certs.caPem })
  const mtlsClient = () => ({
    ...sslClient(),
    'ssl.certificate.location': certs.clientCertPem,
    'ssl.key.location': certs.clientKeyPem,
  })
  const saslClient = (protocol: 'SASL_PLAINTEXT' | 'SASL_SSL', password = ALICE.password) => ({
    'security.protocol': protocol,
    'sasl.mechanisms': 'PLAIN',
    'sasl.username': ALICE.username,
    'sasl.password': password,
    ...(protocol === 'SASL_SSL' ? { 'ssl.ca.location': certs.caPem } : {}),
  })
  const consumeAll = (bootstrap: string, settings: Record<string, string>, topic: string) =>
    kcat(bootstrap, settings, ['-C', '-t', topic, '-o', 'beginning', '-e', '-q', '-f', '%s\n'])

  test('kcat over SSL (PKCS12 key store) and mTLS (PEM key store, client certificate required)', async () => {
    await kcat(address('SSL'), sslClient(), ['-P', '-t', 'sec-kcat'], 'over-ssl\n')
    await kcat(address('MTLS'), mtlsClient(), ['-P', '-t', 'sec-kcat'], 'over-mtls\n')
    assert.deepEqual((await consumeAll(address('MTLS'), mtlsClient(), 'sec-kcat')).trim().split('\n'), [
      'over-ssl',
      'over-mtls',
    ])
    // The SSL listener only requests a certificate: one that is sent is verified and taken too.
    assert.match(await consumeAll(address('SSL'), mtlsClient(), 'sec-kcat'), /over-mtls/)
    await assert.rejects(kcat(address('MTLS'), sslClient(), ['-L', '-m', '3']))
    assert.match(
      weir.output,
      /TLS handshake with 127\.0\.0\.1 failed: ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE/,
    )
  })

  test("kcat over SASL_PLAINTEXT and SASL_SSL with PLAIN; a wrong password is refused with Kafka's message", async () => {
    await kcat(address('SASL_PLAINTEXT'), saslClient('SASL_PLAINTEXT'), ['-P', '-t', 'sec-sasl'], 'one\n')
    await kcat(address('SASL_SSL'), saslClient('SASL_SSL'), ['-P', '-t', 'sec-sasl'], 'two\n')
    assert.equal(await consumeAll(address('SASL_SSL'), saslClient('SASL_SSL'), 'sec-sasl'), 'one\ntwo\n')
    const refused = await kcat(address('SASL_PLAINTEXT'), saslClient('SASL_PLAINTEXT', WRONG_PASSWORD), [
      '-L',
      '-m',
      '3',
    ]).then(
      () => null,
      (e: { stderr: string }) => e.stderr,
    )
    assert.ok(refused !== null)
    assert.match(refused, /Authentication failed: Invalid username or password/)
  })

  test('confluent-kafka with SASL_PLAINTEXT and SASL_SSL PLAIN', async () => {
    const python = pythonOf()
    const script = `
import sys, json, time
from confluent_kafka import Producer, Consumer
conf = json.loads(sys.argv[1])
p = Producer(conf)
p.produce('sec-confluent', value=sys.argv[2].encode())
assert p.flush(30) == 0
c = Consumer({**conf, 'group.id': 'sec-' + sys.argv[2], 'auto.offset.reset': 'earliest'})
c.subscribe(['sec-confluent'])
seen = []
deadline = time.time() + 60
while sys.argv[2] not in seen:
    assert time.time() < deadline, 'no record within 60 s'
    m = c.poll(1)
    if m is None:
        continue
    assert m.error() is None, str(m.error())
    seen.append(m.value().decode())
c.close()
print(','.join(seen))
`
    for (const protocol of ['SASL_PLAINTEXT', 'SASL_SSL'] as const) {
      const conf = { 'bootstrap.servers': address(protocol), ...saslClient(protocol) }
      const { stdout } = await run(python, ['-c', script, JSON.stringify(conf), `via-${protocol}`], {
        timeout: 90_000,
      })
      assert.match(stdout, new RegExp(`via-${protocol}`))
    }
  })

  test('KIP-368: librdkafka 2.x re-authenticates within connections.max.reauth.ms and keeps its connection', async () => {
    const script = `
import sys, json, time
from confluent_kafka import Producer
p = Producer(json.loads(sys.argv[1]))
errors = []
for i in range(5):
    p.produce('sec-reauth', value=b'r%d' % i, on_delivery=lambda e, m: e and errors.append(str(e)))
    assert p.flush(10) == 0
    time.sleep(1)
assert errors == [], errors
print('ok')
`
    const before = (weir.output.match(/SASL session expired/g) ?? []).length
    const conf = { 'bootstrap.servers': address('REAUTH'), ...saslClient('SASL_PLAINTEXT') }
    const { stdout } = await run(pythonOf(), ['-c', script, JSON.stringify(conf)], { timeout: 60_000 })
    assert.match(stdout, /ok/)
    assert.equal((weir.output.match(/SASL session expired/g) ?? []).length, before)
  })

  test('kafkajs with PLAIN over SASL_PLAINTEXT and SASL_SSL', async () => {
    for (const protocol of ['SASL_PLAINTEXT', 'SASL_SSL'] as const) {
      const kafka = new Kafka({
        clientId: 'sec-kafkajs',
        brokers: [address(protocol)],
        logLevel: logLevel.NOTHING,
        sasl: { mechanism: 'plain', ...ALICE },
        ...(protocol === 'SASL_SSL' ? { ssl: { ca: [readFileSync(certs.caPem, 'utf8')] } } : {}),
      })
      const producer = kafka.producer()
      await producer.connect()
      await producer.send({ topic: 'sec-kafkajs', messages: [{ value: protocol }] })
      await producer.disconnect()
      const admin = kafka.admin()
      await admin.connect()
      const offsets = await admin.fetchTopicOffsets('sec-kafkajs')
      await admin.disconnect()
      assert.ok(offsets.some((o) => Number(o.high) >= 1))
    }
    const wrong = new Kafka({
      clientId: 'sec-kafkajs-wrong',
      brokers: [address('SASL_PLAINTEXT')],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      sasl: { mechanism: 'plain', username: ALICE.username, password: WRONG_PASSWORD },
    })
    const admin = wrong.admin()
    await assert.rejects(admin.connect(), /SASL PLAIN authentication failed/)
  })

  test('OAUTHBEARER with unsecured tokens: kafkajs and librdkafka; a token without the required scope is refused', async () => {
    const unsecured = (claims: Record<string, unknown>) =>
      `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`
    const nowS = Math.floor(Date.now() / 1000)
    const connectWith = async (scope: string[]) => {
      const kafka = new Kafka({
        clientId: 'sec-oauth',
        brokers: [address('SASL_PLAINTEXT')],
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
        sasl: {
          mechanism: 'oauthbearer',
          oauthBearerProvider: async () => ({
            value: unsecured({ sub: 'svc-a', iat: nowS, exp: nowS + 600, scope }),
          }),
        },
      })
      const admin = kafka.admin()
      await admin.connect()
      const topics = await admin.listTopics()
      await admin.disconnect()
      return topics
    }
    assert.ok(Array.isArray(await connectWith(['kafka', 'other'])))
    await assert.rejects(connectWith(['other']))
    // librdkafka's own unsecured JWT (sasl.oauthbearer.config), as a Kafka developer setup uses it.
    const listed = await kcat(
      address('SASL_PLAINTEXT'),
      {
        'security.protocol': 'SASL_PLAINTEXT',
        'sasl.mechanisms': 'OAUTHBEARER',
        'enable.sasl.oauthbearer.unsecure.jwt': 'true',
        'sasl.oauthbearer.config': 'principal=svc-b scope=kafka',
      },
      ['-L', '-m', '10'],
    )
    assert.match(listed, /1 brokers:/)
  })

  test('SCRAM-SHA-256/512 with users added by kafka-configs: confluent-kafka and kafkajs; a wrong password is refused', async () => {
    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512']) {
      const added = await runKafkaTool(
        'kafka-configs',
        '--bootstrap-server',
        address('PLAINTEXT'),
        '--alter',
        '--add-config',
        `${mechanism}=[iterations=4096,password=${SCRAM_PASSWORD}]`,
        '--entity-type',
        'users',
        '--entity-name',
        'bob',
      )
      assert.equal(added.code, 0, added.stderr)
    }
    const script = `
import sys, json
from confluent_kafka.admin import AdminClient
a = AdminClient(json.loads(sys.argv[1]))
print(len(a.list_topics(timeout=10).brokers))
`
    const conf = (password: string) =>
      JSON.stringify({
        'bootstrap.servers': address('SASL_PLAINTEXT'),
        'security.protocol': 'SASL_PLAINTEXT',
        'sasl.mechanisms': 'SCRAM-SHA-512',
        'sasl.username': 'bob',
        'sasl.password': password,
      })
    // The credential reaches this broker's image through the metadata log: retry briefly.
    let brokers = ''
    for (let i = 0; i < 10 && brokers.trim() !== '1'; i++) {
      brokers = await run(pythonOf(), ['-c', script, conf(SCRAM_PASSWORD)], { timeout: 30_000 }).then(
        (r) => r.stdout,
        () => '',
      )
    }
    assert.equal(brokers.trim(), '1')
    await assert.rejects(run(pythonOf(), ['-c', script, conf(WRONG_PASSWORD)], { timeout: 30_000 }))
    const kafka = new Kafka({
      clientId: 'sec-scram',
      brokers: [address('SASL_PLAINTEXT')],
      logLevel: logLevel.NOTHING,
      sasl: { mechanism: 'scram-sha-256', username: 'bob', password: SCRAM_PASSWORD },
    })
    const admin = kafka.admin()
    await admin.connect()
    assert.ok(Array.isArray(await admin.listTopics()))
    await admin.disconnect()
  })

  test('the Java client (Kafka 4.4 tools) over SASL_SSL PLAIN and over mTLS with a PKCS12 key store', async () => {
    const saslConfig = writeProperties(dir.path, 'java-sasl-ssl.properties', {
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'PLAIN',
      'sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required username="${ALICE.username}" password="${ALICE.password}";`,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': certs.caPem,
    })
    const created = await runKafkaTool(
      'kafka-topics',
      '--bootstrap-server',
      address('SASL_SSL'),
      '--command-config',
      saslConfig,
      '--create',
      '--topic',
      'sec-java',
      '--partitions',
      '2',
    )
    assert.equal(created.code, 0, created.stderr)
    const mtlsConfig = writeProperties(dir.path, 'java-mtls.properties', {
      'security.protocol': 'SSL',
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': certs.caPem,
      'ssl.keystore.type': 'PKCS12',
      'ssl.keystore.location': certs.clientP12,
      'ssl.keystore.password': certs.password,
    })
    const listed = await runKafkaTool(
      'kafka-topics',
      '--bootstrap-server',
      address('MTLS'),
      '--command-config',
      mtlsConfig,
      '--describe',
      '--topic',
      'sec-java',
    )
    assert.equal(listed.code, 0, listed.stderr)
    assert.match(listed.stdout, /Topic: sec-java\s+TopicId: \S+\s+PartitionCount: 2/)
  })

  test('clear text on a TLS port and TLS on a plain port close that connection; the node serves on', async () => {
    const apiVersions = Buffer.concat(
      encodeRequest(
        apis.ApiVersions,
        { requestApiVersion: 3, correlationId: 1, clientId: 'raw' },
        {
          clientSoftwareName: 'raw',
          clientSoftwareVersion: '1',
        },
      ),
    )
    // At most a TLS alert (7 bytes) comes back, never a Kafka response.
    assert.ok((await closedWithout(connectTcp(port.SSL!, '127.0.0.1'), apiVersions)) < 8)
    // A TLS ClientHello to the PLAINTEXT port reads as a frame of ~370 MB: closed, as Kafka does.
    const tls = connectTls({ host: '127.0.0.1', port: port.PLAINTEXT!, rejectUnauthorized: false })
    await new Promise<void>((resolve) => tls.once('close', () => resolve()).once('error', () => {}))
    assert.match(weir.output, /TLS handshake with 127\.0\.0\.1 failed/)
    assert.equal(
      await consumeAll(address('SSL'), sslClient(), 'sec-kcat').then((s) => s.includes('over-ssl')),
      true,
    )
  })

  test('a Produce before SASL authentication closes the connection without an answer, as Kafka', async () => {
    const produce = Buffer.concat(
      encodeRequest(
        apis.Produce,
        { requestApiVersion: 9, correlationId: 7, clientId: 'raw' },
        {
          acks: 1,
          timeoutMs: 1000,
          topicData: [],
        },
      ),
    )
    assert.equal(await closedWithout(connectTcp(port.SASL_PLAINTEXT!, '127.0.0.1'), produce), 0)
    assert.match(weir.output, /Unexpected Kafka request of type Produce during SASL handshake\./)
    assert.equal(
      await consumeAll(address('SASL_PLAINTEXT'), saslClient('SASL_PLAINTEXT'), 'sec-sasl'),
      'one\ntwo\n',
    )
  })

  test('no password or key in any log line', () => {
    for (const secret of [ALICE.password, KEY_PASSWORD_MARK, 'PRIVATE KEY', WRONG_PASSWORD, SCRAM_PASSWORD]) {
      assert.ok(!weir.output.includes(secret), `the log holds ${secret}`)
    }
  })
})

/** Writes `bytes` and resolves with how many bytes came back before the peer closed. */
function closedWithout(socket: import('node:net').Socket, bytes: Buffer): Promise<number> {
  return new Promise((resolve) => {
    let received = 0
    socket.on('data', (d: Buffer) => {
      received += d.length
    })
    socket.on('error', () => {})
    socket.on('close', () => resolve(received))
    socket.on('connect', () => socket.write(bytes))
  })
}
