/**
 * ListGroups v0-5: the groups this broker coordinates, filtered by state (v4+, KIP-518) and type
 * (v5+, KIP-848: every group here is "classic").
 */
import { apis, type ErrorCode, type ListGroupsResponseData } from '../../protocol/index.ts'
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
    return { throttleTimeMs: 0, errorCode: r.errorCode, groups: r.groups }
  })
}
