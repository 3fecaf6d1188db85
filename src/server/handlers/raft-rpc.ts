/**
 * Vote v0-2 (v2 adds KIP-996's pre-vote), BeginQuorumEpoch v0-1, EndQuorumEpoch v0-1, FetchSnapshot
 * v0-1 and Fetch (of `__cluster_metadata` only) on the controller listener: each turns the wire
 * request into a raft message for the quorum and its answer back into the wire response. Not
 * implemented: KIP-853 dynamic voters (directory ids are ignored), Fetch of any other topic here.
 */
import type { NodeId } from '../../model/index.ts'
import { type Api, apis, ErrorCode } from '../../protocol/index.ts'
import type { Quorum } from '../../quorum/index.ts'
import * as wire from '../../quorum/index.ts'
import type { RaftRequest, RaftResponse } from '../../raft/index.ts'
import { defineHandler, type Handler } from '../handler.ts'

/** What every raft handler does: check the cluster id, step the request, await the answer. */
function raftHandler<Req extends { clusterId: string | null }, ResIn>(
  api: Api<Req, never, unknown, ResIn>,
  quorum: Quorum,
  clusterId: string,
  convert: {
    toRaft: (
      req: Req,
      version: number,
      a: { self: NodeId; peer: NodeId; correlationId: number },
    ) => RaftRequest | null
    fromRaft: (res: RaftResponse) => ResIn
    error: (errorCode: number) => ResIn
  },
): Handler {
  return defineHandler(api, {}, async (req, ctx) => {
    if (req.clusterId !== null && req.clusterId !== clusterId)
      return convert.error(ErrorCode.InconsistentClusterId)
    const message = convert.toRaft(req, ctx.apiVersion, {
      self: quorum.nodeId,
      peer: -1 as NodeId,
      correlationId: quorum.nextInboundId(),
    })
    if (message === null) return convert.error(ErrorCode.InvalidRequest)
    const response = await quorum.handleInbound(message)
    return response === null ? convert.error(ErrorCode.RequestTimedOut) : convert.fromRaft(response)
  })
}

export function makeRaftHandlers(quorum: Quorum, clusterId: string, nowMs: () => number): Handler[] {
  return [
    raftHandler(apis.Vote, quorum, clusterId, {
      toRaft: (req, _v, a) => wire.voteRequestFromWire(req, a),
      fromRaft: (res) => wire.voteResponseToWire(res as never),
      error: (errorCode) => ({ errorCode }),
    }),
    raftHandler(apis.BeginQuorumEpoch, quorum, clusterId, {
      toRaft: (req, _v, a) => wire.beginRequestFromWire(req, a),
      fromRaft: (res) => wire.beginResponseToWire(res as never),
      error: (errorCode) => ({ errorCode }),
    }),
    raftHandler(apis.EndQuorumEpoch, quorum, clusterId, {
      toRaft: (req, v, a) => wire.endRequestFromWire(req, v, a),
      fromRaft: (res) => wire.endResponseToWire(res as never),
      error: (errorCode) => ({ errorCode }),
    }),
    raftHandler(apis.FetchSnapshot, quorum, clusterId, {
      toRaft: (req, _v, a) => wire.fetchSnapshotRequestFromWire(req, a),
      fromRaft: (res) => wire.fetchSnapshotResponseToWire(res as never),
      error: (errorCode) => ({ errorCode }),
    }),
    raftHandler(apis.Fetch, quorum, clusterId, {
      toRaft: (req, v, a) => (wire.isMetadataFetch(req, v) ? wire.fetchRequestFromWire(req, v, a) : null),
      fromRaft: (res) => wire.fetchResponseToWire(res as never, nowMs()),
      error: (errorCode) => ({ errorCode }),
    }),
  ]
}
