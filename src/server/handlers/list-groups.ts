/**
 * ListGroups v0-5: the groups this broker coordinates, filtered by state (v4+, KIP-518) and type
 * (v5+, KIP-848: every group here is "classic").
 */
import { apis, type ErrorCode, type ListGroupsResponseData } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface ListGroupsView {
  listGroups(
    statesFilter: readonly string[],
    typesFilter: readonly string[],
  ): { errorCode: ErrorCode; groups: ListGroupsResponseData.ListedGroupIn[] }
}

export function makeListGroupsHandler(view: ListGroupsView): Handler {
  return defineHandler(apis.ListGroups, {}, (req, ctx) => {
    const v = ctx.apiVersion
    const r = view.listGroups(v >= 4 ? req.statesFilter : [], v >= 5 ? req.typesFilter : [])
    // DESCRIBE on the cluster lists every group; else the groups the principal may describe.
    const authz = authorize(ctx)
    const groups = authz.cluster(AclOperation.Describe)
      ? r.groups
      : r.groups.filter((g) => authz.allowed(AclOperation.Describe, ResourceType.Group, g.groupId ?? ''))
    return { throttleTimeMs: 0, errorCode: r.errorCode, groups }
  })
}
