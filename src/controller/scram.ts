/**
 * AlterUserScramCredentials as Kafka's ScramControlManager decides it: deletions first, then
 * upsertions, each user at most once per request (DUPLICATE_RESOURCE otherwise); an upsertion
 * keeps the client's salt and iterations and stores the keys derived from its salted password
 * (ScramFormatter.generateCredential), never the password; deleting a credential that is not
 * there is RESOURCE_NOT_FOUND. Results: the deletions, then the upsertions, then the refusals.
 */
import type { MetadataImage } from '../metadata/index.ts'
import { scramCredential } from '../metadata/index.ts'
import {
  type AlterUserScramCredentialsRequestData,
  type AlterUserScramCredentialsResponseData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { credentialFromSaltedPassword, SCRAM_ALGORITHMS, type ScramAlgorithm } from '../security/index.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'

type Deletion = AlterUserScramCredentialsRequestData.ScramCredentialDeletion
type Upsertion = AlterUserScramCredentialsRequestData.ScramCredentialUpsertion
type Result = AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResultIn

/** Kafka's ScramControlManager.MAX_ITERATIONS. */
export const SCRAM_ITERATIONS_MAX = 16384

interface ScramError {
  readonly errorCode: ErrorCode
  readonly message: string
}

const TWICE: ScramError = {
  errorCode: ErrorCode.DuplicateResource,
  message: 'A user credential cannot be altered twice in the same request',
}

/** The mechanism of a type code (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), or undefined (Kafka's UNKNOWN). */
function algorithmOf(type: number): ScramAlgorithm | undefined {
  return Object.values(SCRAM_ALGORITHMS).find((a) => a.type === type)
}

/** Kafka's validateScramUsernameAndMechanism. */
function userAndMechanismProblem(name: string, mechanism: number): ScramError | null {
  if (name === '')
    return { errorCode: ErrorCode.UnacceptableCredential, message: 'Username must not be empty' }
  if (algorithmOf(mechanism) === undefined)
    return { errorCode: ErrorCode.UnsupportedSaslMechanism, message: 'Unknown SCRAM mechanism' }
  return null
}

function upsertionProblem(upsertion: Upsertion): ScramError | null {
  const problem = userAndMechanismProblem(upsertion.name, upsertion.mechanism)
  if (problem !== null) return problem
  const algorithm = algorithmOf(upsertion.mechanism)!
  if (upsertion.iterations < algorithm.iterationsMin)
    return { errorCode: ErrorCode.UnacceptableCredential, message: 'Too few iterations' }
  if (upsertion.iterations > SCRAM_ITERATIONS_MAX)
    return { errorCode: ErrorCode.UnacceptableCredential, message: 'Too many iterations' }
  return null
}

function deletionProblem(image: MetadataImage, deletion: Deletion): ScramError | null {
  const problem = userAndMechanismProblem(deletion.name, deletion.mechanism)
  if (problem !== null) return problem
  if (scramCredential(image, deletion.mechanism, deletion.name) === undefined) {
    return {
      errorCode: ErrorCode.ResourceNotFound,
      message: 'Attempt to delete a user credential that does not exist',
    }
  }
  return null
}

/** The record of an accepted upsertion: the client's salt and iterations, the keys of its salted password. */
function upsertionRecord(upsertion: Upsertion): PendingRecord {
  const algorithm = algorithmOf(upsertion.mechanism)!
  const credential = credentialFromSaltedPassword(
    algorithm,
    upsertion.salt,
    upsertion.saltedPassword,
    upsertion.iterations,
  )
  return pendingRecord(T.UserScramCredential, 0, {
    name: upsertion.name,
    mechanism: upsertion.mechanism,
    salt: credential.salt,
    storedKey: credential.storedKey,
    serverKey: credential.serverKey,
    iterations: credential.iterations,
  })
}

/** Each user's accepted deletion or upsertion, or its refusal, in Kafka's two passes. */
function sortRequest(
  image: MetadataImage,
  req: AlterUserScramCredentialsRequestData.AlterUserScramCredentialsRequest,
) {
  const deletions = new Map<string, Deletion>()
  const upsertions = new Map<string, Upsertion>()
  const errors = new Map<string, ScramError>()
  for (const deletion of req.deletions) {
    if (errors.has(deletion.name)) continue
    if (deletions.delete(deletion.name)) {
      errors.set(deletion.name, TWICE)
      continue
    }
    const problem = deletionProblem(image, deletion)
    if (problem === null) deletions.set(deletion.name, deletion)
    else errors.set(deletion.name, problem)
  }
  for (const upsertion of req.upsertions) {
    if (errors.has(upsertion.name)) continue
    const removedDeletion = deletions.delete(upsertion.name)
    if (upsertions.delete(upsertion.name) || removedDeletion) {
      errors.set(upsertion.name, TWICE)
      continue
    }
    const problem = upsertionProblem(upsertion)
    if (problem === null) upsertions.set(upsertion.name, upsertion)
    else errors.set(upsertion.name, problem)
  }
  return { deletions, upsertions, errors }
}

export function alterUserScramCredentials(
  image: MetadataImage,
  req: AlterUserScramCredentialsRequestData.AlterUserScramCredentialsRequest,
): Decision<AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResponseIn> {
  const { deletions, upsertions, errors } = sortRequest(image, req)
  const records: PendingRecord[] = []
  const results: Result[] = []
  for (const deletion of deletions.values()) {
    records.push(
      pendingRecord(T.RemoveUserScramCredential, 0, { name: deletion.name, mechanism: deletion.mechanism }),
    )
    results.push({ user: deletion.name, errorCode: ErrorCode.None, errorMessage: null })
  }
  for (const upsertion of upsertions.values()) {
    records.push(upsertionRecord(upsertion))
    results.push({ user: upsertion.name, errorCode: ErrorCode.None, errorMessage: null })
  }
  for (const [user, error] of errors)
    results.push({ user, errorCode: error.errorCode, errorMessage: error.message })
  return { records, response: { results } }
}
