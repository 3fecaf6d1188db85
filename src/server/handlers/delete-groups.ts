/** DeleteGroups v0-2: Empty groups only (NON_EMPTY_GROUP otherwise); tombstones for them and their offsets. */
import type { GroupId } from '../../model/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface DeleteGroupsView {
  deleteGroups(groupIds: readonly GroupId[]): Promise<{ groupId: GroupId; errorCode: ErrorCode }[]>
}

export function makeDeleteGroupsHandler(view: DeleteGroupsView): Handler {
  return defineHandler(apis.DeleteGroups, {}, async (req, ctx) => {
    const authz = authorize(ctx)
    const unique = [...new Set(req.groupsNames)]
    const deletable = (g: GroupId) => authz.allowed(AclOperation.Delete, ResourceType.Group, g)
    const allowed = unique.filter(deletable)
    const results = allowed.length === 0 ? [] : await view.deleteGroups(allowed)
    return {
      throttleTimeMs: 0,
      results: [
        ...results,
        ...unique
          .filter((g) => !deletable(g))
          .map((groupId) => ({ groupId, errorCode: ErrorCode.GroupAuthorizationFailed })),
      ],
    }
  })
}
