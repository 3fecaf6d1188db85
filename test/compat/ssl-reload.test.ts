/**
 * KIP-226 against a real node with Kafka's own `kafka-configs`: altering this broker's
 * `listener.name.ssl.ssl.keystore.location` makes new TLS connections see the new certificate while
 * an open one keeps its own and goes on being served; a key store that cannot be read, or a PKCS12
 * store with a wrong password, is refused (INVALID_REQUEST, as Kafka's validateBrokerConfigChange)
 * and the current one stays. The wrong password appears in no log line. Altering an mTLS
 * listener's `ssl.truststore.location` admits the client certificates of the new CA.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { connect, type TLSSocket } from 'node:tls'
import { apis, encodeRequest } from '../../src/protocol/index.ts'
import { runKafkaTool } from '../support/kafka-tools.ts'
import { makeTestCerts, type TestCerts } from '../support/tls-certs.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'

const WRONG_PASSWORD = 'not-the-store-pw-8a2f'

describe('a TLS listener reloads its key store (KIP-226)', () => {
  const dir = tempDir('weir-ssl-reload-')
  let first: TestCerts
  let second: TestCerts
  let weir: WeirProcess
  let port: Record<'PLAINTEXT' | 'CONTROLLER' | 'SSL' | 'MTLS', number>
  const open: TLSSocket[] = []

  before(async () => {
    for (const d of ['a', 'b']) mkdirSync(join(dir.path, d))
    first = makeTestCerts(join(dir.path, 'a'))
    second = makeTestCerts(join(dir.path, 'b'))
    const [plain, controller, ssl, mtls] = await freePorts(4)
    port = { PLAINTEXT: plain!, CONTROLLER: controller!, SSL: ssl!, MTLS: mtls! }
    const config = writeProperties(dir.path, 'server.properties', {
      listeners: `PLAINTEXT://127.0.0.1:${plain},CONTROLLER://127.0.0.1:${controller},SSL://127.0.0.1:${ssl},MTLS://127.0.0.1:${mtls}`,
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,MTLS:SSL',
      'controller.quorum.voters': `1@127.0.0.1:${controller}`,
      'inter.broker.listener.name': 'PLAINTEXT',
      'listener.name.ssl.ssl.keystore.type': 'PEM',
      'listener.name.ssl.ssl.keystore.location': first.serverPemStore,
      'listener.name.mtls.ssl.keystore.type': 'PEM',
      'listener.name.mtls.ssl.keystore.location': first.serverPemStore,
      'listener.name.mtls.ssl.client.auth': 'required',
      'listener.name.mtls.ssl.truststore.type': 'PEM',
      'listener.name.mtls.ssl.truststore.location': first.caPem,
    })
    weir = new WeirProcess(['--config', config, '--data-dir', join(dir.path, 'data')])
    await weir.start()
  })

  after(async () => {
    for (const s of open) s.destroy()
    await weir?.kill()
    dir.remove()
  })

  /** A TLS connection trusting both CAs; resolves once the handshake is done. */
  const tlsConnection = () =>
    new Promise<TLSSocket>((resolve, reject) => {
      const socket = connect({
        host: '127.0.0.1',
        port: port.SSL,
        ca: [readFileSync(first.caPem), readFileSync(second.caPem)],
        servername: 'localhost',
      })
      open.push(socket)
      socket.once('secureConnect', () => resolve(socket))
      socket.once('error', reject)
    })
  const fingerprint = (pem: string) => new X509Certificate(readFileSync(pem)).fingerprint256
  const served = async () => (await tlsConnection()).getPeerCertificate().fingerprint256
  /** Whether the connection answers an ApiVersions request. */
  const answers = (socket: TLSSocket) =>
    new Promise<boolean>((resolve) => {
      socket.once('data', () => resolve(true))
      socket.once('close', () => resolve(false))
      socket.write(
        Buffer.concat(
          encodeRequest(
            apis.ApiVersions,
            { requestApiVersion: 3, correlationId: 1, clientId: 'reload' },
            { clientSoftwareName: 'reload', clientSoftwareVersion: '1' },
          ),
        ),
      )
    })
  /** Whether an mTLS client with the second CA's certificate is served (answered ApiVersions). */
  const secondClientServed = () =>
    new Promise<boolean>((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port: port.MTLS,
        ca: readFileSync(first.caPem),
        servername: 'localhost',
        key: readFileSync(second.clientKeyPem),
        cert: readFileSync(second.clientCertPem),
      })
      open.push(socket)
      socket.on('error', () => resolve(false))
      socket.once('close', () => resolve(false))
      socket.once('secureConnect', () => void answers(socket).then(resolve))
    })
  const alter = (...configs: string[]) =>
    runKafkaTool(
      'kafka-configs',
      '--bootstrap-server',
      `127.0.0.1:${port.PLAINTEXT}`,
      '--entity-type',
      'brokers',
      '--entity-name',
      '1',
      '--alter',
      '--add-config',
      configs.join(','),
    )

  test('new connections get the new certificate, open ones keep theirs; a bad store is refused', async () => {
    const old = await tlsConnection()
    assert.equal(old.getPeerCertificate().fingerprint256, fingerprint(first.serverCertPem))

    const ok = await alter(`listener.name.ssl.ssl.keystore.location=${second.serverPemStore}`)
    assert.equal(ok.code, 0, ok.stderr)
    await waitFor('the new certificate', async () =>
      (await served()) === fingerprint(second.serverCertPem) ? true : undefined,
    )
    assert.equal(await answers(old), true, 'the connection opened before goes on')
    assert.equal(old.getPeerCertificate().fingerprint256, fingerprint(first.serverCertPem))

    const missing = await alter(`listener.name.ssl.ssl.keystore.location=${join(dir.path, 'none.pem')}`)
    assert.notEqual(missing.code, 0)
    assert.match(missing.stdout + missing.stderr, /InvalidRequestException.*SSLFactory failed.*cannot read/s)
    const wrong = await alter(
      'listener.name.ssl.ssl.keystore.type=PKCS12',
      `listener.name.ssl.ssl.keystore.location=${first.serverP12}`,
      `listener.name.ssl.ssl.keystore.password=${WRONG_PASSWORD}`,
    )
    assert.notEqual(wrong.code, 0)
    // (kafka-configs itself echoes its arguments, the password among them, when it fails.)
    assert.match(
      wrong.stdout + wrong.stderr,
      /InvalidRequestException: [^\n]*SSLFactory failed: listener SSL: mac verify failure/,
    )
    assert.equal(await served(), fingerprint(second.serverCertPem), 'the store in use stays')
    assert.ok(!weir.output.includes(WRONG_PASSWORD), 'the log holds the password')
  })

  test('a new trust store admits the client certificates of its CA', async () => {
    assert.equal(await secondClientServed(), false)
    const ok = await alter(`listener.name.mtls.ssl.truststore.location=${second.caPem}`)
    assert.equal(ok.code, 0, ok.stderr)
    await waitFor('the new trust store', async () => ((await secondClientServed()) ? true : undefined))
  })
})
