/**
 * CreateAcls, DescribeAcls and DeleteAcls v1-3, as Kafka's AclApis: without an authorizer
 * (`authorizer.class.name` empty) every answer is SECURITY_DISABLED; a request with an UNKNOWN
 * code closes the connection (Kafka fails to parse it); CreateAcls refuses a CLUSTER name other
 * than `kafka-cluster` and an empty name per creation, then the active controller decides the rest;
 * DescribeAcls is answered from this node's ACLs (the metadata image), DeleteAcls by the controller.
 */
import {
  apis,
  type CreateAclsRequestData,
  type CreateAclsResponseData,
  type DeleteAclsRequestData,
  type DeleteAclsResponseData,
  ErrorCode,
} from '../../protocol/index.ts'
import {
  type AclBindingFilter,
  type AclError,
  aclFromCreation,
  checkCreateAclsRequest,
  deleteAclsFilters,
  describeAclsFilter,
  groupByPattern,
  type StandardAcl,
  validateAclCreation,
} from '../../security/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { FailureOf } from './controller-api.ts'

type AclCreationResult = CreateAclsResponseData.AclCreationResultIn

/** What the ACL handlers ask of the active controller. */
export interface AclControllerApi {
  createAcls(
    req: CreateAclsRequestData.CreateAclsRequest,
    version?: number,
  ): Promise<CreateAclsResponseData.CreateAclsResponseIn>
  deleteAcls(
    req: DeleteAclsRequestData.DeleteAclsRequest,
    version?: number,
  ): Promise<DeleteAclsResponseData.DeleteAclsResponseIn>
}

/** This node's authorizer, as the ACL handlers see it. */
export interface AclView {
  /** Whether `authorizer.class.name` names an authorizer. */
  readonly authorizerConfigured: boolean
  /** The ACLs matching a filter, in Kafka's order. */
  readonly acls: (filter: AclBindingFilter) => readonly StandardAcl[]
}

/** Kafka's answer to CreateAcls and DeleteAcls when no authorizer is configured. */
export const NO_AUTHORIZER: AclError = {
  errorCode: ErrorCode.SecurityDisabled,
  message: 'No Authorizer is configured.',
}

function creationResult(error: AclError): AclCreationResult {
  return { errorCode: error.errorCode, errorMessage: error.message }
}

export function makeCreateAclsHandler(
  controller: AclControllerApi,
  failureOf: FailureOf,
  view: AclView,
): Handler {
  return defineHandler(apis.CreateAcls, {}, async (req, ctx) => {
    const { creations } = req
    const denied = clusterDenied(ctx)
    if (denied !== null) return { results: creations.map(() => creationResult(denied)) }
    if (!view.authorizerConfigured) return { results: creations.map(() => creationResult(NO_AUTHORIZER)) }
    const refusal = checkCreateAclsRequest(creations)
    if (refusal?.kind === 'malformed') throw new Error(refusal.message)
    if (refusal?.kind === 'every-creation')
      return { results: creations.map(() => creationResult(refusal.error)) }
    const refused = creations.map((c) => validateAclCreation(aclFromCreation(c)))
    const valid = creations.filter((_, i) => refused[i] === null)
    const decided =
      valid.length === 0 ? [] : await decide(controller, failureOf, { creations: valid }, ctx.apiVersion)
    let next = 0
    return { results: refused.map((error) => (error === null ? decided[next++]! : creationResult(error))) }
  })
}

async function decide(
  controller: AclControllerApi,
  failureOf: FailureOf,
  req: CreateAclsRequestData.CreateAclsRequest,
  version: number,
): Promise<readonly AclCreationResult[]> {
  try {
    const res = await controller.createAcls(req, version)
    return res.results ?? []
  } catch (e) {
    const f = failureOf(e)
    return req.creations.map(() => ({ errorCode: f.errorCode, errorMessage: f.message }))
  }
}

export function makeDescribeAclsHandler(view: AclView): Handler {
  return defineHandler(apis.DescribeAcls, {}, (req, ctx) => {
    const denied = clusterDenied(ctx)
    if (denied !== null) return { errorCode: denied.errorCode, errorMessage: denied.message, resources: [] }
    if (!view.authorizerConfigured) {
      // Kafka's AclApis words this one differently from CreateAcls' and DeleteAcls'.
      const errorMessage = 'No Authorizer is configured on the broker'
      return { errorCode: ErrorCode.SecurityDisabled, errorMessage, resources: [] }
    }
    const filter = describeAclsFilter(req)
    if ('malformed' in filter) throw new Error(filter.malformed)
    const resources = groupByPattern([...view.acls(filter)]).map((pattern) => ({
      resourceType: pattern.resourceType,
      resourceName: pattern.resourceName,
      patternType: pattern.patternType,
      acls: pattern.acls.map((a) => ({ ...a })),
    }))
    return { errorCode: ErrorCode.None, errorMessage: null, resources }
  })
}

export function makeDeleteAclsHandler(
  controller: AclControllerApi,
  failureOf: FailureOf,
  view: AclView,
): Handler {
  return defineHandler(apis.DeleteAcls, {}, async (req, ctx) => {
    const failed = (error: AclError) => ({
      filterResults: req.filters.map(() => ({ errorCode: error.errorCode, errorMessage: error.message })),
    })
    const denied = clusterDenied(ctx)
    if (denied !== null) return failed(denied)
    if (!view.authorizerConfigured) return failed(NO_AUTHORIZER)
    const filters = deleteAclsFilters(req.filters)
    if ('malformed' in filters) throw new Error(filters.malformed)
    try {
      return await controller.deleteAcls(req, ctx.apiVersion)
    } catch (e) {
      return failed(failureOf(e))
    }
  })
}
