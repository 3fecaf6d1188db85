/**
 * What `weir acl` and `weir user` must do against any cluster with an authorizer: run against an
 * embedded Weir (`security.test.ts`) and against Apache Kafka (`test/compat/weir-cli-kafka.test.ts`),
 * so both answer the same.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { weir, weirJson, weirOk } from './cli-support.ts'

export interface AclJson {
  resourceType: string
  resourceName: string
  patternType: string
  principal: string
  host: string
  operation: string
  permissionType: string
}

/**
 * ACLs created, listed (kafka-acls' text), filtered (MATCH, principal) and deleted, on a cluster
 * that has no ACL yet; bad flags are usage errors. `b` is the bootstrap flags.
 */
export async function aclBookkeeping(b: readonly string[]): Promise<void> {
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
  await weirOk(['acl', 'create', '--allow-principal', 'User:*', '--operation', 'Describe', '--cluster', ...b])

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
}

/**
 * SCRAM credentials of user carol set (from a password file, two mechanisms), listed and deleted;
 * `whileSet` runs while carol has `carolPassword` for SCRAM-SHA-512, `afterDelete` once she has none.
 */
export async function scramUserBookkeeping(
  b: readonly string[],
  dir: string,
  hooks: { whileSet?: () => Promise<void>; afterDelete?: () => Promise<void> } = {},
): Promise<void> {
  const passwordFile = join(dir, 'carol.password')
  writeFileSync(passwordFile, `${CAROL_PASSWORD}\n`)
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
  assert.match(listed, /\ncarol +SCRAM-SHA-512 +8192\n/)
  assert.ok(!listed.includes(CAROL_PASSWORD), 'no password in the listing')
  await hooks.whileSet?.()

  assert.equal(
    await weirOk(['user', 'delete', 'carol', ...b]),
    'deleted SCRAM-SHA-256, SCRAM-SHA-512 credentials of user carol\n',
  )
  const gone = await weir(['user', 'list', 'carol', ...b])
  assert.equal(gone.code, 1)
  assert.match(gone.stderr, /RESOURCE_NOT_FOUND/)
  await hooks.afterDelete?.()

  for (const [args, message] of [
    [['user', 'set', 'dave'], /give one of --password and --password-file/],
    [['user', 'set', 'dave', '--password', 'x', '--mechanism', 'PLAIN'], /SCRAM-SHA-256 or SCRAM-SHA-512/],
    [['user', 'set', 'dave', '--password', 'x', '--iterations', '100'], /Too few iterations/],
    [['user', 'set', 'dave', '--password-file', join(dir, 'missing')], /cannot read/],
  ] as const) {
    const r = await weir([...args, ...b])
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
    assert.match(r.stderr, message)
  }
}

export const CAROL_PASSWORD = 'carol-pw-71aa'
