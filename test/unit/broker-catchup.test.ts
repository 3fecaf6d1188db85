/**
 * A WeirNode in this process, over real sockets and files. A single combined node still serves at
 * once the connections its client listener held while it caught up (the regression itself, a
 * restarted node of a cluster answering from a stale image, needs real processes:
 * test/faults/broker-catchup.test.ts). A broker that cannot reach its controller quorum holds its
 * client connections (neither answered nor closed), logs why, and stops cleanly while holding them.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { WeirNode } from '../../src/broker/index.ts'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { apis } from '../../src/protocol/index.ts'
import { freePorts } from '../../tools/free-ports.ts'

const connectionOptions = {
  clientId: 'catchup-unit',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 60_000,
  inFlightRequestsMax: 4,
  responseBytesMax: 1 << 24,
  connectTimeoutMs: 5_000,
}

test('a single node serves a connection opened before it is ready, from metadata that knows the broker', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-catchup-unit-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const [port, controllerPort] = (await freePorts(2)) as [number, number]
  const node = await WeirNode.start({
    staticConfig: new Map([
      ['node.id', '1'],
      ['process.roles', 'broker,controller'],
      ['controller.listener.names', 'CONTROLLER'],
      ['controller.quorum.voters', `1@127.0.0.1:${controllerPort}`],
      ['listeners', `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`],
      ['log.dirs', dir],
    ]),
  })
  try {
    // Not waiting for ready(): the first answer on this connection must already know the broker.
    const c = await KafkaConnection.open({ host: '127.0.0.1', port }, connectionOptions)
    try {
      const res = await c.request(apis.Metadata, 12, { topics: null })
      assert.deepEqual(
        res.brokers.map((b) => b.nodeId),
        [1],
      )
      assert.equal(res.controllerId, 1)
    } finally {
      c.close()
    }
    await node.ready()
  } finally {
    await node.stop()
  }
})

test('a broker whose controller quorum is unreachable holds client connections, logs why, stops', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'weir-catchup-unit-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  // Nobody listens on the voter's port.
  const [port, voterPort] = (await freePorts(2)) as [number, number]
  const lines: string[] = []
  let logged: (() => void) | null = null
  const node = await WeirNode.start({
    staticConfig: new Map([
      ['node.id', '2'],
      ['process.roles', 'broker'],
      ['controller.listener.names', 'CONTROLLER'],
      ['controller.quorum.voters', `1@127.0.0.1:${voterPort}`],
      ['listeners', `PLAINTEXT://127.0.0.1:${port}`],
      ['log.dirs', dir],
      ['cluster.id', 'weirTestClusterId00000'],
    ]),
    log: (level, message) => {
      lines.push(`${level} ${message}`)
      if (message.startsWith('client listeners hold')) logged?.()
    },
  })
  const socket = new Socket()
  let answered = false
  let closed = false
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
      socket.connect(port, '127.0.0.1')
    })
    socket.on('data', () => {
      answered = true
    })
    socket.on('error', () => {})
    const socketClosed = new Promise<void>((resolve) =>
      socket.once('close', () => {
        closed = true
        resolve()
      }),
    )
    // ApiVersions v0: size, api key 18, version 0, correlation id 1, client id "t".
    const body = Buffer.from([0, 18, 0, 0, 0, 0, 0, 1, 0, 1, 0x74])
    const size = Buffer.alloc(4)
    size.writeInt32BE(body.length)
    socket.write(Buffer.concat([size, body]))
    await new Promise<void>((resolve) => {
      logged = resolve
    })
    const line = lines.find((l) => l.includes('client listeners hold'))
    assert.match(line ?? '', /^warn client listeners hold 1 connection\(s\) .*waiting for registration/)
    assert.equal(answered, false, 'a held connection was answered')
    assert.equal(closed, false, 'a held connection was closed')
    await node.stop()
    await socketClosed
    assert.equal(answered, false, 'a held connection was answered at stop')
  } finally {
    socket.destroy()
    await node.stop()
  }
})
