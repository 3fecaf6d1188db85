/**
 * The client side of TLS and SASL against a real `weir start` node over real sockets: a
 * `ClientSecurity` from a Kafka client's properties opens `KafkaConnection`s that authenticate with
 * PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (unsecured) over SASL_SSL, present the client
 * certificate to a listener that requires one, check the server's name or IP against its
 * certificate (`ssl.endpoint.identification.algorithm`), refuse a wrong password with the server's
 * message and no password in it, and retire a connection before its KIP-368 session ends.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  type ClientSecurity,
  ClientSecurityError,
  ClusterClient,
  clientSecurityFromProperties,
  KafkaConnection,
  SaslAuthenticationError,
  SslAuthenticationError,
  securedTransport,
} from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { apis, ErrorCode } from '../../src/protocol/index.ts'
import { makeTestCerts, type TestCerts } from '../support/tls-certs.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'

const ALICE_PASSWORD = 'alice-pw-31b9'
const BOB_PASSWORD = 'bob-scram-pw-77c1'
const WRONG_PASSWORD = 'wrong-pw-a0d4'

describe('client security against a real node', () => {
  const dir = tempDir('weir-client-sec-')
  let certs: TestCerts
  let weir: WeirProcess
  const port: Record<string, number> = {}

  before(async () => {
    certs = makeTestCerts(dir.path)
    const names = ['PLAINTEXT', 'CONTROLLER', 'SASL_SSL', 'MTLS', 'REAUTH']
    const ports = await freePorts(names.length)
    names.forEach((n, i) => {
      port[n] = ports[i]!
    })
    const scramJaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'
    const config = writeProperties(dir.path, 'server.properties', {
      listeners: names.map((n) => `${n}://${n === 'MTLS' ? '0.0.0.0' : '127.0.0.1'}:${port[n]}`).join(','),
      'advertised.listeners': names
        .filter((n) => n !== 'CONTROLLER')
        .map((n) => `${n}://127.0.0.1:${port[n]}`)
        .join(','),
      'listener.security.protocol.map':
        'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL,REAUTH:SASL_PLAINTEXT',
      'controller.quorum.voters': `1@127.0.0.1:${port.CONTROLLER}`,
      'inter.broker.listener.name': 'PLAINTEXT',
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': certs.serverPemStore,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': certs.caPem,
      'listener.name.mtls.ssl.client.auth': 'required',
      'listener.name.sasl_ssl.sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
      'listener.name.sasl_ssl.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="${ALICE_PASSWORD}";`,
      'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config': scramJaas,
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': scramJaas,
      'listener.name.sasl_ssl.oauthbearer.sasl.jaas.config':
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";',
      'listener.name.reauth.sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.reauth.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="${ALICE_PASSWORD}";`,
      'listener.name.reauth.plain.connections.max.reauth.ms': 1500,
      'connection.failed.authentication.delay.ms': 50,
    })
    weir = new WeirProcess([
      '--config',
      config,
      '--data-dir',
      join(dir.path, 'data'),
      '--add-scram',
      `SCRAM-SHA-256=[name=bob,password=${BOB_PASSWORD}]`,
      '--add-scram',
      `SCRAM-SHA-512=[name=bob,password=${BOB_PASSWORD}]`,
    ])
    await weir.start()
  })

  after(async () => {
    await weir?.kill()
    dir.remove()
  })

  const security = (properties: Record<string, string>): ClientSecurity =>
    clientSecurityFromProperties({
      properties: new Map(Object.entries(properties)),
      readFile: (path) => readFileSync(path),
    })
  const trust = () => ({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': certs.caPem })
  const open = (sec: ClientSecurity, listener: string, host = '127.0.0.1') =>
    KafkaConnection.open(
      { host, port: port[listener]! },
      {
        clientId: 'client-security-test',
        clock: systemClock,
        transport: securedTransport(sec, nodeTransport),
        sasl: sec.sasl,
        requestTimeoutMs: 10_000,
        inFlightRequestsMax: 4,
        responseBytesMax: 1 << 24,
        connectTimeoutMs: 5_000,
      },
    )
  /** A request that needs an authenticated connection: Metadata names this node. */
  const brokersSeen = async (c: KafkaConnection): Promise<number> => {
    const response = await c.request(apis.Metadata, c.versionFor(apis.Metadata)!, { topics: [] })
    return response.brokers.length
  }
  const jaas = (module: 'plain' | 'scram', username: string, password: string) =>
    `org.apache.kafka.common.security.${module}.${module === 'plain' ? 'Plain' : 'Scram'}LoginModule required username="${username}" password="${password}";`

  test('PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER over SASL_SSL', async () => {
    const cases: Array<[string, string]> = [
      ['PLAIN', jaas('plain', 'alice', ALICE_PASSWORD)],
      ['SCRAM-SHA-256', jaas('scram', 'bob', BOB_PASSWORD)],
      ['SCRAM-SHA-512', jaas('scram', 'bob', BOB_PASSWORD)],
      [
        'OAUTHBEARER',
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="carol" unsecuredLoginListClaim_scope=",kafka,other";',
      ],
    ]
    for (const [mechanism, jaasConfig] of cases) {
      const sec = security({
        'security.protocol': 'SASL_SSL',
        'sasl.mechanism': mechanism,
        'sasl.jaas.config': jaasConfig,
        ...trust(),
      })
      assert.equal(sec.sasl?.mechanism, mechanism)
      const c = await open(sec, 'SASL_SSL')
      try {
        assert.equal(await brokersSeen(c), 1, mechanism)
      } finally {
        c.close()
      }
    }
  })

  test('a ClusterClient secures each connection it opens, bootstrap and brokers from Metadata alike', async () => {
    const client = new ClusterClient({
      bootstrap: [`127.0.0.1:${port.SASL_SSL}`],
      clock: systemClock,
      transport: nodeTransport,
      security: security({
        'security.protocol': 'SASL_SSL',
        'sasl.mechanism': 'SCRAM-SHA-512',
        'sasl.jaas.config': jaas('scram', 'bob', BOB_PASSWORD),
        ...trust(),
      }),
    })
    try {
      const metadata = await client.refresh({ all: true })
      assert.deepEqual(
        [...metadata.brokers.values()].map((b) => b.port),
        [port.SASL_SSL],
      )
      assert.equal(await brokersSeen(await client.broker([...metadata.brokers.keys()][0]!)), 1)
    } finally {
      client.close()
    }
  })

  test('a wrong password or a mechanism the listener does not enable: SaslAuthenticationError, no password in it', async () => {
    for (const [mechanism, module, user] of [
      ['PLAIN', 'plain', 'alice'],
      ['SCRAM-SHA-512', 'scram', 'bob'],
    ] as const) {
      const sec = security({
        'security.protocol': 'SASL_SSL',
        'sasl.mechanism': mechanism,
        'sasl.jaas.config': jaas(module, user, WRONG_PASSWORD),
        ...trust(),
      })
      const error = await open(sec, 'SASL_SSL').then(
        () => assert.fail(`${mechanism}: a wrong password authenticated`),
        (e: unknown) => e,
      )
      assert.ok(error instanceof SaslAuthenticationError, String(error))
      assert.equal(error.errorCode, ErrorCode.SaslAuthenticationFailed)
      assert.match(error.message, new RegExp(`SASL ${mechanism} authentication to 127.0.0.1:\\d+ failed`))
      assert.ok(!error.message.includes(WRONG_PASSWORD))
    }
    const scram256 = security({
      'security.protocol': 'SASL_PLAINTEXT',
      'sasl.mechanism': 'SCRAM-SHA-256',
      'sasl.jaas.config': jaas('scram', 'bob', BOB_PASSWORD),
    })
    await assert.rejects(open(scram256, 'REAUTH'), (e: unknown) => {
      assert.ok(e instanceof SaslAuthenticationError)
      assert.equal(e.errorCode, ErrorCode.UnsupportedSaslMechanism)
      assert.match(e.message, /SCRAM-SHA-256 is not enabled .* \(it enables PLAIN\)/)
      return true
    })
    assert.ok(!weir.output.includes(WRONG_PASSWORD))
  })

  test('TLS: the client certificate where required; the host checked against the certificate unless identification is off', async () => {
    const noCertificate = security({ 'security.protocol': 'SSL', ...trust() })
    await assert.rejects(open(noCertificate, 'MTLS').then(brokersSeen), SslAuthenticationError)
    const withCertificate = security({
      'security.protocol': 'SSL',
      ...trust(),
      'ssl.keystore.type': 'PKCS12',
      'ssl.keystore.location': certs.clientP12,
      'ssl.keystore.password': certs.password,
    })
    for (const host of ['127.0.0.1', 'localhost']) {
      const c = await open(withCertificate, 'MTLS', host)
      assert.equal(await brokersSeen(c), 1)
      c.close()
    }
    // 127.0.0.2 reaches the same listener (bound to 0.0.0.0) but is not in the certificate.
    await assert.rejects(open(withCertificate, 'MTLS', '127.0.0.2'), (e: unknown) => {
      assert.ok(e instanceof SslAuthenticationError)
      assert.match(e.message, /IP: 127\.0\.0\.2 is not in the cert's list/)
      return true
    })
    const unchecked = security({
      'security.protocol': 'SSL',
      ...trust(),
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.certificate.chain': readFileSync(certs.clientCertPem, 'utf8'),
      'ssl.keystore.key': readFileSync(certs.clientKeyPem, 'utf8'),
      'ssl.endpoint.identification.algorithm': '',
    })
    const c = await open(unchecked, 'MTLS', '127.0.0.2')
    assert.equal(await brokersSeen(c), 1)
    c.close()
    // Without the CA the server's certificate does not verify, whatever the host.
    await assert.rejects(open(security({ 'security.protocol': 'SSL' }), 'MTLS'), SslAuthenticationError)
  })

  test('KIP-368: a connection retires before its session lifetime runs out; a fresh one authenticates', async () => {
    const sec = security({
      'security.protocol': 'SASL_PLAINTEXT',
      'sasl.mechanism': 'PLAIN',
      'sasl.jaas.config': jaas('plain', 'alice', ALICE_PASSWORD),
    })
    const c = await open(sec, 'REAUTH')
    assert.equal(await brokersSeen(c), 1)
    assert.equal(c.closed, false)
    await waitFor('the connection to retire', () => (c.closed ? true : undefined), 10_000)
    await assert.rejects(brokersSeen(c))
    const fresh = await open(sec, 'REAUTH')
    assert.equal(await brokersSeen(fresh), 1)
    fresh.close()
  })

  test('bad properties are ClientSecurityErrors that name the key, never the secret', () => {
    const bad: Array<[Record<string, string>, RegExp]> = [
      [{ 'security.protocol': 'TLS' }, /security\.protocol: TLS is not one of/],
      [{ 'security.protocol': 'SASL_SSL' }, /sasl\.mechanism: SASL mechanism GSSAPI is not supported/],
      [
        { 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'PLAIN' },
        /PLAIN needs sasl\.jaas\.config/,
      ],
      [
        {
          'security.protocol': 'SASL_PLAINTEXT',
          'sasl.mechanism': 'PLAIN',
          'sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required password="${WRONG_PASSWORD}";`,
        },
        /sasl\.jaas\.config: .*needs the option username/,
      ],
      [
        {
          'security.protocol': 'SASL_PLAINTEXT',
          'sasl.mechanism': 'SCRAM-SHA-512',
          'sasl.jaas.config': jaas('plain', 'alice', WRONG_PASSWORD),
        },
        /needs org\.apache\.kafka\.common\.security\.scram\.ScramLoginModule/,
      ],
      [
        { 'security.protocol': 'SSL', 'ssl.truststore.location': '/nonexistent' },
        /ssl\.truststore\.type: JKS/,
      ],
      [
        {
          'security.protocol': 'SSL',
          'ssl.truststore.type': 'PEM',
          'ssl.truststore.location': '/nonexistent',
        },
        /ssl\.truststore\.location: cannot read \/nonexistent \(ENOENT\)/,
      ],
      [
        { 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'ldaps' },
        /ssl\.endpoint\.identification\.algorithm: ldaps is not https or empty/,
      ],
    ]
    for (const [properties, message] of bad) {
      assert.throws(
        () => security(properties),
        (e: unknown) => {
          assert.ok(e instanceof ClientSecurityError, String(e))
          assert.match(e.message, message)
          assert.ok(!e.message.includes(WRONG_PASSWORD))
          return true
        },
      )
    }
  })
})
