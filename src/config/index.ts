/**
 * config: the catalog of Kafka config keys Weir understands (topic and broker), their resolution
 * from layers, DescribeConfigs entries, validation, and the server.properties parser. Pure.
 */
export {
  AUTHORIZER_KEYS,
  BROKER_CONFIG_BY_NAME,
  BROKER_CONFIGS,
  type BrokerConfigDef,
  brokerConfigDef,
  brokerConfigSynonyms,
  type DynamicUpdateMode,
  parseConnectionsPerIpOverrides,
  STANDARD_AUTHORIZER_CLASS,
} from './broker-configs.ts'
export {
  type ConfigDef,
  type ConfigImportance,
  ConfigSource,
  type ConfigType,
  ConfigTypeCode,
  type ConfigValidator,
  type ConfigValue,
  type InvalidConfigValue,
  javaDoubleToString,
  longToNumber,
  type ParsedConfigValue,
  parseBooleanValue,
  parseConfigValue,
  parseDoubleValue,
  parseHostPort,
  parseIntValue,
  parseListValue,
  parseLongValue,
  parseShortValue,
  parseStringValue,
  parseTyped,
  renderConfigValue,
} from './definition.ts'
export {
  applyOverrides,
  OverrideSyntaxError,
  PropertiesSyntaxError,
  parseOverrides,
  parseProperties,
} from './properties.ts'
export {
  type BrokerConfigLayers,
  type BrokerConfigScope,
  type BrokerConfigValidation,
  type ConfigInvalid,
  type ConfigLayer,
  type DescribeConfigsEntry,
  type DescribeConfigsSynonym,
  type DescribeOptions,
  describeBrokerConfigs,
  describeDefaultBrokerConfigs,
  describeTopicConfigs,
  EffectiveConfig,
  type ResolvedConfig,
  resolveBrokerConfig,
  resolveTopicConfig,
  type TopicConfigLayers,
  type TopicConfigValidation,
  validateBrokerConfigs,
  validateTopicConfigs,
} from './resolve.ts'
export {
  type BrokerSynonym,
  TOPIC_CONFIG_BY_NAME,
  TOPIC_CONFIGS,
  type TopicConfigDef,
  topicConfigDef,
} from './topic-configs.ts'
