/**
 * kafka-python 2.0.2 (the capture venv, `.cache/capture/venv`, made by tools/capture) against a real
 * `weir start`: produce keyed records with headers in every codec with acks=all, read them back with
 * a group-less consumer (Fetch v4, ListOffsets), offsets by time. Skipped without the venv.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { CompatTarget } from '../support/compat-target.ts'
import { REPO } from '../support/weir-process.ts'

const run = promisify(execFile)
const PYTHON = join(REPO, '.cache/capture/venv/bin/python')
const SCRIPT = join(REPO, 'test/compat/clients/python/kafka_python_data_path.py')
// npm test installs it (tools/test-deps.sh, through tools/compat-install.sh): a missing venv fails,
// never skips.
const skip = false as const
assert.ok(existsSync(PYTHON), 'no kafka-python venv: run tools/test-deps.sh (npm test does)')
const weir = new CompatTarget('weir-kafka-python-')
let bootstrap = ''

before(async () => {
  if (skip !== false) return
  await weir.start()
  bootstrap = weir.bootstrap
})

after(async () => {
  await weir.close()
})

test('kafka-python produces in every codec and reads everything back exactly once', { skip }, async () => {
  const { stdout } = await run(PYTHON, [SCRIPT], {
    // One replica per node: RF 1 on one node, RF 3 in the cluster pass (min.insync.replicas 2).
    env: { ...process.env, BOOTSTRAP: bootstrap, REPLICATION_FACTOR: String(weir.nodes) },
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024,
  })
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    sent: string[]
    records: Array<{ partition: number; offset: number; key: string; value: string; headers: string[][] }>
    ends: number[]
    starts: number[]
    byTime: Array<[number, number] | null>
  }
  assert.equal(r.records.length, r.sent.length)
  assert.deepEqual(new Set(r.records.map((x) => x.key)), new Set(r.sent))
  for (const x of r.records) {
    assert.equal(x.value, `v-${x.key}`)
    assert.deepEqual(x.headers, [['h', x.key]])
  }
  for (const p of [0, 1]) {
    const mine = r.records.filter((x) => x.partition === p)
    assert.deepEqual(
      mine.map((x) => x.offset),
      mine.map((_, i) => i),
    )
    // Send order is kept within a partition.
    const sentOrder = r.sent.filter((k) => mine.some((x) => x.key === k))
    assert.deepEqual(
      mine.map((x) => x.key),
      sentOrder,
    )
    assert.equal(r.ends[p], mine.length)
    assert.equal(r.starts[p], 0)
    // The first record at or after codec #3's first timestamp is the first lz4 record here.
    const firstLz4 = mine.find((x) => x.key.startsWith('lz4-'))!
    assert.deepEqual(r.byTime[p], [firstLz4.offset, 1_600_000_003_000 + Number(firstLz4.key.split('-')[1])])
  }
})
