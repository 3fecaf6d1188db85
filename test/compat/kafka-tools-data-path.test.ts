/**
 * The Java client through Kafka's own tools (tools/kafka jars) against a real `weir start`: the
 * console producer (idempotent, acks=all, lz4 by default in the Java producer 3+) and consumer
 * (assigned partition, no group), kafka-get-offsets (latest, earliest, max timestamp),
 * kafka-delete-records, kafka-log-dirs and kafka-transactions describe-producers. Java is
 * required, as for the other tool tests.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { CompatTarget } from '../support/compat-target.ts'
import { REPO, tempDir } from '../support/weir-process.ts'

const run = promisify(execFile)
const weir = new CompatTarget('weir-tools-data-')
const dir = tempDir('weir-tools-data-files-')
let bootstrap = ''
const TOPIC = 'java-data'
const COUNT = 300

async function tool(args: string[], input?: string): Promise<string> {
  const p = run(join(REPO, 'tools/kafka/tool.sh'), args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 })
  if (input !== undefined) p.child.stdin?.end(input)
  else p.child.stdin?.end()
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
    '1',
  ])
})

after(async () => {
  await weir.close()
  dir.remove()
})

test('the Java producer writes keyed records that the Java consumer reads back in order', async () => {
  const lines = Array.from({ length: COUNT }, (_, i) => `key-${i}\tvalue-${i}`).join('\n')
  await tool(
    [
      'kafka-console-producer',
      '--bootstrap-server',
      bootstrap,
      '--topic',
      TOPIC,
      '--property',
      'parse.key=true',
      '--producer-property',
      'acks=all',
      '--producer-property',
      'compression.type=lz4',
    ],
    `${lines}\n`,
  )
  const out = await tool([
    'kafka-console-consumer',
    '--bootstrap-server',
    bootstrap,
    '--topic',
    TOPIC,
    '--partition',
    '0',
    '--offset',
    'earliest',
    '--max-messages',
    String(COUNT),
    '--property',
    'print.key=true',
    '--property',
    'print.offset=true',
  ])
  const got = out.split('\n').filter((l) => l.includes('key-'))
  assert.equal(got.length, COUNT)
  for (const [i, line] of got.entries())
    assert.match(line, new RegExp(`Offset:${i}\\tkey-${i}\\tvalue-${i}$`))
})

test('kafka-get-offsets: latest, earliest and max timestamp', async () => {
  const at = async (time: string) =>
    (
      await tool(['kafka-get-offsets', '--bootstrap-server', bootstrap, '--topic', TOPIC, '--time', time])
    ).trim()
  assert.equal(await at('-1'), `${TOPIC}:0:${COUNT}`)
  assert.equal(await at('-2'), `${TOPIC}:0:0`)
  const max = Number((await at('-3')).split(':')[2])
  assert.ok(max >= 0 && max < COUNT)
})

test('kafka-delete-records moves the earliest offset; kafka-log-dirs and describe-producers see the partition', async () => {
  const json = join(dir.path, 'delete.json')
  writeFileSync(
    json,
    JSON.stringify({ version: 1, partitions: [{ topic: TOPIC, partition: 0, offset: 100 }] }),
  )
  const deleted = await tool([
    'org.apache.kafka.tools.DeleteRecordsCommand',
    '--bootstrap-server',
    bootstrap,
    '--offset-json-file',
    json,
  ])
  assert.match(deleted, /low_watermark: 100/)
  const earliest = await tool([
    'kafka-get-offsets',
    '--bootstrap-server',
    bootstrap,
    '--topic',
    TOPIC,
    '--time',
    '-2',
  ])
  assert.equal(earliest.trim(), `${TOPIC}:0:100`)
  const dirs = await tool([
    'kafka-log-dirs',
    '--bootstrap-server',
    bootstrap,
    '--describe',
    '--topic-list',
    TOPIC,
  ])
  const report = JSON.parse(dirs.split('\n').find((l) => l.startsWith('{'))!) as {
    brokers: Array<{
      logDirs: Array<{ logDir: string; partitions: Array<{ partition: string; size: number }> }>
    }>
  }
  const partition = report.brokers[0]!.logDirs[0]!.partitions[0]!
  assert.equal(partition.partition, `${TOPIC}-0`)
  assert.ok(partition.size > 0)
  const producers = await tool([
    'org.apache.kafka.tools.TransactionsCommand',
    '--bootstrap-server',
    bootstrap,
    'describe-producers',
    '--topic',
    TOPIC,
    '--partition',
    '0',
  ])
  // The console producer is idempotent (the Java default): one producer id, its last sequence.
  assert.match(producers, /ProducerId\s+ProducerEpoch/)
  assert.match(producers, new RegExp(`\\b${COUNT - 1}\\b`))
})
