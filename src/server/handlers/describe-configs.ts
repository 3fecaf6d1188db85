/**
 * DescribeConfigs v1-4: TOPIC resources, this node's BROKER resource (by node id) and the cluster
 * defaults (BROKER ''), with key filters, synonyms and documentation, as Kafka 4.0's ConfigHelper.
 * BROKER_LOGGER: this node's loggers and their levels (broker-loggers.ts). Not implemented:
 * CLIENT_METRICS and GROUP resources (INVALID_REQUEST).
 */
import {
  type ConfigLayer,
  type DescribeConfigsEntry,
  type DescribeOptions,
  describeBrokerConfigs,
  describeDefaultBrokerConfigs,
  describeTopicConfigs,
} from '../../config/index.ts'
import {
  brokerConfigLayers,
  javaParseInt,
  topicConfigLayers,
  topicNameProblem,
} from '../../controller/index.ts'
import { ConfigResourceType, configKey, type MetadataImage } from '../../metadata/index.ts'
import { TopicName } from '../../model/index.ts'
import { apis, type DescribeConfigsResponseData, ErrorCode } from '../../protocol/index.ts'
import { AclOperation, authorize, configResourceDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import { type BrokerLoggersView, describeBrokerLoggers } from './broker-loggers.ts'

export interface DescribeConfigsView {
  /** This node's id: the only BROKER resource (besides '') it describes, as in Kafka. */
  readonly nodeId: number
  /** server.properties with `--set` applied (STATIC_BROKER_CONFIG), without Weir's own keys. */
  readonly staticConfig: ConfigLayer
  image(): MetadataImage
  /** This node's loggers (the BROKER_LOGGER resource); absent: it has none. */
  readonly loggers?: BrokerLoggersView
}

/** Kafka's ConfigResource.Type names, for messages. */
const TYPE_NAMES: Readonly<Record<number, string>> = {
  [ConfigResourceType.Topic]: 'TOPIC',
  [ConfigResourceType.Broker]: 'BROKER',
  [ConfigResourceType.BrokerLogger]: 'BROKER_LOGGER',
  [ConfigResourceType.ClientMetrics]: 'CLIENT_METRICS',
  [ConfigResourceType.Group]: 'GROUP',
}

type Result = DescribeConfigsResponseData.DescribeConfigsResultIn

class DescribeFailure {
  readonly errorCode: ErrorCode
  readonly message: string | null
  constructor(errorCode: ErrorCode, message: string | null) {
    this.errorCode = errorCode
    this.message = message
  }
}

/** ConfigHelper.resourceNameToBrokerId: Scala's toInt. */
function brokerIdOf(name: string): number | DescribeFailure {
  return (
    javaParseInt(name) ??
    new DescribeFailure(ErrorCode.InvalidRequest, `Broker id must be an integer, but it is: ${name}`)
  )
}

function wireEntry(e: DescribeConfigsEntry): DescribeConfigsResponseData.DescribeConfigsResourceResultIn {
  return {
    name: e.name,
    value: e.value,
    readOnly: e.readOnly,
    isSensitive: e.isSensitive,
    configType: e.configType,
    documentation: e.documentation,
    configSource: e.configSource,
    synonyms: e.synonyms.map((s) => ({ name: s.name, value: s.value, source: s.source })),
  }
}

function describeOne(
  view: DescribeConfigsView,
  image: MetadataImage,
  type: number,
  name: string,
  options: DescribeOptions,
): DescribeConfigsEntry[] | DescribeFailure {
  const node = { nodeId: view.nodeId, staticBroker: view.staticConfig }
  switch (type) {
    case ConfigResourceType.Topic: {
      const problem = topicNameProblem(name)
      if (problem !== null) return new DescribeFailure(ErrorCode.InvalidTopicException, problem)
      // Kafka answers an unknown topic with the message field left at its default, ''.
      if (!image.topicsByName.has(TopicName(name)))
        return new DescribeFailure(ErrorCode.UnknownTopicOrPartition, '')
      return describeTopicConfigs(topicConfigLayers(image, name, node), options)
    }
    case ConfigResourceType.Broker: {
      if (name === '')
        return describeDefaultBrokerConfigs(
          image.configs.get(configKey(ConfigResourceType.Broker, '')) ?? new Map(),
          options,
        )
      const id = brokerIdOf(name)
      if (id instanceof DescribeFailure) return id
      if (id !== view.nodeId) {
        return new DescribeFailure(
          ErrorCode.InvalidRequest,
          `Unexpected broker id, expected ${view.nodeId} or empty string, but received ${name}`,
        )
      }
      return describeBrokerConfigs(brokerConfigLayers(image, node), options)
    }
    case ConfigResourceType.BrokerLogger: {
      if (name === '') return new DescribeFailure(ErrorCode.InvalidRequest, 'Broker id must not be empty')
      const id = brokerIdOf(name)
      if (id instanceof DescribeFailure) return id
      if (id !== view.nodeId) {
        return new DescribeFailure(
          ErrorCode.InvalidRequest,
          `Unexpected broker id, expected ${view.nodeId} but received ${name}`,
        )
      }
      if (view.loggers === undefined)
        return new DescribeFailure(ErrorCode.InvalidRequest, 'This node has no loggers to describe')
      return describeBrokerLoggers(view.loggers, options.keys ?? null)
    }
    default:
      return new DescribeFailure(
        ErrorCode.InvalidRequest,
        `Unsupported resource type: ${TYPE_NAMES[type] ?? 'UNKNOWN'}`,
      )
  }
}

export function makeDescribeConfigsHandler(view: DescribeConfigsView): Handler {
  return defineHandler(apis.DescribeConfigs, {}, (req, ctx) => {
    const image = view.image()
    const authz = authorize(ctx)
    const results: Result[] = req.resources.map((resource) => {
      const { resourceType, resourceName } = resource
      const denied = configResourceDenied(authz, AclOperation.DescribeConfigs, resourceType, resourceName)
      if (denied !== null) return { resourceType, resourceName, ...denied, configs: [] }
      const options: DescribeOptions = {
        includeSynonyms: req.includeSynonyms,
        includeDocumentation: ctx.apiVersion >= 3 && req.includeDocumentation,
        // Kafka: null or empty means every key.
        keys:
          resource.configurationKeys === null || resource.configurationKeys.length === 0
            ? null
            : resource.configurationKeys,
      }
      const echo = { resourceType: resource.resourceType, resourceName: resource.resourceName }
      const described = describeOne(view, image, resource.resourceType, resource.resourceName, options)
      if (described instanceof DescribeFailure)
        return { ...echo, errorCode: described.errorCode, errorMessage: described.message, configs: [] }
      return {
        ...echo,
        errorCode: ErrorCode.None,
        // Kafka leaves the message at its default: '' (not null), as captured from Kafka 4.4.0.
        errorMessage: '',
        configs: described.map((e) => wireEntry(e)),
      }
    })
    return { results }
  })
}
