/** `weir group list|describe|delete|reset-offsets`: consumer groups over ListGroups, DescribeGroups, OffsetFetch, DeleteGroups, OffsetCommit. */
import {
  type ClusterClient,
  ConnectionError,
  commitOffsets,
  decodeAssignment,
  EARLIEST,
  fetchCommitted,
  KafkaError,
  LATEST,
  listOffsets,
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
  const md = await client.refresh()
  const groups = new Map<string, { group: string; state: string; protocolType: string }>()
  await Promise.all(
    [...md.brokers.keys()].map(async (id) => {
      let response: Awaited<ReturnType<typeof listGroupsOf>>
      try {
        response = await listGroupsOf(client, id)
      } catch (e) {
        // One broker down should not hide the others' groups: say so and go on.
        if (!(e instanceof ConnectionError)) throw e
        process.stderr.write(
          `weir group list: broker ${id} did not answer (${e.message}); its groups are missing\n`,
        )
        return
      }
      if (response.errorCode !== ErrorCode.None) throw new KafkaError(response.errorCode)
      for (const g of response.groups)
        groups.set(g.groupId, {
          group: g.groupId,
          state: g.groupState === '' ? '-' : g.groupState,
          protocolType: g.protocolType,
        })
    }),
  )
  const rows = [...groups.values()].sort((a, b) => a.group.localeCompare(b.group))
  if (values.json === true) printJson(rows)
  else
    printTable(
      ['GROUP', 'STATE', 'PROTOCOL-TYPE'],
      rows.map((r) => [r.group, r.state, r.protocolType === '' ? '-' : r.protocolType]),
    )
  return 0
}

async function listGroupsOf(client: ClusterClient, brokerId: number) {
  return (await client.request(apis.ListGroups, { statesFilter: [], typesFilter: [] }, { to: brokerId }))
    .response
}

interface Described {
  group: string
  state: string
  protocolType: string
  protocol: string
  members: Array<{
    memberId: string
    clientId: string
    host: string
    partitions: Array<{ topic: string; partition: number }>
  }>
}

async function describeGroup(client: ClusterClient, group: string): Promise<Described> {
  return client.retrying(
    async () => {
      const coordinator = await client.coordinator(group)
      const { response } = await client.request(
        apis.DescribeGroups,
        { groups: [GroupId(group)], includeAuthorizedOperations: false },
        { to: coordinator },
      )
      const g = response.groups[0]
      if (g === undefined)
        throw new KafkaError(ErrorCode.UnknownServerError, 'DescribeGroups returned no group')
      // DescribeGroups v6+ (KIP-1043) answers a group that does not exist so; older versions Dead.
      if (g.errorCode === ErrorCode.GroupIdNotFound)
        return { group, state: 'Dead', protocolType: '', protocol: '', members: [] }
      if (g.errorCode !== ErrorCode.None) throw new KafkaError(g.errorCode, `group '${group}'`)
      return {
        group,
        state: g.groupState,
        protocolType: g.protocolType,
        protocol: g.protocolData,
        members: g.members.map((m) => ({
          memberId: m.memberId,
          clientId: m.clientId,
          host: m.clientHost,
          partitions: g.protocolType === 'consumer' ? safeAssignment(m.memberAssignment) : [],
        })),
      }
    },
    () => client.forgetCoordinator(group),
  )
}

function safeAssignment(bytes: Buffer): Array<{ topic: string; partition: number }> {
  try {
    return decodeAssignment(bytes)
  } catch {
    return []
  }
}

async function describe(client: ClusterClient, groups: readonly string[], values: Values): Promise<number> {
  if (groups.length === 0) throw new UsageError('give the groups to describe')
  const out = []
  for (const group of groups) {
    const d = await describeGroup(client, group)
    if (d.state === 'Dead') throw new KafkaError(ErrorCode.GroupIdNotFound, `group '${group}' does not exist`)
    const committed = (await fetchCommitted(client, group, null)).filter((c) => c.offset >= 0n)
    const owners = new Map<string, Described['members'][number]>()
    for (const m of d.members) for (const p of m.partitions) owners.set(`${p.topic}\u0000${p.partition}`, m)
    const keys = new Map<string, { topic: string; partition: number }>()
    for (const c of committed) keys.set(`${c.topic}\u0000${c.partition}`, c)
    for (const m of d.members) for (const p of m.partitions) keys.set(`${p.topic}\u0000${p.partition}`, p)
    const partitions = [...keys.values()].sort(
      (a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition,
    )
    const ends = new Map<string, bigint>()
    if (partitions.length > 0)
      for (const e of await listOffsets(
        client,
        partitions.map((p) => ({ ...p, timestamp: LATEST })),
      ))
        ends.set(`${e.topic}\u0000${e.partition}`, e.offset)
    const offsets = partitions.map((p) => {
      const k = `${p.topic}\u0000${p.partition}`
      const current =
        committed.find((c) => c.topic === p.topic && c.partition === p.partition)?.offset ?? null
      const end = ends.get(k) ?? null
      const owner = owners.get(k)
      return {
        topic: p.topic,
        partition: p.partition,
        currentOffset: current,
        logEndOffset: end,
        lag: current !== null && end !== null ? end - current : null,
        memberId: owner?.memberId ?? null,
        host: owner?.host ?? null,
        clientId: owner?.clientId ?? null,
      }
    })
    out.push({
      group,
      state: d.state,
      protocolType: d.protocolType,
      protocol: d.protocol,
      members: d.members,
      offsets,
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
  const committed = await fetchCommitted(client, group, null)
  let partitions: Array<{ topic: string; partition: number }> = []
  if (values['all-topics'] === true) partitions = committed.filter((c) => c.offset >= 0n)
  else {
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
  const key = (p: { topic: string; partition: number }) => `${p.topic}\u0000${p.partition}`
  const current = new Map(committed.filter((c) => c.offset >= 0n).map((c) => [key(c), c.offset]))
  const earliest = new Map<string, bigint>()
  const latest = new Map<string, bigint>()
  if (partitions.length > 0) {
    for (const e of await listOffsets(
      client,
      partitions.map((p) => ({ ...p, timestamp: EARLIEST })),
    ))
      earliest.set(key(e), e.offset)
    for (const e of await listOffsets(
      client,
      partitions.map((p) => ({ ...p, timestamp: LATEST })),
    ))
      latest.set(key(e), e.offset)
  }
  let target = new Map<string, bigint>()
  const clamp = (p: { topic: string; partition: number }, o: bigint) => {
    const lo = earliest.get(key(p)) ?? 0n
    const hi = latest.get(key(p)) ?? o
    return o < lo ? lo : o > hi ? hi : o
  }
  if (values['to-earliest'] === true) target = new Map(partitions.map((p) => [key(p), earliest.get(key(p))!]))
  else if (values['to-latest'] === true)
    target = new Map(partitions.map((p) => [key(p), latest.get(key(p))!]))
  else if (values['to-datetime'] !== undefined) {
    const ts = parseTime(values['to-datetime'], 'to-datetime')
    for (const e of await listOffsets(
      client,
      partitions.map((p) => ({ ...p, timestamp: ts })),
    ))
      target.set(key(e), e.offset)
  } else if (values['to-offset'] !== undefined) {
    if (!/^\d+$/.test(values['to-offset'])) throw new UsageError('--to-offset takes an offset >= 0')
    const o = BigInt(values['to-offset'])
    target = new Map(partitions.map((p) => [key(p), clamp(p, o)]))
  } else {
    if (!/^-?\d+$/.test(values['shift-by']!)) throw new UsageError('--shift-by takes an integer')
    const by = BigInt(values['shift-by']!)
    target = new Map(
      partitions.map((p) => [key(p), clamp(p, (current.get(key(p)) ?? earliest.get(key(p)) ?? 0n) + by)]),
    )
  }
  const plan = partitions
    .map((p) => ({
      topic: p.topic,
      partition: p.partition,
      currentOffset: current.get(key(p)) ?? null,
      newOffset: target.get(key(p))!,
    }))
    .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition)
  const execute = values.execute === true
  if (execute && plan.length > 0) {
    const d = await describeGroup(client, group)
    if (d.state !== 'Empty' && d.state !== 'Dead')
      throw new KafkaError(
        ErrorCode.NonEmptyGroup,
        `group '${group}' has active members (state ${d.state}): stop them before resetting its offsets`,
      )
    await commitOffsets(
      client,
      group,
      plan.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.newOffset })),
    )
  }
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
