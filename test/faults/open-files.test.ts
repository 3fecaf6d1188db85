/**
 * More partitions than descriptors, for real: one Weir node under `prlimit --nofile=256`, hosting
 * over a thousand partitions (three files each, over 3,000 log files) and taking writes on all of
 * them, because idle log files give their descriptors back (`log.open.files.max`, half the limit).
 * Then the descriptors run out for good (a few hundred idle connections): a write answers
 * KAFKA_STORAGE_ERROR or succeeds, the node stays up and its log directory online, and once the
 * connections go every partition takes writes again without a restart. A topic past
 * `max.broker.partitions` is refused with POLICY_VIOLATION. After a clean restart under the same
 * limit every acknowledged write reads back, once, in order.
 */
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { TopicName } from '../../src/model/index.ts'
import { apis, encodeBatch } from '../../src/protocol/index.ts'
import { openConnection } from '../support/connection.ts'
import { fetchAll } from '../support/fetch-all.ts'
import {
  combinedNodeProperties,
  freePorts,
  tempDir,
  WeirProcess,
  waitFor,
  writeProperties,
} from '../support/weir-process.ts'

const NOFILE = 256
const dir = tempDir('weir-open-files-')
let weir: WeirProcess | null = null
const sockets: Socket[] = []
after(async () => {
  for (const s of sockets) s.destroy()
  await weir?.kill()
  dir.remove()
})

const WIDE = 'wide' as TopicName
const WIDE_PARTITIONS = 1000
const MORE = 'more' as TopicName
const MORE_PARTITIONS = 50
const BROKER_PARTITIONS_MAX = 1100
const KAFKA_STORAGE_ERROR = 56
const POLICY_VIOLATION = 44

const open = (port: number) => openConnection({ host: '127.0.0.1', port }, 'open-files-test', 60_000, 1 << 26)

/** Descriptors the process holds now. */
function descriptors(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length
}

test('a node under a 256-descriptor limit hosts and writes 1,050 partitions, rides out running out of descriptors without taking its log dir offline, and keeps every acknowledged write', {
  timeout: 240_000,
}, async () => {
  const [port, controllerPort] = await freePorts(2)
  const logDir = join(dir.path, 'data')
  const config = writeProperties(
    dir.path,
    'server.properties',
    combinedNodeProperties(port!, controllerPort!, {
      'log.dirs': logDir,
      'metadata.log.dir': join(dir.path, 'metadata'),
      'cluster.id': 'openFilesTestClusterId',
      'offsets.topic.replication.factor': 1,
      'max.broker.partitions': BROKER_PARTITIONS_MAX,
    }),
  )
  weir = new WeirProcess(['--config', config], { prefix: ['prlimit', `--nofile=${NOFILE}:${NOFILE}`, '--'] })
  await weir.start()
  const pid = weir.pid!

  const acked = new Map<string, string[]>()
  let round = 0
  let c = await open(port!)
  const topics = [
    { name: WIDE, partitions: WIDE_PARTITIONS },
    { name: MORE, partitions: MORE_PARTITIONS },
  ]
  /** One record to every partition of `of`, in one request: the error codes seen, by count. */
  const produceAll = async (of = topics): Promise<Map<number, number>> => {
    round++
    const res = await c.request(apis.Produce, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: of.map((t) => ({
        name: t.name,
        partitionData: Array.from({ length: t.partitions }, (_, p) => ({
          index: p,
          records: encodeBatch({ records: [{ value: Buffer.from(`${t.name}-${p}-${round}`) }] }),
        })),
      })),
    })
    const codes = new Map<number, number>()
    for (const t of res.responses)
      for (const p of t.partitionResponses) {
        codes.set(p.errorCode, (codes.get(p.errorCode) ?? 0) + 1)
        if (p.errorCode !== 0) continue
        const key = `${t.name}-${p.index}`
        acked.set(key, [...(acked.get(key) ?? []), `${key}-${round}`])
      }
    return codes
  }
  let last = ''
  const allTakeWrites = (what: string, of = topics) =>
    waitFor(
      what,
      async () => {
        const codes = await produceAll(of)
        last = JSON.stringify([...codes])
        return codes.size === 1 && codes.has(0) ? true : undefined
      },
      60_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}: last answers (code, count) ${last}\n${weir?.output.slice(-3000)}`)
    })

  try {
    const created = await c.request(apis.CreateTopics, 7, {
      topics: [
        { name: WIDE, numPartitions: WIDE_PARTITIONS, replicationFactor: 1 },
        { name: MORE, numPartitions: MORE_PARTITIONS, replicationFactor: 1 },
      ],
      timeoutMs: 60_000,
    })
    assert.deepEqual(
      created.topics.map((t) => t.errorCode),
      [0, 0],
    )
    await allTakeWrites('all 1,050 partitions to take writes')
    await allTakeWrites('a second write to each')
    const logFiles = readdirSync(logDir, { recursive: true }).filter((f) =>
      /\.(log|index|timeindex)$/.test(String(f)),
    )
    assert.ok(logFiles.length > 3 * NOFILE * 4, `log files on disk: ${logFiles.length}`)
    assert.ok(descriptors(pid) < NOFILE, `descriptors held: ${descriptors(pid)}`)

    // Past max.broker.partitions: refused whole, with the reason.
    const refused = await c.request(apis.CreateTopics, 7, {
      topics: [{ name: 'too-many' as TopicName, numPartitions: 60, replicationFactor: 1 }],
      timeoutMs: 10_000,
    })
    assert.equal(refused.topics[0]?.errorCode, POLICY_VIOLATION)
    assert.match(refused.topics[0]?.errorMessage ?? '', /max\.broker\.partitions/)

    // Every descriptor taken: idle connections until the node refuses more.
    for (let i = 0; i < NOFILE + 50; i++) {
      const s = connect({ host: '127.0.0.1', port: port! })
      s.on('error', () => {})
      sockets.push(s)
      await new Promise<void>((resolve) => {
        s.once('connect', () => resolve())
        s.once('close', () => resolve())
      })
    }
    await new Promise((r) => setTimeout(r, 500))
    assert.ok(descriptors(pid) >= NOFILE - 8, `descriptors held: ${descriptors(pid)} of ${NOFILE}`)
    const short = await produceAll()
    const answers = [...short.keys()]
    assert.ok(
      answers.every((code) => code === 0 || code === KAFKA_STORAGE_ERROR),
      `every write succeeds or answers KAFKA_STORAGE_ERROR: ${JSON.stringify([...short])}`,
    )
    const dirs = await c.request(apis.DescribeLogDirs, 4, { topics: null })
    assert.deepEqual(
      dirs.results.map((r) => [r.logDir, r.errorCode]),
      [[logDir, 0]],
      'the log directory stays online',
    )
    assert.ok(weir.running, 'the node stays up')

    for (const s of sockets.splice(0)) s.destroy()
    await allTakeWrites('every partition to take writes again once descriptors are back')
    c.close()
    assert.equal(await weir.stop(), 0, weir.output)
    assert.doesNotMatch(weir.output, /log directory offline/)

    await weir.start()
    c = await open(port!)
    await allTakeWrites('every partition to take writes after the restart', [{ name: MORE, partitions: 1 }])
    const read = await fetchAll(c, topics)
    for (const t of topics)
      for (let p = 0; p < t.partitions; p++) {
        const key = `${t.name}-${p}`
        assert.deepEqual(
          read.get(key) ?? [],
          acked.get(key) ?? [],
          `${key}: every acknowledged write, once, in order`,
        )
      }
  } finally {
    c.close()
  }
  assert.equal(await weir.stop(), 0)
})
