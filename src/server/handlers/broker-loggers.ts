/**
 * The BROKER_LOGGER resource (KIP-412): a node's loggers and their levels, described by
 * DescribeConfigs and changed at run time by IncrementalAlterConfigs, answered by the node itself
 * (never forwarded to the controller, never persisted: a restart starts at the configured levels),
 * as Kafka's ConfigAdminManager and LoggingController answer them.
 */
import { ConfigSource, ConfigTypeCode, type DescribeConfigsEntry } from '../../config/index.ts'
import { ErrorCode } from '../../protocol/index.ts'
import type { AlterConfigsOutcome, AlterConfigsResourceLike } from './alter-configs.ts'

/** What a node's loggers offer (src/broker/logs.ts). */
export interface BrokerLoggersView {
  exists(name: string): boolean
  /** Every logger and its effective level. */
  describe(): ReadonlyArray<{ readonly name: string; readonly level: string }>
  /** Sets a logger's own level (one of VALID_LOG_LEVELS); null removes it. */
  setLevel(name: string, level: string | null): void
}

/** Kafka's LogLevelConfig.VALID_LOG_LEVELS, as its messages list them. Case-sensitive. */
export const VALID_LOG_LEVELS = ['DEBUG', 'ERROR', 'FATAL', 'INFO', 'TRACE', 'WARN'] as const

export const ROOT_LOGGER = 'root'

const SET = 0
const DELETE = 1
const OPERATION_NAMES: Readonly<Record<number, string>> = { 2: 'APPEND', 3: 'SUBTRACT' }

/** The loggers a DescribeConfigs names (null: every one), as Kafka lists them. */
export function describeBrokerLoggers(
  view: BrokerLoggersView,
  keys: readonly string[] | null,
): DescribeConfigsEntry[] {
  return view
    .describe()
    .filter((l) => keys === null || keys.includes(l.name))
    .map((l) => ({
      name: l.name,
      value: l.level,
      readOnly: false,
      isDefault: false,
      configSource: ConfigSource.DynamicBrokerLoggerConfig,
      isSensitive: false,
      synonyms: [],
      configType: ConfigTypeCode.unknown,
      documentation: '',
    }))
}

/**
 * Checks every change of a BROKER_LOGGER resource, then (unless `validateOnly`) applies them all:
 * SET needs a logger that exists and a valid level (INVALID_CONFIG), DELETE a logger that exists
 * (INVALID_CONFIG) other than root (INVALID_REQUEST); APPEND and SUBTRACT are INVALID_REQUEST.
 */
export function alterBrokerLoggers(
  view: BrokerLoggersView,
  r: AlterConfigsResourceLike,
  validateOnly: boolean,
): AlterConfigsOutcome {
  for (const c of r.configs) {
    const op = c.configOperation ?? SET
    if (op === SET || op === DELETE) {
      if (!view.exists(c.name)) return invalidConfig(`Logger ${c.name} does not exist!`)
      if (op === SET && !(VALID_LOG_LEVELS as readonly (string | null)[]).includes(c.value))
        return invalidConfig(
          `Cannot set the log level of ${c.name} to ${c.value} as it is not a supported log level. Valid log levels are ${VALID_LOG_LEVELS.join(', ')}`,
        )
      if (op === DELETE && c.name === ROOT_LOGGER)
        return invalidRequest(`Removing the log level of the ${ROOT_LOGGER} logger is not allowed`)
    } else {
      const name = OPERATION_NAMES[op]
      return invalidRequest(
        name === undefined
          ? `Unknown operation type ${op} is not allowed for the BROKER_LOGGER resource`
          : `${name} operation is not allowed for the BROKER_LOGGER resource`,
      )
    }
  }
  if (!validateOnly)
    for (const c of r.configs) view.setLevel(c.name, (c.configOperation ?? SET) === SET ? c.value : null)
  return { errorCode: ErrorCode.None, errorMessage: null }
}

function invalidConfig(errorMessage: string): AlterConfigsOutcome {
  return { errorCode: ErrorCode.InvalidConfig, errorMessage }
}

function invalidRequest(errorMessage: string): AlterConfigsOutcome {
  return { errorCode: ErrorCode.InvalidRequest, errorMessage }
}
