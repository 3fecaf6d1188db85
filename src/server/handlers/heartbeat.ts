/** Heartbeat v0-4: keeps a classic group member's session; answers REBALANCE_IN_PROGRESS to rejoin. */
import type { HeartbeatInput } from '../../coordinator/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export interface HeartbeatView {
  heartbeat(input: HeartbeatInput): ErrorCode | Promise<ErrorCode>
}

export function makeHeartbeatHandler(view: HeartbeatView): Handler {
  return defineHandler(apis.Heartbeat, {}, async (req, ctx) => ({
    throttleTimeMs: 0,
    errorCode: !authorize(ctx).allowed(AclOperation.Read, ResourceType.Group, req.groupId)
      ? ErrorCode.GroupAuthorizationFailed
      : await view.heartbeat({
          groupId: req.groupId,
          generationId: req.generationId,
          memberId: req.memberId,
          groupInstanceId: ctx.apiVersion >= 3 ? req.groupInstanceId : null,
        }),
  }))
}
