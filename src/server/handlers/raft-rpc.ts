/**
 * Vote v0-2 (v2 adds KIP-996's pre-vote), BeginQuorumEpoch v0-1, EndQuorumEpoch v0-1, FetchSnapshot
 * v0-1 and Fetch (of `__cluster_metadata` only) on the controller listener: each turns the wire
 * request into a raft message for the quorum and its answer back into the wire response. Not
 * implemented: KIP-853 dynamic voters (directory ids are ignored), Fetch of any other topic here.
 */
import { assert, NO_NODE, type NodeId } from '../../model/index.ts'
import { type Api, apis, ErrorCode } from '../../protocol/index.ts'
import type { Quorum } from '../../quorum/index.ts'
import * as wire from '../../quorum/index.ts'
import type { RaftRequest, RaftResponse } from '../../raft/index.ts'
import { AclOperation, authorize } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

/** A wire response carrying only a top-level error: every KRaft response's shape for a refusal. */
const onlyError = (errorCode: ErrorCode) => ({ errorCode })

/** What every raft handler does: check the cluster id, step the request, await the answer. */
function raftHandler<Req extends { clusterId: string | null }, ResIn, T extends RaftResponse['type']>(
  api: Api<Req, never, unknown, ResIn>,
  quorum: Quorum,
  clusterId: string,
  convert: {
    toRaft: (
      req: Req,
      version: number,
      a: { self: NodeId; peer: NodeId; correlationId: number },
    ) => RaftRequest | null
    /** The type of the raft response that answers this request. */
    answer: T
    fromRaft: (res: Extract<RaftResponse, { type: T }>) => ResIn
    error: (errorCode: ErrorCode) => ResIn
  },
): Handler {
  const answers = (res: RaftResponse): res is Extract<RaftResponse, { type: T }> =>
    res.type === convert.answer
  return defineHandler(api, {}, async (req, ctx) => {
    // Only brokers and controllers may speak raft (Kafka's CLUSTER_ACTION on the cluster; not the
    // table's Fetch entry, which is a consumer's or follower's Fetch of a client listener).
    if (!authorize(ctx).cluster(AclOperation.ClusterAction))
      return convert.error(ErrorCode.ClusterAuthorizationFailed)
    if (req.clusterId !== null && req.clusterId !== clusterId)
      return convert.error(ErrorCode.InconsistentClusterId)
    const message = convert.toRaft(req, ctx.apiVersion, {
      self: quorum.nodeId,
      peer: NO_NODE,
      correlationId: quorum.nextInboundId(),
    })
    if (message === null) return convert.error(ErrorCode.InvalidRequest)
    const response = await quorum.handleInbound(message)
    if (response === null) return convert.error(ErrorCode.RequestTimedOut)
    assert(answers(response), `raft answered a ${api.name} with a ${response.type}`)
    return convert.fromRaft(response)
  })
}

export function makeRaftHandlers(quorum: Quorum, clusterId: string, nowMs: () => number): Handler[] {
  return [
    raftHandler(apis.Vote, quorum, clusterId, {
      toRaft: (req, _v, a) => wire.voteRequestFromWire(req, a),
      answer: 'VoteResponse',
      fromRaft: (res) => wire.voteResponseToWire(res),
      error: onlyError,
    }),
    raftHandler(apis.BeginQuorumEpoch, quorum, clusterId, {
      toRaft: (req, _v, a) => wire.beginRequestFromWire(req, a),
      answer: 'BeginQuorumEpochResponse',
      fromRaft: (res) => wire.beginResponseToWire(res),
      error: onlyError,
    }),
    raftHandler(apis.EndQuorumEpoch, quorum, clusterId, {
      toRaft: (req, v, a) => wire.endRequestFromWire(req, v, a),
      answer: 'EndQuorumEpochResponse',
      fromRaft: (res) => wire.endResponseToWire(res),
      error: onlyError,
    }),
    raftHandler(apis.FetchSnapshot, quorum, clusterId, {
      toRaft: (req, _v, a) => wire.fetchSnapshotRequestFromWire(req, a),
      answer: 'FetchSnapshotResponse',
      fromRaft: (res) => wire.fetchSnapshotResponseToWire(res),
      error: onlyError,
    }),
    raftHandler(apis.Fetch, quorum, clusterId, {
      toRaft: (req, v, a) => (wire.isMetadataFetch(req, v) ? wire.fetchRequestFromWire(req, v, a) : null),
      answer: 'FetchResponse',
      fromRaft: (res) => wire.fetchResponseToWire(res, nowMs()),
      error: onlyError,
    }),
  ]
}
