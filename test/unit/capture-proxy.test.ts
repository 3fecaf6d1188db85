// The capture proxy forwards bytes unchanged in both directions and pairs requests with responses by
// correlation id, whatever the TCP chunking. A tiny fake broker stands in for Kafka.
import assert from 'node:assert/strict'
import { createConnection, createServer, type Socket } from 'node:net'
import { test } from 'node:test'
import { startProxy } from '../../tools/capture/proxy.ts'

function requestFrame(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  clientId: string,
  body: Buffer,
) {
  const id = Buffer.from(clientId)
  const header = Buffer.alloc(10)
  header.writeInt16BE(apiKey, 0)
  header.writeInt16BE(apiVersion, 2)
  header.writeInt32BE(correlationId, 4)
  header.writeInt16BE(id.length, 8)
  return sized(Buffer.concat([header, id, body]))
}

function sized(payload: Buffer): Buffer {
  const size = Buffer.alloc(4)
  size.writeInt32BE(payload.length)
  return Buffer.concat([size, payload])
}

/** Answers each request frame with [correlationId, 0xbe, 0xef] — in reverse order of two. */
function fakeBroker(): Promise<{ port: number; received: Buffer[]; close(): void }> {
  const received: Buffer[] = []
  const sockets: Socket[] = []
  const server = createServer((socket) => {
    sockets.push(socket)
    let pending = Buffer.alloc(0)
    const held: Buffer[] = []
    socket.on('data', (chunk) => {
      received.push(chunk)
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const frame = pending.subarray(4, 4 + pending.readInt32BE(0))
        pending = pending.subarray(4 + frame.length)
        held.push(sized(Buffer.concat([frame.subarray(4, 8), Buffer.from([0xbe, 0xef])])))
        if (held.length === 2) socket.write(Buffer.concat(held.reverse().splice(0)))
      }
    })
  })
  return new Promise((done) =>
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      if (address === null || typeof address === 'string') throw new Error('no port')
      done({
        port: address.port,
        received,
        close: () => {
          for (const s of sockets) s.destroy()
          server.close()
        },
      })
    }),
  )
}

test('the proxy forwards bytes unchanged and pairs responses by correlation id', async () => {
  const broker = await fakeBroker()
  const proxy = await startProxy({ listenPort: 0, targetPort: broker.port })
  proxy.setLabel('client-a', 'step-1')
  const first = requestFrame(3, 12, 7, 'golden', Buffer.from([1, 2, 3]))
  const second = requestFrame(0, 9, 8, 'golden', Buffer.alloc(300, 9))
  const sent = Buffer.concat([first, second])
  const client = createConnection({ host: '127.0.0.1', port: proxy.port })
  const got: Buffer[] = []
  client.on('data', (chunk) => got.push(chunk))
  await new Promise((done) => client.once('connect', done))
  // Split across odd chunk boundaries: inside the size prefix and inside the header.
  for (const [from, to] of [
    [0, 2],
    [2, 9],
    [9, 30],
    [30, sent.length],
  ] as const) {
    client.write(sent.subarray(from, to))
    await new Promise((done) => setTimeout(done, 10))
  }
  const deadline = Date.now() + 2000
  while (proxy.exchanges.some((e) => e.response === null) || proxy.exchanges.length < 2) {
    assert.ok(Date.now() < deadline, 'responses did not arrive')
    await new Promise((done) => setTimeout(done, 10))
  }
  client.destroy()
  await proxy.stop()
  broker.close()

  assert.deepEqual(Buffer.concat(broker.received), sent, 'the broker got exactly what the client sent')
  assert.equal(Buffer.concat(got).length, 2 * (4 + 6))
  const [a, b] = proxy.exchanges
  assert.ok(a && b)
  assert.deepEqual(
    [a.apiKey, a.apiVersion, a.correlationId, a.clientId, a.connectionLabel, a.requestLabel],
    [3, 12, 7, 'golden', 'client-a', 'step-1'],
  )
  assert.deepEqual(a.request, first.subarray(4))
  assert.deepEqual(b.request, second.subarray(4))
  assert.equal(a.response?.readInt32BE(0), 7)
  assert.equal(b.response?.readInt32BE(0), 8)
})
