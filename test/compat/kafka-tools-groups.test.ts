/**
 * The Java client (Kafka's own tools, Kafka 4 jars from tools/kafka) with consumer groups against a
 * real `weir start`: kafka-console-consumer --group reads and commits, kafka-consumer-groups lists,
 * describes (offsets, lag, state, an active member), resets offsets to the earliest, deletes offsets
 * and deletes the group.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { CompatTarget } from '../support/compat-target.ts'
import { REPO, waitFor } from '../support/weir-process.ts'

const run = promisify(execFile)
const TOOL = join(REPO, 'tools/kafka/tool.sh')
const weir = new CompatTarget('weir-tools-groups-', { 'group.initial.rebalance.delay.ms': 300 })
let bootstrap = ''
const TOPIC = 'java-groups'
const GROUP = 'java-group'
const children: ChildProcess[] = []

async function tool(args: string[], input?: string): Promise<string> {
  const p = run(TOOL, args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 })
  p.child.stdin?.end(input)
  return (await p).stdout
}

before(async () => {
  await weir.start()
  bootstrap = weir.bootstrap
  await tool([
    'kafka-topics',
    '--bootstrap-server',
    bootstrap,
    '--create',
    '--topic',
    TOPIC,
    '--partitions',
    '3',
  ])
  const lines = Array.from({ length: 30 }, (_, i) => `k${i}:v${i}`).join('\n')
  await tool(
    [
      'kafka-console-producer',
      '--bootstrap-server',
      bootstrap,
      '--topic',
      TOPIC,
      '--property',
      'parse.key=true',
      '--property',
      'key.separator=:',
    ],
    `${lines}\n`,
  )
})

after(async () => {
  for (const c of children) c.kill('SIGKILL')
  await weir.close()
})

const groups = (...args: string[]) =>
  tool(['kafka-consumer-groups', '--bootstrap-server', bootstrap, ...args])

/** The rows of a describe table, as column -> value. */
function rows(text: string): Record<string, string>[] {
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  const header = lines.findIndex((l) => l.startsWith('GROUP '))
  if (header < 0) return []
  const names = lines[header]!.trim().split(/\s+/)
  return lines.slice(header + 1).map((l) => {
    const cells = l.trim().split(/\s+/)
    return Object.fromEntries(names.map((n, i) => [n, cells[i] ?? '']))
  })
}

const consume = (max: number) =>
  tool([
    'kafka-console-consumer',
    '--bootstrap-server',
    bootstrap,
    '--topic',
    TOPIC,
    '--group',
    GROUP,
    '--from-beginning',
    '--max-messages',
    String(max),
  ])

test('kafka-console-consumer --group and kafka-consumer-groups: list, describe, reset, delete', async () => {
  const read = (await consume(30)).split('\n').filter((l) => l !== '')
  assert.deepEqual(read.sort(), Array.from({ length: 30 }, (_, i) => `v${i}`).sort())
  assert.match(await groups('--list'), new RegExp(`^${GROUP}$`, 'm'))
  const described = rows(await groups('--describe', '--group', GROUP))
  assert.equal(described.length, 3)
  assert.equal(
    described.reduce((s, r) => s + Number(r['CURRENT-OFFSET']), 0),
    30,
  )
  assert.ok(described.every((r) => r.LAG === '0'))

  // An active member shows in --members and --state.
  const child = spawn(
    TOOL,
    [
      'kafka-console-consumer',
      '--bootstrap-server',
      bootstrap,
      '--topic',
      TOPIC,
      '--group',
      GROUP,
      '--consumer-property',
      'session.timeout.ms=6000',
    ],
    { stdio: ['ignore', 'ignore', 'ignore'], detached: true },
  )
  children.push(child)
  const members = await waitFor(
    'an active member',
    async () => {
      const m = rows(await groups('--describe', '--group', GROUP, '--members'))
      return m.length === 1 && m[0]!['#PARTITIONS'] === '3' ? m : undefined
    },
    60_000,
  )
  assert.equal(members[0]!.HOST, '/127.0.0.1')
  const state = rows(await groups('--describe', '--group', GROUP, '--state'))
  assert.equal(state[0]!.STATE, 'Stable')
  assert.equal(state[0]!['ASSIGNMENT-STRATEGY'], 'range')
  process.kill(-child.pid!, 'SIGKILL')
  await waitFor(
    'the group empty again (session timeout)',
    async () =>
      rows(await groups('--describe', '--group', GROUP, '--state'))[0]?.STATE === 'Empty' ? true : undefined,
    90_000,
  )

  // Offsets back to the start: the group reads everything again.
  await groups('--reset-offsets', '--to-earliest', '--execute', '--group', GROUP, '--topic', TOPIC)
  const reset = rows(await groups('--describe', '--group', GROUP))
  assert.ok(reset.every((r) => r['CURRENT-OFFSET'] === '0'))
  assert.equal((await consume(30)).split('\n').filter((l) => l !== '').length, 30)

  assert.match(await groups('--delete-offsets', '--group', GROUP, '--topic', TOPIC), /Successful/)
  assert.match(await groups('--delete', '--group', GROUP), /was successful/)
  assert.doesNotMatch(await groups('--list'), new RegExp(`^${GROUP}$`, 'm'))
})
