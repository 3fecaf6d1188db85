/**
 * Effective configs from their layers (topic override, dynamic broker, dynamic cluster default,
 * server.properties, default), DescribeConfigs entries, and validation for CreateTopics, AlterConfigs
 * and server.properties. Layers arrive as plain maps; nothing here reads or stores them.
 */
import { assert } from '../model/index.ts'
import {
  BROKER_CONFIGS,
  type BrokerConfigDef,
  brokerConfigDef,
  brokerConfigSynonyms,
} from './broker-configs.ts'
import {
  type ConfigDef,
  ConfigSource,
  ConfigTypeCode,
  type ConfigValue,
  longToNumber,
  parseConfigValue,
  parseTyped,
  renderConfigValue,
} from './definition.ts'
import { TOPIC_CONFIGS, type TopicConfigDef, topicConfigDef } from './topic-configs.ts'

/** A layer: Kafka key -> value text, as written (server.properties) or stored (ConfigRecord). */
export type ConfigLayer = ReadonlyMap<string, string>

/**
 * The broker-side layers, highest precedence first. A dynamic layer's value counts only for a key
 * Weir lets change dynamically (`BrokerConfigDef.dynamic`); a value that does not parse or validate
 * counts nowhere (as Kafka ignores an invalid dynamic config). Validate layers before storing them.
 */
export interface BrokerConfigLayers {
  /** This broker's dynamic configs (BROKER resource named by its node id): DYNAMIC_BROKER_CONFIG. */
  readonly dynamicBroker?: ConfigLayer
  /** The cluster-wide dynamic defaults (BROKER resource ''): DYNAMIC_DEFAULT_BROKER_CONFIG. */
  readonly dynamicDefault?: ConfigLayer
  /** server.properties with `--set` overrides applied: STATIC_BROKER_CONFIG. */
  readonly staticBroker?: ConfigLayer
}

/** A topic's layers: its own overrides over the broker's. */
export interface TopicConfigLayers extends BrokerConfigLayers {
  /** The topic's overrides (TOPIC resource): DYNAMIC_TOPIC_CONFIG. */
  readonly topic?: ConfigLayer
}

/** One key's effective value and where it came from. */
export interface ResolvedConfig {
  readonly def: ConfigDef
  /** The typed value (see ConfigValue); null when the key has no value (e.g. `log.retention.ms` unset). */
  readonly value: ConfigValue | null
  /** The canonical text, as DescribeConfigs shows it; null when `value` is. */
  readonly text: string | null
  /** The layer that supplied the value (DEFAULT_CONFIG when none did). */
  readonly source: ConfigSource
}

/**
 * The effective configs of a topic or a broker, read by Kafka's names with typed getters. A getter
 * asserts the key is known, of its type and has a value: asking otherwise is a programmer error.
 * Example: `resolveTopicConfig({ topic }).long('retention.ms')` -> 604800000.
 */
export class EffectiveConfig {
  readonly #entries: ReadonlyMap<string, ResolvedConfig>

  constructor(entries: ReadonlyMap<string, ResolvedConfig>) {
    this.#entries = entries
  }

  /** Every key, in catalog order. */
  entries(): IterableIterator<ResolvedConfig> {
    return this.#entries.values()
  }

  has(name: string): boolean {
    return this.#entries.has(name)
  }

  get(name: string): ResolvedConfig {
    const entry = this.#entries.get(name)
    assert(entry !== undefined, `config: unknown key ${name}`)
    return entry
  }

  /** The canonical text (what DescribeConfigs shows), or null. */
  text(name: string): string | null {
    return this.get(name).text
  }

  boolean(name: string): boolean {
    return this.#typed(name, 'boolean') as boolean
  }

  /** An int or short key. */
  int(name: string): number {
    const entry = this.get(name)
    assert(entry.def.type === 'int' || entry.def.type === 'short', `config: ${name} is a ${entry.def.type}`)
    return this.#typed(name, entry.def.type) as number
  }

  /** A long key as a number, saturated at ±Number.MAX_SAFE_INTEGER (Long.MAX_VALUE: "never"). */
  long(name: string): number {
    return longToNumber(this.longExact(name))
  }

  /** A long key, exact. */
  longExact(name: string): bigint {
    return this.#typed(name, 'long') as bigint
  }

  double(name: string): number {
    return this.#typed(name, 'double') as number
  }

  /** A string, class or password key, or null when it has no value (e.g. `broker.rack`). */
  string(name: string): string | null {
    const entry = this.get(name)
    assert(['string', 'class', 'password'].includes(entry.def.type), `config: ${name} is a ${entry.def.type}`)
    return entry.value as string | null
  }

  list(name: string): readonly string[] {
    return this.#typed(name, 'list') as readonly string[]
  }

  #typed(name: string, type: ConfigDef['type']): ConfigValue {
    const entry = this.get(name)
    assert(entry.def.type === type, `config: ${name} is a ${entry.def.type}, not a ${type}`)
    assert(entry.value !== null, `config: ${name} has no value`)
    return entry.value
  }
}

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

interface LayerRef {
  readonly layer: ConfigLayer | undefined
  readonly source: ConfigSource
  /** Whether a key's value in this layer counts. */
  readonly admits: (def: BrokerConfigDef) => boolean
}

function brokerLayerRefs(layers: BrokerConfigLayers): readonly LayerRef[] {
  return [
    {
      layer: layers.dynamicBroker,
      source: ConfigSource.DynamicBrokerConfig,
      admits: (d) => d.dynamic !== 'read-only',
    },
    {
      layer: layers.dynamicDefault,
      source: ConfigSource.DynamicDefaultBrokerConfig,
      admits: (d) => d.dynamic === 'cluster-wide',
    },
    {
      layer: withIdSynonyms(layers.staticBroker),
      source: ConfigSource.StaticBrokerConfig,
      admits: () => true,
    },
  ]
}

/**
 * Kafka's KafkaConfig.populateSynonyms: `broker.id` and `node.id` stand for each other in
 * server.properties, so either one sets both.
 */
function withIdSynonyms(layer: ConfigLayer | undefined): ConfigLayer | undefined {
  if (layer === undefined) return undefined
  const brokerId = layer.get('broker.id')
  const nodeId = layer.get('node.id')
  if (brokerId === undefined && nodeId !== undefined) return new Map([...layer, ['broker.id', nodeId]])
  if (brokerId !== undefined && nodeId === undefined) return new Map([...layer, ['node.id', brokerId]])
  return layer
}

interface Found {
  readonly value: ConfigValue
  readonly text: string
  readonly source: ConfigSource
}

/** A broker key's value from the first layer that has a valid one; undefined: none has. */
function fromBrokerLayers(def: BrokerConfigDef, refs: readonly LayerRef[]): Found | undefined {
  for (const ref of refs) {
    const raw = ref.layer?.get(def.name)
    if (raw === undefined || !ref.admits(def)) continue
    const parsed = parseConfigValue(def, raw)
    if (parsed.ok) return { value: parsed.value, text: parsed.text, source: ref.source }
  }
  return undefined
}

function fromDefault(def: ConfigDef): ResolvedConfig {
  if (def.default === null) return { def, value: null, text: null, source: ConfigSource.DefaultConfig }
  const value = parseTyped(def.type, def.default)
  assert(value !== undefined, `config: the default of ${def.name} does not parse`)
  return { def, value, text: def.default, source: ConfigSource.DefaultConfig }
}

function resolveBrokerKey(def: BrokerConfigDef, refs: readonly LayerRef[]): ResolvedConfig {
  const found = fromBrokerLayers(def, refs)
  return found === undefined ? fromDefault(def) : { def, ...found }
}

/** Every broker key's effective value: dynamic broker ?? dynamic cluster default ?? static ?? default. */
export function resolveBrokerConfig(layers: BrokerConfigLayers): EffectiveConfig {
  const refs = brokerLayerRefs(layers)
  return new EffectiveConfig(new Map(BROKER_CONFIGS.map((def) => [def.name, resolveBrokerKey(def, refs)])))
}

/** A broker synonym's value carried over to the topic key's type and unit (hours -> ms ...). */
function convertSynonym(
  def: TopicConfigDef,
  scale: number,
  value: ConfigValue,
  text: string,
): Found['value'] {
  const scaled = scale === 1 ? text : (BigInt(value as number | bigint) * BigInt(scale)).toString()
  const converted = parseTyped(def.type, scaled)
  assert(converted !== undefined, `config: ${def.name} from a synonym: ${scaled}`)
  return converted
}

/** Kafka's KafkaConfig.logRetentionTimeMillis: any negative retention from the broker means -1. */
function clampRetention(def: TopicConfigDef, value: ConfigValue): ConfigValue {
  return def.name === 'retention.ms' && typeof value === 'bigint' && value < 0n ? -1n : value
}

function resolveTopicKey(
  def: TopicConfigDef,
  topic: ConfigLayer | undefined,
  refs: readonly LayerRef[],
): ResolvedConfig {
  const raw = topic?.get(def.name)
  if (raw !== undefined) {
    const parsed = parseConfigValue(def, raw)
    if (parsed.ok)
      return { def, value: parsed.value, text: parsed.text, source: ConfigSource.DynamicTopicConfig }
  }
  // Kafka: the broker layers merge key by key, then the first synonym with a value wins.
  for (const synonym of def.synonyms) {
    const brokerDef = brokerConfigDef(synonym.name)
    assert(brokerDef !== undefined, `config: ${def.name}'s synonym ${synonym.name} is not a broker key`)
    const found = fromBrokerLayers(brokerDef, refs)
    if (found !== undefined) return derived(def, synonym.scale, found.value, found.text, found.source)
  }
  for (const synonym of def.synonyms) {
    const brokerDef = brokerConfigDef(synonym.name)
    if (brokerDef?.default === null || brokerDef === undefined) continue
    const base = fromDefault(brokerDef)
    assert(base.value !== null && base.text !== null)
    return derived(def, synonym.scale, base.value, base.text, ConfigSource.DefaultConfig)
  }
  return fromDefault(def)
}

function derived(
  def: TopicConfigDef,
  scale: number,
  value: ConfigValue,
  text: string,
  source: ConfigSource,
): ResolvedConfig {
  const converted = clampRetention(def, convertSynonym(def, scale, value, text))
  return { def, value: converted, text: renderConfigValue(def.type, converted), source }
}

/**
 * Every topic key's effective value: the topic's override ?? the broker synonyms in Kafka's order
 * (each from dynamic broker ?? dynamic cluster default ?? static) ?? the synonyms' defaults ?? the
 * topic key's default. Example: with `log.retention.minutes=2000` in server.properties and no
 * override, `retention.ms` is 120000000 (source STATIC_BROKER_CONFIG).
 */
export function resolveTopicConfig(layers: TopicConfigLayers): EffectiveConfig {
  const refs = brokerLayerRefs(layers)
  return new EffectiveConfig(
    new Map(TOPIC_CONFIGS.map((def) => [def.name, resolveTopicKey(def, layers.topic, refs)])),
  )
}

// ---------------------------------------------------------------------------------------------
// DescribeConfigs
// ---------------------------------------------------------------------------------------------

/** One synonym of a DescribeConfigs entry (DescribeConfigsResponse.json's DescribeConfigsSynonym). */
export interface DescribeConfigsSynonym {
  readonly name: string
  readonly value: string | null
  readonly source: ConfigSource
}

/** One DescribeConfigs entry, field for field as DescribeConfigsResourceResult. */
export interface DescribeConfigsEntry {
  readonly name: string
  /** Null when sensitive or when the key has no value. */
  readonly value: string | null
  readonly readOnly: boolean
  /** Version 0's flag: the source is DEFAULT_CONFIG. */
  readonly isDefault: boolean
  readonly configSource: ConfigSource
  readonly isSensitive: boolean
  /** Empty unless `includeSynonyms`. */
  readonly synonyms: readonly DescribeConfigsSynonym[]
  readonly configType: ConfigTypeCode
  /** Null unless `includeDocumentation`. */
  readonly documentation: string | null
}

export interface DescribeOptions {
  readonly includeSynonyms?: boolean
  readonly includeDocumentation?: boolean
  /** The request's ConfigurationKeys: only these (unknown names are left out); null or absent: all. */
  readonly keys?: readonly string[] | null
}

function wanted(options: DescribeOptions): (name: string) => boolean {
  const keys = options.keys
  if (keys === undefined || keys === null) return () => true
  const set = new Set(keys)
  return (name) => set.has(name)
}

/**
 * Kafka's ConfigHelper.configSynonyms: `names` in every layer (dynamic broker, dynamic default,
 * static, then the defaults), layer by layer, then everything before the first entry named `name`
 * dropped. The drop is Kafka's, and it shows: for `retention.ms` (synonyms log.retention.ms,
 * .minutes, .hours) with only `log.retention.hours` set anywhere, no synonym remains.
 */
function configSynonyms(
  name: string,
  names: readonly string[],
  refs: readonly LayerRef[],
  sensitive: boolean,
): DescribeConfigsSynonym[] {
  const all: DescribeConfigsSynonym[] = []
  const add = (synonym: string, value: string, source: ConfigSource) => {
    all.push({ name: synonym, value: sensitive ? null : value, source })
  }
  for (const ref of refs) {
    for (const synonym of names) {
      const raw = ref.layer?.get(synonym)
      if (raw === undefined) continue
      const def = brokerConfigDef(synonym)
      if (def === undefined) {
        add(synonym, raw, ref.source)
      } else if (
        ref.admits(def) &&
        (ref.source === ConfigSource.StaticBrokerConfig || parseConfigValue(def, raw).ok)
      ) {
        add(synonym, raw, ref.source)
      }
    }
  }
  for (const synonym of names) {
    const def = brokerConfigDef(synonym)
    if (def !== undefined && def.default !== null) add(synonym, def.default, ConfigSource.DefaultConfig)
  }
  const first = all.findIndex((s) => s.name === name)
  return first === -1 ? [] : all.slice(first)
}

function entry(
  def: ConfigDef | undefined,
  name: string,
  value: string | null,
  synonyms: readonly DescribeConfigsSynonym[],
  options: DescribeOptions,
): DescribeConfigsEntry {
  const sensitive = def === undefined || def.sensitive
  const source = synonyms[0]?.source ?? ConfigSource.DefaultConfig
  return {
    name,
    value: sensitive ? null : value,
    readOnly: def === undefined || def.readOnly,
    isDefault: source === ConfigSource.DefaultConfig,
    configSource: source,
    isSensitive: sensitive,
    synonyms: options.includeSynonyms === true ? synonyms : [],
    configType: def === undefined ? ConfigTypeCode.unknown : ConfigTypeCode[def.type],
    documentation: options.includeDocumentation === true && def !== undefined ? def.doc : null,
  }
}

/**
 * DescribeConfigs for a TOPIC resource: every topic key (in catalog order) as Kafka's
 * ConfigHelper.createTopicConfigEntry builds it. The value is the effective one; the source and
 * synonyms follow Kafka exactly, including its quirk for multi-synonym keys (see configSynonyms):
 * `retention.ms` derived from `log.retention.minutes` shows source DEFAULT_CONFIG and no synonyms.
 */
export function describeTopicConfigs(
  layers: TopicConfigLayers,
  options: DescribeOptions = {},
): DescribeConfigsEntry[] {
  const refs = brokerLayerRefs(layers)
  const isWanted = wanted(options)
  const effective = resolveTopicConfig(layers)
  const result: DescribeConfigsEntry[] = []
  for (const def of TOPIC_CONFIGS) {
    if (!isWanted(def.name)) continue
    const resolved = effective.get(def.name)
    const primary = def.synonyms[0]?.name
    const synonyms =
      primary === undefined ? [] : configSynonyms(primary, brokerConfigSynonyms(primary), refs, def.sensitive)
    if (resolved.source === ConfigSource.DynamicTopicConfig) {
      synonyms.unshift({
        name: def.name,
        value: def.sensitive ? null : resolved.text,
        source: ConfigSource.DynamicTopicConfig,
      })
    }
    result.push(entry(def, def.name, resolved.text, synonyms, options))
  }
  return result
}

/**
 * DescribeConfigs for this broker's BROKER resource (named by its node id): every broker key Weir
 * knows, then, as Kafka does, every other key present in a layer, shown as sensitive with type
 * UNKNOWN (Weir cannot tell whether it holds a secret).
 */
export function describeBrokerConfigs(
  layers: BrokerConfigLayers,
  options: DescribeOptions = {},
): DescribeConfigsEntry[] {
  const refs = brokerLayerRefs(layers)
  const isWanted = wanted(options)
  const result: DescribeConfigsEntry[] = []
  for (const def of BROKER_CONFIGS) {
    if (!isWanted(def.name)) continue
    const resolved = resolveBrokerKey(def, refs)
    const synonyms = configSynonyms(def.name, brokerConfigSynonyms(def.name), refs, def.sensitive)
    result.push(entry(def, def.name, resolved.text, synonyms, options))
  }
  const unknown = new Set<string>()
  for (const ref of refs)
    for (const name of ref.layer?.keys() ?? []) if (brokerConfigDef(name) === undefined) unknown.add(name)
  for (const name of unknown) {
    if (!isWanted(name)) continue
    result.push(entry(undefined, name, null, configSynonyms(name, [name], refs, true), options))
  }
  return result
}

/**
 * DescribeConfigs for the cluster-default BROKER resource (name ''): only the keys set in the
 * dynamic default layer, with their stored text, and only synonyms from that layer (as Kafka).
 */
export function describeDefaultBrokerConfigs(
  dynamicDefault: ConfigLayer,
  options: DescribeOptions = {},
): DescribeConfigsEntry[] {
  const isWanted = wanted(options)
  const result: DescribeConfigsEntry[] = []
  for (const [name, raw] of dynamicDefault) {
    if (!isWanted(name)) continue
    const def = brokerConfigDef(name)
    const sensitive = def === undefined || def.sensitive
    const synonyms: DescribeConfigsSynonym[] = []
    for (const synonym of brokerConfigSynonyms(name)) {
      const value = dynamicDefault.get(synonym)
      if (value !== undefined) {
        synonyms.push({
          name: synonym,
          value: sensitive ? null : value,
          source: ConfigSource.DynamicDefaultBrokerConfig,
        })
      }
    }
    const first = synonyms.findIndex((s) => s.name === name)
    result.push(entry(def, name, raw, first === -1 ? [] : synonyms.slice(first), options))
  }
  return result
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/** A validation failure: the key at fault and Kafka's message. */
export interface ConfigInvalid {
  readonly ok: false
  readonly key: string
  readonly error: string
}

export type TopicConfigValidation = { readonly ok: true } | ConfigInvalid

/**
 * Validates a topic's complete set of overrides (CreateTopics' configs, or the set AlterConfigs /
 * IncrementalAlterConfigs would leave) as Kafka 4.0's controller does, stopping at the first fault:
 * null values, then unknown keys (`Unknown topic config name: x`), then each value in Kafka's
 * definition order, then the checks across keys (min.compaction.lag.ms <= max.compaction.lag.ms,
 * with the broker defaults from `layers` for keys not given; no remote storage). Kafka answers a
 * failure with INVALID_CONFIG and this message, and changes nothing.
 */
export function validateTopicConfigs(
  configs: ReadonlyMap<string, string | null>,
  layers: BrokerConfigLayers = {},
): TopicConfigValidation {
  const nulls = [...configs].filter(([, v]) => v === null).map(([k]) => k)
  if (nulls.length > 0) {
    return {
      ok: false,
      key: nulls[0] ?? '',
      error: `Null value not supported for topic configs: ${nulls.join(',')}`,
    }
  }
  for (const name of configs.keys()) {
    if (topicConfigDef(name) === undefined)
      return { ok: false, key: name, error: `Unknown topic config name: ${name}` }
  }
  const parsed = new Map<string, ConfigValue>()
  for (const def of TOPIC_CONFIGS) {
    const raw = configs.get(def.name)
    if (raw === undefined || raw === null) continue
    const result = parseConfigValue(def, raw)
    if (!result.ok) return { ok: false, key: def.name, error: result.error }
    parsed.set(def.name, result.value)
  }
  const defaults = resolveTopicConfig(layers)
  const value = (name: string) => parsed.get(name) ?? defaults.get(name).value
  const compactionLagMsMin = value('min.compaction.lag.ms') as bigint
  const compactionLagMsMax = value('max.compaction.lag.ms') as bigint
  if (compactionLagMsMin > compactionLagMsMax) {
    return {
      ok: false,
      key: 'min.compaction.lag.ms',
      error: `conflict topic config setting min.compaction.lag.ms (${compactionLagMsMin}) > max.compaction.lag.ms (${compactionLagMsMax})`,
    }
  }
  if (parsed.get('remote.storage.enable') === true) {
    return {
      ok: false,
      key: 'remote.storage.enable',
      error:
        'Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.',
    }
  }
  return { ok: true }
}

/** Where broker configs come from: server.properties, or a dynamic update of one broker or of all. */
export type BrokerConfigScope = 'static' | 'broker' | 'cluster-default'

export type BrokerConfigValidation =
  | {
      readonly ok: true
      /** Keys Weir does not know: accepted (as Kafka accepts them), for the caller to warn about. */
      readonly unknown: readonly string[]
    }
  | ConfigInvalid

/** Scala's Set.toString, as Kafka's messages show a set of keys. */
function scalaSet(names: readonly string[]): string {
  return `Set(${names.join(', ')})`
}

/**
 * Validates broker configs as Kafka 4.0 does, stopping at the first fault.
 * - `static` (server.properties and `--set`): every known key's value, then the checks across keys
 *   that Kafka's KafkaConfig makes on the log and replica settings. Listener, role and quorum
 *   consistency is the broker's to check when it wires the node.
 * - `broker` / `cluster-default` (IncrementalAlterConfigs, AlterConfigs on a BROKER resource named
 *   by a node id or ''): read-only keys (`Cannot update these configs dynamically: Set(node.id)`),
 *   then each value, then per-broker-only keys at cluster level. A null value (a deletion) is always
 *   valid. Kafka answers a failure here with INVALID_REQUEST (not INVALID_CONFIG) and this message.
 * Unknown keys are accepted in every scope and listed in the result.
 */
export function validateBrokerConfigs(
  configs: ReadonlyMap<string, string | null>,
  scope: BrokerConfigScope,
): BrokerConfigValidation {
  const unknown = [...configs.keys()].filter((name) => brokerConfigDef(name) === undefined)
  const known = [...configs].flatMap(([name, raw]) => {
    const def = brokerConfigDef(name)
    return def === undefined || raw === null ? [] : [{ def, raw }]
  })
  if (scope !== 'static') {
    const readOnly = known.filter(({ def }) => def.dynamic === 'read-only').map(({ def }) => def.name)
    if (readOnly.length > 0) {
      return {
        ok: false,
        key: readOnly[0] ?? '',
        error: `Cannot update these configs dynamically: ${scalaSet(readOnly)}`,
      }
    }
  }
  for (const { def, raw } of known) {
    const result = parseConfigValue(def, raw)
    if (!result.ok) return { ok: false, key: def.name, error: result.error }
  }
  if (scope === 'cluster-default') {
    const perBroker = known.filter(({ def }) => def.dynamic === 'per-broker').map(({ def }) => def.name)
    if (perBroker.length > 0) {
      return {
        ok: false,
        key: perBroker[0] ?? '',
        error: `Cannot update these configs at default cluster level, broker id must be specified: ${scalaSet(perBroker)}`,
      }
    }
  }
  if (scope === 'static') {
    const staticBroker = new Map<string, string>()
    for (const [name, raw] of configs) if (raw !== null) staticBroker.set(name, raw)
    const fault = staticRequirements(resolveBrokerConfig({ staticBroker }))
    if (fault !== null) return { ok: false, ...fault }
  }
  return { ok: true, unknown }
}

/** Kafka's KafkaConfig requirements across log and replica keys (its `require(...)` messages). */
function staticRequirements(config: EffectiveConfig): { key: string; error: string } | null {
  const hourMs = 3_600_000n
  const rollMs = config.get('log.roll.ms').value ?? BigInt(config.int('log.roll.hours')) * hourMs
  if ((rollMs as bigint) < 1n)
    return { key: 'log.roll.ms', error: 'log.roll.ms must be greater than or equal to 1' }
  const jitterMs =
    config.get('log.roll.jitter.ms').value ?? BigInt(config.int('log.roll.jitter.hours')) * hourMs
  if ((jitterMs as bigint) < 0n) {
    return { key: 'log.roll.jitter.ms', error: 'log.roll.jitter.ms must be greater than or equal to 0' }
  }
  const minutes = config.get('log.retention.minutes').value
  const retentionMs =
    (config.get('log.retention.ms').value as bigint | null) ??
    (minutes === null
      ? BigInt(config.int('log.retention.hours')) * hourMs
      : BigInt(minutes as number) * 60_000n)
  if (retentionMs === 0n) {
    return {
      key: 'log.retention.ms',
      error: 'log.retention.ms must be unlimited (-1) or, greater than or equal to 1',
    }
  }
  const dirs = config.get('log.dirs').value ?? config.get('log.dir').value
  if (typeof dirs !== 'string' || dirs.split(',').every((d) => d.trim() === '')) {
    return { key: 'log.dirs', error: 'At least one log directory must be defined via log.dirs or log.dir.' }
  }
  const threads = config.int('log.cleaner.threads')
  if (threads > 0 && config.longExact('log.cleaner.dedupe.buffer.size') / BigInt(threads) <= 1024n * 1024n) {
    return {
      key: 'log.cleaner.dedupe.buffer.size',
      error: 'log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.',
    }
  }
  const fetchWaitMs = config.int('replica.fetch.wait.max.ms')
  const socketTimeoutMs = config.int('replica.socket.timeout.ms')
  if (fetchWaitMs > socketTimeoutMs && socketTimeoutMs !== -1) {
    return {
      key: 'replica.socket.timeout.ms',
      error:
        'replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts',
    }
  }
  if (BigInt(fetchWaitMs) > config.longExact('replica.lag.time.max.ms')) {
    return {
      key: 'replica.fetch.wait.max.ms',
      error:
        'replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR',
    }
  }
  return null
}
