/**
 * A full disk, for real: one Weir node with two log dirs (`log.dirs=A,B`), A a small tmpfs. Fill A
 * to ENOSPC: produce to a partition on A answers KAFKA_STORAGE_ERROR, the node stays up, partitions
 * on B keep taking writes, DescribeLogDirs reports A offline. Free A: the directory's probe finds
 * space, its logs re-open through recovery and take writes again without a restart; and every
 * write acknowledged before, during and after (and after a restart) reads back once, in order.
 *
 * Needs root (mount). Skipped elsewhere.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readdirSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { TopicName } from '../../src/model/index.ts'
import { apis, encodeBatch } from '../../src/protocol/index.ts'
import { freePorts, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'
import { readAll } from './harness/workload.ts'

const isRoot = process.getuid?.() === 0
const dir = tempDir('weir-disk-full-')
const dirA = join(dir.path, 'a')
const dirB = join(dir.path, 'b')
let mounted = false
let weir: WeirProcess | null = null
after(async () => {
  await weir?.kill()
  if (mounted) execFileSync('umount', ['-l', dirA])
  dir.remove()
})

const TOPIC = 'full'
const PARTITIONS = 6

const connectionOptions = {
  clientId: 'disk-full-test',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 15_000,
  inFlightRequestsMax: 1,
  responseBytesMax: 1 << 24,
  connectTimeoutMs: 2_000,
}

function fill(path: string): void {
  const fd = openSync(path, 'a')
  const chunk = Buffer.alloc(64 << 10)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e
  } finally {
    closeSync(fd)
  }
  // The last bytes, down to the block size.
  const fd2 = openSync(path, 'a')
  for (let n = 32 << 10; n >= 512; n >>= 1) {
    try {
      writeSync(fd2, chunk, 0, n)
    } catch {
      // full at this size
    }
  }
  closeSync(fd2)
}

/** Whether the full dir's partitions took writes again without a restart (the second test's subject). */
let recoveredInPlace: boolean | null = null

test('a full log dir answers KAFKA_STORAGE_ERROR while the other dir keeps working; after space returns and a restart, nothing acknowledged is lost', {
  skip: isRoot ? false : 'needs root to mount a tmpfs',
  timeout: 180_000,
}, async () => {
  mkdirSync(dirA)
  mkdirSync(dirB)
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dirA])
  mounted = true
  const [port, controllerPort] = await freePorts(2)
  const config = writeProperties(dir.path, 'server.properties', {
    'node.id': 1,
    'process.roles': 'broker,controller',
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'controller.listener.names': 'CONTROLLER',
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    'log.dirs': `${dirA},${dirB}`,
    'metadata.log.dir': join(dir.path, 'metadata'),
    'cluster.id': 'diskFullTestClusterId0',
    'log.segment.bytes': 1 << 20,
    'offsets.topic.replication.factor': 1,
  })
  weir = new WeirProcess(['--config', config])
  await weir.start()

  const acked: Array<{ p: number; value: string }> = []
  let n = 0
  let c = await KafkaConnection.open({ host: '127.0.0.1', port: port! }, connectionOptions)
  const produce = async (p: number): Promise<number> => {
    const value = `v${n++}-${'x'.repeat(100)}`
    const res = await c.request(apis.Produce, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 10_000,
      topicData: [
        {
          name: TOPIC as TopicName,
          partitionData: [{ index: p, records: encodeBatch({ records: [{ value: Buffer.from(value) }] }) }],
        },
      ],
    })
    const code = res.responses[0]?.partitionResponses[0]?.errorCode ?? -1
    if (code === 0) acked.push({ p, value })
    return code
  }
  try {
    const created = await c.request(apis.CreateTopics, 7, {
      topics: [{ name: TOPIC as TopicName, numPartitions: PARTITIONS, replicationFactor: 1 }],
      timeoutMs: 10_000,
    })
    assert.equal(created.topics[0]?.errorCode, 0)
    const onA = await waitFor('partitions on both dirs', () => {
      const a = partitionsIn(dirA)
      const b = partitionsIn(dirB)
      return a.length + b.length === PARTITIONS ? a : undefined
    })
    const onB = Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => !onA.includes(p))
    assert.ok(onA.length > 0 && onB.length > 0, `partitions spread over both dirs: A ${onA}, B ${onB}`)
    for (let p = 0; p < PARTITIONS; p++)
      await waitFor(`partition ${p} to take writes`, async () =>
        (await produce(p)) === 0 ? true : undefined,
      )

    fill(join(dirA, 'filler'))
    // Writes to A fail with KAFKA_STORAGE_ERROR (56); B's partitions keep working.
    for (const p of onA) {
      let code = 0
      // A tmpfs may still take a few bytes in a page the segment already has: write until it refuses.
      for (let i = 0; i < 200 && code === 0; i++) code = await produce(p)
      assert.equal(code, 56, `partition ${p} on the full dir answers KAFKA_STORAGE_ERROR`)
    }
    for (const p of onB) assert.equal(await produce(p), 0, `partition ${p} on the other dir`)
    assert.ok(weir.running, 'the node stays up')

    // The dir is reported offline (DescribeLogDirs answers KAFKA_STORAGE_ERROR for it), B is not.
    const described = await c.request(apis.DescribeLogDirs, 4, { topics: null })
    const codeOf = (d: string) => described.results.find((r) => r.logDir === d)?.errorCode
    assert.equal(
      codeOf(dirA),
      56,
      `the full dir is offline: ${JSON.stringify(described.results.map((r) => [r.logDir, r.errorCode]))}`,
    )
    assert.equal(codeOf(dirB), 0)

    unlinkSync(join(dirA, 'filler'))
    // Space is back. Kafka itself needs a restart here (a failed log dir stays offline); Weir's
    // directory probe (at most log dir probe's 10 s backoff apart) re-opens its logs through
    // recovery, and the second test below holds it to that.
    const deadline = performance.now() + 30_000
    recoveredInPlace = false
    while (performance.now() < deadline && !recoveredInPlace) {
      recoveredInPlace = (await Promise.all(onA.map((p) => produce(p)))).every((code) => code === 0)
      if (!recoveredInPlace) await new Promise((r) => setTimeout(r, 500))
    }
    for (const p of onB) assert.equal(await produce(p), 0)
    c.close()

    assert.equal(await weir.stop(), 0, weir.output)
    await weir.start()
    c = await KafkaConnection.open({ host: '127.0.0.1', port: port! }, connectionOptions)
    for (let p = 0; p < PARTITIONS; p++)
      await waitFor(`partition ${p} to take writes after the restart`, async () =>
        (await produce(p)) === 0 ? true : undefined,
      )
  } finally {
    c.close()
  }
  const { records, ends } = await readAll([`127.0.0.1:${port}`], TOPIC, 60_000)
  for (let p = 0; p < PARTITIONS; p++) {
    const m = records.get(p) ?? new Map<bigint, string[]>()
    const read = [...m.entries()].sort((x, y) => (x[0] < y[0] ? -1 : 1)).flatMap(([, vs]) => [...new Set(vs)])
    const want = acked.filter((a) => a.p === p).map((a) => a.value)
    assert.deepEqual(
      read,
      want,
      `partition ${p}: every acknowledged write, once, in order (log end ${ends.get(p)}, read ${m.size} offsets)`,
    )
  }
  assert.equal(await weir.stop(), 0)
})

test('a full log dir takes writes again once space returns, without a restart', {
  skip: isRoot ? false : 'needs root to mount a tmpfs',
}, () => {
  assert.equal(recoveredInPlace, true, 'the full dir took writes again within 30 s of space returning')
})

function partitionsIn(logDir: string): number[] {
  return readdirSync(logDir)
    .map((d) => new RegExp(`^${TOPIC}-(\\d+)$`).exec(d))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]))
}
