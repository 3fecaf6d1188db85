/**
 * 100,000 failed logins from one address against a real node (a SASL_PLAINTEXT listener with PLAIN
 * and SCRAM-SHA-256): half PLAIN with a wrong password, half SCRAM with a malformed client-first,
 * each on its own connection, a bounded number at a time. Meanwhile kafkajs, logged in on the same
 * listener, keeps producing and consuming; it sees no error and gets every record. The node's open
 * connections and memory stay bounded, it does not crash, and no password appears in its log.
 * `connection.failed.authentication.delay.ms` is 10 here (Kafka's default is 100): the delay holds
 * each failed connection that long, so with a bounded number in flight it sets the pace.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import kafkajs from 'kafkajs'
import { apis, encodeRequest } from '../../src/protocol/index.ts'
import { freePorts, tempDir, WeirProcess, writeProperties } from '../support/weir-process.ts'

const { Kafka, logLevel } = kafkajs

const ALICE = { username: 'alice', password: 'alice-good-pw-3b9d' }
const WRONG_PASSWORD = 'attacker-guess-pw-71c0'
const ATTEMPTS = 100_000
const IN_FLIGHT = 64
const DELAY_MS = 10

const frame = (parts: Buffer[]) => Buffer.concat(parts)
const handshake = (mechanism: string, correlationId: number) =>
  frame(
    encodeRequest(apis.SaslHandshake, { requestApiVersion: 1, correlationId, clientId: 'x' }, { mechanism }),
  )
const authenticate = (authBytes: Buffer, correlationId: number) =>
  frame(
    encodeRequest(
      apis.SaslAuthenticate,
      { requestApiVersion: 2, correlationId, clientId: 'x' },
      { authBytes },
    ),
  )
/** The two bad logins, each a SaslHandshake v1 and a SaslAuthenticate, written at once. */
const BAD_LOGINS = [
  Buffer.concat([
    handshake('PLAIN', 1),
    authenticate(Buffer.from(`\0${ALICE.username}\0${WRONG_PASSWORD}`), 2),
  ]),
  Buffer.concat([handshake('SCRAM-SHA-256', 1), authenticate(Buffer.from('n,,n=alice,r'), 2)]),
]

/** One failed login: resolves with the bytes the node answered before it closed the connection. */
function failedLogin(port: number, bytes: Buffer): Promise<number> {
  return new Promise((resolve) => {
    let received = 0
    const socket = connect({ host: '127.0.0.1', port })
    socket.on('connect', () => socket.write(bytes))
    socket.on('data', (d: Buffer) => {
      received += d.length
    })
    socket.on('error', () => {})
    socket.on('close', () => resolve(received))
  })
}

/** The node's resident memory (bytes) and open file descriptors, from /proc. */
function usage(pid: number): { rss: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? '0')
  return { rss: rssKb * 1024, fds: readdirSync(`/proc/${pid}/fd`).length }
}

describe('100,000 failed logins from one address', () => {
  const dir = tempDir('weir-logins-')
  let weir: WeirProcess
  let port = 0

  before(async () => {
    const [plain, controller, sasl] = await freePorts(3)
    port = sasl!
    const config = writeProperties(dir.path, 'server.properties', {
      listeners: `PLAINTEXT://127.0.0.1:${plain},CONTROLLER://127.0.0.1:${controller},SASL_PLAINTEXT://127.0.0.1:${sasl}`,
      'listener.security.protocol.map':
        'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT',
      'controller.quorum.voters': `1@127.0.0.1:${controller}`,
      'inter.broker.listener.name': 'PLAINTEXT',
      'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256',
      'listener.name.sasl_plaintext.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required user_${ALICE.username}="${ALICE.password}";`,
      'listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config':
        'org.apache.kafka.common.security.scram.ScramLoginModule required;',
      'connection.failed.authentication.delay.ms': DELAY_MS,
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

  test('are all refused while a logged-in client produces and consumes; the node stays bounded', async (t) => {
    const kafka = new Kafka({
      clientId: 'good-client',
      brokers: [`127.0.0.1:${port}`],
      logLevel: logLevel.NOTHING,
      sasl: { mechanism: 'plain', ...ALICE },
    })
    const topic = 'under-attack'
    const producer = kafka.producer({ allowAutoTopicCreation: true })
    await producer.connect()
    await producer.send({ topic, messages: [{ value: 'first' }] })
    const consumer = kafka.consumer({ groupId: 'under-attack-group' })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    const consumed: string[] = []
    await consumer.run({
      eachMessage: async ({ message }) => {
        consumed.push(message.value?.toString() ?? '')
      },
    })

    const pid = weir.pid!
    const before = usage(pid)
    let peak = before
    const sampler = setInterval(() => {
      const now = usage(pid)
      peak = { rss: Math.max(peak.rss, now.rss), fds: Math.max(peak.fds, now.fds) }
    }, 250)
    let produced = 1
    let producing = true
    const producerErrors: unknown[] = []
    const producing$ = (async () => {
      while (producing) {
        try {
          await producer.send({ topic, acks: -1, messages: [{ value: `m${produced}` }] })
          produced++
        } catch (e) {
          producerErrors.push(e)
        }
        await new Promise((r) => setTimeout(r, 20))
      }
    })()

    const started = performance.now()
    let next = 0
    let unanswered = 0
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < ATTEMPTS) {
          const i = next++
          if ((await failedLogin(port, BAD_LOGINS[i % 2]!)) === 0) unanswered++
        }
      }),
    )
    const seconds = (performance.now() - started) / 1000
    producing = false
    await producing$
    clearInterval(sampler)
    t.diagnostic(
      `${ATTEMPTS} failed logins in ${seconds.toFixed(1)} s (${Math.round(ATTEMPTS / seconds)}/s, ${IN_FLIGHT} at a time, delay ${DELAY_MS} ms); ` +
        `node RSS ${(before.rss / 2 ** 20).toFixed(0)} -> peak ${(peak.rss / 2 ** 20).toFixed(0)} MiB, fds ${before.fds} -> peak ${peak.fds}; ` +
        `${produced} records produced meanwhile`,
    )

    assert.equal(unanswered, 0, 'every failed login is answered before its connection closes')
    assert.deepEqual(producerErrors, [])
    const deadline = Date.now() + 30_000
    while (consumed.length < produced && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    assert.deepEqual(consumed, ['first', ...Array.from({ length: produced - 1 }, (_, i) => `m${i + 1}`)])
    await consumer.disconnect()
    await producer.disconnect()

    assert.ok(weir.running, 'the node is still running')
    assert.ok(peak.fds <= before.fds + IN_FLIGHT + 32, `open descriptors peaked at ${peak.fds}`)
    assert.ok(peak.rss <= before.rss + 256 * 2 ** 20, `RSS peaked at ${peak.rss}`)
    const failures = weir.output.match(/Failed authentication/g)?.length ?? 0
    assert.ok(failures >= ATTEMPTS, `${failures} failed authentications logged`)
    for (const secret of [ALICE.password, WRONG_PASSWORD]) {
      assert.ok(!weir.output.includes(secret), `the log holds ${secret}`)
    }
  })
})
