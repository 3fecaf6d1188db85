/**
 * DescribeGroups v0-6: state, protocol, members (metadata and assignment when Stable, instance ids
 * from v4); authorized operations (v3+) are every operation a group has, as without an authorizer.
 * A group that does not exist is Dead, from v6 GROUP_ID_NOT_FOUND with a message (KIP-1043).
 */
import type { GroupId } from '../../model/index.ts'
import { apis, type DescribeGroupsResponseData } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface DescribeGroupsView {
  describeGroups(
    groupIds: readonly GroupId[],
    includeAuthorizedOperations: boolean,
    missingAsError: boolean,
  ): DescribeGroupsResponseData.DescribedGroupIn[] | Promise<DescribeGroupsResponseData.DescribedGroupIn[]>
}

export function makeDescribeGroupsHandler(view: DescribeGroupsView): Handler {
  return defineHandler(apis.DescribeGroups, {}, async (req, ctx) => ({
    throttleTimeMs: 0,
    groups: await view.describeGroups(
      req.groups,
      ctx.apiVersion >= 3 && req.includeAuthorizedOperations,
      ctx.apiVersion >= 6,
    ),
  }))
}
