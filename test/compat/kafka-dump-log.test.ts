/**
 * Kafka's own kafka-dump-log (`DumpLogSegments`, from the tools/kafka jars) on every file of a
 * partition that a real `weir start` wrote, as an operator would run it: after a clean stop, after
 * kill -9 in the middle of a produce stream, and after the recovery that follows. Every segment,
 * the active one included, has its `.log`, `.index` and `.timeindex`; the tool reads each without
 * an error, a mismatch or a failed sanity check; and the index entries it prints are the ones
 * Kafka's `LogSegment` would have written for the batches the `.log` dump shows (all of them once
 * the segment is sealed, a prefix of them for the active segment after a crash).
 */
// compat-cluster: skip it reads one node's partition directory; the cluster pass has no files of its own to add
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { freePortPair } from '../support/compat-target.ts'
import { kafkaTool, runKafkaTool } from '../support/kafka-tools.ts'
import { REPO, tempDir, WeirProcess, waitFor } from '../support/weir-process.ts'

const TOPIC = 'dump-log'
/** Kafka 4's smallest segment.bytes, so that a few MiB make several segments. */
const SEGMENT_BYTES = 1024 * 1024
const INDEX_INTERVAL_BYTES = 1024
const dir = tempDir('weir-dump-log-')
const partitionDir = join(dir.path, 'data', `${TOPIC}-0`)
let port = 0
let weir: WeirProcess | null = null

async function startWeir(): Promise<void> {
  weir = new WeirProcess(['--data-dir', join(dir.path, 'data'), '--listen', `127.0.0.1:${port}`])
  await weir.start()
}

/** `count` keyed records of ~250 bytes, numbered from `from`, as console-producer input lines. */
function lines(from: number, count: number): string {
  let out = ''
  for (let i = from; i < from + count; i++) out += `k${i}\t${`v${i}-`.repeat(40)}\n`
  return out
}

/** The Java console producer (acks=all, uncompressed), fed `input`; its process. */
function producer(input: string): ChildProcess {
  const child = spawn(
    join(REPO, 'tools/kafka/tool.sh'),
    [
      'kafka-console-producer',
      '--bootstrap-server',
      `127.0.0.1:${port}`,
      '--topic',
      TOPIC,
      '--reader-property',
      'parse.key=true',
      '--command-property',
      'acks=all',
      '--command-property',
      'compression.type=none',
      '--command-property',
      'linger.ms=5',
    ],
    { stdio: ['pipe', 'ignore', 'pipe'] },
  )
  child.stdin!.on('error', () => undefined) // killed while still reading
  child.stdin!.end(input)
  return child
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}

function partitionBytes(): number {
  let n = 0
  for (const name of readdirSync(partitionDir))
    if (name.endsWith('.log')) n += statSync(join(partitionDir, name)).size
  return n
}

before(async () => {
  port = await freePortPair()
  await startWeir()
  await kafkaTool(
    'kafka-topics',
    '--bootstrap-server',
    `127.0.0.1:${port}`,
    '--create',
    '--topic',
    TOPIC,
    '--partitions',
    '1',
    '--config',
    `segment.bytes=${SEGMENT_BYTES}`,
    '--config',
    `index.interval.bytes=${INDEX_INTERVAL_BYTES}`,
  )
})

after(async () => {
  await weir?.kill()
  dir.remove()
})

interface Batch {
  readonly baseOffset: bigint
  readonly lastOffset: bigint
  readonly position: number
  readonly size: number
  readonly maxTimestamp: bigint
}

interface Dumped {
  readonly batches: Batch[]
  readonly index: string[]
  readonly timeIndex: string[]
}

/** The lines kafka-dump-log printed for each file it dumped, by file name. */
function sections(stdout: string): Map<string, string[]> {
  const out = new Map<string, string[]>()
  let current: string[] | null = null
  for (const line of stdout.split('\n')) {
    const m = /^Dumping (.+)$/.exec(line)
    if (m !== null) {
      current = []
      out.set(m[1]!.slice(m[1]!.lastIndexOf('/') + 1), current)
    } else if (current !== null && line !== '') {
      current.push(line)
    }
  }
  return out
}

/** What kafka-dump-log must never print for a sound partition. */
const COMPLAINTS =
  /Mismatches in|is corrupt|Corrupt|Exception|not found in the log|timestamp mismatch|out of order|Non-consecutive|invalid bytes|isvalid: false|failed/i

/**
 * Runs kafka-dump-log on every segment file of the partition (and its index sanity check on every
 * index): each file exists, the tool exits 0 and complains about nothing. Returns what it printed,
 * by segment base offset.
 */
async function dumpPartition(): Promise<Map<bigint, Dumped>> {
  const names = readdirSync(partitionDir)
  const bases = names
    .filter((n) => n.endsWith('.log'))
    .map((n) => n.slice(0, -'.log'.length))
    .sort() // 20 digits: by base offset
  assert.ok(bases.length >= 3, `segments: ${bases.join(', ')}`)
  for (const base of bases) {
    for (const ext of ['.log', '.index', '.timeindex'])
      assert.ok(names.includes(`${base}${ext}`), `${base}${ext} exists (files: ${names.join(', ')})`)
  }
  const files = bases.flatMap((b) =>
    ['.log', '.index', '.timeindex'].map((ext) => join(partitionDir, `${b}${ext}`)),
  )
  const dump = await runKafkaTool('org.apache.kafka.tools.DumpLogSegments', '--files', files.join(','))
  assert.equal(dump.code, 0, `kafka-dump-log exits 0:\n${dump.stderr}`)
  const complaints = `${dump.stderr}\n${dump.stdout}`.split('\n').filter((l) => COMPLAINTS.test(l))
  assert.deepEqual(complaints, [], 'kafka-dump-log reports no error')
  const indexes = files.filter((f) => !f.endsWith('.log'))
  const sanity = await runKafkaTool(
    'org.apache.kafka.tools.DumpLogSegments',
    '--index-sanity-check',
    '--files',
    indexes.join(','),
  )
  assert.equal(sanity.code, 0, `kafka-dump-log --index-sanity-check exits 0:\n${sanity.stderr}`)
  assert.doesNotMatch(sanity.stderr, COMPLAINTS)
  const checked = sections(sanity.stdout)
  for (const f of indexes) {
    const name = f.slice(f.lastIndexOf('/') + 1)
    assert.match(
      (checked.get(name) ?? []).join('\n'),
      /passed sanity check|is empty/,
      `${name}: sanity check`,
    )
  }
  const printed = sections(dump.stdout)
  const out = new Map<bigint, Dumped>()
  for (const base of bases) {
    const batches: Batch[] = []
    for (const line of printed.get(`${base}.log`) ?? []) {
      if (line.startsWith('Log starting offset')) continue
      const m =
        /^baseOffset: (\d+) lastOffset: (\d+) .* position: (\d+) CreateTime: (-?\d+) size: (\d+) .* isvalid: true$/.exec(
          line,
        )
      assert.ok(m !== null, `a batch line: ${line}`)
      batches.push({
        baseOffset: BigInt(m[1]!),
        lastOffset: BigInt(m[2]!),
        position: Number(m[3]),
        maxTimestamp: BigInt(m[4]!),
        size: Number(m[5]),
      })
    }
    // The dump covers the whole file, batch after batch, offsets dense.
    let position = 0
    let next = BigInt(base)
    for (const b of batches) {
      assert.equal(b.position, position, `${base}.log: batches back to back`)
      assert.equal(b.baseOffset, next, `${base}.log: offsets dense`)
      position += b.size
      next = b.lastOffset + 1n
    }
    assert.equal(position, statSync(join(partitionDir, `${base}.log`)).size, `${base}.log: every byte dumped`)
    const entries = (name: string) => (printed.get(name) ?? []).filter((l) => !l.endsWith('is empty.'))
    out.set(BigInt(base), {
      batches,
      index: entries(`${base}.index`),
      timeIndex: entries(`${base}.timeindex`),
    })
  }
  return out
}

/**
 * The entries Kafka's `LogSegment` writes for `batches` (one append per batch, as the Java
 * producer sends them), and rebuilds them in recovery: an offset entry (the batch's last offset,
 * its position) and a time entry (the largest timestamp so far and its batch's last offset, when
 * larger than the last one) each time more than `index.interval.bytes` were appended since the
 * previous; `sealed` adds the time entry a segment gets as it becomes inactive, and so does a
 * clean stop (at each of `stops`, log end offsets) to the segment then active, unless recovery
 * rebuilt it since.
 */
function kafkaEntries(
  batches: readonly Batch[],
  sealed: boolean,
  stops: readonly bigint[] = [],
): { index: string[]; timeIndex: string[] } {
  const index: string[] = []
  const timeIndex: string[] = []
  let since = 0
  let tsMax = -1n
  let tsMaxOffset = 0n
  let lastTimeEntry = -1n
  const time = () => {
    if (tsMax > lastTimeEntry) {
      timeIndex.push(`timestamp: ${tsMax} offset: ${tsMaxOffset}`)
      lastTimeEntry = tsMax
    }
  }
  for (const b of batches) {
    if (b.maxTimestamp > tsMax) {
      tsMax = b.maxTimestamp
      tsMaxOffset = b.lastOffset
    }
    if (since > INDEX_INTERVAL_BYTES) {
      index.push(`offset: ${b.lastOffset} position: ${b.position}`)
      time()
      since = 0
    }
    since += b.size
    if (stops.includes(b.lastOffset + 1n)) time()
  }
  if (sealed) time()
  return { index, timeIndex }
}

/** Log end offsets at the clean stops so far. */
const stops: bigint[] = []

/** The log end offset the dump shows. */
function logEnd(dumped: Map<bigint, Dumped>): bigint {
  let end = 0n
  for (const d of dumped.values())
    for (const b of d.batches) if (b.lastOffset + 1n > end) end = b.lastOffset + 1n
  return end
}

/**
 * Every segment's entries are Kafka's for its batches (with or without the entries of the clean
 * stops so far: recovery drops those): all of them, or a prefix for the active one when
 * `activeMayLag`.
 */
function assertKafkaEntries(dumped: Map<bigint, Dumped>, activeMayLag: boolean): string {
  const active = [...dumped.keys()].at(-1) // in base offset order
  const counts: string[] = []
  for (const [base, d] of dumped) {
    const lagging = base === active && activeMayLag
    const variants = [kafkaEntries(d.batches, !lagging, stops), kafkaEntries(d.batches, !lagging)]
    const fits = (got: string[], want: string[]) =>
      lagging ? want.slice(0, got.length).join('\n') === got.join('\n') : want.join('\n') === got.join('\n')
    const expected = variants.find((v) => fits(d.index, v.index) && fits(d.timeIndex, v.timeIndex))
    if (expected === undefined) {
      // Not Kafka's: show the difference from the first variant.
      const want = variants[0]!
      assert.deepEqual(d.index, lagging ? want.index.slice(0, d.index.length) : want.index, `${base}.index`)
      assert.deepEqual(
        d.timeIndex,
        lagging ? want.timeIndex.slice(0, d.timeIndex.length) : want.timeIndex,
        `${base}.timeindex`,
      )
      assert.fail(`${base}: entries are not Kafka's`)
    }
    if (!lagging && d.batches.length > 2) assert.ok(d.index.length > 0, `${base}.index has entries`)
    counts.push(
      `${base}: ${d.batches.length} batches, ${d.index.length}/${expected.index.length} index entries`,
    )
  }
  return counts.join('; ')
}

test('after a clean stop, kafka-dump-log reads every segment file and its entries are Kafka’s', async (t) => {
  const p = producer(lines(0, 11_000)) // ~2.8 MB: three segments
  assert.equal(await exited(p), 0, 'the producer sent everything')
  assert.equal(await weir!.stop(), 0, 'a clean exit')
  const dumped = await dumpPartition()
  t.diagnostic(assertKafkaEntries(dumped, false))
  stops.push(logEnd(dumped))
})

test('after kill -9 mid-stream, every segment, the active one included, has its index files, sound', async (t) => {
  await startWeir()
  const start = partitionBytes()
  const p = producer(lines(11_000, 40_000)) // ~10 MB: far more than is sent before the kill
  try {
    await waitFor(
      '1.5 MiB more produced',
      () => (partitionBytes() - start > 1.5 * SEGMENT_BYTES ? true : undefined),
      120_000,
    )
    await weir!.kill() // appends in flight, the active segment's entries partly written
  } finally {
    p.kill('SIGKILL')
    await exited(p)
  }
  t.diagnostic(assertKafkaEntries(await dumpPartition(), true))
})

test('after the recovery that follows, the active segment’s index files hold all of Kafka’s entries', async (t) => {
  await startWeir()
  assert.equal(await weir!.stop(), 0, 'a clean exit')
  t.diagnostic(assertKafkaEntries(await dumpPartition(), false))
})
