/** `weir group ...` against an embedded node: list, describe (lag, members), reset-offsets dry run vs --execute, delete. */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { type EmbeddedCluster, startCluster } from 'weir'
import { NODE, WEIR } from '../support/weir-process.ts'
import { weir, weirJson, weirOk } from './cli-support.ts'

interface Described {
  group: string
  state: string
  members: Array<{ memberId: string; partitions: Array<{ topic: string; partition: number }> }>
  offsets: Array<{
    topic: string
    partition: number
    currentOffset: number | null
    logEndOffset: number
    lag: number | null
    memberId: string | null
  }>
}

describe('weir group', () => {
  let cluster: EmbeddedCluster
  let b: string[]
  before(async () => {
    cluster = await startCluster()
    b = ['-b', cluster.bootstrapServers]
    await weirOk(['topic', 'create', 'events', '-p', '2', ...b])
    await weirOk(['produce', 'events', '-p', '0', ...b], '0a\n0b\n0c\n')
    await weirOk(['produce', 'events', '-p', '1', ...b], '1a\n1b\n')
    // The group reads both partitions to their ends and commits.
    await weirOk(['consume', 'events', '-g', 'app', ...b])
  })
  after(() => cluster.stop())

  test('list and describe', async () => {
    assert.deepEqual(await weirJson(['group', 'list', ...b]), [
      { group: 'app', state: 'Empty', protocolType: 'consumer' },
    ])
    assert.match(
      await weirOk(['group', 'list', ...b]),
      /^GROUP\s+STATE\s+PROTOCOL-TYPE\napp\s+Empty\s+consumer\n$/,
    )
    const d = await weirJson<Described>(['group', 'describe', 'app', ...b])
    assert.equal(d.state, 'Empty')
    assert.deepEqual(
      d.offsets.map((o) => [o.topic, o.partition, o.currentOffset, o.logEndOffset, o.lag]),
      [
        ['events', 0, 3, 3, 0],
        ['events', 1, 2, 2, 0],
      ],
    )
    assert.match(await weirOk(['group', 'describe', 'app', ...b]), /^Group: app {2}State: Empty/)
    const missing = await weir(['group', 'describe', 'nobody', ...b])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /group 'nobody' does not exist \(GROUP_ID_NOT_FOUND\)/)
  })

  test('reset-offsets: a dry run changes nothing, --execute applies; every spec', async () => {
    const plan = await weirJson<{
      executed: boolean
      partitions: Array<{ partition: number; currentOffset: number; newOffset: number }>
    }>(['group', 'reset-offsets', 'app', '--topic', 'events', '--to-earliest', ...b])
    assert.equal(plan.executed, false)
    assert.deepEqual(
      plan.partitions.map((p) => [p.partition, p.currentOffset, p.newOffset]),
      [
        [0, 3, 0],
        [1, 2, 0],
      ],
    )
    const human = await weirOk(['group', 'reset-offsets', 'app', '--topic', 'events', '--to-earliest', ...b])
    assert.match(human, /dry run: nothing changed; add --execute to apply\n$/)
    const unchanged = await weirJson<Described>(['group', 'describe', 'app', ...b])
    assert.deepEqual(
      unchanged.offsets.map((o) => o.currentOffset),
      [3, 2],
    )

    const run = async (...spec: string[]) =>
      (
        await weirJson<{ executed: boolean; partitions: Array<{ newOffset: number }> }>([
          'group',
          'reset-offsets',
          'app',
          ...spec,
          '--execute',
          ...b,
        ])
      ).partitions.map((p) => p.newOffset)
    assert.deepEqual(await run('--topic', 'events:1', '--to-earliest'), [0])
    assert.deepEqual(await run('--topic', 'events', '--shift-by', '-1'), [2, 0])
    assert.deepEqual(await run('--topic', 'events', '--shift-by', '5'), [3, 2])
    assert.deepEqual(await run('--all-topics', '--to-offset', '1'), [1, 1])
    assert.deepEqual(await run('--all-topics', '--to-latest'), [3, 2])
    assert.deepEqual(await run('--topic', 'events', '--to-datetime', '2000-01-01T00:00:00Z'), [0, 0])
    const after = await weirJson<Described>(['group', 'describe', 'app', ...b])
    assert.deepEqual(
      after.offsets.map((o) => [o.currentOffset, o.lag]),
      [
        [0, 3],
        [0, 2],
      ],
    )
    // The group resumes from the reset offsets.
    assert.equal(
      (await weirOk(['consume', 'events', '-g', 'app', ...b])).split('\n').filter((l) => l !== '').length,
      5,
    )

    const usage = await weir(['group', 'reset-offsets', 'app', '--topic', 'events', ...b])
    assert.equal(usage.code, 2)
  })

  test('an active group: members in describe; reset and delete refused with NON_EMPTY_GROUP', async () => {
    const child = spawn(NODE, [WEIR, 'consume', 'events', '-g', 'live', '--follow', ...b], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
    try {
      let d: Described | undefined
      for (let i = 0; i < 100; i++) {
        const r = await weir(['group', 'describe', 'live', '--json', ...b])
        if (r.code === 0) {
          d = JSON.parse(r.stdout) as Described
          if (d.state === 'Stable') break
        }
        await new Promise((res) => setTimeout(res, 200))
      }
      assert.equal(d?.state, 'Stable')
      assert.equal(d.members.length, 1)
      assert.deepEqual(d.members[0]!.partitions.map((p) => p.partition).sort(), [0, 1])
      const reset = await weir([
        'group',
        'reset-offsets',
        'live',
        '--all-topics',
        '--to-earliest',
        '--execute',
        ...b,
      ])
      assert.equal(reset.code, 1)
      assert.match(reset.stderr, /has active members \(state Stable\).*\(NON_EMPTY_GROUP\)/)
      const del = await weir(['group', 'delete', 'live', ...b])
      assert.equal(del.code, 1)
      assert.match(del.stderr, /\(NON_EMPTY_GROUP\)/)
    } finally {
      child.kill('SIGINT')
      assert.equal(await exited, 0)
    }
  })

  test('delete', async () => {
    assert.deepEqual(await weirJson(['group', 'delete', 'app', ...b]), [{ group: 'app', deleted: true }])
    const list = await weirJson<Array<{ group: string }>>(['group', 'list', ...b])
    assert.ok(!list.some((g) => g.group === 'app'))
  })
})
