/**
 * A secured embedded cluster (`startCluster({ security })`: SASL_SSL with SCRAM-SHA-512 and PLAIN,
 * the authorizer on) and the `weir acl` and `weir user` commands against it: the ACL bookkeeping
 * as kafka-acls prints it, SCRAM users set by `weir user` logging in with kafkajs, the weir command
 * itself over SASL_SSL with `--command-config`, an ACL's effect on a kafkajs producer, and kafkajs
 * and confluent-kafka producing and consuming with the settings the cluster hands back.
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import kafkajs from 'kafkajs'
import { type EmbeddedCluster, startCluster } from 'weir'
import { REPO, writeProperties } from '../support/weir-process.ts'
import { weir, weirJson, weirOk } from './cli-support.ts'

const { Kafka, logLevel } = kafkajs
const run = promisify(execFile)
const ADMIN_PASSWORD = 'admin-pw-4b1d'
const ALICE_PASSWORD = 'alice "pw" \\ 9c0f'

interface AclJson {
  resourceType: string
  resourceName: string
  patternType: string
  principal: string
  host: string
  operation: string
  permissionType: string
}

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

  test('acl create, list (as kafka-acls prints it), delete with a filter; bad flags are usage errors', async () => {
    const created = await weirJson<AclJson[]>([
      'acl',
      'create',
      '--allow-principal',
      'User:alice',
      '--operation',
      'Read',
      '--operation',
      'write',
      '--topic',
      'orders',
      ...b,
    ])
    assert.deepEqual(
      created.map((a) => [a.resourceType, a.resourceName, a.patternType, a.principal, a.host, a.operation]),
      [
        ['TOPIC', 'orders', 'LITERAL', 'User:alice', '*', 'READ'],
        ['TOPIC', 'orders', 'LITERAL', 'User:alice', '*', 'WRITE'],
      ],
    )
    const text = await weirOk([
      'acl',
      'create',
      '--deny-principal',
      'User:bob',
      '--host',
      '10.0.0.1',
      '--group',
      'logs-',
      '--resource-pattern-type',
      'prefixed',
      ...b,
    ])
    assert.equal(
      text,
      'Added ACLs for resource `ResourcePattern(resourceType=GROUP, name=logs-, patternType=PREFIXED)`:\n' +
        '\t(principal=User:bob, host=10.0.0.1, operation=ALL, permissionType=DENY)\n\n',
    )
    await weirOk([
      'acl',
      'create',
      '--allow-principal',
      'User:*',
      '--operation',
      'Describe',
      '--cluster',
      ...b,
    ])

    assert.equal(
      await weirOk(['acl', 'list', '--topic', 'orders', ...b]),
      'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:\n' +
        '\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n' +
        '\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n\n',
    )
    const all = await weirJson<AclJson[]>(['acl', 'list', ...b])
    assert.deepEqual(
      all.map((a) => `${a.resourceType}:${a.resourceName}:${a.operation}:${a.permissionType}`).sort(),
      [
        'CLUSTER:kafka-cluster:DESCRIBE:ALLOW',
        'GROUP:logs-:ALL:DENY',
        'TOPIC:orders:READ:ALLOW',
        'TOPIC:orders:WRITE:ALLOW',
      ],
    )
    // MATCH: the ACLs that apply to a name, here the prefix pattern of group logs-app.
    const matching = await weirJson<AclJson[]>([
      'acl',
      'list',
      '--group',
      'logs-app',
      '--resource-pattern-type',
      'match',
      ...b,
    ])
    assert.deepEqual(
      matching.map((a) => [a.resourceName, a.principal]),
      [['logs-', 'User:bob']],
    )
    const byPrincipal = await weirJson<AclJson[]>(['acl', 'list', '--principal', 'User:alice', ...b])
    assert.equal(byPrincipal.length, 2)

    const removed = await weirJson<AclJson[]>([
      'acl',
      'delete',
      '--topic',
      'orders',
      '--operation',
      'Write',
      ...b,
    ])
    assert.deepEqual(
      removed.map((a) => [a.resourceName, a.operation]),
      [['orders', 'WRITE']],
    )
    const left = await weirJson<AclJson[]>(['acl', 'list', '--topic', 'orders', ...b])
    assert.deepEqual(
      left.map((a) => a.operation),
      ['READ'],
    )
    assert.equal(await weirOk(['acl', 'delete', '--topic', 'nothing-here', ...b]), 'no ACL matched\n')

    for (const [args, message] of [
      [['acl', 'create', '--topic', 'x'], /give --allow-principal or --deny-principal/],
      [['acl', 'create', '--allow-principal', 'alice', '--topic', 'x'], /is not TYPE:NAME/],
      [
        ['acl', 'create', '--allow-principal', 'User:a', '--topic', 'x', '--operation', 'Fly'],
        /unknown operation 'Fly'/,
      ],
      [
        ['acl', 'create', '--allow-principal', 'User:a', '--topic', 'x', '--resource-pattern-type', 'match'],
        /not valid when creating ACLs/,
      ],
      [['acl', 'delete', '--principal', 'User:alice'], /give a resource/],
      [['acl', 'list', '--resource-pattern-type', 'glob'], /literal, prefixed, match or any/],
    ] as const) {
      const r = await weir([...args, ...b])
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
    }
  })

  test('user set, list and delete; a user set by weir logs in with kafkajs, and not once deleted', async () => {
    const security = cluster.security!
    const passwordFile = join(cluster.dir, 'carol.password')
    writeFileSync(passwordFile, 'carol-pw-71aa\n')
    const set = await weir([
      'user',
      'set',
      'carol',
      '--password-file',
      passwordFile,
      '--iterations',
      '8192',
      ...b,
    ])
    assert.equal(set.code, 0, set.stderr)
    assert.equal(set.stdout, 'set SCRAM-SHA-512 credential of user carol (8192 iterations)\n')
    await weirOk(['user', 'set', 'carol', '--mechanism', 'scram-sha-256', '--password', 'other-pw', ...b])
    assert.deepEqual(await weirJson(['user', 'list', 'carol', ...b]), [
      { user: 'carol', mechanism: 'SCRAM-SHA-256', iterations: 4096 },
      { user: 'carol', mechanism: 'SCRAM-SHA-512', iterations: 8192 },
    ])
    const listed = await weirOk(['user', 'list', ...b])
    assert.match(listed, /^USER +MECHANISM +ITERATIONS\n/)
    assert.match(listed, /\nadmin +SCRAM-SHA-512 +4096\n/)
    assert.ok(!listed.includes('pw'), 'no password in the listing')

    // Fresh objects per client: kafkajs keeps its authenticator (and the password) on the sasl object.
    const carol = (password: string) => ({
      ...security.kafkajsConfig('admin'),
      sasl: { mechanism: 'scram-sha-512' as const, username: 'carol', password },
    })
    const admin = kafkaOf(carol('carol-pw-71aa')).admin()
    await admin.connect()
    await admin.listTopics()
    await admin.disconnect()
    const wrong = kafkaOf(carol('not-it')).admin()
    await assert.rejects(wrong.connect(), /SASL SCRAM SHA512 authentication failed|Authentication failed/)

    assert.equal(
      await weirOk(['user', 'delete', 'carol', ...b]),
      'deleted SCRAM-SHA-256, SCRAM-SHA-512 credentials of user carol\n',
    )
    const gone = await weir(['user', 'list', 'carol', ...b])
    assert.equal(gone.code, 1)
    assert.match(gone.stderr, /RESOURCE_NOT_FOUND/)
    await assert.rejects(kafkaOf(carol('carol-pw-71aa')).admin().connect())

    for (const [args, message] of [
      [['user', 'set', 'dave'], /give one of --password and --password-file/],
      [['user', 'set', 'dave', '--password', 'x', '--mechanism', 'PLAIN'], /SCRAM-SHA-256 or SCRAM-SHA-512/],
      [['user', 'set', 'dave', '--password', 'x', '--iterations', '100'], /Too few iterations/],
      [['user', 'set', 'dave', '--password-file', join(cluster.dir, 'missing')], /cannot read/],
    ] as const) {
      const r = await weir([...args, ...b])
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
    }
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
