import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AssertionError, type NodeId } from '../model/index.ts'
import { parseQuorumVoters, RAFT_CONFIG_DEFAULTS, raftConfig } from './raft-config.ts'

const ids = (...n: number[]) => n as NodeId[]

describe('raftConfig', () => {
  it("fills in Kafka's controller.quorum defaults", () => {
    const config = raftConfig({ nodeId: 1 as NodeId, voters: ids(1, 2, 3) })
    assert.equal(config.electionTimeoutMs, 1000)
    assert.equal(config.fetchTimeoutMs, 2000)
    assert.equal(config.electionBackoffMsMax, 1000)
    assert.equal(config.requestTimeoutMs, 2000)
    assert.equal(config.retryBackoffMs, 20)
    assert.equal(config.fetchWaitMsMax, RAFT_CONFIG_DEFAULTS.fetchWaitMsMax)
  })

  it('refuses settings that cannot work together', () => {
    const base = { nodeId: 1 as NodeId, voters: ids(1) }
    assert.throws(() => raftConfig({ ...base, voters: [] }), AssertionError)
    assert.throws(() => raftConfig({ ...base, voters: ids(1, 1) }), AssertionError)
    assert.throws(() => raftConfig({ ...base, electionTimeoutMs: 0 }), AssertionError)
    assert.throws(() => raftConfig({ ...base, fetchWaitMsMax: 2000 }), AssertionError)
    assert.throws(
      () => raftConfig({ ...base, snapshotChunkBytesMax: 10, snapshotBytesMax: 5 }),
      AssertionError,
    )
  })
})

describe('parseQuorumVoters', () => {
  it('reads id@host:port lists, IPv6 in brackets', () => {
    assert.deepEqual(parseQuorumVoters('1@localhost:9093, 2@[::1]:9094'), {
      voters: [
        { id: 1, host: 'localhost', port: 9093 },
        { id: 2, host: '::1', port: 9094 },
      ],
    })
  })

  it('says what is wrong instead of throwing', () => {
    assert.match((parseQuorumVoters('1@host') as { error: string }).error, /id@host:port/)
    assert.match((parseQuorumVoters('1@a:1,1@b:2') as { error: string }).error, /twice/)
    assert.match((parseQuorumVoters('1@a:70000') as { error: string }).error, /port/)
  })
})
