/**
 * ACLs and SCRAM credentials against a real Weir process with Kafka's own tools: `kafka-acls`
 * (CreateAcls, DescribeAcls, DeleteAcls) on a node with `authorizer.class.name` set to
 * StandardAuthorizer, and `kafka-configs --entity-type users` (AlterUserScramCredentials,
 * DescribeUserScramCredentials), and the first user of `weir start --add-scram`. Java is required:
 * without it these tests fail.
 */
// compat-cluster: skip starts its own node (StandardAuthorizer settings and --add-scram for a new cluster)
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { portPair, REPO, tempDir, WeirProcess } from '../support/weir-process.ts'

const run = promisify(execFile)
const dir = tempDir('weir-acls-')
let weir: WeirProcess | null = null
let bootstrap = ''

/** Runs one of Kafka's tools; a non-zero exit fails the test with its output. */
async function ok(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run(join(REPO, 'tools/kafka/tool.sh'), args, { timeout: 90_000 })
    return stdout
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string }
    assert.fail(`${args.join(' ')}\n${err.stdout ?? ''}\n${err.stderr ?? err.message}`)
  }
}

const acls = (...args: string[]) => ok('kafka-acls', '--bootstrap-server', bootstrap, ...args)
const configs = (...args: string[]) => ok('kafka-configs', '--bootstrap-server', bootstrap, ...args)

before(async () => {
  const java = await run('java', ['-version']).catch((e: Error) => {
    throw new Error(
      `java is required for the Kafka tool tests (tools/test-deps.sh installs it): ${e.message}`,
    )
  })
  assert.match(java.stderr + java.stdout, /version/)
  const port = await portPair()
  weir = new WeirProcess([
    '--data-dir',
    join(dir.path, 'data'),
    '--listen',
    `127.0.0.1:${port}`,
    '--set',
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    '--set',
    'super.users=User:ANONYMOUS',
    '--add-scram',
    'SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]',
  ])
  await weir.start()
  bootstrap = `127.0.0.1:${port}`
})

after(async () => {
  await weir?.stop()
  dir.remove()
})

test('kafka-acls --add, --list, --remove --force', async () => {
  const added = await acls('--add', '--allow-principal', 'User:alice', '--operation', 'Read', '--topic', 't')
  assert.match(
    added,
    /Adding ACLs for resource `ResourcePattern\(resourceType=TOPIC, name=t, patternType=LITERAL\)`/,
  )
  const listed = await acls('--list', '--topic', 't')
  assert.match(listed, /\(principal=User:alice, host=\*, operation=READ, permissionType=ALLOW\)/)
  await acls(
    '--add',
    '--deny-principal',
    'User:bob',
    '--operation',
    'Write',
    '--topic',
    'p-',
    '--resource-pattern-type',
    'prefixed',
  )
  const all = await acls('--list')
  assert.match(all, /name=p-, patternType=PREFIXED/)
  assert.match(all, /principal=User:bob, host=\*, operation=WRITE, permissionType=DENY/)
  await acls('--remove', '--force', '--allow-principal', 'User:alice', '--operation', 'Read', '--topic', 't')
  const after = await acls('--list', '--topic', 't')
  assert.doesNotMatch(after, /User:alice/)
  assert.match(await acls('--list'), /User:bob/)
})

test('kafka-configs --entity-type users: add a SCRAM credential, describe it, delete it', async () => {
  const add = (config: string) =>
    configs('--alter', '--entity-type', 'users', '--entity-name', 'alice', '--add-config', config)
  // One mechanism per request: Kafka's controller refuses a user twice in one request
  // (DUPLICATE_RESOURCE), whatever the mechanisms.
  const altered = await add('SCRAM-SHA-512=[password=secret]')
  await add('SCRAM-SHA-256=[iterations=8192,password=other]')
  assert.match(altered, /Completed updating config for user alice\./)
  const described = await configs('--describe', '--entity-type', 'users', '--entity-name', 'alice')
  assert.match(described, /SCRAM-SHA-256=iterations=8192/)
  assert.match(described, /SCRAM-SHA-512=iterations=4096/)
  await configs(
    '--alter',
    '--entity-type',
    'users',
    '--entity-name',
    'alice',
    '--delete-config',
    'SCRAM-SHA-512',
  )
  const left = await configs('--describe', '--entity-type', 'users', '--entity-name', 'alice')
  assert.doesNotMatch(left, /SCRAM-SHA-512/)
  assert.match(left, /SCRAM-SHA-256=iterations=8192/)
})

test('weir start --add-scram: the new cluster starts with that user', async () => {
  const described = await configs('--describe', '--entity-type', 'users', '--entity-name', 'admin')
  assert.match(
    described,
    /SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-512=iterations=8192/,
  )
})
