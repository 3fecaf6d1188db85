/**
 * The quorum shell over real sockets and real files: three voters elect a leader, replicate and
 * commit; the leader stops; the others elect a new one; the old one restarts from its files and
 * catches up without losing anything committed.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { NodeDisk, nodeTransport, SeededRandom, systemClock } from '../../src/io/index.ts'
import type { NodeId } from '../../src/model/index.ts'
import { Quorum, type VoterAddress } from '../../src/quorum/index.ts'
import type { Entry } from '../../src/raft/index.ts'
import { makeRaftHandlers } from '../../src/server/handlers/raft-rpc.ts'
import { Dispatcher, HandlerRegistry, Listener, makeApiVersionsHandler } from '../../src/server/index.ts'

const root = mkdtempSync(join(tmpdir(), 'weir-quorum-'))
after(() => rmSync(root, { recursive: true, force: true }))

interface Running {
  quorum: Quorum
  listener: Listener
  committed: Entry[]
}

const RAFT = {
  electionTimeoutMs: 300,
  fetchTimeoutMs: 600,
  electionBackoffMsMax: 300,
  requestTimeoutMs: 500,
  fetchWaitMsMax: 100,
}

async function startNode(id: NodeId, voters: VoterAddress[], port: number): Promise<Running> {
  const committed: Entry[] = []
  const registry = new HandlerRegistry()
  let quorum: Quorum | null = null
  const listener = new Listener({
    listenerName: 'CONTROLLER',
    host: '127.0.0.1',
    port,
    dispatcher: new Dispatcher(registry),
    clock: systemClock,
    limits: {
      requestBytesMax: 1 << 26,
      inFlightRequestsMax: 64,
      inFlightBytesMax: 1 << 26,
      connectionsIdleMsMax: 600_000,
      connectionsMax: 100,
    },
    log: () => {},
  })
  await listener.start()
  quorum = await Quorum.open({
    dir: join(root, `node-${id}`, '__cluster_metadata-0'),
    nodeId: id,
    voters,
    clusterId: 'test-cluster',
    disk: new NodeDisk(),
    clock: systemClock,
    random: new SeededRandom(id),
    transport: nodeTransport,
    listener: { onSnapshot: () => {}, onCommitted: (entries) => committed.push(...entries) },
    raft: RAFT,
    log: (level, m) => {
      if (level === 'error') console.log(`node ${id}: ${m}`)
    },
  })
  registry.register(
    makeApiVersionsHandler(registry, () => ({ supported: [], finalized: [], finalizedEpoch: -1n })),
    ...makeRaftHandlers(quorum, 'test-cluster', () => Date.now()),
  )
  return { quorum, listener, committed }
}

async function stopNode(n: Running): Promise<void> {
  await n.quorum.close()
  await n.listener.stop(100)
}

async function waitFor<T>(what: string, fn: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = fn()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

async function freePorts(n: number): Promise<number[]> {
  const { createServer } = await import('node:net')
  const ports: number[] = []
  for (let i = 0; i < n; i++) {
    const s = createServer()
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
    ports.push((s.address() as { port: number }).port)
    await new Promise<void>((r) => s.close(() => r()))
  }
  return ports
}

const dataOf = (entries: Entry[]) =>
  entries.flatMap((e) => (e.kind === 'data' ? [Buffer.from(e.data).toString()] : []))

test('three voters elect, commit, fail over, and a restarted voter catches up', {
  timeout: 60_000,
}, async () => {
  const ports = await freePorts(3)
  const voters: VoterAddress[] = ports.map((port, i) => ({ id: (i + 1) as NodeId, host: '127.0.0.1', port }))
  const nodes = new Map<NodeId, Running>()
  for (const v of voters) nodes.set(v.id, await startNode(v.id, voters, v.port))

  const leaderOf = (among: Iterable<Running>) => [...among].find((n) => n.quorum.status().role === 'leader')
  const first = await waitFor('a leader', () => leaderOf(nodes.values()))
  for (let i = 0; i < 50; i++) {
    const r = first.quorum.propose([Buffer.from(`a${i}`)])
    assert.equal(r.kind, 'appended')
  }
  await waitFor('50 entries committed everywhere', () =>
    [...nodes.values()].every((n) => dataOf(n.committed).length === 50) ? true : undefined,
  ).catch((e) => {
    for (const n of nodes.values())
      console.log(
        JSON.stringify(n.quorum.status(), (_k, v) => (typeof v === 'bigint' ? String(v) : v)),
        dataOf(n.committed).length,
        n.quorum.failure?.message,
      )
    throw e
  })

  // The leader stops; the other two elect a new leader and keep committing.
  const oldId = first.quorum.nodeId
  await stopNode(first)
  nodes.delete(oldId)
  const second = await waitFor('a new leader', () => leaderOf(nodes.values()))
  assert.notEqual(second.quorum.nodeId, oldId)
  assert.ok(second.quorum.status().epoch > first.quorum.status().epoch)
  for (let i = 0; i < 20; i++) second.quorum.propose([Buffer.from(`b${i}`)])
  await waitFor('70 entries committed on the survivors', () =>
    [...nodes.values()].every((n) => dataOf(n.committed).length === 70) ? true : undefined,
  )

  // The old leader restarts from its files, follows, and ends with the same committed log.
  const restarted = await startNode(oldId, voters, voters.find((v) => v.id === oldId)!.port)
  nodes.set(oldId, restarted)
  await waitFor('the restarted voter catches up', () =>
    dataOf(restarted.committed).length === 70 ? true : undefined,
  )
  assert.deepEqual(dataOf(restarted.committed), dataOf(second.committed))
  assert.equal(restarted.quorum.status().role, 'follower')
  for (const n of nodes.values()) await stopNode(n)
})
