/**
 * A node's loggers: each part of the node logs under one of Kafka's log4j logger names (so that
 * `kafka-configs --entity-type broker-loggers` names them as it does against Kafka), with levels
 * changed at run time through IncrementalAlterConfigs on the node's BROKER_LOGGER resource. A
 * logger without a level of its own takes its nearest ancestor's by dotted name, as log4j's do,
 * up to `root` (INFO). Lines go to one sink: the text format (`[time] LEVEL message`) or, with
 * `log.format=json`, one JSON object a line written through pino.
 */
import pino from 'pino'
import { ROOT_LOGGER } from '../server/index.ts'
import type { Logger, LogLevel } from './node.ts'

/** The levels a logger may be set to (Kafka's LogLevelConfig.VALID_LOG_LEVELS), lowest first. */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'] as const
export type LevelName = (typeof LOG_LEVELS)[number]

/** The node's loggers: Kafka's names for the parts that log. */
export const LOGGER_NAMES = {
  root: ROOT_LOGGER,
  /** An ancestor (log4j's hierarchy): a level set on it reaches every `kafka.*` logger. */
  kafka: 'kafka',
  /** Registration, heartbeats, fencing, controlled shutdown: the node's own lifecycle. */
  lifecycle: 'kafka.server.BrokerLifecycleManager',
  /** Partitions, leaders and followers, the ISR. */
  replication: 'kafka.server.ReplicaManager',
  /** Log directories, recovery, retention, cleaning. */
  storage: 'kafka.log.LogManager',
  /** The active controller's decisions. */
  controller: 'org.apache.kafka.controller.QuorumController',
  /** The metadata quorum (KRaft). */
  raft: 'org.apache.kafka.raft.KafkaRaftClient',
  /** The group coordinator. */
  groups: 'org.apache.kafka.coordinator.group.GroupCoordinatorService',
  /** The transaction coordinator. */
  transactions: 'kafka.coordinator.transaction.TransactionCoordinator',
  /** Listeners, connections, authentication. */
  network: 'kafka.network.SocketServer',
} as const

/** Where a logged line goes. */
export type LogSink = (line: { level: LogLevel; logger: string; message: string }) => void

export class NodeLogs {
  readonly #sink: LogSink
  /** Levels set explicitly: `root` always, the others by IncrementalAlterConfigs. */
  readonly #levels = new Map<string, LevelName>([[ROOT_LOGGER, 'INFO']])
  /** Effective level rank per logger, recomputed when a level changes. */
  readonly #ranks = new Map<string, number>()

  constructor(sink: LogSink, options: { rootLevel?: LevelName } = {}) {
    this.#sink = sink
    if (options.rootLevel !== undefined) this.#levels.set(ROOT_LOGGER, options.rootLevel)
  }

  /** Loggers over a plain `(level, message)` function (embedded nodes, tests). */
  static over(log: Logger): NodeLogs {
    return new NodeLogs((l) => log(l.level, l.message))
  }

  /** The logger of `name` (one of LOGGER_NAMES); its level is looked up at each call. */
  logger(name: string): Logger {
    return (level, message) => {
      if (rankOf(level) >= this.#rank(name)) this.#sink({ level, logger: name, message })
    }
  }

  /** Whether `name` is one of the node's loggers. */
  exists(name: string): boolean {
    return (Object.values(LOGGER_NAMES) as string[]).includes(name)
  }

  /** Every logger and its effective level (DescribeConfigs of BROKER_LOGGER). */
  describe(): Array<{ name: string; level: LevelName }> {
    return Object.values(LOGGER_NAMES).map((name) => ({ name, level: this.level(name) }))
  }

  /** The effective level of `name`: its own, else its nearest ancestor's, else root's. */
  level(name: string): LevelName {
    for (let n: string | null = name; n !== null; n = parentOf(n)) {
      const l = this.#levels.get(n)
      if (l !== undefined) return l
    }
    return this.#levels.get(ROOT_LOGGER)!
  }

  /** Sets `name`'s own level; null removes it (it then follows its ancestors). Root keeps one. */
  setLevel(name: string, level: string | null): void {
    if (level === null) {
      if (name !== ROOT_LOGGER) this.#levels.delete(name)
    } else this.#levels.set(name, levelNamed(level))
    this.#ranks.clear()
  }

  #rank(name: string): number {
    let r = this.#ranks.get(name)
    if (r === undefined) {
      r = LOG_LEVELS.indexOf(this.level(name))
      this.#ranks.set(name, r)
    }
    return r
  }
}

function rankOf(level: LogLevel): number {
  return level === 'info' ? 2 : level === 'warn' ? 3 : 4
}

/** log4j's hierarchy: `a.b.C`'s parent is `a.b`, `a`'s is root. */
function parentOf(name: string): string | null {
  if (name === ROOT_LOGGER) return null
  const dot = name.lastIndexOf('.')
  return dot < 0 ? ROOT_LOGGER : name.slice(0, dot)
}

/** The level `s` names exactly (`INFO`, ...); anything else is a caller's bug. */
function levelNamed(s: string): LevelName {
  if (!(LOG_LEVELS as readonly string[]).includes(s)) throw new RangeError(`not a log level: ${s}`)
  return s as LevelName
}

/** `[2026-01-01T00:00:00.000Z] INFO message` on stderr; nothing but errors when `quiet`. */
export function textSink(
  quiet: boolean,
  write: (s: string) => void = (s) => process.stderr.write(s),
): LogSink {
  return (l) => {
    if (quiet && l.level !== 'error') return
    write(`[${new Date().toISOString()}] ${l.level.toUpperCase()} ${l.message}\n`)
  }
}

/**
 * One JSON object a line through pino: `time` (ISO 8601), `level` (`INFO`, ...), `node` (node.id),
 * `logger`, `message`. Written synchronously, so that the lines before a crash are there.
 */
export function jsonSink(
  nodeId: number,
  quiet: boolean,
  destination: pino.DestinationStream = pino.destination({ fd: 2, sync: true }),
): LogSink {
  const root = pino(
    {
      level: 'info',
      base: { node: nodeId },
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label.toUpperCase() }) },
    },
    destination,
  )
  const children = new Map<string, pino.Logger>()
  return (l) => {
    if (quiet && l.level !== 'error') return
    let child = children.get(l.logger)
    if (child === undefined) {
      child = root.child({ logger: l.logger })
      children.set(l.logger, child)
    }
    child[l.level](l.message)
  }
}
