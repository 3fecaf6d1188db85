/**
 * `weir acl create|list|delete`: ACLs over CreateAcls, DescribeAcls and DeleteAcls, with
 * kafka-acls' flags and its text (`Current ACLs for resource `ResourcePattern(...)`:` and one
 * `(principal=..., host=..., operation=..., permissionType=...)` line per ACL).
 */
import { type ClusterClient, KafkaError } from '../client/index.ts'
import { apis, ErrorCode } from '../protocol/index.ts'
import {
  AclOperation,
  AclPermissionType,
  aclKey,
  aclOperationFromCode,
  aclOperationName,
  CLUSTER_RESOURCE_NAME,
  compareAcls,
  PatternType,
  parseAclOperation,
  patternTypeFromCode,
  patternTypeName,
  permissionTypeFromCode,
  permissionTypeName,
  ResourceType,
  resourceTypeFromCode,
  resourceTypeName,
  type StandardAcl,
  tryParsePrincipal,
  WILDCARD_HOST,
} from '../security/index.ts'
import {
  COMMON_USAGE,
  type parse,
  printJson,
  runSubcommands,
  UsageError,
  withoutArguments,
} from './command-support.ts'

export const ACL_USAGE = `Usage: weir acl <create|list|delete> [options]

  weir acl create --allow-principal|--deny-principal TYPE:NAME ... RESOURCE ... [--operation OP ...] [--host HOST ...]
  weir acl list [RESOURCE ...] [--principal TYPE:NAME ...]
  weir acl delete RESOURCE ... [--allow-principal|--deny-principal|--principal TYPE:NAME ...] [--operation OP ...] [--host HOST ...]

Resources (each repeatable, any mix):
  --topic NAME  --group NAME  --transactional-id NAME  --cluster
  --resource-pattern-type literal|prefixed|match|any   (default literal; create takes literal or prefixed)
  A literal '*' names every resource of its type; match finds the literal name, '*' and every prefix.

create makes one ACL per principal, host, operation and resource (host default '*', operation
default All). Operations: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction,
DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens.
list without a resource lists every ACL. delete removes every ACL that matches: an operation,
principal or host left out matches any.

${COMMON_USAGE}`

const OPTIONS = {
  'allow-principal': { type: 'string', multiple: true },
  'deny-principal': { type: 'string', multiple: true },
  principal: { type: 'string', multiple: true },
  operation: { type: 'string', multiple: true },
  host: { type: 'string', multiple: true },
  topic: { type: 'string', multiple: true },
  group: { type: 'string', multiple: true },
  'transactional-id': { type: 'string', multiple: true },
  cluster: { type: 'boolean' },
  'resource-pattern-type': { type: 'string' },
} as const

type Values = ReturnType<typeof parse<typeof OPTIONS>>['values']

export function runAcl(argv: readonly string[]): Promise<number> {
  return runSubcommands('acl', ACL_USAGE, OPTIONS, argv, {
    create: withoutArguments(create),
    list: withoutArguments(list),
    delete: withoutArguments(remove),
  })
}

/** A resource pattern, or a filter of them: type, name (null: any) and pattern type. */
interface Pattern {
  readonly resourceType: number
  readonly resourceName: string | null
  readonly patternType: number
}

type Acl = StandardAcl

/** An ACL as CreateAcls, DescribeAcls and DeleteAcls carry it: the codes as numbers. */
interface WireAcl {
  readonly resourceType: number
  readonly resourceName: string
  readonly patternType: number
  readonly principal: string
  readonly host: string
  readonly operation: number
  readonly permissionType: number
}

function aclOf(a: WireAcl): Acl {
  return {
    resourceType: resourceTypeFromCode(a.resourceType),
    resourceName: a.resourceName,
    patternType: patternTypeFromCode(a.patternType),
    principal: a.principal,
    host: a.host,
    operation: aclOperationFromCode(a.operation),
    permissionType: permissionTypeFromCode(a.permissionType),
  }
}

const PATTERN_TYPES: Readonly<Record<string, number>> = {
  literal: PatternType.Literal,
  prefixed: PatternType.Prefixed,
  match: PatternType.Match,
  any: PatternType.Any,
}

function patternType(values: Values): number {
  const text = values['resource-pattern-type'] ?? 'literal'
  const type = PATTERN_TYPES[text.toLowerCase()]
  if (type === undefined)
    throw new UsageError(`--resource-pattern-type must be literal, prefixed, match or any, not '${text}'`)
  return type
}

/** The resources the flags name; empty when none is named. */
function patterns(values: Values): Pattern[] {
  const type = patternType(values)
  const of = (resourceType: number, names: readonly string[] | undefined) =>
    (names ?? []).map((resourceName) => {
      if (resourceName === '') throw new UsageError('a resource name cannot be empty')
      return { resourceType, resourceName, patternType: type }
    })
  return [
    ...of(ResourceType.Topic, values.topic),
    ...of(ResourceType.Group, values.group),
    ...of(ResourceType.TransactionalId, values['transactional-id']),
    ...(values.cluster === true
      ? [{ resourceType: ResourceType.Cluster, resourceName: CLUSTER_RESOURCE_NAME, patternType: type }]
      : []),
  ]
}

function principals(list: readonly string[] | undefined): string[] {
  return (list ?? []).map((text) => {
    if (tryParsePrincipal(text) === null)
      throw new UsageError(`principal '${text}' is not TYPE:NAME (for example User:alice)`)
    return text
  })
}

/** The principals with their permission: ALLOW, DENY, or (for --principal) either. */
function entries(values: Values): Array<{ principal: string; permissionType: number }> {
  return [
    ...principals(values['allow-principal']).map((principal) => ({
      principal,
      permissionType: AclPermissionType.Allow,
    })),
    ...principals(values['deny-principal']).map((principal) => ({
      principal,
      permissionType: AclPermissionType.Deny,
    })),
    ...principals(values.principal).map((principal) => ({
      principal,
      permissionType: AclPermissionType.Any,
    })),
  ]
}

function operations(values: Values): number[] {
  return (values.operation ?? []).map((name) => {
    const operation = parseAclOperation(name)
    if (operation === AclOperation.Unknown || operation === AclOperation.Any)
      throw new UsageError(`unknown operation '${name}'`)
    return operation
  })
}

/** Kafka's ResourcePattern.toString. */
function patternText(a: Acl): string {
  return `ResourcePattern(resourceType=${resourceTypeName(a.resourceType)}, name=${a.resourceName}, patternType=${patternTypeName(a.patternType)})`
}

/** Kafka's AccessControlEntry.toString. */
function entryText(a: Acl): string {
  return `(principal=${a.principal}, host=${a.host}, operation=${aclOperationName(a.operation)}, permissionType=${permissionTypeName(a.permissionType)})`
}

function aclJson(a: Acl) {
  return {
    resourceType: resourceTypeName(a.resourceType),
    resourceName: a.resourceName,
    patternType: patternTypeName(a.patternType),
    principal: a.principal,
    host: a.host,
    operation: aclOperationName(a.operation),
    permissionType: permissionTypeName(a.permissionType),
  }
}

/** ACLs grouped by resource pattern, as kafka-acls prints them. */
function printAcls(heading: string, acls: readonly Acl[]): void {
  const groups = new Map<string, Acl[]>()
  for (const a of acls) {
    const key = patternText(a)
    groups.set(key, [...(groups.get(key) ?? []), a])
  }
  let out = ''
  for (const [pattern, group] of groups)
    out += `${heading} \`${pattern}\`:\n${group.map((a) => `\t${entryText(a)}`).join('\n')}\n\n`
  process.stdout.write(out)
}

async function create(client: ClusterClient, values: Values): Promise<number> {
  const resources = patterns(values)
  const who = entries(values)
  if (values.principal !== undefined)
    throw new UsageError('create takes --allow-principal or --deny-principal, not --principal')
  if (who.length === 0) throw new UsageError('give --allow-principal or --deny-principal')
  if (resources.length === 0)
    throw new UsageError('give a resource: --topic, --group, --transactional-id or --cluster')
  const type = patternType(values)
  if (type !== PatternType.Literal && type !== PatternType.Prefixed)
    throw new UsageError(
      `a --resource-pattern-type of '${values['resource-pattern-type']}' is not valid when creating ACLs`,
    )
  const ops = operations(values)
  const hosts = values.host ?? [WILDCARD_HOST]
  const acls: Acl[] = []
  for (const r of resources)
    for (const e of who)
      for (const host of hosts)
        for (const operation of ops.length > 0 ? ops : [AclOperation.All])
          acls.push(
            aclOf({
              resourceType: r.resourceType,
              resourceName: r.resourceName!,
              patternType: r.patternType,
              principal: e.principal,
              host,
              operation,
              permissionType: e.permissionType,
            }),
          )
  const { response } = await client.request(apis.CreateAcls, {
    creations: acls.map((a) => ({ ...a, resourcePatternType: a.patternType })),
  })
  const failed = response.results.findIndex((r) => r.errorCode !== ErrorCode.None)
  if (failed >= 0) {
    const r = response.results[failed]!
    throw new KafkaError(r.errorCode, r.errorMessage ?? `creating ${entryText(acls[failed]!)} failed`)
  }
  if (values.json === true) printJson(acls.map(aclJson))
  else printAcls('Added ACLs for resource', acls)
  return 0
}

/** A filter field: the given values, or one null (any) when none is given. */
function orAny<T>(list: readonly T[]): Array<T | null> {
  return list.length > 0 ? [...list] : [null]
}

function filters(values: Values, resources: readonly Pattern[]) {
  const out = []
  for (const r of resources.length > 0
    ? resources
    : [{ resourceType: ResourceType.Any, resourceName: null, patternType: PatternType.Any }])
    for (const e of orAny(entries(values)))
      for (const host of orAny(values.host ?? []))
        for (const operation of orAny(operations(values)))
          out.push({
            resourceTypeFilter: r.resourceType,
            resourceNameFilter: r.resourceName,
            patternTypeFilter: r.patternType,
            principalFilter: e?.principal ?? null,
            hostFilter: host,
            operation: operation ?? AclOperation.Any,
            permissionType: e?.permissionType ?? AclPermissionType.Any,
          })
  return out
}

async function list(client: ClusterClient, values: Values): Promise<number> {
  const found = new Map<string, Acl>()
  for (const filter of filters(values, patterns(values))) {
    const { response } = await client.request(apis.DescribeAcls, filter)
    if (response.errorCode !== ErrorCode.None) throw new KafkaError(response.errorCode, response.errorMessage)
    for (const r of response.resources)
      for (const a of r.acls) {
        const acl = aclOf({ ...r, ...a })
        found.set(aclKey(acl), acl)
      }
  }
  const acls = [...found.values()].sort(compareAcls)
  if (values.json === true) printJson(acls.map(aclJson))
  else printAcls('Current ACLs for resource', acls)
  return 0
}

async function remove(client: ClusterClient, values: Values): Promise<number> {
  const resources = patterns(values)
  // As kafka-acls: removing needs a resource, so that a bare delete does not wipe every ACL.
  if (resources.length === 0)
    throw new UsageError('give a resource: --topic, --group, --transactional-id or --cluster')
  const { response } = await client.request(apis.DeleteAcls, { filters: filters(values, resources) })
  const removed: Acl[] = []
  for (const r of response.filterResults) {
    if (r.errorCode !== ErrorCode.None) throw new KafkaError(r.errorCode, r.errorMessage)
    for (const m of r.matchingAcls) {
      if (m.errorCode !== ErrorCode.None) throw new KafkaError(m.errorCode, m.errorMessage)
      removed.push(aclOf(m))
    }
  }
  const acls = removed.sort(compareAcls)
  if (values.json === true) printJson(acls.map(aclJson))
  else if (acls.length === 0) process.stdout.write('no ACL matched\n')
  else printAcls('Removed ACLs for resource', acls)
  return 0
}
