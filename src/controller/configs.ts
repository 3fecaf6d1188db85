/**
 * Config decisions of the active controller: AlterConfigs (a resource's whole dynamic set replaced)
 * and IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) on TOPIC and BROKER resources become
 * ConfigRecords, with Kafka 4.0's validation, messages and error codes. Pure.
 */
import {
  type BrokerConfigLayers,
  brokerConfigDef,
  type ConfigLayer,
  resolveTopicConfig,
  type TopicConfigLayers,
  topicConfigDef,
  validateBrokerConfigs,
  validateTopicConfigs,
} from '../config/index.ts'
import { ConfigResourceType, configKey, type MetadataImage } from '../metadata/index.ts'
import { BrokerId, TopicName } from '../model/index.ts'
import {
  type AlterConfigsRequestData,
  type AlterConfigsResponseData,
  type CreateTopicsResponseData,
  ErrorCode,
  type IncrementalAlterConfigsRequestData,
  type IncrementalAlterConfigsResponseData,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'
import { topicNameProblem } from './topics.ts'

/**
 * The most records one request may write (Kafka's QuorumController.MAX_RECORDS_PER_USER_OP): past
 * it the whole request fails with POLICY_VIOLATION, as Kafka's BoundedList makes it fail.
 */
export const CONFIG_RECORDS_PER_REQUEST_MAX = 10_000

/** IncrementalAlterConfigs' operations (Kafka's AlterConfigOp.OpType ids). */
export const AlterConfigOp = { Set: 0, Delete: 1, Append: 2, Subtract: 3 } as const
const OP_NAMES = ['SET', 'DELETE', 'APPEND', 'SUBTRACT'] as const

/** Where a node's broker-side config layers come from besides the image. */
export interface NodeConfigSource {
  /** The node whose DYNAMIC_BROKER_CONFIG layer (BROKER resource named by its id) applies. */
  readonly nodeId: number
  /** Its server.properties with `--set` applied: STATIC_BROKER_CONFIG. */
  readonly staticBroker: ConfigLayer
}

const NO_CONFIGS: ConfigLayer = new Map()

/** A node's broker layers: its static config, and the dynamic per-broker and cluster-default sets. */
export function brokerConfigLayers(image: MetadataImage, node: NodeConfigSource): BrokerConfigLayers {
  return {
    dynamicBroker: image.configs.get(configKey(ConfigResourceType.Broker, String(node.nodeId))) ?? NO_CONFIGS,
    dynamicDefault: image.configs.get(configKey(ConfigResourceType.Broker, '')) ?? NO_CONFIGS,
    staticBroker: node.staticBroker,
  }
}

/** A topic's layers as `node` resolves them: the topic's overrides over the node's broker layers. */
export function topicConfigLayers(
  image: MetadataImage,
  topic: string,
  node: NodeConfigSource,
): TopicConfigLayers {
  return {
    ...brokerConfigLayers(image, node),
    topic: image.configs.get(configKey(ConfigResourceType.Topic, topic)) ?? NO_CONFIGS,
  }
}

/**
 * The configs CreateTopics v5+ returns for a created topic, as Kafka's controller builds them
 * (ReplicationControlManager with KafkaConfigSchema.resolveEffectiveTopicConfigs): every topic key,
 * sorted by name, with its effective value (null when sensitive) and source.
 */
export function createdTopicConfigs(
  image: MetadataImage,
  overrides: ReadonlyMap<string, string>,
  node: NodeConfigSource,
): CreateTopicsResponseData.CreatableTopicConfigsIn[] {
  const effective = resolveTopicConfig({ ...brokerConfigLayers(image, node), topic: overrides })
  return [...effective.entries()]
    .sort((a, b) => (a.def.name < b.def.name ? -1 : a.def.name > b.def.name ? 1 : 0))
    .map((e) => ({
      name: e.def.name,
      value: e.def.sensitive ? null : e.text,
      readOnly: e.def.readOnly,
      configSource: e.source,
      isSensitive: e.def.sensitive,
    }))
}

export interface ConfigDecisionOptions extends NodeConfigSource {
  /** The controllers' ids: a BROKER resource may name one that is not a registered broker (as Kafka). */
  readonly controllerIds?: readonly number[]
}

interface Failure {
  readonly errorCode: ErrorCode
  readonly errorMessage: string
}

type ResourceResponse = AlterConfigsResponseData.AlterConfigsResourceResponseIn

const fail = (errorCode: ErrorCode, errorMessage: string): Failure => ({ errorCode, errorMessage })

/** The parts of an AlterConfigs or IncrementalAlterConfigs resource the checks below read. */
export interface AlterConfigsResourceShape {
  readonly resourceType: number
  readonly resourceName: string
  readonly configs: ReadonlyArray<{
    readonly name: string
    readonly value: string | null
    readonly configOperation?: number
  }>
}

/**
 * Kafka's broker-side preprocessing of one resource (ConfigAdminManager.preprocess), short of the
 * receiving node's id check: the resource type is TOPIC or BROKER, no key appears twice, values are
 * not null (except for DELETE), operations are known. Null when the resource passes.
 */
export function alterConfigsResourceProblem(
  resource: AlterConfigsResourceShape,
  incremental: boolean,
): Failure | null {
  const type = resource.resourceType
  if (type !== ConfigResourceType.Topic && type !== ConfigResourceType.Broker)
    return fail(ErrorCode.InvalidRequest, `Unknown resource type ${type}`)
  const names = resource.configs.map((c) => c.name)
  if (new Set(names).size !== names.length)
    return fail(ErrorCode.InvalidRequest, 'Error due to duplicate config keys')
  const nulls = resource.configs
    .filter((c) => c.value === null && !(incremental && c.configOperation === AlterConfigOp.Delete))
    .map((c) => c.name)
  if (nulls.length > 0)
    return fail(ErrorCode.InvalidRequest, `Null value not supported for : ${nulls.join(', ')}`)
  if (incremental) {
    const bad = resource.configs.find((c) => OP_NAMES[c.configOperation ?? -1] === undefined)
    if (bad !== undefined)
      return fail(ErrorCode.InvalidRequest, `Unknown operations type ${bad.configOperation}`)
  }
  return null
}

/**
 * Kafka's resource-name checks (ControllerConfigurationValidator): a topic name must be legal and
 * not empty; a broker name empty (the cluster default) or a non-negative integer.
 */
function nameProblem(type: number, name: string): Failure | null {
  if (type === ConfigResourceType.Topic) {
    if (name === '') return fail(ErrorCode.InvalidRequest, 'Default topic resources are not allowed.')
    const problem = topicNameProblem(name)
    return problem === null ? null : fail(ErrorCode.InvalidTopicException, problem)
  }
  if (name === '') return null
  const id = javaParseInt(name)
  if (id === null) return fail(ErrorCode.InvalidRequest, 'Unable to parse broker name as a base 10 number.')
  if (id < 0) return fail(ErrorCode.InvalidRequest, 'Invalid negative broker ID.')
  return null
}

/** Java's Integer.parseInt: an optional sign, decimal digits, within 32 bits; else null. */
export function javaParseInt(text: string): number | null {
  if (!/^[+-]?[0-9]+$/.test(text)) return null
  const n = Number(text)
  return n >= -2147483648 && n <= 2147483647 ? n : null
}

/** Kafka's existence checks, made after the content is validated (QuorumController's checker). */
function existenceProblem(
  image: MetadataImage,
  type: number,
  name: string,
  options: ConfigDecisionOptions,
): Failure | null {
  if (type === ConfigResourceType.Topic) {
    if (image.topicsByName.has(TopicName(name))) return null
    return fail(ErrorCode.UnknownTopicOrPartition, `The topic '${name}' does not exist.`)
  }
  if (name === '') return null
  const id = javaParseInt(name) ?? -1
  if (image.brokers.has(BrokerId(id)) || (options.controllerIds ?? []).includes(id)) return null
  return fail(ErrorCode.BrokerIdNotRegistered, `No node with id ${id} found.`)
}

/**
 * The content checks: a topic's whole resulting set (LogConfig.validate: INVALID_CONFIG), or a
 * broker's (DynamicBrokerConfig.validate on the forwarding broker: INVALID_REQUEST, KAFKA-13609),
 * including Kafka's checks across keys on the config the broker would then run with.
 */
function contentProblem(
  image: MetadataImage,
  type: number,
  name: string,
  configs: ReadonlyMap<string, string>,
  options: ConfigDecisionOptions,
): Failure | null {
  const layers = brokerConfigLayers(image, options)
  if (type === ConfigResourceType.Topic) {
    const r = validateTopicConfigs(configs, layers)
    return r.ok ? null : fail(ErrorCode.InvalidConfig, r.error)
  }
  const perBroker = name !== ''
  const r = validateBrokerConfigs(configs, perBroker ? 'broker' : 'cluster-default')
  if (!r.ok) return fail(ErrorCode.InvalidRequest, r.error)
  // The broker's would-be config: static < dynamic default < dynamic per-broker.
  const merged = new Map(options.staticBroker)
  const overlay = (layer: ConfigLayer | undefined) => {
    for (const [k, v] of layer ?? []) merged.set(k, v)
  }
  if (perBroker) {
    overlay(layers.dynamicDefault)
    overlay(configs)
  } else {
    overlay(configs)
    overlay(layers.dynamicBroker)
  }
  const whole = validateBrokerConfigs(merged, 'static')
  return whole.ok ? null : fail(ErrorCode.InvalidRequest, whole.error)
}

function configRecord(type: number, resourceName: string, name: string, value: string | null): PendingRecord {
  return pendingRecord(T.Config, 0, { resourceType: type, resourceName, name, value })
}

/** Java's String.split(","): trailing empty strings dropped, but "" splits into [""]. */
function javaSplit(text: string): string[] {
  if (text === '') return ['']
  const parts = text.split(',')
  while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop()
  return parts
}

/** Kafka's ConfigurationControlManager.getParts: the stored value, else the key's default, split. */
function listParts(value: string | null, type: number, key: string): string[] {
  const def = type === ConfigResourceType.Topic ? topicConfigDef(key) : brokerConfigDef(key)
  const text = value ?? def?.default ?? null
  return text === null ? [] : javaSplit(text).filter((p) => p !== '')
}

function isListKey(type: number, key: string): boolean {
  const def = type === ConfigResourceType.Topic ? topicConfigDef(key) : brokerConfigDef(key)
  return def?.type === 'list'
}

function incrementalResource(
  image: MetadataImage,
  resource: IncrementalAlterConfigsRequestData.AlterConfigsResource,
  options: ConfigDecisionOptions,
): Failure | PendingRecord[] {
  const problem = alterConfigsResourceProblem(resource, true)
  if (problem !== null) return problem
  const { resourceType: type, resourceName: name } = resource
  const badName = nameProblem(type, name)
  if (badName !== null) return badName
  const current = image.configs.get(configKey(type, name)) ?? NO_CONFIGS
  const next = new Map(current)
  const records: PendingRecord[] = []
  for (const c of resource.configs) {
    const currentValue = current.get(c.name) ?? null
    let value: string | null
    switch (c.configOperation) {
      case AlterConfigOp.Set:
        value = c.value
        break
      case AlterConfigOp.Delete:
        value = null
        break
      default: {
        const op = OP_NAMES[c.configOperation] ?? 'SET'
        if (!isListKey(type, c.name)) {
          // The forwarding broker refuses a BROKER key first (ConfigAdminManager), the controller a topic key.
          return type === ConfigResourceType.Broker
            ? fail(
                ErrorCode.InvalidConfig,
                `Config value ${op.toLowerCase()} is not allowed for config key: ${c.name}`,
              )
            : fail(ErrorCode.InvalidConfig, `Can't ${op} to key ${c.name} because its type is not LIST.`)
        }
        const parts = listParts(currentValue, type, c.name)
        for (const part of javaSplit(c.value ?? '')) {
          if (c.configOperation === AlterConfigOp.Append) {
            if (!parts.includes(part)) parts.push(part)
          } else {
            const at = parts.indexOf(part)
            if (at !== -1) parts.splice(at, 1)
          }
        }
        value = parts.join(',')
      }
    }
    if (value === null) next.delete(c.name)
    else next.set(c.name, value)
    // KAFKA-14136: BROKER records are written even when unchanged, so brokers reload.
    if (value !== currentValue || type === ConfigResourceType.Broker)
      records.push(configRecord(type, name, c.name, value))
  }
  return (
    contentProblem(image, type, name, next, options) ??
    existenceProblem(image, type, name, options) ??
    records
  )
}

function legacyResource(
  image: MetadataImage,
  resource: AlterConfigsRequestData.AlterConfigsResource,
  options: ConfigDecisionOptions,
): Failure | PendingRecord[] {
  const problem = alterConfigsResourceProblem(resource, false)
  if (problem !== null) return problem
  const { resourceType: type, resourceName: name } = resource
  const badName = nameProblem(type, name)
  if (badName !== null) return badName
  const current = image.configs.get(configKey(type, name)) ?? NO_CONFIGS
  const next = new Map<string, string>()
  const records: PendingRecord[] = []
  for (const c of resource.configs) {
    const value = c.value ?? ''
    next.set(c.name, value)
    if (current.get(c.name) !== value || type === ConfigResourceType.Broker)
      records.push(configRecord(type, name, c.name, value))
  }
  // Legacy AlterConfigs replaces the whole set: every key not given is deleted.
  for (const key of current.keys()) if (!next.has(key)) records.push(configRecord(type, name, key, null))
  return (
    contentProblem(image, type, name, next, options) ??
    existenceProblem(image, type, name, options) ??
    records
  )
}

function decide<R extends AlterConfigsResourceShape>(
  resources: readonly R[],
  validateOnly: boolean,
  one: (resource: R) => Failure | PendingRecord[],
): Decision<{ responses: ResourceResponse[] }> {
  const responses: ResourceResponse[] = []
  const records: PendingRecord[] = []
  for (const resource of resources) {
    const outcome = one(resource)
    const echo = { resourceType: resource.resourceType, resourceName: resource.resourceName }
    if (Array.isArray(outcome)) {
      records.push(...outcome)
      responses.push({ ...echo, errorCode: ErrorCode.None, errorMessage: null })
    } else {
      responses.push({ ...echo, ...outcome })
    }
  }
  if (records.length > CONFIG_RECORDS_PER_REQUEST_MAX) {
    const errorMessage = 'Unable to perform excessively large batch operation.'
    return {
      records: [],
      response: {
        responses: responses.map((r) => ({ ...r, errorCode: ErrorCode.PolicyViolation, errorMessage })),
      },
    }
  }
  return { records: validateOnly ? [] : records, response: { responses } }
}

/**
 * IncrementalAlterConfigs (all versions): each resource's operations applied to its stored set,
 * validated as a whole, and written as one ConfigRecord per changed key (every key for BROKER
 * resources, as Kafka does); a resource that fails changes nothing, the others go ahead. APPEND and
 * SUBTRACT work on list keys (starting from the default when unset), as Kafka's controller does:
 * APPEND skips values already present, SUBTRACT removes one occurrence of each.
 */
export function incrementalAlterConfigs(
  image: MetadataImage,
  req: IncrementalAlterConfigsRequestData.IncrementalAlterConfigsRequest,
  options: ConfigDecisionOptions,
): Decision<IncrementalAlterConfigsResponseData.IncrementalAlterConfigsResponseIn> {
  return decide(req.resources, req.validateOnly, (r) => incrementalResource(image, r, options))
}

/**
 * AlterConfigs (all versions, deprecated by Kafka): each resource's dynamic set replaced by the
 * request's, keys not named deleted. Validation and outcomes as incrementalAlterConfigs.
 */
export function alterConfigs(
  image: MetadataImage,
  req: AlterConfigsRequestData.AlterConfigsRequest,
  options: ConfigDecisionOptions,
): Decision<AlterConfigsResponseData.AlterConfigsResponseIn> {
  return decide(req.resources, req.validateOnly, (r) => legacyResource(image, r, options))
}
