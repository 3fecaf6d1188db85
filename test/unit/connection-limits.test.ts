/**
 * Connection limits of a real node over real sockets, by Kafka's names: `max.connections.per.ip`
 * (with `max.connections.per.ip.overrides` naming a host), `listener.name.<l>.max.connections`, and
 * the broker-wide `max.connections`, from which the inter-broker listener is exempt (its connection
 * closes the least recently used client connection instead). A connection over a limit is closed
 * before it is answered; the admitted ones keep being served, and a closed one frees its slot.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { connect as connectTls } from 'node:tls'
import { systemClock } from '../../src/io/index.ts'
import { apis, encodeRequest } from '../../src/protocol/index.ts'
import { SslPrincipalMapper } from '../../src/security/index.ts'
import { ConnectionQuotas, Dispatcher, HandlerRegistry, Listener } from '../../src/server/index.ts'
import { makeTestCerts } from '../support/tls-certs.ts'
import { freePorts, tempDir, WeirProcess, writeProperties } from '../support/weir-process.ts'

/** A raw connection that says whether the node answered an ApiVersions or closed it unanswered. */
class Probe {
  readonly socket: Socket
  #correlationId = 0

  constructor(port: number, localAddress: string) {
    this.socket = connect({ host: '127.0.0.1', port, localAddress })
    this.socket.on('error', () => {})
  }

  /** 'served' when an answer came, 'closed' when the node closed the connection first. */
  ask(): Promise<'served' | 'closed'> {
    const id = ++this.#correlationId
    const frame = Buffer.concat(
      encodeRequest(
        apis.ApiVersions,
        { requestApiVersion: 3, correlationId: id, clientId: 'limits' },
        { clientSoftwareName: 'limits', clientSoftwareVersion: '1' },
      ),
    )
    return new Promise((resolve) => {
      let bytes = Buffer.alloc(0)
      const onData = (d: Buffer) => {
        bytes = Buffer.concat([bytes, d])
        if (bytes.length >= 4 && bytes.length >= 4 + bytes.readInt32BE(0)) {
          done('served')
        }
      }
      const onClose = () => done('closed')
      const done = (outcome: 'served' | 'closed') => {
        this.socket.off('data', onData)
        this.socket.off('close', onClose)
        resolve(outcome)
      }
      this.socket.on('data', onData)
      this.socket.once('close', onClose)
      if (this.socket.destroyed) done('closed')
      else this.socket.write(frame)
    })
  }
}

describe('connection limits', () => {
  const dir = tempDir('weir-limits-')
  let node: WeirProcess
  let ports: number[] = []
  const open: Probe[] = []

  before(async () => {
    ports = await freePorts(4)
    const [plain, external, other, controller] = ports
    const config = writeProperties(dir.path, 'server.properties', {
      'node.id': 1,
      'process.roles': 'broker,controller',
      listeners: `PLAINTEXT://127.0.0.1:${plain},EXTERNAL://127.0.0.1:${external},OTHER://127.0.0.1:${other},CONTROLLER://127.0.0.1:${controller}`,
      'listener.security.protocol.map':
        'PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,OTHER:PLAINTEXT,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name': 'PLAINTEXT',
      'controller.listener.names': 'CONTROLLER',
      'controller.quorum.voters': `1@127.0.0.1:${controller}`,
      'log.dirs': `${dir.path}/data`,
      'max.connections': 4,
      'listener.name.external.max.connections': 3,
      'max.connections.per.ip': 2,
      'max.connections.per.ip.overrides': 'localhost:50',
    })
    node = new WeirProcess(['--config', config])
    await node.start(60_000)
  })

  after(async () => {
    for (const p of open) p.socket.destroy()
    await node?.stop()
    dir.remove()
  })

  const probe = (port: number, from: string): Probe => {
    const p = new Probe(port, from)
    open.push(p)
    return p
  }

  test('each limit refuses the connection over it and only that one', async () => {
    const [plain, external, other] = ports as [number, number, number]
    // 127.0.0.2 has max.connections.per.ip (2); 127.0.0.1 is localhost, overridden to 50.
    const a = probe(external, '127.0.0.2')
    const b = probe(external, '127.0.0.2')
    assert.equal(await a.ask(), 'served')
    assert.equal(await b.ask(), 'served')
    assert.equal(await probe(external, '127.0.0.2').ask(), 'closed', 'max.connections.per.ip')
    const d = probe(external, '127.0.0.1')
    assert.equal(await d.ask(), 'served')
    assert.equal(await probe(external, '127.0.0.1').ask(), 'closed', 'listener.name.external.max.connections')
    const f = probe(other, '127.0.0.1')
    assert.equal(await f.ask(), 'served')
    assert.equal(await probe(other, '127.0.0.1').ask(), 'closed', 'max.connections')
    // The inter-broker listener is exempt from the broker-wide limit: its connection is admitted
    // and, the broker being over its limit, the least recently used client connection (a) closes.
    const aClosed = new Promise((resolve) => a.socket.once('close', resolve))
    const h = probe(plain, '127.0.0.1')
    assert.equal(await h.ask(), 'served')
    await aClosed
    for (const p of [b, d, f, h]) assert.equal(await p.ask(), 'served')

    // Closed connections free their slots: their address's, their listener's and the broker's
    // (the inter-broker listener's count in the broker's total, as in Kafka).
    const hClosed = new Promise((resolve) => h.socket.once('close', resolve))
    h.socket.destroy()
    await hClosed
    let again: 'served' | 'closed' = 'closed'
    for (let i = 0; i < 50 && again === 'closed'; i++) {
      again = await probe(external, '127.0.0.2').ask()
      if (again === 'closed') await new Promise((r) => setTimeout(r, 20))
    }
    assert.equal(again, 'served')

    // The broker is full again (b, d, f and the new one): another inter-broker listener connection
    // closes the least recently used client connection, now b.
    const bClosed = new Promise((resolve) => b.socket.once('close', resolve))
    assert.equal(await probe(plain, '127.0.0.1').ask(), 'served')
    await bClosed
    for (const p of [d, f]) assert.equal(await p.ask(), 'served')
    assert.match(
      node.output,
      /closing a connection from 127\.0\.0\.2 on EXTERNAL: max\.connections\.per\.ip reached/,
    )
    assert.match(node.output, /on EXTERNAL: listener max\.connections reached/)
    assert.match(node.output, /on OTHER: max\.connections reached/)
    assert.match(node.output, /from 127\.0\.0\.2:\d+ on EXTERNAL, the least recently used/)
  })
})

describe('a TLS listener over its limit', () => {
  test('closes the connection before its handshake; the admitted one is not disturbed', async () => {
    const dir = tempDir('weir-limits-tls-')
    const certs = makeTestCerts(dir.path)
    const warnings: string[] = []
    const listener = new Listener({
      listenerName: 'SSL',
      host: '127.0.0.1',
      port: 0,
      dispatcher: new Dispatcher(new HandlerRegistry()),
      clock: systemClock,
      limits: {
        requestBytesMax: 1 << 20,
        inFlightRequestsMax: 8,
        inFlightBytesMax: 1 << 20,
        connectionsIdleMsMax: 60_000,
        connectionsMax: 10,
      },
      quotas: new ConnectionQuotas({
        connectionsMax: 10,
        connectionsPerIpMax: 1,
        connectionsPerIpOverrides: new Map(),
        protectedListener: null,
      }),
      log: (_level, message) => warnings.push(message),
      tls: {
        options: { key: readFileSync(certs.serverKeyPem), cert: readFileSync(certs.serverCertPem) },
        clientAuth: 'none',
        principalMapper: SslPrincipalMapper.fromRules(undefined),
      },
    })
    const { port } = await listener.start()
    const handshake = () =>
      new Promise<'secure' | 'closed'>((resolve) => {
        const socket = connectTls({
          host: '127.0.0.1',
          port,
          ca: readFileSync(certs.caPem),
          servername: 'localhost',
        })
        socket.on('error', () => {})
        socket.once('secureConnect', () => resolve('secure'))
        socket.once('close', () => resolve('closed'))
        sockets.push(socket)
      })
    const sockets: Array<import('node:tls').TLSSocket> = []
    try {
      assert.equal(await handshake(), 'secure')
      assert.equal(await handshake(), 'closed')
      assert.equal(sockets[0]!.destroyed, false)
      assert.deepEqual(warnings, [
        'closing a connection from 127.0.0.1 on SSL: max.connections.per.ip reached',
      ])
    } finally {
      for (const s of sockets) s.destroy()
      await listener.stop(100)
      dir.remove()
    }
  })
})

describe('connection limits at start', () => {
  test("refuses Kafka's invalid combinations with Kafka's messages", async () => {
    const dir = tempDir('weir-limits-bad-')
    try {
      for (const [settings, message] of [
        [
          { 'max.connections.per.ip': 0 },
          /max\.connections\.per\.ip can be set to zero only if max\.connections\.per\.ip\.overrides property is set\./,
        ],
        [
          { 'connections.max.idle.ms': 100, 'connection.failed.authentication.delay.ms': 100 },
          /connection\.failed\.authentication\.delay\.ms=100 should always be less than connections\.max\.idle\.ms=100/,
        ],
        [{ 'max.connections.per.ip.overrides': 'localhost' }, /max\.connections\.per\.ip\.overrides/],
      ] as const) {
        const [port, controller] = await freePorts(2)
        const config = writeProperties(dir.path, 'bad.properties', {
          listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controller}`,
          'controller.quorum.voters': `1@127.0.0.1:${controller}`,
          'log.dirs': `${dir.path}/data`,
          ...settings,
        })
        await assert.rejects(new WeirProcess(['--config', config]).start(30_000), message)
      }
    } finally {
      dir.remove()
    }
  })
})
