/**
 * Kafka's kafka-leader-election against a real Weir node: ElectLeaders through the controller.
 * On one node every partition is already led by its preferred replica: nothing to elect.
 */
// compat-cluster: skip it is about one node (every partition already led by its preferred replica); kafka-tools-cluster-control.test.ts elects in a cluster
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { freePorts, REPO, tempDir, WeirProcess } from '../support/weir-process.ts'

const run = promisify(execFile)
const dir = tempDir('weir-election-')
let node: WeirProcess
let bootstrap = ''

const tool = async (...args: string[]) =>
  (await run(join(REPO, 'tools/kafka/tool.sh'), args, { timeout: 60_000 })).stdout

before(async () => {
  const [port] = await freePorts(1)
  bootstrap = `127.0.0.1:${port}`
  node = new WeirProcess(['--data-dir', dir.path, '--listen', bootstrap])
  await node.start()
  await tool(
    'kafka-topics',
    '--bootstrap-server',
    bootstrap,
    '--create',
    '--topic',
    'el',
    '--partitions',
    '2',
  )
})

after(async () => {
  await node.stop()
  dir.remove()
})

test('a preferred election of a partition that has its preferred leader is not needed', async () => {
  const out = await tool(
    'kafka-leader-election',
    '--bootstrap-server',
    bootstrap,
    '--election-type',
    'preferred',
    '--topic',
    'el',
    '--partition',
    '0',
  )
  assert.match(out, /Valid replica already elected for partitions el-0/)
})

test('a preferred election of every partition elects nothing and succeeds', async () => {
  const out = await tool(
    'kafka-leader-election',
    '--bootstrap-server',
    bootstrap,
    '--election-type',
    'preferred',
    '--all-topic-partitions',
  )
  assert.doesNotMatch(out, /Error|Exception/)
})
