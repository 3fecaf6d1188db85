/**
 * `weir user set|delete|list`: SCRAM credentials over AlterUserScramCredentials and
 * DescribeUserScramCredentials. As kafka-configs, the password is salted here: the request
 * carries the salt and the salted password (Hi(password, salt, i)), never the password.
 */
import { readFileSync } from 'node:fs'
import { type ClusterClient, KafkaError } from '../client/index.ts'
import { systemRandom } from '../io/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
import {
  checkIterations,
  isScramMechanism,
  randomBase36,
  SCRAM_ALGORITHMS,
  type ScramMechanism,
  saltedPassword,
} from '../security/index.ts'
import {
  COMMON_USAGE,
  intFlag,
  type parse,
  printJson,
  printTable,
  runSubcommands,
  UsageError,
} from './command-support.ts'

export const USER_USAGE = `Usage: weir user <set|delete|list> [options]

  weir user set NAME (--password PASSWORD | --password-file FILE) [--mechanism M] [--iterations N]
  weir user delete NAME [--mechanism M]     every mechanism of the user without --mechanism
  weir user list [NAME ...]                 users with SCRAM credentials, their mechanisms and iterations

SCRAM credentials, as kafka-configs --entity-type users --add-config 'SCRAM-SHA-512=[password=...]'
makes them: the password is salted here and never sent. --mechanism SCRAM-SHA-256 or SCRAM-SHA-512
(default SCRAM-SHA-512); --iterations 4096..16384 (default 4096). --password-file reads the password
from a file (its first line; '-' for stdin).

${COMMON_USAGE}`

const OPTIONS = {
  mechanism: { type: 'string', short: 'm' },
  password: { type: 'string' },
  'password-file': { type: 'string' },
  iterations: { type: 'string' },
} as const

type Values = ReturnType<typeof parse<typeof OPTIONS>>['values']

const MECHANISMS = Object.values(SCRAM_ALGORITHMS)

export function runUser(argv: readonly string[]): Promise<number> {
  return runSubcommands('user', USER_USAGE, OPTIONS, argv, { set, delete: remove, list })
}

function oneName(positionals: readonly string[]): string {
  if (positionals.length !== 1 || positionals[0] === '') throw new UsageError('give exactly one user name')
  return positionals[0]!
}

function mechanismOf(text: string): ScramMechanism {
  const name = text.toUpperCase()
  if (!isScramMechanism(name))
    throw new UsageError(`--mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512, not '${text}'`)
  return name
}

function password(values: Values): string {
  const file = values['password-file']
  if ((values.password === undefined) === (file === undefined))
    throw new UsageError('give one of --password and --password-file')
  if (file === undefined) return values.password!
  let text: string
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8')
  } catch (e) {
    throw new UsageError(
      `--password-file: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`,
    )
  }
  const first = text.split(/\r?\n/)[0] ?? ''
  if (first === '') throw new UsageError(`--password-file: ${file} holds no password`)
  return first
}

/** Throws the first failed result as a KafkaError. */
function check(results: ReadonlyArray<{ errorCode: number; errorMessage: string | null }>): void {
  const failed = results.find((r) => r.errorCode !== ErrorCode.None)
  if (failed !== undefined) throw new KafkaError(failed.errorCode, failed.errorMessage)
}

async function set(client: ClusterClient, positionals: readonly string[], values: Values): Promise<number> {
  const name = oneName(positionals)
  const mechanism = mechanismOf(values.mechanism ?? 'SCRAM-SHA-512')
  const algorithm = SCRAM_ALGORITHMS[mechanism]
  const iterations = intFlag(values.iterations, 'iterations', algorithm.iterationsMin, 1)
  try {
    checkIterations(algorithm, iterations)
  } catch (e) {
    throw new UsageError(`--iterations: ${(e as Error).message}`)
  }
  const salt = Buffer.from(randomBase36(systemRandom), 'ascii')
  const { response } = await client.request(apis.AlterUserScramCredentials, {
    deletions: [],
    upsertions: [
      {
        name,
        mechanism: algorithm.type,
        iterations,
        salt,
        saltedPassword: saltedPassword(algorithm, password(values), salt, iterations),
      },
    ],
  })
  check(response.results)
  if (values.json === true) printJson({ user: name, mechanism, iterations })
  else process.stdout.write(`set ${mechanism} credential of user ${name} (${iterations} iterations)\n`)
  return 0
}

async function describe(client: ClusterClient, names: readonly string[] | null) {
  const { response } = await client.request(apis.DescribeUserScramCredentials, {
    users: names === null ? null : names.map((n) => ({ name: n })),
  })
  if (response.errorCode !== ErrorCode.None) throw new KafkaError(response.errorCode, response.errorMessage)
  check(response.results)
  return response.results
}

async function remove(
  client: ClusterClient,
  positionals: readonly string[],
  values: Values,
): Promise<number> {
  const name = oneName(positionals)
  let mechanisms: ScramMechanism[]
  if (values.mechanism !== undefined) mechanisms = [mechanismOf(values.mechanism)]
  else {
    const held = new Set(
      (await describe(client, [name])).flatMap((r) => r.credentialInfos.map((c) => c.mechanism)),
    )
    // In mechanism order: Kafka lists a user's credentials in no fixed order.
    mechanisms = MECHANISMS.filter((m) => held.has(m.type)).map((m) => m.mechanism)
  }
  // One request per mechanism: a request naming a user twice is refused (DUPLICATE_RESOURCE).
  for (const m of mechanisms) {
    const { response } = await client.request(apis.AlterUserScramCredentials, {
      deletions: [{ name, mechanism: SCRAM_ALGORITHMS[m].type }],
      upsertions: [],
    })
    check(response.results)
  }
  if (values.json === true) printJson({ user: name, deleted: mechanisms })
  else process.stdout.write(`deleted ${mechanisms.join(', ')} credentials of user ${name}\n`)
  return 0
}

async function list(client: ClusterClient, positionals: readonly string[], values: Values): Promise<number> {
  const results = await describe(client, positionals.length > 0 ? positionals : null)
  const rows = results
    .flatMap((r) =>
      r.credentialInfos.map((c) => ({
        user: r.user,
        mechanism: MECHANISMS.find((m) => m.type === c.mechanism)?.mechanism ?? `UNKNOWN(${c.mechanism})`,
        iterations: c.iterations,
      })),
    )
    .sort((a, b) => a.user.localeCompare(b.user) || a.mechanism.localeCompare(b.mechanism))
  if (values.json === true) printJson(rows)
  else
    printTable(
      ['USER', 'MECHANISM', 'ITERATIONS'],
      rows.map((r) => [r.user, r.mechanism, r.iterations]),
    )
  return 0
}
