/**
 * AlterUserScramCredentials v0 (decided by the active controller, as Kafka forwards it) and
 * DescribeUserScramCredentials v0 (answered from this node's metadata image, as Kafka's
 * ScramImage.describe): both work without an authorizer, as in Kafka.
 */
import { type MetadataImage, SCRAM_MECHANISM_TYPES, type ScramCredentialData } from '../../metadata/index.ts'
import {
  type AlterUserScramCredentialsRequestData,
  type AlterUserScramCredentialsResponseData,
  apis,
  type DescribeUserScramCredentialsRequestData,
  type DescribeUserScramCredentialsResponseData,
  ErrorCode,
} from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { FailureOf } from './controller-api.ts'

type DescribeResult = DescribeUserScramCredentialsResponseData.DescribeUserScramCredentialsResultIn

export interface ScramControllerApi {
  alterUserScramCredentials(
    req: AlterUserScramCredentialsRequestData.AlterUserScramCredentialsRequest,
    version?: number,
  ): Promise<AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResponseIn>
}

export function makeAlterUserScramCredentialsHandler(
  controller: ScramControllerApi,
  failureOf: FailureOf,
): Handler {
  return defineHandler(apis.AlterUserScramCredentials, {}, async (req, ctx) => {
    const failed = (f: { errorCode: ErrorCode; message: string }) => {
      const users = new Set([...req.deletions, ...req.upsertions].map((c) => c.name))
      return {
        results: [...users].map((user) => ({ user, errorCode: f.errorCode, errorMessage: f.message })),
      }
    }
    const denied = clusterDenied(ctx)
    if (denied !== null) return failed(denied)
    try {
      return await controller.alterUserScramCredentials(req, ctx.apiVersion)
    } catch (e) {
      return failed(failureOf(e))
    }
  })
}

/** The users to describe, each with whether the request named it more than once (every user when it names none). */
function usersToDescribe(
  image: MetadataImage,
  users: DescribeUserScramCredentialsRequestData.UserName[] | null,
): Map<string, boolean> {
  const out = new Map<string, boolean>()
  if (users === null || users.length === 0) {
    for (const byUser of image.scramCredentials.values())
      for (const user of byUser.keys()) out.set(user, false)
    return out
  }
  for (const { name } of users) out.set(name, out.has(name))
  return out
}

/** The mechanisms a user has credentials for, in the order of Kafka's ScramMechanism. */
function credentialInfos(image: MetadataImage, user: string) {
  const infos: Array<{ mechanism: number; iterations: number }> = []
  for (const mechanism of Object.values(SCRAM_MECHANISM_TYPES)) {
    const credential: ScramCredentialData | undefined = image.scramCredentials.get(mechanism)?.get(user)
    if (credential !== undefined) infos.push({ mechanism, iterations: credential.iterations })
  }
  return infos
}

/** Kafka's ScramImage.describe. */
export function describeUserScramCredentials(
  image: MetadataImage,
  req: DescribeUserScramCredentialsRequestData.DescribeUserScramCredentialsRequest,
): DescribeUserScramCredentialsResponseData.DescribeUserScramCredentialsResponseIn {
  const results: DescribeResult[] = []
  for (const [user, twice] of usersToDescribe(image, req.users)) {
    if (twice) {
      const errorMessage = `Cannot describe SCRAM credentials for the same user twice in a single request: ${user}`
      results.push({ user, errorCode: ErrorCode.DuplicateResource, errorMessage, credentialInfos: [] })
      continue
    }
    const infos = credentialInfos(image, user)
    if (infos.length > 0)
      results.push({ user, errorCode: ErrorCode.None, errorMessage: null, credentialInfos: infos })
    else {
      const errorMessage = `Attempt to describe a user credential that does not exist: ${user}`
      results.push({ user, errorCode: ErrorCode.ResourceNotFound, errorMessage, credentialInfos: [] })
    }
  }
  return { errorCode: ErrorCode.None, errorMessage: null, results }
}

export function makeDescribeUserScramCredentialsHandler(view: {
  readonly image: () => MetadataImage
}): Handler {
  return defineHandler(apis.DescribeUserScramCredentials, {}, (req, ctx) => {
    const denied = clusterDenied(ctx)
    if (denied !== null) {
      // Kafka's error response: one result per user asked, without the user's name.
      const { errorCode, message: errorMessage } = denied
      const results = (req.users ?? []).map(() => ({
        user: '',
        errorCode,
        errorMessage,
        credentialInfos: [],
      }))
      return { errorCode, errorMessage, results }
    }
    return describeUserScramCredentials(view.image(), req)
  })
}
