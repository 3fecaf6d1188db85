/**
 * A TLS listener over real sockets with openssl-made certificates: `ssl.client.auth=requested`
 * gives a client with a trusted certificate the principal `ssl.principal.mapping.rules` make of its
 * subject, one without `User:ANONYMOUS`, and closes one whose certificate does not verify.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { connect } from 'node:tls'
import { systemClock } from '../../src/io/index.ts'
import { apis, ErrorCode, encodeRequest } from '../../src/protocol/index.ts'
import { formatPrincipal, type KafkaPrincipal, SslPrincipalMapper } from '../../src/security/index.ts'
import { Dispatcher, defineHandler, HandlerRegistry, Listener } from '../../src/server/index.ts'
import { makeTestCerts, type TestCerts } from '../support/tls-certs.ts'
import { tempDir } from '../support/weir-process.ts'

describe('a TLS listener', () => {
  const dir = tempDir('weir-tls-')
  let certs: TestCerts
  let listener: Listener
  let port = 0
  const seen: KafkaPrincipal[] = []

  before(async () => {
    certs = makeTestCerts(dir.path)
    const registry = new HandlerRegistry()
    registry.register(
      defineHandler(apis.ListGroups, {}, (_req, ctx) => {
        seen.push(ctx.principal)
        return { errorCode: ErrorCode.None, groups: [] }
      }),
    )
    listener = new Listener({
      listenerName: 'SSL',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(registry),
      clock: systemClock,
      limits: {
        requestBytesMax: 1 << 20,
        inFlightRequestsMax: 8,
        inFlightBytesMax: 1 << 20,
        connectionsIdleMsMax: 60_000,
        connectionsMax: 10,
      },
      log: () => {},
      tls: {
        options: {
          key: readFileSync(certs.serverKeyPem),
          cert: readFileSync(certs.serverCertPem),
          ca: readFileSync(certs.caPem),
        },
        clientAuth: 'requested',
        principalMapper: SslPrincipalMapper.fromRules('RULE:^CN=([^,]+),OU=test.*$/$1/U,DEFAULT'),
      },
    })
    port = (await listener.start()).port
  })

  after(async () => {
    await listener.stop(100)
    dir.remove()
  })

  /** Sends ListGroups over TLS; resolves true if answered, false if the connection closed first. */
  const listGroups = (options: { key?: Buffer; cert?: Buffer }): Promise<boolean> =>
    new Promise((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port,
        ca: readFileSync(certs.caPem),
        servername: 'localhost',
        ...options,
      })
      socket.on('error', () => {})
      socket.once('data', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('close', () => resolve(false))
      socket.once('secureConnect', () =>
        socket.write(
          Buffer.concat(
            encodeRequest(apis.ListGroups, { requestApiVersion: 4, correlationId: 1, clientId: 't' }, {}),
          ),
        ),
      )
    })

  test('a trusted client certificate: the mapped subject is the principal', async () => {
    assert.equal(
      await listGroups({ key: readFileSync(certs.clientKeyPem), cert: readFileSync(certs.clientCertPem) }),
      true,
    )
    assert.equal(formatPrincipal(seen.at(-1)!), 'User:CLIENT-ONE')
  })

  test('no certificate: User:ANONYMOUS', async () => {
    assert.equal(await listGroups({}), true)
    assert.equal(formatPrincipal(seen.at(-1)!), 'User:ANONYMOUS')
  })

  test('a certificate of another CA: closed before any request', async () => {
    const other = join(dir.path, 'other')
    execFileSync('mkdir', ['-p', other])
    const before = seen.length
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        'k.pem',
        '-out',
        'c.pem',
        '-days',
        '1',
        '-subj',
        '/CN=stranger',
      ],
      { cwd: other, stdio: 'ignore' },
    )
    assert.equal(
      await listGroups({ key: readFileSync(join(other, 'k.pem')), cert: readFileSync(join(other, 'c.pem')) }),
      false,
    )
    assert.equal(seen.length, before)
  })
})
