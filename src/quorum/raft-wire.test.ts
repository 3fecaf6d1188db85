import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { NodeId, Offset } from '../model/index.ts'
import { apis, Reader, type VoteRequestData, Writer } from '../protocol/index.ts'
import type { VoteRequest } from '../raft/index.ts'
import { voteRequestFromWire, voteRequestToWire } from './raft-wire.ts'

const A = { self: 1 as NodeId, peer: 2 as NodeId, correlationId: 7 }

function roundTrip(value: VoteRequestData.VoteRequestIn, version: number): VoteRequestData.VoteRequest {
  const w = new Writer(64)
  apis.Vote.writeRequest(w, value, version)
  return apis.Vote.readRequest(new Reader(w.toBuffer()), version)
}

const preVote: VoteRequest = {
  type: 'VoteRequest',
  from: 2 as NodeId,
  to: 1 as NodeId,
  correlationId: 7,
  candidateEpoch: 4,
  candidateId: 2 as NodeId,
  lastOffsetEpoch: 3,
  lastOffset: 10n as Offset,
  preVote: true,
}

test("a pre-vote sent at v1 (Weir's own form, in a private tag) reads back as a pre-vote", () => {
  const read = voteRequestFromWire(roundTrip(voteRequestToWire(preVote, 'c'), 1), A)
  assert.deepEqual(read, preVote)
  const vote = voteRequestFromWire(roundTrip(voteRequestToWire({ ...preVote, preVote: false }, 'c'), 1), A)
  assert.equal(vote?.preVote, false)
})

test("Vote v2's PreVote field (KIP-996, as a Kafka 4.0 voter sends it) is a pre-vote", () => {
  const wire = voteRequestToWire({ ...preVote, preVote: false }, 'c')
  const topic = wire.topics![0]!
  const v2 = roundTrip(
    { ...wire, topics: [{ ...topic, partitions: [{ ...topic.partitions![0]!, preVote: true }] }] },
    2,
  )
  assert.deepEqual(voteRequestFromWire(v2, A), preVote)
})
