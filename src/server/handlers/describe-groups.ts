/**
 * DescribeGroups v0-6: state, protocol, members (metadata and assignment when Stable, instance ids
 * from v4); authorized operations (v3+) on request. Each group needs DESCRIBE on it, else
 * GROUP_AUTHORIZATION_FAILED.
 * A group that does not exist is Dead, from v6 GROUP_ID_NOT_FOUND with a message (KIP-1043).
 */
import type { GroupId } from '../../model/index.ts'
import { apis, type DescribeGroupsResponseData, ErrorCode } from '../../protocol/index.ts'
import { AUTHORIZED_OPERATIONS_OMITTED } from '../../security/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface DescribeGroupsView {
  describeGroups(
    groupIds: readonly GroupId[],
    includeAuthorizedOperations: boolean,
    missingAsError: boolean,
  ): DescribeGroupsResponseData.DescribedGroupIn[] | Promise<DescribeGroupsResponseData.DescribedGroupIn[]>
}

export function makeDescribeGroupsHandler(view: DescribeGroupsView): Handler {
  return defineHandler(apis.DescribeGroups, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    const includeOps = ctx.apiVersion >= 3 && req.includeAuthorizedOperations
    const allowed = req.groups.filter((g) => authz.allowed(AclOperation.Describe, ResourceType.Group, g))
    const described =
      allowed.length === 0 ? [] : await view.describeGroups(allowed, includeOps, ctx.apiVersion >= 6)
    // Kafka's order: the denied groups, then the described ones.
    const refused = req.groups.filter((g) => !authz.allowed(AclOperation.Describe, ResourceType.Group, g))
    const withOps =
      !includeOps || authz.authorizer === null
        ? described
        : described.map((g) =>
            g.errorCode !== ErrorCode.None && g.errorCode !== undefined
              ? g
              : { ...g, authorizedOperations: authz.operations(ResourceType.Group, g.groupId ?? '') },
          )
    return { throttleTimeMs: 0, groups: [...refused.map(denied), ...withOps] }
  })
}

/** Kafka's DescribeGroupsResponse.groupError for a group the principal may not describe. */
function denied(groupId: GroupId): DescribeGroupsResponseData.DescribedGroupIn {
  return {
    errorCode: ErrorCode.GroupAuthorizationFailed,
    groupId,
    groupState: '',
    protocolType: '',
    protocolData: '',
    members: [],
    authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
  }
}
