/** DeleteGroups v0-2: Empty groups only (NON_EMPTY_GROUP otherwise); tombstones for them and their offsets. */
import type { GroupId } from '../../model/index.ts'
import { apis, type ErrorCode } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface DeleteGroupsView {
  deleteGroups(groupIds: readonly GroupId[]): Promise<{ groupId: GroupId; errorCode: ErrorCode }[]>
}

export function makeDeleteGroupsHandler(view: DeleteGroupsView): Handler {
  return defineHandler(apis.DeleteGroups, {}, async (req) => ({
    throttleTimeMs: 0,
    results: await view.deleteGroups([...new Set(req.groupsNames)]),
  }))
}
