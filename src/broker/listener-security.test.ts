import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { resolveBrokerConfig } from '../config/index.ts'
import { ManualClock, SeededRandom } from '../io/index.ts'
import {
  isListenerPrefixedKey,
  ListenerSecurityError,
  listenerSecurity,
  openSslCipherName,
  outgoingSecurity,
} from './listener-security.ts'
import { nodeConfig, parseListeners } from './node-config.ts'

const BASE = {
  'node.id': '1',
  'process.roles': 'broker,controller',
  'controller.quorum.voters': '1@127.0.0.1:9093',
  'log.dirs': '/tmp/unused',
}

function layer(entries: Record<string, string>): Map<string, string> {
  return new Map(Object.entries({ ...BASE, ...entries }))
}

function security(protocol: 'SSL' | 'SASL_PLAINTEXT', entries: Record<string, string>) {
  const staticBroker = layer(entries)
  const [spec] = parseListeners(`L://127.0.0.1:1`, new Map([['L', protocol]]))
  return listenerSecurity(spec!, {
    staticBroker,
    effective: resolveBrokerConfig({ staticBroker }),
    clock: new ManualClock(),
    random: new SeededRandom(1),
    scramCredential: () => null,
    readFile: (path) => Buffer.from(path === 'store.pem' ? PEM_STORE : 'x'),
  })
}

const PEM_STORE = [
  '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----',
  '-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----',
].join('\n')

describe('listener security from the broker configs', () => {
  test('every security protocol parses; controller and inter-broker listeners may be secured', () => {
    const map = new Map([
      ['A', 'SSL'],
      ['B', 'SASL_SSL'],
    ])
    assert.deepEqual(
      parseListeners('A://h:1,B://h:2,SASL_PLAINTEXT://h:3', map).map((l) => [
        l.protocolName,
        l.securityProtocol,
      ]),
      [
        ['SSL', 1],
        ['SASL_SSL', 3],
        ['SASL_PLAINTEXT', 2],
      ],
    )
    const config = (entries: Record<string, string>) =>
      nodeConfig(resolveBrokerConfig({ staticBroker: layer(entries) }))
    const secured = config({
      listeners: 'SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,INTERNAL://127.0.0.1:9094',
      'listener.security.protocol.map': 'SSL:SSL,CONTROLLER:SASL_SSL,INTERNAL:SASL_PLAINTEXT',
      'inter.broker.listener.name': 'INTERNAL',
    })
    assert.equal(secured.interBrokerListenerName, 'INTERNAL')
    assert.equal(secured.controllerListenerProtocol, 'SASL_SSL')
    assert.equal(config({}).controllerListenerProtocol, 'PLAINTEXT')
    assert.throws(
      () => config({ listeners: 'SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093' }),
      /inter.broker.listener.name must be a listener name defined in advertised.listeners/,
    )
    const bySecurityProtocol = config({
      listeners: 'PLAINTEXT://127.0.0.1:9091,SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093',
      'security.inter.broker.protocol': 'SSL',
    })
    assert.equal(bySecurityProtocol.interBrokerListenerName, 'SSL')
    const ok = config({
      listeners: 'PLAINTEXT://127.0.0.1:9091,SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093',
    })
    assert.equal(ok.interBrokerListenerName, 'PLAINTEXT')
    assert.equal(config({}).interBrokerListenerName, null)
  })

  test("a node's own connections: the target listener's protocol, ssl.* keys and the mechanism's JAAS username and password", () => {
    const outgoing = (
      protocolName: 'SSL' | 'SASL_SSL' | 'SASL_PLAINTEXT',
      key: 'sasl.mechanism.inter.broker.protocol' | 'sasl.mechanism.controller.protocol',
      entries: Record<string, string>,
    ) => {
      const staticBroker = layer(entries)
      return outgoingSecurity({ name: 'L', protocolName }, key, {
        staticBroker,
        effective: resolveBrokerConfig({ staticBroker }),
        readFile: (path) => Buffer.from(path === 'store.pem' ? PEM_STORE : 'x'),
      })
    }
    const scram = outgoing('SASL_SSL', 'sasl.mechanism.inter.broker.protocol', {
      'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-512',
      'listener.name.l.scram-sha-512.sasl.jaas.config':
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="pw";',
      'listener.name.l.ssl.truststore.type': 'PEM',
      'listener.name.l.ssl.truststore.location': 'store.pem',
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': 'store.pem',
    })
    assert.equal(scram.protocol, 'SASL_SSL')
    assert.deepEqual(scram.sasl, { mechanism: 'SCRAM-SHA-512', username: 'broker', password: 'pw' })
    assert.equal(scram.tls?.endpointIdentification, true)
    assert.equal(scram.tls?.ca?.length, 1)
    assert.match(String(scram.tls?.key), /BEGIN PRIVATE KEY/)
    const plain = outgoing('SASL_PLAINTEXT', 'sasl.mechanism.controller.protocol', {
      'sasl.mechanism.controller.protocol': 'PLAIN',
      'listener.name.l.plain.sasl.jaas.config':
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="c" password="p" user_c="p";',
    })
    assert.deepEqual(plain, {
      protocol: 'SASL_PLAINTEXT',
      tls: null,
      sasl: { mechanism: 'PLAIN', username: 'c', password: 'p' },
    })
    const unchecked = outgoing('SSL', 'sasl.mechanism.inter.broker.protocol', {
      'ssl.endpoint.identification.algorithm': '',
    })
    assert.equal(unchecked.tls?.endpointIdentification, false)
    assert.equal(unchecked.sasl, null)
    assert.throws(
      () => outgoing('SASL_PLAINTEXT', 'sasl.mechanism.inter.broker.protocol', {}),
      (e: Error) =>
        e instanceof ListenerSecurityError &&
        /listener L: sasl.mechanism.inter.broker.protocol: SASL mechanism GSSAPI is not supported/.test(
          e.message,
        ),
    )
    assert.throws(
      () =>
        outgoing('SASL_PLAINTEXT', 'sasl.mechanism.controller.protocol', {
          'sasl.mechanism.controller.protocol': 'PLAIN',
          'listener.name.l.plain.sasl.jaas.config':
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_c="secret-pw";',
        }),
      (e: Error) =>
        /listener.name.l.plain.sasl.jaas.config: .*needs the option username/.test(e.message) &&
        !e.message.includes('secret-pw'),
    )
  })

  test('key stores: PKCS12 as pfx, PEM file and inline; JKS and a PEM store password refused', () => {
    const pkcs12 = security('SSL', {
      'ssl.keystore.type': 'PKCS12',
      'ssl.keystore.location': 'store.p12',
      'ssl.keystore.password': 'pw',
    })
    assert.deepEqual(pkcs12.tls?.options.pfx, Buffer.from('x'))
    assert.equal(pkcs12.tls?.options.passphrase, 'pw')
    assert.equal(pkcs12.tls?.clientAuth, 'none')
    const pem = security('SSL', {
      'listener.name.l.ssl.keystore.type': 'PEM',
      'listener.name.l.ssl.keystore.location': 'store.pem',
      'ssl.key.password': 'kp',
      'ssl.client.auth': 'required',
      'ssl.enabled.protocols': 'TLSv1.3',
      'ssl.cipher.suites': 'TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
    })
    assert.match(String(pem.tls?.options.key), /BEGIN PRIVATE KEY/)
    assert.equal(pem.tls?.options.passphrase, 'kp')
    assert.equal(pem.tls?.clientAuth, 'required')
    assert.equal(pem.tls?.options.minVersion, 'TLSv1.3')
    assert.equal(pem.tls?.options.ciphers, 'TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES256-GCM-SHA384')
    assert.throws(
      () => security('SSL', { 'ssl.keystore.location': 'store.jks' }),
      /ssl.keystore.type: JKS is not supported/,
    )
    assert.throws(
      () =>
        security('SSL', {
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.location': 'store.pem',
          'ssl.keystore.password': 'x',
        }),
      /SSL key store password cannot be specified with PEM format/,
    )
    assert.throws(
      () =>
        security('SSL', {
          'ssl.keystore.type': 'PKCS12',
          'ssl.keystore.location': 'store.p12',
          'ssl.truststore.location': 'trust.p12',
          'ssl.truststore.type': 'PKCS12',
        }),
      /ssl.truststore.type: PKCS12 is not supported; use PEM/,
    )
  })

  test('SASL: the listener-and-mechanism JAAS config is required; unsupported mechanisms are refused', () => {
    const jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'
    const ok = security('SASL_PLAINTEXT', {
      'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-512',
      'listener.name.l.plain.sasl.jaas.config': jaas,
      'listener.name.l.scram-sha-512.sasl.jaas.config':
        'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    })
    assert.deepEqual(ok.sasl?.mechanisms, ['PLAIN', 'SCRAM-SHA-512'])
    assert.throws(
      () => security('SASL_PLAINTEXT', { 'sasl.enabled.mechanisms': 'PLAIN', 'sasl.jaas.config': jaas }),
      /PLAIN needs listener.name.l.plain.sasl.jaas.config/,
    )
    assert.throws(() => security('SASL_PLAINTEXT', {}), /SASL mechanism GSSAPI is not supported/)
  })

  test("listener-prefixed keys are known keys; cipher names map to OpenSSL's", () => {
    assert.ok(isListenerPrefixedKey('listener.name.internal.ssl.keystore.location'))
    assert.ok(isListenerPrefixedKey('listener.name.internal.plain.sasl.jaas.config'))
    assert.ok(!isListenerPrefixedKey('listener.name.internal.no.such.key'))
    assert.equal(
      openSslCipherName('TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256'),
      'ECDHE-ECDSA-CHACHA20-POLY1305',
    )
    assert.equal(openSslCipherName('TLS_RSA_WITH_AES_128_GCM_SHA256'), 'AES128-GCM-SHA256')
  })

  test("OAUTHBEARER's validator: Kafka's class needs a JWKS URL of http, https or file; other classes are refused", () => {
    const oauth = (entries: Record<string, string>) =>
      security('SASL_PLAINTEXT', {
        'sasl.enabled.mechanisms': 'OAUTHBEARER',
        'listener.name.l.oauthbearer.sasl.jaas.config':
          'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
        ...entries,
      })
    const handler = 'listener.name.l.oauthbearer.sasl.server.callback.handler.class'
    const validator = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler'
    assert.deepEqual(oauth({}).sasl?.mechanisms, ['OAUTHBEARER'])
    assert.throws(() => oauth({ [handler]: validator }), /sasl\.oauthbearer\.jwks\.endpoint\.url must be set/)
    assert.throws(
      () => oauth({ [handler]: validator, 'sasl.oauthbearer.jwks.endpoint.url': 'ftp://idp/jwks' }),
      /sasl\.oauthbearer\.jwks\.endpoint\.url: ftp: URLs are not supported/,
    )
    assert.throws(
      () =>
        oauth({
          [handler]: validator,
          'sasl.oauthbearer.jwks.endpoint.url': 'file:///nonexistent/jwks.json',
          'sasl.oauthbearer.clock.skew.seconds': '-1',
        }),
      /sasl\.oauthbearer\.clock\.skew\.seconds: -1 is not a whole number of at least 0/,
    )
    assert.throws(() => oauth({ [handler]: 'com.example.Custom' }), /com\.example\.Custom is not supported/)
    // A JWKS that cannot be read yet is no reason to refuse the start: logins wait for it.
    const started = oauth({
      [handler]: validator,
      'sasl.oauthbearer.jwks.endpoint.url': 'file:///nonexistent/jwks.json',
    })
    assert.deepEqual(started.sasl?.mechanisms, ['OAUTHBEARER'])
    started.sasl?.close?.()
  })
})
