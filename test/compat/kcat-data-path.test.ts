/**
 * kcat (librdkafka) against a real `weir start` process: produce keyed records with headers in
 * every codec (idempotent, acks=all), consume them back exactly once and in order, query offsets
 * by timestamp, and read everything again after a restart. Fails when kcat is not installed
 * (tools/test-deps.sh, the first step of npm test, installs it).
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { CompatTarget } from '../support/compat-target.ts'

const run = promisify(execFile)
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
const PER_CODEC = 200

function kcatInstalled(): boolean {
  try {
    execFileSync('kcat', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

assert.ok(
  kcatInstalled(),
  'kcat is not installed: run tools/test-deps.sh (npm test does; apt-get install kcat)',
)

describe('kcat against weir start', () => {
  const weir = new CompatTarget('weir-kcat-', {
    'broker.heartbeat.interval.ms': 300,
    'broker.session.timeout.ms': 1200,
  })

  const kcat = async (args: string[], input?: string): Promise<string> => {
    const child = run('kcat', ['-b', weir.bootstrap, ...args], {
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
    })
    if (input !== undefined) {
      child.child.stdin?.end(input)
    }
    return (await child).stdout
  }

  before(async () => {
    await weir.start()
  })

  after(async () => {
    await weir.close()
  })

  /** Every record of the topic as `partition offset key value headers`, via a group-less consumer. */
  const consume = async (topic: string) =>
    (await kcat(['-C', '-t', topic, '-o', 'beginning', '-e', '-q', '-f', '%p %o %k %s %h\n']))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const [partition, offset, key, value, headers] = l.split(' ')
        return { partition: Number(partition), offset: Number(offset), key, value, headers }
      })

  test('keyed records with headers in every codec, idempotent and acks=all, are consumed exactly once', async () => {
    for (const codec of CODECS) {
      const lines = Array.from({ length: PER_CODEC }, (_, i) => `${codec}-${i}:${codec}-value-${i}`).join(
        '\n',
      )
      await kcat(
        [
          '-P',
          '-t',
          'kcat-codecs',
          '-K:',
          '-z',
          codec,
          '-H',
          `codec=${codec}`,
          '-X',
          'enable.idempotence=true',
          '-X',
          'acks=all',
          '-X',
          'topic.partitioner=murmur2_random',
        ],
        `${lines}\n`,
      )
    }
    const records = await consume('kcat-codecs')
    assert.equal(records.length, CODECS.length * PER_CODEC)
    assert.equal(new Set(records.map((r) => r.key)).size, records.length, 'no record twice')
    for (const r of records) {
      const [codec, i] = r.key!.split('-')
      assert.equal(r.value, `${codec}-value-${i}`)
      assert.equal(r.headers, `codec=${codec}`)
    }
    for (const p of new Set(records.map((r) => r.partition))) {
      const offsets = records.filter((r) => r.partition === p).map((r) => r.offset)
      assert.deepEqual(
        offsets,
        offsets.map((_, i) => i),
        `partition ${p}: dense offsets in order`,
      )
    }
  })

  test('offsets by timestamp (kcat -Q) and the log end', async () => {
    for (let i = 0; i < 3; i++) {
      await kcat(['-P', '-t', 'kcat-timed', '-p', '0'], `m${i}\n`)
      await new Promise((resolve) => setTimeout(resolve, 5)) // distinct CreateTime per record
    }
    const withTs = (await kcat(['-C', '-t', 'kcat-timed', '-o', 'beginning', '-e', '-q', '-f', '%o %T\n']))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.split(' ').map(Number) as [number, number])
    assert.equal(withTs.length, 3)
    for (const [offset, ts] of withTs) {
      // The first offset whose timestamp is at or after ts.
      const expected = withTs.find(([, t]) => t >= ts)![0]
      assert.ok(expected <= offset)
      assert.match(await kcat(['-Q', '-t', `kcat-timed:0:${ts}`]), new RegExp(`offset ${expected}\\b`))
    }
    assert.match(await kcat(['-Q', '-t', 'kcat-timed:0:-1']), /offset 3\b/)
    assert.match(await kcat(['-Q', '-t', 'kcat-timed:0:-2']), /offset 0\b/)
  })

  test('after a restart, kcat reads everything again', async () => {
    const before = await consume('kcat-codecs')
    await weir.restart()
    assert.deepEqual(await consume('kcat-codecs'), before)
  })
})
