/**
 * A secured embedded cluster (`startCluster({ security })`: SASL_SSL with SCRAM-SHA-512 and PLAIN,
 * the authorizer on) and the `weir acl` and `weir user` commands against it: the ACL bookkeeping
 * as kafka-acls prints it, SCRAM users set by `weir user` logging in with kafkajs, the weir command
 * itself over SASL_SSL with `--command-config`, an ACL's effect on a kafkajs producer, and kafkajs
 * and confluent-kafka producing and consuming with the settings the cluster hands back.
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import kafkajs from 'kafkajs'
import { type EmbeddedCluster, startCluster } from 'weir'
import { REPO, writeProperties } from '../support/weir-process.ts'
import { weir, weirJson, weirOk } from './cli-support.ts'
import { aclBookkeeping, CAROL_PASSWORD, scramUserBookkeeping } from './security-scenarios.ts'

const { Kafka, logLevel } = kafkajs
const run = promisify(execFile)
const ADMIN_PASSWORD = 'admin-pw-4b1d'
const ALICE_PASSWORD = 'alice "pw" \\ 9c0f'

describe('a secured embedded cluster, weir acl and weir user', () => {
  let cluster: EmbeddedCluster
  let b: string[]
  before(async () => {
    cluster = await startCluster({
      security: {
        users: { admin: ADMIN_PASSWORD, alice: ALICE_PASSWORD },
        superUsers: ['admin'],
        authorizer: true,
      },
    })
    // The brokers' own PLAINTEXT listener: the weir command has no TLS or SASL of its own here.
    b = ['-b', cluster.bootstrapServers]
  })
  after(() => cluster.stop())

  const kafkaOf = (config: ReturnType<NonNullable<EmbeddedCluster['security']>['kafkajsConfig']>) =>
    new Kafka({
      ...config,
      clientId: 'weir-security-test',
      logLevel: logLevel.NOTHING,
      retry: { retries: 2 },
    })

  test('acl create, list (as kafka-acls prints it), delete with a filter; bad flags are usage errors', () =>
    aclBookkeeping(b))

  test('user set, list and delete; a user set by weir logs in with kafkajs, and not once deleted', async () => {
    // Fresh objects per client: kafkajs keeps its authenticator (and the password) on the sasl object.
    const carol = (password: string) => ({
      ...cluster.security!.kafkajsConfig('admin'),
      sasl: { mechanism: 'scram-sha-512' as const, username: 'carol', password },
    })
    await scramUserBookkeeping(b, cluster.dir, {
      async whileSet() {
        const admin = kafkaOf(carol(CAROL_PASSWORD)).admin()
        await admin.connect()
        await admin.listTopics()
        await admin.disconnect()
        const wrong = kafkaOf(carol('not-it')).admin()
        await assert.rejects(wrong.connect(), /SASL SCRAM SHA512 authentication failed|Authentication failed/)
      },
      async afterDelete() {
        await assert.rejects(kafkaOf(carol(CAROL_PASSWORD)).admin().connect())
      },
    })
  })

  test('--command-config: the weir command over SASL_SSL (SCRAM and PLAIN); a wrong password exits 1 without printing it', async () => {
    const security = cluster.security!
    for (const mechanism of ['SCRAM-SHA-512', 'PLAIN'] as const) {
      // bootstrap.servers comes from the file: the SASL_SSL listeners.
      const config = writeProperties(
        cluster.dir,
        `admin-${mechanism}.properties`,
        security.clientProperties('admin', mechanism),
      )
      const topic = `cc-${mechanism.toLowerCase()}`
      await weirOk(['topic', 'create', topic, '--command-config', config])
      await weirOk(['produce', topic, '--command-config', config], 'over sasl_ssl\n')
      const consumed = await weirOk([
        'consume',
        topic,
        '--from-beginning',
        '--max-messages',
        '1',
        '--command-config',
        config,
      ])
      assert.equal(consumed, 'over sasl_ssl\n')
      assert.deepEqual(await weirJson(['user', 'list', 'admin', '--command-config', config]), [
        { user: 'admin', mechanism: 'SCRAM-SHA-512', iterations: 4096 },
      ])
    }
    const wrongPassword = 'wrong-pw-3e8a'
    const wrong = writeProperties(cluster.dir, 'wrong.properties', {
      ...security.clientProperties('admin'),
      'sasl.jaas.config': `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="${wrongPassword}";`,
    })
    const refused = await weir(['topic', 'list', '--command-config', wrong, '--timeout', '3000'])
    assert.equal(refused.code, 1, refused.stderr)
    assert.match(refused.stderr, /Authentication failed/)
    assert.ok(!`${refused.stdout}${refused.stderr}`.includes(wrongPassword))
    // A trust store that cannot be read is a usage error naming the key.
    const untrusted = writeProperties(cluster.dir, 'untrusted.properties', {
      ...security.clientProperties('admin'),
      'ssl.truststore.location': join(cluster.dir, 'no-such-ca.pem'),
    })
    const bad = await weir(['topic', 'list', '--command-config', untrusted])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /ssl\.truststore\.location: cannot read/)
    const missing = await weir(['topic', 'list', '--command-config', join(cluster.dir, 'absent.properties')])
    assert.equal(missing.code, 2)
    assert.match(missing.stderr, /--command-config: cannot read/)
  })

  test('an ACL made by weir acl create is enforced: alice may write to a topic only once allowed', async () => {
    await weirOk(['topic', 'create', 'guarded', ...b])
    const send = async () => {
      const producer = kafkaOf(cluster.security!.kafkajsConfig('alice')).producer()
      await producer.connect()
      try {
        await producer.send({ topic: 'guarded', messages: [{ value: 'from alice' }] })
      } finally {
        await producer.disconnect()
      }
    }
    await assert.rejects(send(), /not authorized to access topics/i)
    await weirOk([
      'acl',
      'create',
      '--allow-principal',
      'User:alice',
      '--operation',
      'Write',
      '--topic',
      'guarded',
      ...b,
    ])
    await send()
    await weirOk(['acl', 'delete', '--topic', 'guarded', '--principal', 'User:alice', ...b])
    await assert.rejects(send(), /not authorized to access topics/i)
  })

  test("kafkajs (SCRAM-SHA-512 and PLAIN) and confluent-kafka produce and consume with the cluster's settings", async () => {
    const security = cluster.security!
    assert.match(security.caPem, /^-----BEGIN CERTIFICATE-----/)
    assert.equal(security.bootstrapServers, `127.0.0.1:${cluster.nodes[0]!.securePort}`)
    for (const mechanism of ['SCRAM-SHA-512', 'PLAIN'] as const) {
      const kafka = kafkaOf(security.kafkajsConfig('admin', mechanism))
      const topic = `secure-${mechanism.toLowerCase()}`
      const producer = kafka.producer()
      await producer.connect()
      await producer.send({ topic, messages: [{ value: `via ${mechanism}` }] })
      await producer.disconnect()
      const consumer = kafka.consumer({ groupId: `g-${topic}` })
      await consumer.connect()
      await consumer.subscribe({ topic, fromBeginning: true })
      const got = await new Promise<string>((resolve) => {
        void consumer.run({ eachMessage: async ({ message }) => resolve(String(message.value)) })
      })
      await consumer.disconnect()
      assert.equal(got, `via ${mechanism}`)
    }
    // A password with quotes and a backslash survives the PLAIN JAAS config; a wrong one is refused.
    const aliceAdmin = kafkaOf(security.kafkajsConfig('alice', 'PLAIN')).admin()
    await aliceAdmin.connect()
    await aliceAdmin.disconnect()
    const alice = security.kafkajsConfig('alice', 'PLAIN')
    await assert.rejects(
      kafkaOf({ ...alice, sasl: { ...alice.sasl, password: 'nope' } })
        .admin()
        .connect(),
    )

    const python = execFileSync(join(REPO, 'tools/compat-install.sh'), ['confluent-kafka'], {
      encoding: 'utf8',
    }).trim()
    const script = `
import sys, json, time
from confluent_kafka import Producer, Consumer
conf = json.loads(sys.argv[1])
p = Producer(conf)
p.produce('secure-confluent', value=b'from librdkafka')
assert p.flush(30) == 0
c = Consumer({**conf, 'group.id': 'g-confluent', 'auto.offset.reset': 'earliest'})
c.subscribe(['secure-confluent'])
deadline = time.time() + 60
while True:
    assert time.time() < deadline, 'no record within 60 s'
    m = c.poll(1)
    if m is None:
        continue
    assert m.error() is None, str(m.error())
    print(m.value().decode())
    break
c.close()
`
    const { stdout } = await run(python, ['-c', script, JSON.stringify(security.librdkafkaConfig('admin'))], {
      timeout: 90_000,
    })
    assert.equal(stdout.trim(), 'from librdkafka')
  })
})
