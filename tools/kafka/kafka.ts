// Starts a real single-node Apache Kafka (KRaft, broker+controller) on 127.0.0.1 from the jars that
// tools/kafka/install.sh fetched. Used by the golden-fixture capture and the differential tests; it
// never binds anything but loopback.
//
//   node_modules/.bin/node tools/kafka/kafka.ts [--port 9092] [--controller-port 9093]
//       [--advertised-port N] [--data-dir .data/kafka] [--restart]
//   (runs in the foreground until Ctrl-C, printing the bootstrap address; --restart keeps the data)
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { freePorts } from '../free-ports.ts'

const toolsDir = dirname(fileURLToPath(import.meta.url))
const host = '127.0.0.1'

export interface KafkaOptions {
  /** The broker listener's real port (0: a free one). */
  port: number
  /** The data directory (server.properties, the KRaft and partition logs, server-logs/server.log). */
  dataDir: string
  /**
   * true (default): wipe the logs and format a new cluster. false: restart on what `dataDir` holds,
   * formatting only if it was never formatted (a restart needs the same ports: the controller's is in
   * the quorum's state).
   */
  fresh?: boolean
  /** The controller listener's port (0 or absent: a free one). */
  controllerPort?: number
  /**
   * The port the broker advertises in Metadata/FindCoordinator responses (default: `port`). The
   * capture proxy listens there, so that clients keep talking through it after bootstrap.
   */
  advertisedPort?: number
  /**
   * Extra server.properties entries, e.g. `{ 'log.segment.bytes': '1048576' }`; a node of a
   * multi-node cluster sets `node.id` and `controller.quorum.voters` here.
   */
  config?: Record<string, string>
  /** The cluster id a new directory is formatted with (default: a random one); every node of a cluster shares it. */
  clusterId?: string
  heapMb?: number
  startTimeoutMs?: number
  /** true: the broker's warnings go to its log file only, not to this process's stdout/stderr. */
  quiet?: boolean
  /** The Kafka version to run (default: tools/kafka/version.sh's, or KAFKA_VERSION). */
  version?: string
}

export interface KafkaBroker {
  /** `127.0.0.1:<advertisedPort>`: what clients should bootstrap from. */
  bootstrap: string
  port: number
  controllerPort: number
  advertisedPort: number
  clusterId: string
  /** Wall time from spawning the JVM to the first answered Metadata request with a live broker. */
  startMs: number
  /** The full broker log (INFO) lies here. */
  logFile: string
  /** The broker JVM's process id (bench/peers reads its peak RSS from /proc). */
  pid: number | undefined
  /** Stops the broker (SIGTERM, then SIGKILL after `graceMs`) and waits for its exit. */
  stop(graceMs?: number): Promise<void>
}

/** The Kafka version in tools/kafka/version.sh, or KAFKA_VERSION if set. */
export function kafkaVersion(): string {
  return execFileSync('bash', ['-c', `. '${join(toolsDir, 'version.sh')}' && printf %s "$KAFKA_VERSION"`], {
    encoding: 'utf8',
  })
}

/** Runs install.sh (a no-op once installed) and returns the libs directory. */
export function installKafka(version?: string): string {
  const out = execFileSync(join(toolsDir, 'install.sh'), {
    encoding: 'utf8',
    env: version === undefined ? process.env : { ...process.env, KAFKA_VERSION: version },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const libs = out.trim().split('\n').at(-1)
  if (libs === undefined || libs === '') throw new Error('install.sh printed no libs directory')
  return libs
}

/** A port that was free on 127.0.0.1 a moment ago (see tools/free-ports.ts for which). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1)
  return port!
}

/**
 * A KRaft cluster id: 16 random bytes, base64url without padding (what `kafka-storage random-uuid`
 * prints). Like Kafka's `Uuid.randomUuid()`, never one that starts with '-': the storage tool's
 * argument parser would read `-t -abc…` as an unknown flag and refuse to format (1 run in 64).
 */
export function randomClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url')
    if (!id.startsWith('-')) return id
  }
}

function serverProperties(o: {
  port: number
  controllerPort: number
  advertisedPort: number
  logDir: string
  config: Record<string, string>
}): string {
  const props: Record<string, string> = {
    'process.roles': 'broker,controller',
    'node.id': '1',
    'controller.quorum.voters': `1@${host}:${o.controllerPort}`,
    listeners: `PLAINTEXT://${host}:${o.port},CONTROLLER://${host}:${o.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${host}:${o.advertisedPort}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': o.logDir,
    'num.partitions': '1',
    'offsets.topic.replication.factor': '1',
    'offsets.topic.num.partitions': '1',
    'transaction.state.log.replication.factor': '1',
    'transaction.state.log.min.isr': '1',
    'transaction.state.log.num.partitions': '1',
    'share.coordinator.state.topic.replication.factor': '1',
    'share.coordinator.state.topic.min.isr': '1',
    'group.initial.rebalance.delay.ms': '0',
    ...o.config,
  }
  return `${Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`
}

function java(libs: string, args: string[], heapMb: number, logsDir: string): string[] {
  return [
    `-Xmx${heapMb}m`,
    `-Xms${Math.min(heapMb, 256)}m`,
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-Djava.awt.headless=true',
    `-Dkafka.logs.dir=${logsDir}`,
    `-Dlog4j2.configurationFile=${join(toolsDir, 'log4j2-broker.properties')}`,
    '-cp',
    `${libs}/*`,
    ...args,
  ]
}

/** Formats `dataDir` as a single-node KRaft cluster (unless restarting on it) and starts Kafka there. */
export async function startKafka(options: KafkaOptions): Promise<KafkaBroker> {
  const libs = installKafka(options.version)
  const dataDir = resolve(options.dataDir)
  const port = options.port === 0 ? await freePort() : options.port
  const controllerPort = options.controllerPort ? options.controllerPort : await freePort()
  const advertisedPort = options.advertisedPort ?? port
  const heapMb = options.heapMb ?? 512
  const logDir = join(dataDir, 'kraft-logs')
  const logsDir = join(dataDir, 'server-logs')
  mkdirSync(logsDir, { recursive: true })
  const propsFile = join(dataDir, 'server.properties')
  writeFileSync(
    propsFile,
    serverProperties({ port, controllerPort, advertisedPort, logDir, config: options.config ?? {} }),
  )
  const metaProperties = join(logDir, 'meta.properties')
  if (options.fresh ?? true) rmSync(logDir, { recursive: true, force: true })
  const formatted = existsSync(metaProperties)
    ? /^cluster\.id=(.+)$/m.exec(readFileSync(metaProperties, 'utf8'))?.[1]
    : undefined
  const clusterId = formatted ?? options.clusterId ?? randomClusterId()
  if (formatted === undefined) {
    execFileSync(
      'java',
      java(
        libs,
        [
          'kafka.tools.StorageTool',
          'format',
          `--cluster-id=${clusterId}`,
          '-c',
          propsFile,
          '--ignore-formatted',
        ],
        256,
        logsDir,
      ),
      { stdio: ['ignore', 'ignore', 'inherit'] },
    )
  }

  const started = performance.now()
  const child = spawn('java', java(libs, ['kafka.Kafka', propsFile], heapMb, logsDir), {
    stdio: options.quiet === true ? 'ignore' : ['ignore', 'inherit', 'inherit'],
  })
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)))
  let running = true
  void exited.then(() => {
    running = false
  })
  const broker: KafkaBroker = {
    bootstrap: `${host}:${advertisedPort}`,
    port,
    controllerPort,
    advertisedPort,
    clusterId,
    startMs: 0,
    logFile: join(logsDir, 'server.log'),
    pid: child.pid,
    stop: (graceMs = 15_000) => stopChild(child, exited, graceMs),
  }
  const deadline = Date.now() + (options.startTimeoutMs ?? 90_000)
  for (;;) {
    if (!running) throw new Error(`Kafka exited during start; see ${broker.logFile}`)
    if ((await liveBrokers(port).catch(() => 0)) > 0) break
    if (Date.now() > deadline) {
      await broker.stop(1000)
      throw new Error(`Kafka did not answer on ${host}:${port} in time; see ${broker.logFile}`)
    }
    await new Promise((done) => setTimeout(done, 250))
  }
  broker.startMs = Math.round(performance.now() - started)
  return broker
}

async function stopChild(
  child: ChildProcess,
  exited: Promise<number | null>,
  graceMs: number,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/**
 * Sends Metadata v1 (all topics) straight to the broker's real port and returns how many brokers the
 * answer lists: 0 until the broker has registered with its controller and been unfenced.
 */
export function liveBrokers(port: number, timeoutMs = 2000): Promise<number> {
  // Request header v1: apiKey 3 (Metadata), apiVersion 1, correlationId 1, clientId "probe";
  // body v1: topics = null (int32 -1) for all topics.
  const clientId = Buffer.from('weir-probe')
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4)
  let at = body.writeInt16BE(3, 0)
  at = body.writeInt16BE(1, at)
  at = body.writeInt32BE(1, at)
  at = body.writeInt16BE(clientId.length, at)
  at += clientId.copy(body, at)
  body.writeInt32BE(-1, at)
  const frame = Buffer.concat([Buffer.alloc(4), body])
  frame.writeInt32BE(body.length, 0)
  return new Promise((done, fail) => {
    const socket = createConnection({ host, port })
    let got = Buffer.alloc(0)
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error('timeout')))
    socket.once('error', fail)
    socket.on('connect', () => socket.write(frame))
    socket.on('data', (chunk) => {
      got = Buffer.concat([got, chunk])
      // size(4) correlationId(4) brokers.length(4)
      if (got.length >= 12) {
        socket.destroy()
        done(got.readInt32BE(8))
      }
    })
    socket.on('close', () => fail(new Error('closed')))
  })
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '9092' },
      'controller-port': { type: 'string' },
      'advertised-port': { type: 'string' },
      'data-dir': { type: 'string', default: '.data/kafka' },
      restart: { type: 'boolean', default: false },
    },
  })
  const broker = await startKafka({
    port: Number(values.port),
    dataDir: values['data-dir'],
    fresh: !values.restart,
    ...(values['controller-port'] ? { controllerPort: Number(values['controller-port']) } : {}),
    ...(values['advertised-port'] ? { advertisedPort: Number(values['advertised-port']) } : {}),
  })
  console.log(
    `Kafka ${kafkaVersion()} up in ${broker.startMs} ms: bootstrap ${broker.bootstrap} (controller ${host}:${broker.controllerPort}, log ${broker.logFile})`,
  )
  const stop = (): void => {
    void broker.stop().then(() => process.exit(0))
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
