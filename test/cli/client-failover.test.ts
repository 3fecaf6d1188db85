/**
 * The client pieces under `weir` (ClusterClient, Producer, Fetcher) across a leader kill on a
 * 3-node embedded cluster: the producer's batches go to the new leader after NOT_LEADER_OR_FOLLOWER
 * or a lost connection, and every acknowledged record is read back (at least once: the producer is
 * not idempotent, so a batch whose response was lost may be there twice).
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { type EmbeddedCluster, startCluster } from 'weir'
import {
  ClusterClient,
  decodeRecords,
  EARLIEST,
  Fetcher,
  KafkaError,
  LATEST,
  listOffsets,
  Producer,
} from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import { weirOk } from './cli-support.ts'

let cluster: EmbeddedCluster
before(async () => {
  cluster = await startCluster({ nodes: 3 })
})
after(() => cluster.stop())

test('a producer and a fetcher carry on across a leader kill', async () => {
  await weirOk(['topic', 'create', 'failover', '-p', '1', '-r', '3', '-b', cluster.bootstrapServers])
  const client = new ClusterClient({
    bootstrap: cluster.bootstrap,
    clock: systemClock,
    transport: nodeTransport,
    retryTimeoutMs: 60_000,
  })
  try {
    const producer = new Producer(client, { acks: -1, lingerMs: 2 })
    const info = await producer.prepare('failover')
    const leader = info.partitions[0]!.leader
    const acked = new Set<string>()
    const failed: Error[] = []
    const send = (i: number) =>
      producer.append('failover', { value: Buffer.from(`r${i}`) }, (e) =>
        e === null ? acked.add(`r${i}`) : failed.push(e),
      )
    for (let i = 0; i < 200; i++) send(i)
    await producer.flush()
    assert.equal(acked.size, 200)

    await cluster.kill(leader - 1)
    for (let i = 200; i < 400; i++) send(i)
    await producer.flush()
    assert.deepEqual(failed, [])
    assert.equal(acked.size, 400)
    const moved = await client.topic('failover', { refresh: true })
    assert.notEqual(moved.partitions[0]!.leader, leader)

    const [start] = await listOffsets(client, [{ topic: 'failover', partition: 0, timestamp: EARLIEST }])
    const [end] = await listOffsets(client, [{ topic: 'failover', partition: 0, timestamp: LATEST }])
    const fetcher = new Fetcher(client)
    fetcher.assign([start!])
    const read = new Set<string>()
    while (fetcher.positions()[0]!.offset < end!.offset)
      for (const f of await fetcher.fetch())
        for (const r of decodeRecords(f.records, f.fetchOffset)) read.add(r.value!.toString())
    for (const v of acked) assert.ok(read.has(v), `acknowledged ${v} was not read back`)
    await cluster.restart(leader - 1)
  } finally {
    client.close()
  }
})

test('a long-lived client sees a deleted topic go once no broker has it', async () => {
  const b = ['-b', cluster.bootstrapServers]
  await weirOk(['topic', 'create', 'short-lived', '-p', '2', '-r', '3', ...b])
  const client = new ClusterClient({
    bootstrap: cluster.bootstrap,
    clock: systemClock,
    transport: nodeTransport,
  })
  try {
    const known = await client.topic('short-lived')
    assert.equal(known.partitions.length, 2)
    await weirOk(['topic', 'delete', 'short-lived', ...b])
    // The client keeps a topic one broker does not know (that broker may be behind) and takes it as
    // gone only when every broker answers so: asked by name, and in an all-topics refresh.
    const deadline = Date.now() + 30_000
    for (;;) {
      const e = await client.topic('short-lived', { refresh: true }).then(
        () => null,
        (x: unknown) => x,
      )
      if (e instanceof KafkaError && e.errorName === 'UNKNOWN_TOPIC_OR_PARTITION') break
      assert.equal(e, null)
      assert.ok(Date.now() < deadline, 'the deleted topic never went')
      await new Promise((r) => setTimeout(r, 50))
    }
    await weirOk(['topic', 'create', 'short-lived-2', '-p', '1', '-r', '3', ...b])
    assert.ok((await client.refresh({ all: true })).topics.has('short-lived-2'))
    client.track(['short-lived-2'])
    await weirOk(['topic', 'delete', 'short-lived-2', ...b])
    for (;;) {
      if (!(await client.refresh({ all: true })).topics.has('short-lived-2')) break
      assert.ok(Date.now() < deadline, 'the deleted topic never left an all-topics refresh')
      await new Promise((r) => setTimeout(r, 50))
    }
  } finally {
    client.close()
  }
})
