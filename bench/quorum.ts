/**
 * Quorum benchmark: metadata records committed per second by a 3-voter KRaft quorum on loopback
 * (real sockets, real files, fsync on every Ready), and election time after the leader stops,
 * with Kafka's default timeouts. Prints figures; asserts nothing.
 * Run: npm run bench:quorum [-- --records 200000 --kills 5]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { NodeDisk, nodeTransport, SeededRandom, systemClock } from '../src/io/index.ts'
import type { NodeId } from '../src/model/index.ts'
import { Quorum, type VoterAddress } from '../src/quorum/index.ts'
import {
  Dispatcher,
  HandlerRegistry,
  Listener,
  makeApiVersionsHandler,
  makeRaftHandlers,
} from '../src/server/index.ts'

const { values } = parseArgs({
  options: { records: { type: 'string' }, kills: { type: 'string' }, batch: { type: 'string' } },
})
const RECORDS = Number(values.records ?? 100_000)
const KILLS = Number(values.kills ?? 3)
/** Records per propose call (a controller proposes a request's records together). */
const BATCH = Number(values.batch ?? 100)
const RECORD = Buffer.alloc(100, 1)

const root = mkdtempSync(join(tmpdir(), 'weir-bench-quorum-'))

interface Running {
  quorum: Quorum
  listener: Listener
  committed: number
  onCommit: (() => void) | null
}

async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

async function start(id: NodeId, voters: VoterAddress[], seed: number): Promise<Running> {
  const registry = new HandlerRegistry()
  const listener = new Listener({
    listenerName: 'CONTROLLER',
    host: '127.0.0.1',
    port: voters.find((v) => v.id === id)!.port,
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
  const r: Running = { quorum: null as never, listener, committed: 0, onCommit: null }
  r.quorum = await Quorum.open({
    dir: join(root, `n${id}-${seed}`, '__cluster_metadata-0'),
    nodeId: id,
    voters,
    clusterId: 'bench',
    disk: new NodeDisk(),
    clock: systemClock,
    random: new SeededRandom(seed),
    transport: nodeTransport,
    listener: {
      onSnapshot: () => {},
      onCommitted: (entries) => {
        r.committed += entries.filter((e) => e.kind === 'data').length
        r.onCommit?.()
      },
    },
  })
  registry.register(
    makeApiVersionsHandler(registry, () => ({ supported: [], finalized: [], finalizedEpoch: -1n })),
    ...makeRaftHandlers(r.quorum, 'bench', () => Date.now()),
  )
  return r
}

async function stop(r: Running): Promise<void> {
  await r.quorum.close()
  await r.listener.stop(100)
}

async function until(fn: () => boolean): Promise<void> {
  while (!fn()) await new Promise((resolve) => setTimeout(resolve, 1))
}

const voters: VoterAddress[] = []
for (const id of [1, 2, 3] as NodeId[]) voters.push({ id, host: '127.0.0.1', port: await freePort() })
let nodes = await Promise.all(voters.map((v) => start(v.id, voters, v.id)))
const leaderOf = () => nodes.find((n) => n.quorum.status().role === 'leader')
await until(() => leaderOf() !== undefined)

// Throughput: keep proposing until RECORDS are committed on the leader.
const leader = leaderOf()!
const startMs = performance.now()
let proposed = 0
const batch = Array.from({ length: BATCH }, () => RECORD)
while (leader.committed < RECORDS) {
  while (proposed < RECORDS && proposed - leader.committed < 20_000) {
    const r = leader.quorum.propose(batch)
    if (r.kind !== 'appended') break
    proposed += BATCH
  }
  await new Promise<void>((resolve) => {
    leader.onCommit = resolve
  })
}
const seconds = (performance.now() - startMs) / 1000
console.log(
  `committed ${leader.committed} records of ${RECORD.length} B in ${seconds.toFixed(2)} s: ${Math.round(leader.committed / seconds)} records/s (3 voters, loopback, fsync per Ready, ${BATCH} records per propose)`,
)

// Election time: stop the leader, time until another node is leader and has committed a record.
const elections: number[] = []
for (let k = 0; k < KILLS; k++) {
  const old = leaderOf()!
  const t0 = performance.now()
  await stop(old)
  const rest = nodes.filter((n) => n !== old)
  await until(() => rest.some((n) => n.quorum.status().role === 'leader'))
  const next = rest.find((n) => n.quorum.status().role === 'leader')!
  const before = next.committed
  next.quorum.propose([RECORD])
  await until(() => next.committed > before)
  elections.push(performance.now() - t0)
  const id = old.quorum.nodeId
  const restarted = await start(id, voters, id)
  nodes = [...rest, restarted]
  await until(() => restarted.quorum.status().role === 'follower')
}
elections.sort((a, b) => a - b)
console.log(
  `leader stopped -> new leader committed: ${elections.map((e) => Math.round(e)).join(', ')} ms (median ${Math.round(elections[Math.floor(elections.length / 2)]!)} ms, defaults: election 1000 ms, fetch 2000 ms)`,
)
for (const n of nodes) await stop(n)
rmSync(root, { recursive: true, force: true })
