/** SyncGroup v0-5: the leader's assignment persisted, then every member's part handed out. */
import type { SyncInput, SyncResult } from '../../coordinator/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface SyncGroupView {
  syncGroup(input: SyncInput): Promise<SyncResult>
}

export function makeSyncGroupHandler(view: SyncGroupView): Handler {
  return defineHandler(apis.SyncGroup, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    if (!authorize(ctx).allowed(AclOperation.Read, ResourceType.Group, req.groupId)) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.GroupAuthorizationFailed,
        protocolType: null,
        protocolName: null,
        assignment: Buffer.alloc(0),
      }
    }
    const r = await view.syncGroup({
      groupId: req.groupId,
      generationId: req.generationId,
      memberId: req.memberId,
      groupInstanceId: v >= 3 ? req.groupInstanceId : null,
      protocolType: v >= 5 ? req.protocolType : null,
      protocolName: v >= 5 ? req.protocolName : null,
      assignments: req.assignments.map((a) => ({ memberId: a.memberId, assignment: a.assignment })),
      apiVersion: v,
    })
    return {
      throttleTimeMs: 0,
      errorCode: r.errorCode,
      protocolType: r.protocolType,
      protocolName: r.protocolName,
      assignment: r.assignment,
    }
  })
}
