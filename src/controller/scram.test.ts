import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EMPTY_IMAGE, scramCredential } from '../metadata/index.ts'
import { type AlterUserScramCredentialsResponseData, ErrorCode } from '../protocol/index.ts'
import { SCRAM_ALGORITHMS, saltedPassword } from '../security/index.ts'
import { alterUserScramCredentials } from './scram.ts'
import { commit } from './testing.ts'

const SHA256 = 1
const SHA512 = 2

function upsertion(name: string, mechanism: number, iterations = 4096) {
  const salt = Buffer.from(`salt-${name}`)
  const algorithm =
    mechanism === SHA256 ? SCRAM_ALGORITHMS['SCRAM-SHA-256'] : SCRAM_ALGORITHMS['SCRAM-SHA-512']
  return {
    name,
    mechanism,
    iterations,
    salt,
    saltedPassword: saltedPassword(algorithm, 'secret', salt, 4096),
  }
}

const byUser = (
  results: readonly AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResultIn[] = [],
) => Object.fromEntries(results.map((r) => [r.user, [r.errorCode, r.errorMessage]]))

test('an upsertion stores the salt, the iterations and the keys of the salted password', () => {
  const d = alterUserScramCredentials(EMPTY_IMAGE, {
    deletions: [],
    upsertions: [upsertion('alice', SHA512, 8192)],
  })
  assert.deepEqual(byUser(d.response.results), { alice: [ErrorCode.None, null] })
  const image = commit(EMPTY_IMAGE, d.records)
  const c = scramCredential(image, 'SCRAM-SHA-512', 'alice')!
  assert.equal(c.iterations, 8192)
  assert.equal(c.salt.toString(), 'salt-alice')
  assert.equal(c.storedKey.length, 64)
  assert.equal(c.serverKey.length, 64)
  const removed = alterUserScramCredentials(image, {
    deletions: [{ name: 'alice', mechanism: SHA512 }],
    upsertions: [],
  })
  assert.deepEqual(byUser(removed.response.results), { alice: [ErrorCode.None, null] })
  assert.equal(scramCredential(commit(image, removed.records), 'SCRAM-SHA-512', 'alice'), undefined)
})

test("Kafka's refusals: iterations, missing credentials, unknown mechanisms, a user twice", () => {
  const d = alterUserScramCredentials(EMPTY_IMAGE, {
    deletions: [
      { name: 'gone', mechanism: SHA256 },
      { name: 'twice', mechanism: SHA256 },
    ],
    upsertions: [
      upsertion('few', SHA256, 4095),
      upsertion('many', SHA512, 16385),
      upsertion('', SHA256),
      upsertion('odd', 3),
      upsertion('again', SHA256),
      upsertion('again', SHA512),
      upsertion('gone', SHA256),
    ],
  })
  assert.deepEqual(byUser(d.response.results), {
    gone: [ErrorCode.ResourceNotFound, 'Attempt to delete a user credential that does not exist'],
    twice: [ErrorCode.ResourceNotFound, 'Attempt to delete a user credential that does not exist'],
    few: [ErrorCode.UnacceptableCredential, 'Too few iterations'],
    many: [ErrorCode.UnacceptableCredential, 'Too many iterations'],
    '': [ErrorCode.UnacceptableCredential, 'Username must not be empty'],
    odd: [ErrorCode.UnsupportedSaslMechanism, 'Unknown SCRAM mechanism'],
    again: [ErrorCode.DuplicateResource, 'A user credential cannot be altered twice in the same request'],
  })
  assert.equal(d.records.length, 0)
})
