/**
 * LeaveGroup v0-5: one member (v0-2) or a batch by member id or group.instance.id (v3+, KIP-345);
 * the Reason (v5) is logged only.
 */
import type { LeaveInput, LeaveResult } from '../../coordinator/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface LeaveGroupView {
  leaveGroup(input: LeaveInput): LeaveResult | Promise<LeaveResult>
}

export function makeLeaveGroupHandler(view: LeaveGroupView): Handler {
  return defineHandler(apis.LeaveGroup, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    if (!authorize(ctx).allowed(AclOperation.Read, ResourceType.Group, req.groupId))
      return { throttleTimeMs: 0, errorCode: ErrorCode.GroupAuthorizationFailed, members: [] }
    const members =
      v >= 3
        ? req.members.map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            reason: v >= 5 ? m.reason : null,
          }))
        : [{ memberId: req.memberId, groupInstanceId: null, reason: null }]
    const r = await view.leaveGroup({ groupId: req.groupId, members })
    if (v >= 3) {
      return {
        throttleTimeMs: 0,
        errorCode: r.errorCode,
        members: r.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          errorCode: m.errorCode,
        })),
      }
    }
    // v0-2 has one error: the group's, else the member's (Kafka's LeaveGroupResponse for old versions).
    const memberError = r.members.find((m) => m.errorCode !== ErrorCode.None)?.errorCode ?? ErrorCode.None
    return { throttleTimeMs: 0, errorCode: r.errorCode !== ErrorCode.None ? r.errorCode : memberError }
  })
}
