/**
 * JoinGroup v0-9: the classic protocol through the group coordinator (KIP-394 member ids from v4,
 * static members from v5, SkipAssignment for a restarted static leader in v9). The Reason field
 * (v8+) is logged only.
 */
import type { JoinInput, JoinResult } from '../../coordinator/index.ts'
import { apis, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, ResourceType } from '../authorize.ts'
import { defineHandler, type Handler, type RequestContext } from '../handler.ts'

export interface JoinGroupView {
  joinGroup(input: JoinInput): Promise<JoinResult>
}

/** The client's host as Kafka shows it in DescribeGroups (`InetAddress.toString`): `/127.0.0.1`. */
export function clientHostOf(ctx: RequestContext): string {
  const address = ctx.clientAddress
  const at = address.lastIndexOf(':')
  const host = at < 0 ? address : address.slice(0, at)
  return `/${host.replace(/^\[|\]$/g, '')}`
}

export function makeJoinGroupHandler(view: JoinGroupView): Handler {
  return defineHandler(apis.JoinGroup, {}, async (req, ctx) => {
    const v = ctx.apiVersion
    if (!authorize(ctx).allowed(AclOperation.Read, ResourceType.Group, req.groupId)) {
      return {
        throttleTimeMs: 0,
        errorCode: ErrorCode.GroupAuthorizationFailed,
        generationId: -1,
        protocolType: null,
        protocolName: v >= 7 ? null : '',
        leader: '',
        skipAssignment: false,
        // Kafka's JoinGroupRequest.getErrorResponse: no member id, whatever the request named.
        memberId: '',
        members: [],
      }
    }
    const r = await view.joinGroup({
      groupId: req.groupId,
      memberId: req.memberId,
      groupInstanceId: v >= 5 ? req.groupInstanceId : null,
      protocolType: req.protocolType,
      protocols: req.protocols.map((p) => ({ name: p.name, metadata: p.metadata })),
      sessionTimeoutMs: req.sessionTimeoutMs,
      // JoinGroup v0 has no rebalance timeout: the session timeout serves (Kafka's placeholder).
      rebalanceTimeoutMs:
        v >= 1 && req.rebalanceTimeoutMs >= 0 ? req.rebalanceTimeoutMs : req.sessionTimeoutMs,
      clientId: ctx.header.clientId ?? '',
      clientHost: clientHostOf(ctx),
      apiVersion: v,
      reason: v >= 8 ? req.reason : null,
    })
    return {
      throttleTimeMs: 0,
      errorCode: r.errorCode,
      generationId: r.generationId,
      protocolType: r.protocolType,
      // Before v7 the protocol name cannot be null (Kafka's JoinGroupResponse sets it to "").
      protocolName: v >= 7 ? r.protocolName : (r.protocolName ?? ''),
      leader: r.leader,
      skipAssignment: r.skipAssignment,
      memberId: r.memberId,
      members: r.members.map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        metadata: m.metadata,
      })),
    }
  })
}
