// The clients whose traffic the golden capture records: how each is installed or built (prepare) and
// how its scenario is driven (capture). Drivers live in test/compat/clients/<client>/ and print
// `@@version` and `@@step` lines; kcat and Kafka's own tools are driven from here, one command a step.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { kafkaVersion } from '../kafka/kafka.ts'
import type { CaptureClient, CaptureContext } from './capture.ts'

const node = process.execPath
const clientsDir = (root: string): string => join(root, 'test', 'compat', 'clients')
const cacheDir = (root: string): string => join(root, '.cache', 'capture')
const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
const perCodec = 3
/** Compressible filler in record values, so that every codec's batch is smaller compressed and sent compressed. */
const filler = 'weir-golden-'.repeat(6)

function sh(command: string, args: string[], cwd?: string): string {
  return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function driverEnv(ctx: CaptureContext): Record<string, string> {
  return { BOOTSTRAP: ctx.bootstrap, TOPIC: ctx.topic, GROUP: ctx.group }
}

function kafkaLibs(root: string): string {
  return sh(join(root, 'tools', 'kafka', 'install.sh'), [])
    .trim()
    .split('\n')
    .at(-1)!
}

/** A Python venv under .cache/capture with the pip packages the Python drivers use. */
function pythonVenv(root: string): string {
  const venv = join(cacheDir(root), 'venv')
  const python = join(venv, 'bin', 'python')
  const requirements = join(clientsDir(root), 'python', 'requirements.txt')
  const stamp = join(venv, '.requirements')
  const wanted = readFileSync(requirements, 'utf8')
  if (!existsSync(python)) sh('python3', ['-m', 'venv', venv])
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== wanted) {
    sh(python, ['-m', 'pip', 'install', '-q', '-r', requirements])
    execFileSync('cp', [requirements, stamp])
  }
  return python
}

const kafkajs: CaptureClient = {
  name: 'kafkajs',
  async prepare(root) {
    if (!existsSync(join(root, 'node_modules', 'kafkajs')))
      throw new Error('kafkajs is not installed: npm ci')
  },
  async capture(ctx, root) {
    await ctx.run(node, [join(clientsDir(root), 'kafkajs', 'driver.ts')], { env: driverEnv(ctx) })
  },
}

const platformatic: CaptureClient = {
  name: 'platformatic',
  async prepare(root) {
    if (!existsSync(join(root, 'node_modules', '@platformatic', 'kafka'))) {
      throw new Error('@platformatic/kafka is not installed: npm ci')
    }
  },
  async capture(ctx, root) {
    await ctx.run(node, [join(clientsDir(root), 'platformatic', 'driver.ts')], { env: driverEnv(ctx) })
  },
}

const java: CaptureClient = {
  name: 'java',
  async prepare(root) {
    const libs = kafkaLibs(root)
    const out = join(cacheDir(root), 'java-classes')
    mkdirSync(out, { recursive: true })
    sh('javac', ['-d', out, '-cp', `${libs}/*`, join(clientsDir(root), 'java', 'GoldenScenario.java')])
  },
  async capture(ctx, root) {
    const libs = kafkaLibs(root)
    const classpath = `${join(cacheDir(root), 'java-classes')}:${libs}/*`
    await ctx.run(
      'java',
      [
        '-Xmx256m',
        `-Dlog4j2.configurationFile=${join(root, 'tools', 'kafka', 'log4j2-tools.properties')}`,
        '-cp',
        classpath,
        'GoldenScenario',
      ],
      { env: driverEnv(ctx) },
    )
  },
}

const franzGo: CaptureClient = {
  name: 'franz-go',
  async prepare(root) {
    const dir = join(clientsDir(root), 'franz-go')
    sh('go', ['build', '-o', join(cacheDir(root), 'franz-go-scenario'), '.'], dir)
  },
  async capture(ctx, root) {
    await ctx.run(join(cacheDir(root), 'franz-go-scenario'), [], { env: driverEnv(ctx) })
  },
}

const confluentKafkaPython: CaptureClient = {
  name: 'confluent-kafka-python',
  async prepare(root) {
    pythonVenv(root)
  },
  async capture(ctx, root) {
    await ctx.run(pythonVenv(root), [join(clientsDir(root), 'python', 'confluent_scenario.py')], {
      env: driverEnv(ctx),
    })
  },
}

const kafkaPython: CaptureClient = {
  name: 'kafka-python',
  async prepare(root) {
    pythonVenv(root)
  },
  async capture(ctx, root) {
    await ctx.run(pythonVenv(root), [join(clientsDir(root), 'python', 'kafka_python_scenario.py')], {
      env: driverEnv(ctx),
    })
  },
}

/** Kafka's own tools, started with tools/kafka/tool.sh. */
function tool(ctx: CaptureContext, root: string, name: string, args: string[], input?: string) {
  return ctx.run(
    join(root, 'tools', 'kafka', 'tool.sh'),
    [name, ...args],
    input === undefined ? {} : { input },
  )
}

const kcat: CaptureClient = {
  name: 'kcat',
  async prepare() {
    try {
      sh('kcat', ['-V'])
    } catch {
      // Debian's kcat; a fresh machine has no package lists until `apt-get update`.
      sh('apt-get', ['update', '-q'])
      sh('apt-get', ['install', '-y', '-q', 'kcat'])
    }
  },
  async capture(ctx, root) {
    const version = /Version (\S+).*librdkafka (\S+)/.exec(sh('kcat', ['-V']))
    ctx.version(version === null ? 'kcat' : `kcat ${version[1]} (librdkafka ${version[2]})`)
    const b = ['-b', ctx.bootstrap]
    // kcat cannot create topics: Kafka's own tool does it, and its exchanges are not kept.
    await ctx.setup(() =>
      tool(ctx, root, 'kafka-topics', [
        '--bootstrap-server',
        ctx.bootstrap,
        '--create',
        '--topic',
        ctx.topic,
        '--partitions',
        '3',
      ]),
    )
    await ctx.step('metadata', 'kcat -L: Metadata of all topics')
    await ctx.run('kcat', [...b, '-L'])
    for (const [index, codec] of codecs.entries()) {
      const partition = index % 3
      await ctx.step(
        `produce-${codec}`,
        `kcat -P -z ${codec}: one batch of ${perCodec} records to ${ctx.topic}-${partition}, keys k0.., values ${codec}-<i>:weir-golden-x6, headers trace=${codec}, source=kcat`,
      )
      const lines = Array.from({ length: perCodec }, (_, i) => `k${i}:${codec}-${i}:${filler}\n`)
      await ctx.run(
        'kcat',
        [
          ...b,
          '-P',
          '-t',
          ctx.topic,
          '-p',
          String(partition),
          '-z',
          codec,
          '-X',
          'linger.ms=200',
          '-K',
          ':',
          '-H',
          `trace=${codec}`,
          '-H',
          'source=kcat',
        ],
        { input: lines.join('') },
      )
    }
    await ctx.step('consume', `kcat -C: read ${ctx.topic} from the beginning to its end`)
    await ctx.run('kcat', [...b, '-C', '-t', ctx.topic, '-o', 'beginning', '-e', '-q', '-f', '%k=%s %h\\n'])
    await ctx.step(
      'consume-group',
      `kcat -G ${ctx.group}: balanced consumer, reads ${codecs.length * perCodec} records, commits`,
    )
    await ctx.run('kcat', [
      ...b,
      '-G',
      ctx.group,
      '-X',
      'auto.offset.reset=earliest',
      '-X',
      'heartbeat.interval.ms=500',
      '-c',
      String(codecs.length * perCodec),
      '-q',
      '-f',
      '%k=%s\\n',
      ctx.topic,
    ])
    await ctx.step('query-offsets', 'kcat -Q: ListOffsets by timestamp for each partition')
    await ctx.run('kcat', [
      ...b,
      '-Q',
      '-t',
      `${ctx.topic}:0:-1`,
      '-t',
      `${ctx.topic}:1:-2`,
      '-t',
      `${ctx.topic}:2:1000`,
    ])
  },
}

const kafkaCli: CaptureClient = {
  name: 'kafka-cli',
  // The console producer is the Java client's producer: its codecs are in java/ already.
  keep: { 0: 1 },
  async prepare(root) {
    kafkaLibs(root)
  },
  async capture(ctx, root) {
    ctx.version(`kafka-cli ${kafkaVersion()}`)
    const bs = ['--bootstrap-server', ctx.bootstrap]
    await ctx.step('topics-create', `kafka-topics --create ${ctx.topic} --partitions 3`)
    await tool(ctx, root, 'kafka-topics', [...bs, '--create', '--topic', ctx.topic, '--partitions', '3'])
    await ctx.step('topics-list', 'kafka-topics --list')
    await tool(ctx, root, 'kafka-topics', [...bs, '--list'])
    await ctx.step('topics-describe', `kafka-topics --describe ${ctx.topic}`)
    await tool(ctx, root, 'kafka-topics', [...bs, '--describe', '--topic', ctx.topic])
    for (const codec of codecs) {
      await ctx.step(
        `produce-${codec}`,
        `kafka-console-producer --compression-codec ${codec}: ${perCodec} records, keys k0.., values ${codec}-<i>:weir-golden-x6, headers trace=<codec>-<i>, source=cli`,
      )
      const lines = Array.from(
        { length: perCodec },
        (_, i) => `trace:${codec}-${i},source:cli\tk${i}\t${codec}-${i}:${filler}`,
      )
      await tool(
        ctx,
        root,
        'kafka-console-producer',
        [
          ...bs,
          '--topic',
          ctx.topic,
          '--compression-codec',
          codec,
          '--reader-property',
          'parse.key=true',
          '--reader-property',
          'parse.headers=true',
        ],
        `${lines.join('\n')}\n`,
      )
    }
    await ctx.step('console-consumer', `kafka-console-consumer --group ${ctx.group} --from-beginning`)
    await tool(ctx, root, 'kafka-console-consumer', [
      ...bs,
      '--topic',
      ctx.topic,
      '--group',
      ctx.group,
      '--from-beginning',
      '--max-messages',
      String(codecs.length * perCodec),
      '--property',
      'print.key=true',
      '--property',
      'print.headers=true',
    ])
    await ctx.step('consumer-groups', `kafka-consumer-groups --describe --group ${ctx.group}`)
    await tool(ctx, root, 'kafka-consumer-groups', [...bs, '--describe', '--group', ctx.group])
    await tool(ctx, root, 'kafka-consumer-groups', [...bs, '--list'])
    await ctx.step('get-offsets', `kafka-get-offsets --topic ${ctx.topic} (latest)`)
    await tool(ctx, root, 'kafka-get-offsets', [...bs, '--topic', ctx.topic])
    await ctx.step('configs-describe', `kafka-configs --describe topic ${ctx.topic}`)
    await tool(ctx, root, 'kafka-configs', [
      ...bs,
      '--describe',
      '--entity-type',
      'topics',
      '--entity-name',
      ctx.topic,
    ])
    await ctx.step('configs-alter', `kafka-configs --alter topic ${ctx.topic} retention.ms=86400000`)
    await tool(ctx, root, 'kafka-configs', [
      ...bs,
      '--alter',
      '--entity-type',
      'topics',
      '--entity-name',
      ctx.topic,
      '--add-config',
      'retention.ms=86400000',
    ])
    await ctx.step('metadata-quorum', 'kafka-metadata-quorum describe --status')
    await tool(ctx, root, 'kafka-metadata-quorum', [...bs, 'describe', '--status'])
    await ctx.step('cluster-id', 'kafka-cluster cluster-id')
    await tool(ctx, root, 'kafka-cluster', ['cluster-id', ...bs])
    await ctx.step('features', 'kafka-features describe')
    await tool(ctx, root, 'kafka-features', [...bs, 'describe'])
    await ctx.step('log-dirs', 'kafka-log-dirs --describe')
    await tool(ctx, root, 'kafka-log-dirs', [...bs, '--describe'])
    await ctx.step('topics-delete', `kafka-topics --delete ${ctx.topic}`)
    await tool(ctx, root, 'kafka-topics', [...bs, '--delete', '--topic', ctx.topic])
  },
}

/** Every client, in capture order. */
export const captureClients: readonly CaptureClient[] = [
  java,
  kafkajs,
  platformatic,
  kcat,
  confluentKafkaPython,
  kafkaPython,
  franzGo,
  kafkaCli,
]
