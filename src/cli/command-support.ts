/**
 * What every cluster command shares: the common flags (--bootstrap-server, --json, --timeout),
 * a ClusterClient for the run, human tables and JSON output, and exit codes with errors in plain
 * words that keep Kafka's error name.
 */
import { readFileSync } from 'node:fs'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import {
  type ClientSecurity,
  ClientSecurityError,
  ClusterClient,
  ConnectionError,
  clientSecurityFromProperties,
  KafkaError,
  parseBootstrap,
  SaslAuthenticationError,
} from '../client/index.ts'
import { parseProperties } from '../config/index.ts'
import { nodeTransport, systemClock } from '../io/index.ts'

/** Exit codes: the same for every command. */
export const Exit = {
  ok: 0,
  /** The cluster answered with a Kafka error, or the operation could not be done. */
  failed: 1,
  /** Bad flags or arguments. */
  usage: 2,
  /** No broker could be reached, or a request timed out. */
  unreachable: 3,
} as const

export const DEFAULT_BOOTSTRAP = '127.0.0.1:9092'

export class UsageError extends Error {
  override name = 'UsageError'
}

/** Flags every cluster command takes. */
export const COMMON_OPTIONS = {
  'bootstrap-server': { type: 'string', short: 'b' },
  'command-config': { type: 'string' },
  json: { type: 'boolean' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options']

export const COMMON_USAGE = `Common options:
  -b, --bootstrap-server HOST:PORT[,...]   brokers to bootstrap from (default: the command config's
                                           bootstrap.servers, $WEIR_BOOTSTRAP or ${DEFAULT_BOOTSTRAP})
  --command-config FILE                    a Kafka client properties file: security.protocol, sasl.mechanism,
                                           sasl.jaas.config, ssl.truststore.*, ssl.keystore.*,
                                           ssl.endpoint.identification.algorithm
  --json                                   machine-readable output
  --timeout MS                             how long to retry a cluster that moved (default 30000)
  -h, --help                               this help
`

type Options = NonNullable<ParseArgsConfig['options']>

/** parseArgs with the common flags; strict, positionals allowed. Throws UsageError. */
export function parse<O extends Options>(argv: readonly string[], options: O) {
  const all: Options = { ...COMMON_OPTIONS, ...options }
  // `--shift-by -1`: a negative number after a flag that takes a value is that value, not a flag.
  const args: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const next = argv[i + 1]
    const name = a.startsWith('--') ? a.slice(2) : undefined
    if (name !== undefined && all[name]?.type === 'string' && next !== undefined && /^-\d+$/.test(next)) {
      args.push(`${a}=${next}`)
      i++
    } else args.push(a)
  }
  try {
    return parseArgs({
      args,
      options: { ...COMMON_OPTIONS, ...options },
      strict: true,
      allowPositionals: true,
    })
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
}

export interface CommonValues {
  'bootstrap-server'?: string | undefined
  'command-config'?: string | undefined
  timeout?: string | undefined
}

export function intFlag(value: string | undefined, name: string, fallback: number, min = 0): number {
  if (value === undefined) return fallback
  if (!/^-?\d+$/.test(value) || Number(value) < min)
    throw new UsageError(`--${name} must be an integer >= ${min}, not '${value}'`)
  return Number(value)
}

/** The brokers to bootstrap from and the `--command-config` properties (null without the flag). */
export function clusterTarget(values: CommonValues): {
  bootstrap: string[]
  properties: Map<string, string> | null
} {
  const properties = commandConfig(values['command-config'])
  try {
    const bootstrap = parseBootstrap(
      values['bootstrap-server'] ??
        properties?.get('bootstrap.servers') ??
        process.env.WEIR_BOOTSTRAP ??
        DEFAULT_BOOTSTRAP,
    )
    return { bootstrap, properties }
  } catch (e) {
    throw new UsageError(`--bootstrap-server: ${(e as Error).message}`)
  }
}

/** Runs `fn` with a client of the cluster, closing it after. */
export async function withClient<T>(
  values: CommonValues,
  fn: (client: ClusterClient) => Promise<T>,
): Promise<T> {
  const { bootstrap, properties } = clusterTarget(values)
  const timeout = intFlag(values.timeout, 'timeout', 30_000, 1)
  const client = new ClusterClient({
    bootstrap,
    clientId: 'weir-cli',
    clock: systemClock,
    transport: nodeTransport,
    retryTimeoutMs: timeout,
    requestTimeoutMs: Math.max(timeout, 5000),
    ...(properties === null ? {} : { security: securityOf(properties) }),
  })
  try {
    return await fn(client)
  } finally {
    client.close()
  }
}

/** The `--command-config` file's properties, or null without the flag. */
function commandConfig(path: string | undefined): Map<string, string> | null {
  if (path === undefined) return null
  try {
    return parseProperties(readFileSync(path, 'utf8'))
  } catch (e) {
    throw new UsageError(
      `--command-config: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`,
    )
  }
}

/** TLS and SASL from the client properties, as a Kafka client reads them. */
export function securityOf(properties: ReadonlyMap<string, string>): ClientSecurity {
  try {
    return clientSecurityFromProperties({ properties, readFile: (p) => readFileSync(p) })
  } catch (e) {
    // Its messages name the key, never a secret.
    if (e instanceof ClientSecurityError) throw new UsageError(`--command-config: ${e.message}`)
    throw e
  }
}

/** Prints an error in plain words and returns the exit code it maps to. */
export function reportError(command: string, e: unknown): number {
  if (e instanceof UsageError) {
    process.stderr.write(
      `weir ${command}: ${e.message}\nRun 'weir ${command.split(' ')[0]} --help' for its options.\n`,
    )
    return Exit.usage
  }
  if (e instanceof SaslAuthenticationError) {
    process.stderr.write(`weir ${command}: ${e.message}\n`)
    return Exit.failed
  }
  if (e instanceof ConnectionError) {
    process.stderr.write(`weir ${command}: cannot reach the cluster: ${e.message}\n`)
    return Exit.unreachable
  }
  if (e instanceof KafkaError) {
    process.stderr.write(`weir ${command}: ${e.message}\n`)
    return Exit.failed
  }
  process.stderr.write(`weir ${command}: ${(e as Error)?.message ?? String(e)}\n`)
  return Exit.failed
}

/** Runs a command body: usage errors and failures handled the same way everywhere. */
export async function runCommand(command: string, body: () => Promise<number | undefined>): Promise<number> {
  try {
    return (await body()) ?? Exit.ok
  } catch (e) {
    return reportError(command, e)
  }
}

/** One subcommand of a command: it gets a client and the parsed arguments. */
export type Subcommand<V> = (
  client: ClusterClient,
  positionals: readonly string[],
  values: V,
) => Promise<number>

/**
 * `weir COMMAND SUB [options]`: help for no subcommand or `--help`, the options parsed, an unknown
 * subcommand refused before any connection, then the subcommand run with a client.
 */
export function runSubcommands<O extends Options>(
  command: string,
  usage: string,
  options: O,
  argv: readonly string[],
  subcommands: Readonly<Record<string, Subcommand<ReturnType<typeof parse<O>>['values']>>>,
): Promise<number> {
  const [sub, ...rest] = argv
  return runCommand(`${command} ${sub ?? ''}`.trim(), async () => {
    if (sub === undefined || sub === '-h' || sub === '--help') return help(usage)
    const { values, positionals } = parse(rest, options)
    // The common flags are in every command's values; a generic O does not show them.
    const common = values as CommonValues & { help?: boolean | undefined }
    if (common.help === true) return help(usage)
    const run = Object.hasOwn(subcommands, sub) ? subcommands[sub] : undefined
    if (run === undefined) throw new UsageError(`unknown subcommand '${sub}'`)
    return withClient(common, (c) => run(c, positionals, values))
  })
}

/** A subcommand that takes no positional arguments: any given is refused before it runs. */
export function withoutArguments<V>(
  run: (client: ClusterClient, values: V) => Promise<number>,
): Subcommand<V> {
  return (client, positionals, values) => {
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`)
    return run(client, values)
  }
}

/** Prints a command's usage (for --help) and returns 0. */
export function help(usage: string): number {
  process.stdout.write(usage)
  return Exit.ok
}

/** JSON with bigints as numbers when safe, strings otherwise; Buffers as UTF-8. */
export function toJson(value: unknown, indent?: number): string {
  return JSON.stringify(
    value,
    (_k, v) => {
      if (typeof v === 'bigint')
        return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)
          ? Number(v)
          : v.toString()
      if (v !== null && typeof v === 'object' && v.type === 'Buffer' && Array.isArray(v.data))
        return Buffer.from(v.data).toString('utf8')
      return v
    },
    indent,
  )
}

export function printJson(value: unknown): void {
  process.stdout.write(`${toJson(value, 2)}\n`)
}

/** A table with a header row, columns padded to their widest cell. */
export function formatTable(headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<unknown>>): string {
  const cells = rows.map((r) =>
    r.map((c) => (c === null || c === undefined ? '-' : Array.isArray(c) ? c.join(',') : String(c))),
  )
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)))
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return `${[line(headers), ...cells.map(line)].join('\n')}\n`
}

export function printTable(headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<unknown>>): void {
  process.stdout.write(formatTable(headers, rows))
}

/** Parses `key=value` flags (repeatable). */
export function keyValues(list: readonly string[] | undefined, flag: string): Array<[string, string]> {
  return (list ?? []).map((kv) => {
    const i = kv.indexOf('=')
    if (i <= 0) throw new UsageError(`--${flag} takes KEY=VALUE, not '${kv}'`)
    return [kv.slice(0, i), kv.slice(i + 1)]
  })
}
