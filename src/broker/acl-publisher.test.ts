import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SeededRandom } from '../io/index.ts'
import {
  applyRecords,
  EMPTY_IMAGE,
  type ImagePublication,
  MetadataDelta,
  type MetadataImage,
} from '../metadata/index.ts'
import type { Uuid } from '../model/index.ts'
import { decodeMetadataRecord, encodeMetadataRecord, metadataRecordTypes as T } from '../protocol/index.ts'
import { ANY_ACL_FILTER, authorizerConfig, scramCredentialFromPassword } from '../security/index.ts'
import { AclPublisher, AuthorizerConfigError, authorizerConfigured } from './acl-publisher.ts'
import { BootstrapScramError, bootstrapScramRecords, parseBootstrapScram } from './bootstrap-scram.ts'

const id = (n: number) => Buffer.alloc(16, n).toString('base64url') as Uuid
const aclRecord = (n: number, principal: string) =>
  decodeMetadataRecord(
    encodeMetadataRecord(T.AccessControlEntry, 0, {
      id: id(n),
      resourceType: 2,
      resourceName: 't',
      patternType: 3,
      principal,
      host: '*',
      operation: 3,
      permissionType: 3,
    }),
  )
const removal = (n: number) =>
  decodeMetadataRecord(encodeMetadataRecord(T.RemoveAccessControlEntry, 0, { id: id(n) }))

function publish(base: MetadataImage, records: ReturnType<typeof aclRecord>[]): ImagePublication {
  const delta = new MetadataDelta(base)
  for (const r of records) delta.replay(r)
  const { image, changes } = delta.apply()
  return { image, changes, leaderChanges: [] }
}

const principals = (p: AclPublisher) => p.acls(ANY_ACL_FILTER).map((a) => a.principal)

test('the authorizer follows the image: additions, removals, and a snapshot that replaces everything', () => {
  const publisher = new AclPublisher(true, authorizerConfig({}))
  const first = publish(EMPTY_IMAGE, [aclRecord(1, 'User:alice'), aclRecord(2, 'User:bob')])
  publisher.onPublish(first)
  assert.deepEqual(principals(publisher), ['User:alice', 'User:bob'])
  const second = publish(first.image, [removal(1), aclRecord(3, 'User:alice')])
  publisher.onPublish(second)
  assert.deepEqual(principals(publisher), ['User:alice', 'User:bob'])
  assert.equal(publisher.authorizer?.getAcl(id(1)), undefined)
  // A snapshot: an image from nothing, with changes relative to the empty image.
  publisher.onPublish(publish(EMPTY_IMAGE, [aclRecord(4, 'User:carol')]))
  assert.deepEqual(principals(publisher), ['User:carol'])
  assert.equal(publisher.authorizer?.aclCount, 1)
})

test('authorizer.class.name: empty is none, StandardAuthorizer the only one', () => {
  assert.equal(authorizerConfigured(''), false)
  assert.equal(authorizerConfigured('org.apache.kafka.metadata.authorizer.StandardAuthorizer'), true)
  assert.throws(() => authorizerConfigured('kafka.security.authorizer.AclAuthorizer'), AuthorizerConfigError)
  const none = new AclPublisher(false, authorizerConfig({}))
  none.onPublish(publish(EMPTY_IMAGE, [aclRecord(1, 'User:alice')]))
  assert.equal(none.authorizerConfigured, false)
  assert.deepEqual(principals(none), [])
})

test("--add-scram as kafka-storage format reads it; its records hold the password's credential", () => {
  const scram = parseBootstrapScram('SCRAM-SHA-512=[name=admin,password="a,b=c",iterations=8192]')
  assert.deepEqual(scram, {
    mechanism: 'SCRAM-SHA-512',
    name: 'admin',
    iterations: 8192,
    secret: { password: 'a,b=c' },
  })
  assert.equal(parseBootstrapScram('SCRAM-SHA-256=[name=u,password=p]').iterations, 4096)
  for (const bad of [
    'SCRAM-SHA-1=[name=a,password=p]',
    'SCRAM-SHA-256=[password=p]',
    'SCRAM-SHA-256=[name=a]',
    'nonsense',
    'SCRAM-SHA-256=[name=a,password=p,iterations=10]',
  ])
    assert.throws(() => parseBootstrapScram(bad), BootstrapScramError, bad)
  const [record] = bootstrapScramRecords([scram], new SeededRandom(7))
  const image = applyRecords(EMPTY_IMAGE, [
    decodeMetadataRecord(encodeMetadataRecord(record!.type, 0, record!.data)),
  ])
  const stored = image.scramCredentials.get(2)?.get('admin')
  assert.ok(stored !== undefined)
  const expected = scramCredentialFromPassword('SCRAM-SHA-512', 'a,b=c', 8192, new SeededRandom(7))
  assert.deepEqual(stored, expected)
})
