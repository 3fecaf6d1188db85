/** `weir group list|describe|delete|reset-offsets`: consumer groups over ListGroups, DescribeGroups, OffsetFetch, DeleteGroups, OffsetCommit. */
import {
  applyOffsetReset,
  type ClusterClient,
  describeGroup,
  groupOffsets,
  KafkaError,
  listGroups,
  type OffsetResetSpec,
  planOffsetReset,
} from '../client/index.ts'
import { GroupId } from '../model/index.ts'
import { apis, ErrorCode, errorCodeOf } from '../protocol/index.ts'
import {
  COMMON_USAGE,
  type parse,
  printJson,
  printTable,
  runSubcommands,
  UsageError,
} from './command-support.ts'
import { parseTime } from './consume-command.ts'

export const GROUP_USAGE = `Usage: weir group <list|describe|delete|reset-offsets> [options]

  weir group list
  weir group describe GROUP ...        state, members, and per partition: committed offset, log end, lag, owner
  weir group delete GROUP ...          only groups without active members
  weir group reset-offsets GROUP (--topic TOPIC[:P,P...] ... | --all-topics) SPEC [--execute]

reset-offsets SPEC (one of):
  --to-earliest | --to-latest | --to-datetime TIME (ISO 8601 or ms) | --to-offset N | --shift-by N
It prints the plan and changes nothing unless --execute is given; the group must have no active
members to apply it (Kafka's rule).

${COMMON_USAGE}`

const OPTIONS = {
  topic: { type: 'string', short: 't', multiple: true },
  'all-topics': { type: 'boolean' },
  'to-earliest': { type: 'boolean' },
  'to-latest': { type: 'boolean' },
  'to-datetime': { type: 'string' },
  'to-offset': { type: 'string' },
  'shift-by': { type: 'string' },
  execute: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
} as const

type Values = ReturnType<typeof parse<typeof OPTIONS>>['values']

export function runGroup(argv: readonly string[]): Promise<number> {
  return runSubcommands('group', GROUP_USAGE, OPTIONS, argv, {
    list: (c, _positionals, values) => list(c, values),
    describe,
    delete: remove,
    'reset-offsets': resetOffsets,
  })
}

async function list(client: ClusterClient, values: Values): Promise<number> {
  const { groups, unreachable } = await listGroups(client)
  // One broker down should not hide the others' groups: say so and go on.
  for (const u of unreachable)
    process.stderr.write(
      `weir group list: broker ${u.broker} did not answer (${u.error}); its groups are missing\n`,
    )
  const rows = groups.map((g) => ({ ...g, state: g.state === '' ? '-' : g.state }))
  if (values.json === true) printJson(rows)
  else
    printTable(
      ['GROUP', 'STATE', 'PROTOCOL-TYPE'],
      rows.map((r) => [r.group, r.state, r.protocolType === '' ? '-' : r.protocolType]),
    )
  return 0
}

async function describe(client: ClusterClient, groups: readonly string[], values: Values): Promise<number> {
  if (groups.length === 0) throw new UsageError('give the groups to describe')
  const out = []
  for (const group of groups) {
    const d = await describeGroup(client, group)
    if (d.state === 'Dead') throw new KafkaError(ErrorCode.GroupIdNotFound, `group '${group}' does not exist`)
    out.push({
      group,
      state: d.state,
      protocolType: d.protocolType,
      protocol: d.protocol,
      members: d.members,
      offsets: await groupOffsets(client, d),
    })
  }
  if (values.json === true) {
    printJson(groups.length === 1 ? out[0] : out)
    return 0
  }
  for (const g of out) {
    process.stdout.write(
      `Group: ${g.group}  State: ${g.state}  Protocol: ${g.protocol === '' ? '-' : g.protocol}  Members: ${g.members.length}\n`,
    )
    printTable(
      ['TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'CONSUMER-ID', 'HOST', 'CLIENT-ID'],
      g.offsets.map((o) => [
        o.topic,
        o.partition,
        o.currentOffset,
        o.logEndOffset,
        o.lag,
        o.memberId,
        o.host,
        o.clientId,
      ]),
    )
  }
  return 0
}

async function remove(client: ClusterClient, groups: readonly string[], values: Values): Promise<number> {
  if (groups.length === 0) throw new UsageError('give the groups to delete')
  const results: Array<{ group: string; deleted: boolean; error: ErrorCode }> = []
  for (const group of groups) {
    const r = await client.retrying(
      async () => {
        const coordinator = await client.coordinator(group)
        const { response } = await client.request(
          apis.DeleteGroups,
          { groupsNames: [GroupId(group)] },
          { to: coordinator },
        )
        const res = response.results[0]
        const code = errorCodeOf(res?.errorCode ?? ErrorCode.UnknownServerError)
        if (code === ErrorCode.NotCoordinator || code === ErrorCode.CoordinatorLoadInProgress)
          throw new KafkaError(code)
        return code
      },
      () => client.forgetCoordinator(group),
    )
    results.push({ group, deleted: r === ErrorCode.None, error: r })
  }
  if (values.json === true) printJson(results.map(({ group, deleted }) => ({ group, deleted })))
  else for (const r of results) if (r.deleted) process.stdout.write(`deleted group ${r.group}\n`)
  const failed = results.find((r) => !r.deleted)
  if (failed !== undefined)
    throw new KafkaError(
      failed.error,
      failed.error === ErrorCode.NonEmptyGroup
        ? `group '${failed.group}' has active members: stop them first`
        : failed.error === ErrorCode.GroupIdNotFound
          ? `group '${failed.group}' does not exist`
          : `group '${failed.group}'`,
    )
  return 0
}

async function resetOffsets(
  client: ClusterClient,
  positionals: readonly string[],
  values: Values,
): Promise<number> {
  if (positionals.length !== 1) throw new UsageError('give exactly one group')
  const group = positionals[0]!
  const specs = ['to-earliest', 'to-latest', 'to-datetime', 'to-offset', 'shift-by'].filter(
    (k) => values[k as keyof Values] !== undefined,
  )
  if (specs.length !== 1)
    throw new UsageError(
      'give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by',
    )
  if ((values.topic === undefined) === (values['all-topics'] !== true))
    throw new UsageError('give --topic TOPIC[:PARTITIONS] (repeatable) or --all-topics')
  if (values.execute === true && values['dry-run'] === true)
    throw new UsageError('--execute and --dry-run contradict')

  // Which partitions: the named topics (all or some partitions), or every topic the group committed.
  const partitions: Array<{ topic: string; partition: number }> = []
  if (values['all-topics'] !== true) {
    for (const spec of values.topic ?? []) {
      const [topic, list] = spec.split(':', 2) as [string, string | undefined]
      const t = await client.topic(topic)
      const wanted =
        list === undefined
          ? t.partitions.map((p) => p.partition)
          : list.split(',').map((x) => {
              if (!/^\d+$/.test(x)) throw new UsageError(`--topic ${spec}: '${x}' is not a partition number`)
              return Number(x)
            })
      for (const p of wanted) {
        if (!t.partitions.some((x) => x.partition === p))
          throw new UsageError(`topic ${topic} has no partition ${p}`)
        partitions.push({ topic, partition: p })
      }
    }
  }
  const spec: OffsetResetSpec =
    values['to-earliest'] === true
      ? { to: 'earliest' }
      : values['to-latest'] === true
        ? { to: 'latest' }
        : values['to-datetime'] !== undefined
          ? { to: 'datetime', timestampMs: parseTime(values['to-datetime'], 'to-datetime') }
          : values['to-offset'] !== undefined
            ? { to: 'offset', offset: offsetFlag(values['to-offset']) }
            : { to: 'shift', by: shiftFlag(values['shift-by']!) }
  const plan = await planOffsetReset(client, group, values['all-topics'] === true ? null : partitions, spec)
  const execute = values.execute === true
  if (execute) await applyOffsetReset(client, group, plan)
  if (values.json === true) printJson({ group, executed: execute, partitions: plan })
  else {
    printTable(
      ['TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'NEW-OFFSET'],
      plan.map((p) => [p.topic, p.partition, p.currentOffset, p.newOffset]),
    )
    process.stdout.write(
      execute
        ? `reset ${plan.length} partition(s) of group ${group}\n`
        : 'dry run: nothing changed; add --execute to apply\n',
    )
  }
  return 0
}

function offsetFlag(text: string): bigint {
  if (!/^\d+$/.test(text)) throw new UsageError('--to-offset takes an offset >= 0')
  return BigInt(text)
}

function shiftFlag(text: string): bigint {
  if (!/^-?\d+$/.test(text)) throw new UsageError('--shift-by takes an integer')
  return BigInt(text)
}
