import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { BrokerId } from '../model/index.ts'
import {
  RACK_AWARE_REPLICA_SELECTOR,
  type ReadReplicaCandidate,
  replicaSelectorOf,
  selectReadReplica,
} from './read-replica-selector.ts'

const b = (n: number) => n as BrokerId
const f = (id: number, rack: string | null, logEndOffset: bigint, lastFetchMs = 0): ReadReplicaCandidate => ({
  id: b(id),
  rack,
  logEndOffset,
  lastFetchMs,
})
const leader = { id: b(1), rack: 'a' }

test('replica.selector.class: unset is no selection, the rack-aware class is known, others refused', () => {
  assert.equal(replicaSelectorOf(null), null)
  assert.equal(replicaSelectorOf(RACK_AWARE_REPLICA_SELECTOR), 'rack-aware')
  assert.throws(() => replicaSelectorOf('com.example.Mine'), /not a selector Weir knows/)
})

test('a consumer in a follower rack is pointed at the most caught-up follower there that has the offset', () => {
  const followers = [f(2, 'b', 100n), f(3, 'b', 120n), f(4, 'c', 200n)]
  assert.equal(selectReadReplica('rack-aware', { leader, followers, fetchOffset: 50n, clientRack: 'b' }), 3)
  assert.equal(selectReadReplica('rack-aware', { leader, followers, fetchOffset: 110n, clientRack: 'b' }), 3)
  assert.equal(
    selectReadReplica('rack-aware', { leader, followers, fetchOffset: 130n, clientRack: 'b' }),
    null,
    'no follower in the rack reaches the fetch offset: the leader serves',
  )
  // Equal end offsets: the one that fetched last.
  assert.equal(
    selectReadReplica('rack-aware', {
      leader,
      followers: [f(2, 'b', 100n, 5), f(3, 'b', 100n, 9)],
      fetchOffset: 0n,
      clientRack: 'b',
    }),
    3,
  )
})

test('the leader serves when it is in the client rack, no follower is, the client names no rack, or the selector is the leader', () => {
  const followers = [f(2, 'b', 100n)]
  assert.equal(selectReadReplica('rack-aware', { leader, followers, fetchOffset: 0n, clientRack: 'a' }), null)
  assert.equal(selectReadReplica('rack-aware', { leader, followers, fetchOffset: 0n, clientRack: 'z' }), null)
  assert.equal(selectReadReplica('rack-aware', { leader, followers, fetchOffset: 0n, clientRack: '' }), null)
  assert.equal(selectReadReplica('leader', { leader, followers, fetchOffset: 0n, clientRack: 'b' }), null)
})
