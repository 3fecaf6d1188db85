/**
 * The differential harness: one real Apache Kafka (KRaft, single node, tools/kafka) and one real Weir
 * process side by side on loopback, the same requests sent to both through `KafkaConnection`, and the
 * decoded responses compared field by field after masking what legitimately differs (ids, ports,
 * timestamps, throttle times). Every difference must match an entry of `allowances.ts`, each of which
 * is documented in docs/compatibility.md; anything else fails the test. See README.md.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'
import type { BrokerId, TopicName } from '../../src/model/index.ts'
import {
  type Api,
  apis,
  BATCH_HEADER_BYTES,
  BatchOffsets,
  batchSizeAt,
  compressionOf,
  decodeBatch,
  readBatchHeader,
  TimestampType,
  timestampTypeOf,
} from '../../src/protocol/index.ts'
import { type KafkaBroker, startKafka } from '../../tools/kafka/kafka.ts'
import { freePorts, REPO, tempDir, WeirProcess } from '../support/weir-process.ts'
import { ABSENT, type Allowance, allowances } from './allowances.ts'

/**
 * The reference: Weir's schemas are Kafka 4.0.2's, whose protocol is 4.0.0's but for JoinGroup
 * v0-1 (allowances.ts), so both answer at the same versions.
 */
export const KAFKA_REFERENCE_VERSION = '4.0.0'

export type Side = 'kafka' | 'weir'
export const SIDES: readonly Side[] = ['kafka', 'weir']

/**
 * Broker settings both sides get (Kafka in server.properties, Weir through --set), chosen so that a
 * single node behaves like a cluster of one: internal topics of one replica, no initial rebalance delay.
 */
export const SHARED_SETTINGS: Readonly<Record<string, string>> = {
  'node.id': '1',
  'num.partitions': '2',
  'default.replication.factor': '1',
  'auto.create.topics.enable': 'true',
  'min.insync.replicas': '1',
  'offsets.topic.replication.factor': '1',
  'offsets.topic.num.partitions': '1',
  'transaction.state.log.replication.factor': '1',
  'transaction.state.log.min.isr': '1',
  'transaction.state.log.num.partitions': '1',
  'group.initial.rebalance.delay.ms': '0',
}

/** One difference between Kafka's and Weir's normalized answers to the same request. */
export interface Difference {
  readonly step: string
  readonly api: string
  readonly version: number
  /** Where, e.g. `topics[name=t].partitions[partitionIndex=0].errorCode`. */
  readonly path: string
  readonly kafka: unknown
  readonly weir: unknown
}

const connectionOptions = {
  clientId: 'weir-differential',
  clock: systemClock,
  transport: nodeTransport,
  requestTimeoutMs: 30_000,
  inFlightRequestsMax: 1,
  responseBytesMax: 1 << 26,
  connectTimeoutMs: 5_000,
}

/** What `Pair.start` adds beyond settings. */
export interface PairOptions {
  /**
   * Users (name: password) of a SASL_PLAINTEXT listener with PLAIN that both sides get beside their
   * PLAINTEXT one; `Pair.login` opens a connection to it on each side as one of them.
   */
  readonly saslUsers?: Readonly<Record<string, string>>
}

/** The SASL_PLAINTEXT listener's settings, the same keys on both sides (Kafka's JAAS form for brokers). */
function saslSettings(users: Readonly<Record<string, string>>): Record<string, string> {
  const options = Object.entries(users)
    .map(([name, password]) => ` user_${name}="${password}"`)
    .join('')
  return {
    'listener.name.sasl_plaintext.sasl.enabled.mechanisms': 'PLAIN',
    'listener.name.sasl_plaintext.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required${options};`,
  }
}

/** Authenticates `connection` as `user` with SASL PLAIN (SaslHandshake v1, then SaslAuthenticate). */
export async function saslPlain(connection: KafkaConnection, user: string, password: string): Promise<void> {
  const handshake = await connection.request(apis.SaslHandshake, 1, { mechanism: 'PLAIN' })
  assert.equal(handshake.errorCode, 0, `SaslHandshake PLAIN: error ${handshake.errorCode}`)
  const version = connection.versionFor(apis.SaslAuthenticate)
  assert(version !== undefined, 'SaslAuthenticate not served')
  const res = await connection.request(apis.SaslAuthenticate, version, {
    authBytes: Buffer.from(`\u0000${user}\u0000${password}`),
  })
  assert.equal(res.errorCode, 0, `SASL PLAIN as ${user}: error ${res.errorCode}`)
}

function requireJava(): void {
  try {
    execFileSync('java', ['-version'], { stdio: 'ignore' })
  } catch {
    throw new Error(
      'differential tests need Java 17+ on PATH to run the reference Apache Kafka (and Maven for tools/kafka/install.sh)',
    )
  }
  const installed = join(REPO, '.cache/kafka', KAFKA_REFERENCE_VERSION, '.installed')
  if (!existsSync(installed)) {
    // startKafka runs install.sh, which fetches the jars with Maven; say what is happening.
    process.stderr.write(
      `differential: Kafka ${KAFKA_REFERENCE_VERSION} jars missing, running KAFKA_VERSION=${KAFKA_REFERENCE_VERSION} tools/kafka/install.sh\n`,
    )
  }
}

/** A Kafka broker and a Weir node with the same settings, and a connection to each. */
const START_ATTEMPTS = 3

/** Whether a failed start was a port another process took (the logs say so). */
function portTaken(e: unknown): boolean {
  const dir = /logs in (\S+)\)/.exec((e as Error).message)?.[1]
  if (dir === undefined) return false
  for (const log of [join(dir, 'kafka/server-logs/server.log')]) {
    if (existsSync(log) && /Address already in use/.test(readFileSync(log, 'utf8'))) return true
  }
  return /EADDRINUSE|Address already in use/.test(String((e as Error & { cause?: unknown }).cause ?? ''))
}

export class Pair {
  readonly kafka: KafkaConnection
  readonly weir: KafkaConnection
  readonly kafkaBroker: KafkaBroker
  readonly weirProcess: WeirProcess
  readonly differ: Differ
  readonly #dir: { path: string; remove: () => void }
  /** Each side's SASL_PLAINTEXT port (with `saslUsers`). */
  readonly #saslPorts: { kafka: number; weir: number } | undefined
  readonly #saslUsers: Readonly<Record<string, string>>
  readonly #logins: KafkaConnection[] = []

  private constructor(o: {
    kafka: KafkaConnection
    weir: KafkaConnection
    kafkaBroker: KafkaBroker
    weirProcess: WeirProcess
    dir: { path: string; remove: () => void }
    saslPorts?: { kafka: number; weir: number }
    saslUsers?: Readonly<Record<string, string>>
  }) {
    this.kafka = o.kafka
    this.weir = o.weir
    this.kafkaBroker = o.kafkaBroker
    this.weirProcess = o.weirProcess
    this.#dir = o.dir
    this.#saslPorts = o.saslPorts
    this.#saslUsers = o.saslUsers ?? {}
    this.differ = new Differ()
  }

  /** A connection to each side's SASL_PLAINTEXT listener, authenticated as `user` (closed by `stop`). */
  async login(user: string): Promise<{ kafka: KafkaConnection; weir: KafkaConnection }> {
    const ports = this.#saslPorts
    const password = this.#saslUsers[user]
    assert(
      ports !== undefined && password !== undefined,
      `no SASL user ${user}: start the pair with saslUsers`,
    )
    const open = async (port: number) => {
      const c = await KafkaConnection.open({ host: '127.0.0.1', port }, connectionOptions)
      this.#logins.push(c)
      await saslPlain(c, user, password)
      return c
    }
    return { kafka: await open(ports.kafka), weir: await open(ports.weir) }
  }

  /**
   * Starts both (in parallel) and connects. `settings` are added to SHARED_SETTINGS on both sides.
   * Fails, never skips, when Java or the Kafka jars cannot be had.
   */
  static async start(
    name: string,
    settings: Record<string, string> = {},
    options: PairOptions = {},
  ): Promise<Pair> {
    // Ports are chosen free, then bound by two processes a moment later: another process's
    // ephemeral port can take one in between. Such a start is retried with fresh ports.
    for (let attempt = 1; ; attempt++) {
      try {
        return await Pair.#startOnce(name, settings, options)
      } catch (e) {
        if (attempt >= START_ATTEMPTS || !portTaken(e)) throw e
        console.log(`differential: ${(e as Error).message}: retrying with other ports`)
      }
    }
  }

  static async #startOnce(
    name: string,
    settings: Record<string, string>,
    options: PairOptions,
  ): Promise<Pair> {
    requireJava()
    process.env.KAFKA_VERSION = KAFKA_REFERENCE_VERSION
    const dir = tempDir(`weir-diff-${name}-`)
    const users = options.saslUsers
    const all = { ...SHARED_SETTINGS, ...(users === undefined ? {} : saslSettings(users)), ...settings }
    // With SASL, Kafka's ports are chosen here too: its listeners are written out below.
    const ports = await freePorts(users === undefined ? 2 : 6)
    const [weirPort, controllerPort, weirSasl, kafkaPort, kafkaController, kafkaSasl] = ports as [
      number,
      number,
      number?,
      number?,
      number?,
      number?,
    ]
    const saslPorts =
      weirSasl !== undefined && kafkaSasl !== undefined ? { kafka: kafkaSasl, weir: weirSasl } : undefined
    // Kafka's listeners are written out here only when a SASL one joins them (startKafka's own are
    // PLAINTEXT and CONTROLLER).
    const kafkaListeners: Record<string, string> =
      saslPorts === undefined
        ? {}
        : {
            listeners: `PLAINTEXT://127.0.0.1:${kafkaPort},CONTROLLER://127.0.0.1:${kafkaController},SASL_PLAINTEXT://127.0.0.1:${kafkaSasl}`,
            'advertised.listeners': `PLAINTEXT://127.0.0.1:${kafkaPort},SASL_PLAINTEXT://127.0.0.1:${kafkaSasl}`,
            'listener.security.protocol.map':
              'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT',
          }
    const weirSaslListener = saslPorts === undefined ? '' : `,SASL_PLAINTEXT://127.0.0.1:${saslPorts.weir}`
    const weirProcess = new WeirProcess([
      '--data-dir',
      join(dir.path, 'weir'),
      '--quiet',
      '--set',
      `listeners=PLAINTEXT://127.0.0.1:${weirPort},CONTROLLER://127.0.0.1:${controllerPort}${weirSaslListener}`,
      '--set',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      ...Object.entries(all).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
    ])
    const [kafkaStarted, weirStarted] = await Promise.allSettled([
      // The scenarios send bad requests on purpose: Kafka's warnings about them stay in its log
      // file unless DIFF_VERBOSE is set.
      startKafka({
        port: kafkaPort ?? 0,
        ...(kafkaController === undefined ? {} : { controllerPort: kafkaController }),
        dataDir: join(dir.path, 'kafka'),
        config: { ...all, ...kafkaListeners },
        quiet: process.env.DIFF_VERBOSE === undefined,
      }),
      weirProcess.start(60_000),
    ])
    if (kafkaStarted.status === 'rejected' || weirStarted.status === 'rejected') {
      if (kafkaStarted.status === 'fulfilled') await kafkaStarted.value.stop()
      await weirProcess.kill()
      // The directory stays for its logs (kafka/server-logs/server.log).
      const reason =
        (kafkaStarted.status === 'rejected' ? kafkaStarted.reason : undefined) ??
        (weirStarted as PromiseRejectedResult).reason
      throw new Error(
        `differential: could not start both brokers (logs in ${dir.path}): ${(reason as Error).message}`,
        {
          cause: reason,
        },
      )
    }
    const kafkaBroker = kafkaStarted.value
    const kafka = await KafkaConnection.open({ host: '127.0.0.1', port: kafkaBroker.port }, connectionOptions)
    const weir = await KafkaConnection.open({ host: '127.0.0.1', port: weirPort }, connectionOptions)
    return new Pair({
      kafka,
      weir,
      kafkaBroker,
      weirProcess,
      dir,
      ...(saslPorts === undefined ? {} : { saslPorts, saslUsers: users ?? {} }),
    })
  }

  async stop(): Promise<void> {
    this.kafka.close()
    this.weir.close()
    for (const c of this.#logins) c.close()
    await Promise.all([this.kafkaBroker.stop(), this.weirProcess.stop()])
    this.#dir.remove()
  }

  connection(side: Side): KafkaConnection {
    return side === 'kafka' ? this.kafka : this.weir
  }

  /** The highest version of `api` that Kafka, Weir and our codec all serve. */
  version(api: Api<unknown, never, unknown, never>): number {
    const k = this.kafka.versionFor(api)
    const w = this.weir.versionFor(api)
    const kMin = this.kafka.peerVersions.get(api.apiKey)?.minVersion ?? 0
    const wMin = this.weir.peerVersions.get(api.apiKey)?.minVersion ?? 0
    assert(
      k !== undefined && w !== undefined,
      `${api.name}: not served by both sides (kafka ${k}, weir ${w})`,
    )
    const v = Math.min(k, w)
    assert(v >= Math.max(kMin, wMin), `${api.name}: no version served by both sides`)
    return v
  }

  /** Whether Kafka, Weir and our codec all serve `api` at `version`. */
  serves(api: Api<unknown, never, unknown, never>, version: number): boolean {
    return [this.kafka, this.weir].every((c) => {
      const r = c.peerVersions.get(api.apiKey)
      return (
        r !== undefined &&
        version >= Math.max(r.minVersion, api.minVersion) &&
        version <= Math.min(r.maxVersion, api.maxVersion)
      )
    })
  }

  /**
   * Sends the same request to both (Kafka first, then Weir) and records the differences between the
   * normalized responses under `step`. `body` may depend on the side (ids each side assigned). With
   * `until`, each side is asked again until its answer satisfies it (a broker's view of a committed
   * change lags its controller's answer), and the last answers are compared.
   */
  async both<Res, ReqIn>(
    step: string,
    api: Api<unknown, ReqIn, Res, never>,
    version: number,
    body: ReqIn | ((side: Side) => ReqIn),
    options: {
      until?: (response: Res) => boolean
      timeoutMs?: number
      /** Paths (globs) where the two answers legitimately differ in this step, e.g. a broker's clock. */
      ignore?: readonly string[]
    } = {},
  ): Promise<{ kafka: Res; weir: Res }> {
    const make = (side: Side): ReqIn =>
      typeof body === 'function' ? (body as (side: Side) => ReqIn)(side) : body
    const ask = async (side: Side): Promise<Res> => {
      const deadline = performance.now() + (options.timeoutMs ?? 15_000)
      for (;;) {
        const res = await this.connection(side).request(api, version, make(side))
        if (options.until === undefined || options.until(res) || performance.now() > deadline) return res
        await sleep(50)
      }
    }
    const kafka = await ask('kafka')
    const weir = await ask('weir')
    this.differ.compare(step, api.name, version, kafka, weir, options.ignore ?? [])
    return { kafka, weir }
  }

  /** The same request to both without comparing (setup steps and waits). */
  async each<Res, ReqIn>(
    api: Api<unknown, ReqIn, Res, never>,
    version: number,
    body: ReqIn | ((side: Side) => ReqIn),
  ): Promise<{ kafka: Res; weir: Res }> {
    const make = (side: Side): ReqIn =>
      typeof body === 'function' ? (body as (side: Side) => ReqIn)(side) : body
    const [kafka, weir] = await Promise.all([
      this.kafka.request(api, version, make('kafka')),
      this.weir.request(api, version, make('weir')),
    ])
    return { kafka, weir }
  }

  /** Waits until both sides' Metadata lists `topic` with `partitions` partitions, each with a leader. */
  async waitForTopic(topic: string, partitions: number, timeoutMs = 20_000): Promise<void> {
    for (const side of SIDES) {
      const c = this.connection(side)
      const deadline = performance.now() + timeoutMs
      for (;;) {
        const res = await c.request(apis.Metadata, 12, {
          topics: [{ name: topic as TopicName }],
          allowAutoTopicCreation: false,
        })
        const t = res.topics[0]
        if (
          t?.errorCode === 0 &&
          t.partitions.length === partitions &&
          t.partitions.every((p) => p.errorCode === 0 && p.leaderId >= 0)
        ) {
          // Kafka lists the leader in Metadata a moment before its replica manager leads the
          // partition (NOT_LEADER_OR_FOLLOWER meanwhile): ask the partitions themselves.
          const offsets = await c.request(apis.ListOffsets, 1, {
            replicaId: -1 as BrokerId,
            topics: [
              {
                name: topic as TopicName,
                partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, timestamp: -1n })),
              },
            ],
          })
          if (offsets.topics[0]?.partitions.every((p) => p.errorCode === 0)) break
        }
        if (performance.now() > deadline)
          throw new Error(`${side}: topic ${topic} not ready: ${JSON.stringify(t, jsonReplacer)}`)
        await sleep(50)
      }
    }
  }

  /** Waits until neither side lists `topic` any more. */
  async waitForTopicGone(topic: string, timeoutMs = 20_000): Promise<void> {
    for (const side of SIDES) {
      const c = this.connection(side)
      const deadline = performance.now() + timeoutMs
      for (;;) {
        const res = await c.request(apis.Metadata, 12, {
          topics: [{ name: topic as TopicName }],
          allowAutoTopicCreation: false,
        })
        if (res.topics[0]?.errorCode === 3) break
        if (performance.now() > deadline) throw new Error(`${side}: topic ${topic} still listed`)
        await sleep(50)
      }
    }
  }
}

/**
 * A differential test: `fn` sends its requests through `pair().both(...)`; afterwards every
 * difference must be allowed (and every allowance for the requests that ran must have shown). The
 * error-message texts that differ are printed as diagnostics.
 */
export function scenario(name: string, pair: () => Pair, fn: () => Promise<void>): void {
  test(name, { timeout: 120_000 }, async (t) => {
    const { differ } = pair()
    differ.begin()
    try {
      await fn()
    } catch (e) {
      for (const line of differ.differenceLines()) t.diagnostic(`difference so far: ${line}`)
      throw e
    }
    for (const line of differ.messageLines()) t.diagnostic(`message text: ${line}`)
    differ.check()
  })
}

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms))
}

export function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return `${value}n`
  if (Buffer.isBuffer(value)) return `0x${value.toString('hex')}`
  if (value instanceof Uint8Array) return `0x${Buffer.from(value).toString('hex')}`
  return value
}

/**
 * Keys that identify an element of an array, in the order tried: arrays whose elements all carry
 * one are compared as maps on it (with their order compared separately), others position by position.
 */
const IDENTITY_KEYS = [
  'name',
  'topicId',
  'topic',
  'topicName',
  'resourceName',
  'configName',
  'partitionIndex',
  'partition',
  'apiKey',
  'groupId',
  'producerId',
  'nodeId',
  'brokerId',
  'replicaId',
  'voterId',
  'leaderEpoch',
  'epoch',
  'user',
  'principal',
  'mechanism',
] as const

/** Masked values keep only whether a value was there. */
const MASKED = '<masked>'

/**
 * Per side, ids that legitimately differ are replaced by aliases in order of first appearance, so
 * that equal ids stay equal (a JoinGroup's leader is its member) without comparing the ids themselves.
 */
class Aliases {
  readonly #bySide = new Map<string, Map<string, string>>()

  alias(side: Side, kind: string, value: string, preferred?: string): string {
    const key = `${side}/${kind}`
    let table = this.#bySide.get(key)
    if (table === undefined) {
      table = new Map()
      this.#bySide.set(key, table)
    }
    let a = table.get(value)
    if (a === undefined) {
      a = preferred ?? `<${kind}#${table.size + 1}>`
      table.set(value, a)
    }
    return a
  }
}

const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA'

/** Producer ids from here up are made up by a test (the same on both sides) and compared as they are. */
export const TEST_PRODUCER_ID_MIN = 1n << 40n

/** Compares normalized responses and keeps what differs; `check()` fails on unlisted differences. */
export class Differ {
  readonly differences: Difference[] = []
  /** Every compared request, in order. */
  readonly ran: { step: string; api: string; version: number }[] = []
  /** Error messages whose texts differ (not failures: Kafka's wording is not contractual). */
  readonly messages: Difference[] = []
  readonly #aliases = new Aliases()
  #keepMessages = false
  #checkedDifferences = 0
  #checkedRan = 0
  #checkedMessages = 0

  /** Records the differences between `kafka` and `weir` (decoded responses of `api` v`version`). */
  compare(
    step: string,
    api: string,
    version: number,
    kafka: unknown,
    weir: unknown,
    ignore: readonly string[] = [],
  ): void {
    this.ran.push({ step, api, version })
    const k = this.normalize('kafka', kafka)
    const w = this.normalize('weir', weir)
    const dump = process.env.DIFF_DUMP
    if (dump !== undefined && glob(dump, step)) {
      // Raw, as decoded: to see what the masks hide.
      process.stderr.write(
        `== ${step} ${api} v${version}\nkafka ${JSON.stringify(kafka, jsonReplacer)}\nweir  ${JSON.stringify(weir, jsonReplacer)}\n`,
      )
    }
    diff(k, w, '', (path, kv, wv) => {
      if (!ignore.some((g) => glob(g, path)))
        this.differences.push({ step, api, version, path, kafka: kv, weir: wv })
    })
    this.#keepMessages = true
    try {
      diff(this.normalize('kafka', kafka), this.normalize('weir', weir), '', (path, kv, wv) => {
        if (path.endsWith('errorMessage') && typeof kv === 'string' && typeof wv === 'string')
          this.messages.push({ step, api, version, path, kafka: kv, weir: wv })
      })
    } finally {
      this.#keepMessages = false
    }
  }

  /** The masked form of a decoded response, as compared. Exposed for tests that look at one value. */
  normalize(side: Side, value: unknown, key = '', parent?: Record<string, unknown>): unknown {
    if (value === undefined || value === null) return value
    if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'string') {
      return this.#mask(side, key, value, parent)
    }
    if (typeof value === 'boolean') return value
    if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
      const buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
      return key === 'records' ? normalizeRecords(buf, (pid) => this.#producerId(side, pid)) : hex(buf)
    }
    if (Array.isArray(value)) return value.map((v) => this.normalize(side, v, key, parent))
    if (typeof value === 'object') {
      const o = value as Record<string, unknown>
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(o)) {
        if (k === '_unknownTaggedFields') {
          out[k] = JSON.parse(JSON.stringify(v, jsonReplacer))
          continue
        }
        out[k] = this.normalize(side, v, k, o)
      }
      return out
    }
    return String(value)
  }

  #producerId(side: Side, pid: bigint): string | bigint {
    return pid < 0n || pid >= TEST_PRODUCER_ID_MIN
      ? pid
      : this.#aliases.alias(side, 'producer-id', String(pid))
  }

  #mask(side: Side, key: string, value: bigint | number | string, parent?: Record<string, unknown>): unknown {
    switch (key) {
      case 'throttleTimeMs':
      case 'port':
        return MASKED
      case 'clusterId':
        return MASKED
      case 'errorMessage':
        // Kafka's wording is not contractual: compared is whether there is a message at all; the
        // texts that differ are kept in `messages` for the test's diagnostics.
        // Kafka answers "" and null alike for no message, depending on the API.
        if (this.#keepMessages) return value
        return value === '' ? null : '<message>'
      case 'finalizedFeaturesEpoch':
        // The metadata log offset where features were last changed: a fact of each cluster's history.
        return typeof value === 'bigint' && value >= 0n ? MASKED : value
      case 'logAppendTimeMs':
        // -1 unless the topic uses LogAppendTime; then the broker's clock.
        return typeof value === 'bigint' && value >= 0n ? MASKED : value
      case 'sessionId':
        return value === 0 ? 0 : MASKED
      case 'topicId': {
        if (value === ZERO_UUID) return 'zero-uuid'
        // Ids a test made up (the same on both sides) are kept; only the brokers' own are aliased.
        if (String(value).startsWith('AAAAAAAAAAAAAAAA')) return value
        const name = parent?.name ?? parent?.topic ?? parent?.topicName
        return this.#aliases.alias(
          side,
          'topic-id',
          String(value),
          typeof name === 'string' ? `<topic-id of ${name}>` : undefined,
        )
      }
      case 'producerId':
        return typeof value === 'bigint' ? this.#producerId(side, value) : value
      case 'memberId':
      case 'leader':
      case 'groupInstanceId':
        return value === '' ? '' : this.#aliases.alias(side, 'member-id', String(value))
      default:
        return value
    }
  }

  /** Starts a new window: `check()` judges only what is recorded from here on. */
  begin(): void {
    this.#checkedDifferences = this.differences.length
    this.#checkedRan = this.ran.length
    this.#checkedMessages = this.messages.length
  }

  /** The error-message texts that differed since `begin()`, one line each. */
  messageLines(): string[] {
    return this.messages.slice(this.#checkedMessages).map(formatDifference)
  }

  /** The differences recorded since `begin()`, one line each. */
  differenceLines(): string[] {
    return this.differences.slice(this.#checkedDifferences).map(formatDifference)
  }

  /**
   * Fails with every difference not matched by an allowance, and with allowances tied to a step
   * whose request ran since `begin()` without their difference showing (stale: fixed in Weir? remove
   * them and their row in docs/compatibility.md). Allowances marked `sometimes` are never stale.
   */
  check(): void {
    const fresh = this.differences.slice(this.#checkedDifferences)
    const ran = this.ran.slice(this.#checkedRan)
    this.begin()
    const unlisted = fresh.filter((d) => !allowances.some((a) => matches(a, d)))
    const lines: string[] = []
    if (unlisted.length > 0) {
      lines.push(
        `${unlisted.length} difference(s) between Kafka ${KAFKA_REFERENCE_VERSION} and Weir not in test/differential/allowances.ts:`,
      )
      for (const d of unlisted) lines.push(`  ${formatDifference(d)}`)
    }
    // An allowance tied to a step must show whenever its step runs; one without a step accepts a
    // class of differences (an order, a message) that only some requests show.
    const stale = allowances.filter(
      (a) =>
        a.step !== undefined &&
        a.sometimes !== true &&
        ran.some((r) => matchesRequest(a, r)) &&
        !fresh.some((d) => matches(a, d)),
    )
    if (stale.length > 0) {
      lines.push(
        `${stale.length} allowance(s) whose requests ran without their difference (fixed? remove them from allowances.ts and docs/compatibility.md):`,
      )
      for (const a of stale) lines.push(`  ${a.api} ${a.path} (step ${a.step ?? '*'}): ${a.reason}`)
    }
    if (lines.length > 0) assert.fail(lines.join('\n'))
  }
}

function matchesRequest(a: Allowance, r: { step: string; api: string; version: number }): boolean {
  if (a.api !== r.api) return false
  if (a.versions !== undefined && !a.versions.includes(r.version)) return false
  return glob(a.step ?? '*', r.step)
}

function matches(a: Allowance, d: Difference): boolean {
  if (!matchesRequest(a, d)) return false
  if (!glob(a.path, d.path)) return false
  if ('kafka' in a && !valueMatches(a.kafka, d.kafka)) return false
  if ('weir' in a && !valueMatches(a.weir, d.weir)) return false
  return true
}

function valueMatches(expected: unknown, actual: unknown): boolean {
  if (expected instanceof RegExp) return typeof actual === 'string' && expected.test(actual)
  return isDeepStrictEqual(expected, actual)
}

function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b)
    return true
  } catch {
    return false
  }
}

/** `*` matches any run of characters; everything else literally. */
export function glob(pattern: string, text: string): boolean {
  const re = new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`, 's')
  return re.test(text)
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

export function formatDifference(d: Difference): string {
  return `[${d.step}] ${d.api} v${d.version} ${d.path}: kafka ${show(d.kafka)} / weir ${show(d.weir)}`
}

function show(v: unknown): string {
  if (v === ABSENT) return '(absent)'
  const s = JSON.stringify(v, jsonReplacer) ?? String(v)
  return s.length > 400 ? `${s.slice(0, 400)}...(${s.length} chars)` : s
}

function identityKey(a: readonly unknown[], b: readonly unknown[]): string | undefined {
  const all = [...a, ...b]
  if (all.length === 0) return undefined
  if (!all.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x))) return undefined
  for (const k of IDENTITY_KEYS) {
    const values = (xs: readonly unknown[]) => xs.map((x) => (x as Record<string, unknown>)[k])
    const ok = (xs: readonly unknown[]) => {
      const vs = values(xs)
      return (
        vs.every((v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint') &&
        new Set(vs.map(String)).size === vs.length
      )
    }
    if (ok(a) && ok(b)) return k
  }
  return undefined
}

/** Calls `report` for each leaf where `k` and `w` differ. */
function diff(
  k: unknown,
  w: unknown,
  path: string,
  report: (path: string, k: unknown, w: unknown) => void,
): void {
  if (k === w) return
  if (Array.isArray(k) && Array.isArray(w)) {
    const key = identityKey(k, w)
    if (key === undefined) {
      if (
        k.length !== w.length &&
        k.every((x) => typeof x !== 'object') &&
        w.every((x) => typeof x !== 'object')
      ) {
        report(path, k, w)
        return
      }
      for (let i = 0; i < Math.max(k.length, w.length); i++) {
        diff(i < k.length ? k[i] : ABSENT, i < w.length ? w[i] : ABSENT, `${path}[${i}]`, report)
      }
      return
    }
    const idOf = (x: unknown) => String((x as Record<string, unknown>)[key])
    const kIds = k.map(idOf)
    const wIds = w.map(idOf)
    const kById = new Map(k.map((x) => [idOf(x), x]))
    const wById = new Map(w.map((x) => [idOf(x), x]))
    const common = kIds.filter((id) => wById.has(id))
    const wCommon = wIds.filter((id) => kById.has(id))
    if (common.join('\u0000') !== wCommon.join('\u0000')) report(`${path}[#order]`, common, wCommon)
    for (const id of kIds)
      diff(kById.get(id), wById.has(id) ? wById.get(id) : ABSENT, `${path}[${key}=${id}]`, report)
    for (const id of wIds) if (!kById.has(id)) report(`${path}[${key}=${id}]`, ABSENT, wById.get(id))
    return
  }
  if (isPlainObject(k) && isPlainObject(w)) {
    const keys = new Set([...Object.keys(k), ...Object.keys(w)])
    for (const key of keys) {
      diff(
        key in k ? k[key] : ABSENT,
        key in w ? w[key] : ABSENT,
        path === '' ? key : `${path}.${key}`,
        report,
      )
    }
    return
  }
  if (isDeepStrictEqual(k, w)) return
  report(path, k, w)
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

function hex(buf: Buffer): string {
  return buf.toString('hex')
}

/**
 * A Fetch response's records as compared: each batch's header fields and records (keys, values and
 * headers in hex), and the batch's bytes with the fields that legitimately differ zeroed (under
 * LogAppendTime the broker's clock sets maxTimestamp, and so the CRC). A trailing partial batch
 * stays as hex.
 */
function normalizeRecords(buf: Buffer, producerId: (pid: bigint) => string | bigint): unknown {
  const batches: unknown[] = []
  let at = 0
  while (at < buf.length) {
    if (buf.length - at < BATCH_HEADER_BYTES || at + batchSizeAt(buf, at) > buf.length) {
      batches.push({ partial: hex(buf.subarray(at)) })
      break
    }
    const size = batchSizeAt(buf, at)
    const bytes = Buffer.from(buf.subarray(at, at + size))
    const header = readBatchHeader(bytes)
    const logAppendTime = timestampTypeOf(header.attributes) === TimestampType.logAppendTime
    if (logAppendTime) {
      bytes.fill(0, BatchOffsets.maxTimestamp, BatchOffsets.maxTimestamp + 8)
      bytes.fill(0, BatchOffsets.crc, BatchOffsets.crc + 4)
    }
    if (header.producerId >= 0n) bytes.fill(0, BatchOffsets.producerId, BatchOffsets.producerId + 8)
    let records: unknown
    try {
      records = decodeBatch(buf, at).records.map((r) => ({
        offset: r.offset,
        timestamp: logAppendTime ? MASKED : r.timestamp,
        key: r.key === null ? null : hex(r.key),
        value: r.value === null ? null : hex(r.value),
        headers: r.headers.map((h) => [h.key, h.value === null ? null : hex(h.value)]),
      }))
    } catch (e) {
      records = `undecodable: ${(e as Error).message}`
    }
    batches.push({
      baseOffset: header.baseOffset,
      batchLength: header.batchLength,
      partitionLeaderEpoch: header.partitionLeaderEpoch,
      magic: header.magic,
      crc: logAppendTime ? MASKED : header.crc,
      attributes: header.attributes,
      compression: compressionOf(header.attributes),
      lastOffsetDelta: header.lastOffsetDelta,
      baseTimestamp: header.baseTimestamp,
      maxTimestamp: logAppendTime ? MASKED : header.maxTimestamp,
      producerId: producerId(header.producerId),
      producerEpoch: header.producerEpoch,
      baseSequence: header.baseSequence,
      recordCount: header.recordCount,
      records,
      bytes: hex(bytes),
    })
    at += size
  }
  return batches
}
