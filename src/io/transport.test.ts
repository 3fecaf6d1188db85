/** NodeTransport over a real loopback socket: every read lands in the connection's one buffer. */
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { nodeTransport, SOCKET_READ_BYTES } from './transport.ts'

describe('nodeTransport', () => {
  it('lends each read in one reused buffer per connection; the bytes arrive whole and in order', async () => {
    const sent = Buffer.alloc(5 * SOCKET_READ_BYTES + 123)
    for (let i = 0; i < sent.length; i++) sent[i] = (i * 7) & 0xff
    const server = createServer((s) => s.end(sent))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    try {
      const c = await nodeTransport.connect({ host: '127.0.0.1', port }, { timeoutMs: 5_000 })
      const copies: Buffer[] = []
      const memories = new Set<ArrayBufferLike>()
      await new Promise<void>((resolve) => {
        c.onData((chunk) => {
          assert.ok(chunk.length <= SOCKET_READ_BYTES)
          memories.add(chunk.buffer)
          copies.push(Buffer.from(chunk)) // lent: copied to be kept
        })
        c.onClose(() => resolve())
      })
      assert.ok(copies.length >= 2, `${copies.length} reads`)
      assert.equal(memories.size, 1, 'every read in the same memory')
      assert.ok(Buffer.concat(copies).equals(sent))
    } finally {
      server.close()
    }
  })
})
