/**
 * `weir produce` and `weir consume` against an embedded node: lines from stdin come back with their
 * keys and headers; every start position; partitions; codecs; formats; as a group.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type EmbeddedCluster, startCluster } from 'weir'
import { weir, weirJson, weirOk } from './cli-support.ts'

interface Rec {
  topic: string
  partition: number
  offset: number
  timestamp: number
  key: string | null
  value: string | null
  headers: Record<string, string | null>
}

function ndjson(out: string): Rec[] {
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Rec)
}

describe('weir produce / consume', () => {
  let cluster: EmbeddedCluster
  let b: string[]
  before(async () => {
    cluster = await startCluster()
    b = ['-b', cluster.bootstrapServers]
  })
  after(() => cluster.stop())

  test('lines from stdin come back with their keys and headers', async () => {
    await weirOk(['topic', 'create', 'lines', '-p', '3', ...b])
    const lines = ['user-1:signed up', 'user-2:logged in', 'user-1:logged out', 'user-3:a:b:c', 'user-2:']
    const produced = await weirJson<{
      records: number
      partitions: Array<{ partition: number; records: number }>
    }>(
      ['produce', 'lines', '-k', ':', '-H', 'source=cli-test', '-H', 'trace=42', ...b],
      `${lines.join('\n')}\n`,
    )
    assert.equal(produced.records, 5)
    const back = ndjson(await weirOk(['consume', 'lines', '--json', ...b]))
    assert.equal(back.length, 5)
    // Same key, same partition (murmur2 as Kafka's default partitioner), in produce order within it.
    const byKey = new Map<string, Rec[]>()
    for (const r of back) byKey.set(r.key!, [...(byKey.get(r.key!) ?? []), r])
    assert.deepEqual(
      byKey.get('user-1')!.map((r) => r.value),
      ['signed up', 'logged out'],
    )
    assert.equal(new Set(byKey.get('user-1')!.map((r) => r.partition)).size, 1)
    assert.deepEqual(back.map((r) => `${r.key}:${r.value}`).sort(), [...lines].sort())
    for (const r of back) assert.deepEqual(r.headers, { source: 'cli-test', trace: '42' })
    const perPartition = Object.fromEntries(produced.partitions.map((p) => [p.partition, p.records]))
    for (const [p, n] of Object.entries(perPartition))
      assert.equal(back.filter((r) => r.partition === Number(p)).length, n)
  })

  test('start positions: beginning, end, offset, time; partition; max messages; format', async () => {
    await weirOk(['topic', 'create', 'pos', '-p', '2', ...b])
    await weirOk(['produce', 'pos', '-p', '1', ...b], 'a\nb\nc\nd\n')
    const before = Date.now()
    await new Promise((r) => setTimeout(r, 20))
    await weirOk(['produce', 'pos', '-p', '1', '--acks', '1', '--compression', 'zstd', ...b], 'e\nf\n')
    assert.equal(await weirOk(['consume', 'pos', ...b]), 'a\nb\nc\nd\ne\nf\n')
    assert.equal(await weirOk(['consume', 'pos', '--from-beginning', '-n', '2', ...b]), 'a\nb\n')
    assert.equal(await weirOk(['consume', 'pos', '--from-end', ...b]), '')
    assert.equal(await weirOk(['consume', 'pos', '-p', '1', '--offset', '3', ...b]), 'd\ne\nf\n')
    assert.equal(
      await weirOk(['consume', 'pos', '--from-time', new Date(before).toISOString(), ...b]),
      'e\nf\n',
    )
    assert.equal(await weirOk(['consume', 'pos', '-p', '0', ...b]), '')
    assert.equal(
      await weirOk([
        'consume',
        'pos',
        '--offset',
        '4',
        '--format',
        '{topic}/{partition}@{offset}\\t{key}={value}',
        ...b,
      ]),
      'pos/1@4\tnull=e\npos/1@5\tnull=f\n',
    )
  })

  test('every codec and acks setting reads back', async () => {
    await weirOk(['topic', 'create', 'codecs', ...b])
    const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd']
    for (const [i, z] of codecs.entries())
      await weirOk(
        ['produce', 'codecs', '-z', z, '-a', ['all', '1', '0', 'all', '1'][i]!, ...b],
        `${z}-1\n${z}-2\n`,
      )
    // acks=0 is not confirmed: wait until its records are visible.
    let out = ''
    for (let i = 0; i < 50 && out.split('\n').length < 11; i++)
      out = await weirOk(['consume', 'codecs', ...b])
    assert.deepEqual(
      out.split('\n').filter((l) => l !== ''),
      codecs.flatMap((z) => [`${z}-1`, `${z}-2`]),
    )
  })

  test('as a group: committed offsets, then only new records', async () => {
    await weirOk(['topic', 'create', 'grouped', '-p', '2', ...b])
    await weirOk(['produce', 'grouped', '-k', '=', ...b], 'a=1\nb=2\nc=3\nd=4\n')
    const first = (await weirOk(['consume', 'grouped', '-g', 'readers', '--format', '{key}={value}', ...b]))
      .split('\n')
      .filter((l) => l !== '')
    assert.deepEqual(first.sort(), ['a=1', 'b=2', 'c=3', 'd=4'])
    assert.equal(await weirOk(['consume', 'grouped', '-g', 'readers', ...b]), '')
    await weirOk(['produce', 'grouped', '-k', '=', ...b], 'e=5\n')
    assert.equal(await weirOk(['consume', 'grouped', '-g', 'readers', ...b]), '5\n')
  })

  test('--follow prints records as they arrive and stops cleanly on SIGINT', async () => {
    await weirOk(['topic', 'create', 'live', ...b])
    const { spawn } = await import('node:child_process')
    const { NODE, WEIR } = await import('../support/weir-process.ts')
    const child = spawn(NODE, [WEIR, 'consume', 'live', '--follow', '--from-end', ...b], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
    })
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
    // Produce until the follower (which starts at the end) has seen a record.
    for (let i = 0; i < 100 && !out.includes('hello'); i++) {
      await weirOk(['produce', 'live', ...b], 'hello\n')
      await new Promise((r) => setTimeout(r, 200))
    }
    assert.match(out, /^(hello\n)+$/)
    child.kill('SIGINT')
    assert.equal(await exited, 0)
  })

  test('errors: unknown topic exits 1 with its Kafka name; bad flags exit 2', async () => {
    const unknown = await weir(['produce', 'missing', ...b], { input: 'x\n' })
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /topic 'missing' does not exist \(UNKNOWN_TOPIC_OR_PARTITION\)/)
    const consumeUnknown = await weir(['consume', 'missing', ...b])
    assert.equal(consumeUnknown.code, 1)
    const noSeparator = await weir(['produce', 'lines', '-k', '|', ...b], { input: 'no separator here\n' })
    assert.equal(noSeparator.code, 2)
    assert.match(noSeparator.stderr, /line 1 has no key separator/)
    assert.equal((await weir(['produce', 'lines', '--acks', '2', ...b])).code, 2)
    assert.equal((await weir(['consume', 'lines', '--from-end', '--offset', '1', ...b])).code, 2)
    const badPartition = await weir(['produce', 'lines', '-p', '9', ...b], { input: 'x\n' })
    assert.equal(badPartition.code, 1)
    assert.match(badPartition.stderr, /has no partition 9 \(UNKNOWN_TOPIC_OR_PARTITION\)/)
  })
})
