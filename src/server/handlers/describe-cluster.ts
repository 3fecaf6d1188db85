/**
 * DescribeCluster v0-1: the brokers (endpoint type 1) or, on a controller listener, the controllers
 * (endpoint type 2, KIP-919, which `--bootstrap-controller` tools use). A request for the other
 * kind answers MISMATCHED_ENDPOINT_TYPE, as Kafka does.
 */
import type { MetadataImage } from '../../metadata/index.ts'
import type { BrokerId } from '../../model/index.ts'
import { apis, type DescribeClusterResponseData, ErrorCode } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'
import { AUTHORIZED_OPERATIONS_OMITTED, brokersOn, CLUSTER_OPERATIONS } from './metadata.ts'

export const EndpointType = { Broker: 1, Controller: 2 } as const

export interface DescribeClusterView {
  readonly clusterId: string
  readonly nodeId: BrokerId
  /** Which kind of endpoint this listener is. */
  readonly endpointType: number
  image(): MetadataImage
  /** For controller listeners: the controllers and their addresses, and the active one. */
  controllers(): {
    readonly nodes: DescribeClusterResponseData.DescribeClusterBrokerIn[]
    readonly activeId: BrokerId
  }
}

export function makeDescribeClusterHandler(view: DescribeClusterView): Handler {
  return defineHandler(apis.DescribeCluster, {}, (req, ctx) => {
    const wanted = ctx.apiVersion >= 1 ? req.endpointType : EndpointType.Broker
    const ops = req.includeClusterAuthorizedOperations ? CLUSTER_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED
    if (wanted !== view.endpointType) {
      return {
        errorCode: ErrorCode.MismatchedEndpointType,
        errorMessage: `The request was sent to an endpoint of type ${view.endpointType}, but we wanted an endpoint of type ${wanted}`,
        endpointType: view.endpointType,
        clusterId: view.clusterId,
      }
    }
    if (wanted === EndpointType.Controller) {
      const c = view.controllers()
      return {
        endpointType: wanted,
        clusterId: view.clusterId,
        controllerId: c.activeId,
        brokers: c.nodes,
        clusterAuthorizedOperations: ops,
      }
    }
    return {
      endpointType: wanted,
      clusterId: view.clusterId,
      controllerId: view.nodeId,
      brokers: brokersOn(view.image(), ctx.listenerName).map((b) => ({
        brokerId: b.nodeId ?? (-1 as BrokerId),
        host: b.host ?? '',
        port: b.port ?? 0,
        rack: b.rack ?? null,
      })),
      clusterAuthorizedOperations: ops,
    }
  })
}
