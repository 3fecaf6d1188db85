import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AssertionError, type NodeId } from '../model/index.ts'
import type { Entry } from './entry.ts'
import {
  type FetchRequest,
  type FetchResponse,
  RaftErrorCode,
  type RaftMessage,
  type VoteRequest,
} from './messages.ts'
import { RaftNode, type RaftRandom } from './raft-node.ts'
import type { PersistedRaftState, Ready } from './ready.ts'

const n = (id: number) => id as NodeId
/** Always the low end: election timeouts are exactly electionTimeoutMs, no jitter. */
const lowRandom: RaftRandom = { int: () => 0 }
const bytes = (s: string) => new TextEncoder().encode(s)

function node(id: number, voters: number[], persisted?: PersistedRaftState, config = {}): RaftNode {
  return new RaftNode({
    config: { nodeId: n(id), voters: voters.map(n), ...config },
    random: lowRandom,
    nowMs: 0,
    ...(persisted !== undefined ? { persisted } : {}),
  })
}

/** Handle every Ready as a shell would; returns the messages sent. */
function drain(raft: RaftNode): { messages: RaftMessage[]; readies: Ready[] } {
  const messages: RaftMessage[] = []
  const readies: Ready[] = []
  while (raft.hasReady()) {
    const ready = raft.ready()
    readies.push(ready)
    messages.push(...ready.messages)
    raft.advance(ready)
  }
  return { messages, readies }
}

function voteResponse(request: VoteRequest, voteGranted: boolean): RaftMessage {
  return {
    type: 'VoteResponse',
    from: request.to,
    to: request.from,
    correlationId: request.correlationId,
    errorCode: RaftErrorCode.None,
    leaderId: null,
    leaderEpoch: request.candidateEpoch,
    voteGranted,
  }
}

/** Drive node 1 of voters [1, 2, 3] to leadership of epoch 1 by answering its (pre-)votes. */
function electedLeader(config = {}): RaftNode {
  const raft = node(1, [1, 2, 3], undefined, config)
  drain(raft)
  raft.tick(1000) // election timeout (random part 0)
  for (const preVote of [true, false]) {
    const votes = drain(raft).messages.filter((m): m is VoteRequest => m.type === 'VoteRequest')
    assert.ok(votes.length === 2 && votes.every((v) => v.preVote === preVote))
    for (const v of votes) raft.step(voteResponse(v, true))
  }
  assert.equal(raft.status().role, 'leader')
  return raft
}

function fetch(
  raft: RaftNode,
  from: number,
  fetchOffset: bigint,
  lastFetchedEpoch: number,
  correlationId = 1,
): FetchRequest {
  return {
    type: 'FetchRequest',
    from: n(from),
    to: raft.nodeId,
    correlationId,
    replicaId: n(from),
    currentLeaderEpoch: raft.status().epoch,
    fetchOffset,
    lastFetchedEpoch,
    logStartOffset: 0n,
    maxWaitMs: 0,
    maxBytes: 1 << 20,
  }
}

function fetchResponses(messages: RaftMessage[]): FetchResponse[] {
  return messages.filter((m): m is FetchResponse => m.type === 'FetchResponse')
}

describe('RaftNode: the only voter', () => {
  it('elects itself at once and commits its LeaderChange once durable', () => {
    const raft = node(1, [1])
    assert.equal(raft.status().role, 'leader')
    const first = raft.ready()
    assert.deepEqual(first.state, { epoch: 1, votedId: n(1), leaderId: n(1) })
    assert.equal(first.entries.length, 1)
    assert.equal(first.entries[0]!.kind, 'leaderChange')
    assert.equal(first.committed.length, 0, 'not committed before it is durable')
    raft.advance(first)
    const second = raft.ready()
    assert.deepEqual(
      second.committed.map((e) => e.offset),
      [0n],
    )
    assert.equal(second.highWatermark, 1n)
    raft.advance(second)
  })

  it('commits proposals after the Ready that persists them', () => {
    const raft = node(1, [1])
    drain(raft)
    const result = raft.propose([bytes('a'), bytes('b')])
    assert.deepEqual(result, { kind: 'appended', epoch: 1, baseOffset: 1n, lastOffset: 2n })
    const { readies } = drain(raft)
    assert.deepEqual(
      readies.flatMap((r) => r.entries.map((e) => e.offset)),
      [1n, 2n],
    )
    assert.deepEqual(
      readies.flatMap((r) => r.committed.map((e) => e.offset)),
      [1n, 2n],
    )
    assert.equal(raft.status().highWatermark, 3n)
  })
})

describe('RaftNode: the Ready contract', () => {
  it('allows one outstanding Ready and only advances that one', () => {
    const raft = node(1, [1])
    const ready = raft.ready()
    assert.equal(raft.hasReady(), false)
    assert.throws(() => raft.ready(), AssertionError)
    assert.throws(() => raft.advance({ ...ready }), AssertionError)
    raft.advance(ready)
    assert.throws(() => raft.advance(ready), AssertionError)
  })

  it('refuses time going backwards', () => {
    const raft = node(1, [1, 2, 3])
    raft.tick(10)
    assert.throws(() => raft.tick(9), AssertionError)
  })

  it('persists its own vote before asking for votes', () => {
    const raft = node(1, [1, 2, 3])
    drain(raft)
    raft.tick(1000)
    const preVotes = drain(raft).messages as VoteRequest[]
    for (const v of preVotes) raft.step(voteResponse(v, true))
    const ready = raft.ready()
    assert.deepEqual(ready.state, { epoch: 1, votedId: n(1), leaderId: null })
    assert.ok(ready.messages.every((m) => m.type === 'VoteRequest' && !m.preVote && m.candidateEpoch === 1))
  })
})

describe('RaftNode: votes', () => {
  function request(
    to: RaftNode,
    from: number,
    epoch: number,
    last: [number, bigint],
    preVote = false,
  ): VoteRequest {
    return {
      type: 'VoteRequest',
      from: n(from),
      to: to.nodeId,
      correlationId: 7,
      candidateEpoch: epoch,
      candidateId: n(from),
      lastOffsetEpoch: last[0],
      lastOffset: last[1],
      preVote,
    }
  }
  const granted = (raft: RaftNode) => {
    const responses = drain(raft).messages.filter((m) => m.type === 'VoteResponse')
    return responses.map((m) => (m.type === 'VoteResponse' ? m.voteGranted : null))
  }

  it('grants one vote per epoch, durably, and repeats it only to the same candidate', () => {
    const raft = node(2, [1, 2, 3])
    drain(raft)
    raft.step(request(raft, 1, 1, [0, 0n]))
    const ready = raft.ready()
    assert.deepEqual(ready.state, { epoch: 1, votedId: n(1), leaderId: null })
    raft.advance(ready)
    raft.step(request(raft, 3, 1, [0, 0n]))
    raft.step(request(raft, 1, 1, [0, 0n]))
    assert.deepEqual(granted(raft), [false, true])
  })

  it('refuses a candidate whose log is behind', () => {
    const entries: Entry[] = [{ kind: 'data', offset: 0n, epoch: 2, data: bytes('x') }]
    const raft = node(2, [1, 2, 3], { state: { epoch: 2, votedId: null, leaderId: null }, entries })
    drain(raft)
    raft.step(request(raft, 1, 3, [1, 5n])) // older last epoch, longer log
    raft.step(request(raft, 3, 4, [2, 1n])) // same last epoch and end: up to date
    assert.deepEqual(granted(raft), [false, true])
  })

  it('refuses pre-votes while it hears from its leader, and changes no state for them', () => {
    const raft = node(2, [1, 2, 3], { state: { epoch: 1, votedId: n(1), leaderId: n(1) } })
    const [fetchRequest] = drain(raft).messages
    assert.equal(fetchRequest?.type, 'FetchRequest')
    raft.step({
      type: 'FetchResponse',
      from: n(1),
      to: n(2),
      correlationId: fetchRequest!.correlationId,
      errorCode: RaftErrorCode.None,
      highWatermark: 0n,
      logStartOffset: 0n,
      currentLeader: { leaderId: n(1), leaderEpoch: 1 },
      records: [],
    })
    drain(raft)
    raft.step(request(raft, 3, 1, [0, 0n], true))
    assert.deepEqual(granted(raft), [false])
    assert.equal(raft.status().epoch, 1)
    assert.equal(raft.status().role, 'follower')
    raft.tick(2000) // fetch timeout: the leader is gone as far as node 2 knows
    assert.equal(raft.status().role, 'prospective')
    raft.step(request(raft, 3, 1, [0, 0n], true))
    assert.deepEqual(
      granted(raft).filter((g) => g !== null),
      [true],
    )
  })

  it('does not vote in an epoch whose leader it knows', () => {
    const raft = node(2, [1, 2, 3], { state: { epoch: 1, votedId: null, leaderId: n(1) } })
    drain(raft)
    raft.step(request(raft, 3, 1, [0, 0n]))
    assert.deepEqual(granted(raft), [false])
  })
})

describe('RaftNode: the leader', () => {
  it('validates fetches: diverging epoch, snapshot, valid', () => {
    const raft = electedLeader()
    raft.propose([bytes('a'), bytes('b')]) // offsets 1, 2 in epoch 1
    drain(raft)
    raft.step(fetch(raft, 2, 3n, 0, 11)) // claims offset 2 in epoch 0: diverges
    raft.step(fetch(raft, 3, 1n, 1, 12)) // a prefix: valid
    const [diverging, valid] = fetchResponses(drain(raft).messages)
    assert.deepEqual(diverging!.divergingEpoch, { epoch: 0, endOffset: 0n })
    assert.deepEqual(
      valid!.records.map((e) => e.offset),
      [1n, 2n],
    )
  })

  it('moves the high watermark only with a majority and past its own LeaderChange', () => {
    const raft = electedLeader()
    drain(raft)
    raft.step(fetch(raft, 2, 0n, 0))
    drain(raft)
    assert.equal(raft.status().highWatermark, 0n, 'the LeaderChange at 0 is not yet on a majority')
    raft.step(fetch(raft, 2, 1n, 1))
    drain(raft)
    assert.equal(raft.status().highWatermark, 1n)
  })

  it('refuses proposals beyond uncommittedEntriesMax and when not leading', () => {
    const raft = electedLeader({ uncommittedEntriesMax: 3 })
    assert.equal(raft.propose([bytes('a'), bytes('b')]).kind, 'appended')
    assert.equal(raft.propose([bytes('c')]).kind, 'backpressure')
    const follower = node(2, [1, 2, 3], { state: { epoch: 1, votedId: null, leaderId: n(1) } })
    assert.deepEqual(follower.propose([bytes('x')]), { kind: 'notLeader', leaderId: 1, epoch: 1 })
  })

  it('describes the quorum', () => {
    const raft = electedLeader()
    drain(raft)
    raft.step(fetch(raft, 2, 1n, 1))
    const description = raft.describeQuorum()!
    assert.equal(description.leaderId, 1)
    assert.deepEqual(
      description.currentVoters.map((v) => [v.replicaId, v.logEndOffset]),
      [
        [1, 1n],
        [2, 1n],
        [3, -1n],
      ],
    )
    assert.equal(node(2, [1, 2, 3]).describeQuorum(), null)
  })

  it('resigns when no majority fetched within 1.5 fetch timeouts', () => {
    const raft = electedLeader()
    drain(raft)
    raft.tick(1000 + 2999)
    assert.equal(raft.status().role, 'leader')
    raft.tick(1000 + 3000)
    assert.equal(raft.status().role, 'resigned')
    const ends = drain(raft).messages.filter((m) => m.type === 'EndQuorumEpochRequest')
    assert.equal(ends.length, 2)
  })

  it('re-announces itself to a silent voter and steps down when it answers with a higher epoch', () => {
    const raft = electedLeader()
    drain(raft)
    raft.step(fetch(raft, 2, 1n, 1))
    drain(raft)
    raft.tick(1000 + 2000) // node 3 never fetched: the announcement is repeated every request timeout
    const announce = drain(raft).messages.find((m) => m.type === 'BeginQuorumEpochRequest' && m.to === n(3))
    assert.ok(announce !== undefined)
    raft.step({
      type: 'BeginQuorumEpochResponse',
      from: n(3),
      to: n(1),
      correlationId: announce.correlationId,
      errorCode: RaftErrorCode.FencedLeaderEpoch,
      leaderId: null,
      leaderEpoch: 5,
    })
    assert.deepEqual([raft.status().role, raft.status().epoch], ['unattached', 5])
  })

  it('keeps serving a replaced snapshot to a replica part-way through fetching it', () => {
    const raft = electedLeader()
    raft.propose([bytes('a'), bytes('b')])
    drain(raft)
    raft.step(fetch(raft, 2, 3n, 1))
    drain(raft)
    const first = raft.snapshot(2n, bytes('image-at-2'))
    const fetchSnapshot = (position: number, correlationId: number) => {
      raft.step({
        type: 'FetchSnapshotRequest',
        from: n(3),
        to: n(1),
        correlationId,
        replicaId: n(3),
        currentLeaderEpoch: 1,
        snapshotId: first,
        position,
        maxBytes: 4,
      })
      return drain(raft).messages.find(
        (m) => m.type === 'FetchSnapshotResponse' && m.correlationId === correlationId,
      )
    }
    const start = fetchSnapshot(0, 21)
    assert.ok(start?.type === 'FetchSnapshotResponse' && start.errorCode === RaftErrorCode.None)
    raft.snapshot(3n, bytes('image-at-3'))
    const again = fetchSnapshot(4, 22)
    assert.ok(again?.type === 'FetchSnapshotResponse' && again.errorCode === RaftErrorCode.None)
    assert.equal(new TextDecoder().decode(again.unalignedRecords), 'e-at')
    raft.tick(1000 + 2001) // unused for longer than the request timeout: gone
    const late = fetchSnapshot(8, 23)
    assert.ok(late?.type === 'FetchSnapshotResponse' && late.errorCode === RaftErrorCode.SnapshotNotFound)
  })

  it('snapshots only what was applied, then forgets the log below', () => {
    const raft = node(1, [1])
    drain(raft)
    raft.propose([bytes('a'), bytes('b')])
    drain(raft)
    assert.throws(() => raft.snapshot(4n, bytes('image')), AssertionError)
    const id = raft.snapshot(2n, bytes('image'))
    assert.deepEqual(id, { endOffset: 2n, epoch: 1 })
    assert.equal(raft.log.startOffset, 2n)
    assert.equal(raft.latestSnapshot?.id.endOffset, 2n)
  })
})

describe('RaftNode: restarts', () => {
  it('comes back resigned when it led before the crash', () => {
    const raft = node(1, [1, 2, 3], { state: { epoch: 4, votedId: n(1), leaderId: n(1) } })
    assert.equal(raft.status().role, 'resigned')
    assert.equal(raft.propose([bytes('x')]).kind, 'notLeader')
  })

  it('continues in the log epoch when the log outran the quorum-state file', () => {
    const entries: Entry[] = [{ kind: 'data', offset: 0n, epoch: 5, data: bytes('x') }]
    const raft = node(2, [1, 2, 3], { state: { epoch: 3, votedId: n(1), leaderId: null }, entries })
    assert.deepEqual(
      [raft.status().role, raft.status().epoch, raft.status().votedId],
      ['unattached', 5, null],
    )
  })

  it('follows its known leader and fetches from it at once', () => {
    const raft = node(2, [1, 2, 3], { state: { epoch: 2, votedId: null, leaderId: n(3) } })
    const [first] = drain(raft).messages
    assert.equal(first?.type, 'FetchRequest')
    assert.equal(first?.to, 3)
  })

  it('stamps deadlines with the last tick: the shell ticks before it steps', () => {
    const raft = node(2, [1, 2, 3], { state: { epoch: 2, votedId: null, leaderId: n(3) } })
    const [request] = drain(raft).messages
    raft.tick(1500)
    raft.step({
      type: 'FetchResponse',
      from: n(3),
      to: n(2),
      correlationId: request!.correlationId,
      errorCode: RaftErrorCode.None,
      highWatermark: 0n,
      logStartOffset: 0n,
      currentLeader: { leaderId: n(3), leaderEpoch: 2 },
      records: [],
    })
    raft.tick(3000)
    assert.equal(raft.status().role, 'follower', 'the fetch at 1500 holds the leader until 3500')
    raft.tick(3500)
    assert.equal(raft.status().role, 'prospective')
  })

  it('ignores responses it did not ask for', () => {
    const raft = node(2, [1, 2, 3], { state: { epoch: 2, votedId: null, leaderId: n(3) } })
    drain(raft)
    const before = raft.status()
    raft.step({
      type: 'FetchResponse',
      from: n(3),
      to: n(2),
      correlationId: -5,
      errorCode: RaftErrorCode.None,
      highWatermark: 9n,
      logStartOffset: 0n,
      currentLeader: { leaderId: n(3), leaderEpoch: 2 },
      records: [],
    })
    assert.deepEqual(raft.status(), before)
  })
})
