/**
 * DescribeCluster v0-2: the unfenced brokers (endpoint type 1; from v2, with `includeFencedBrokers`,
 * the fenced ones too, each with `isFenced`, KIP-1073) or, on a controller listener, the
 * controllers (endpoint type 2, KIP-919, which `--bootstrap-controller` tools use). A request for
 * the other kind answers MISMATCHED_ENDPOINT_TYPE, as Kafka does.
 */
import type { MetadataImage } from '../../metadata/index.ts'
import type { BrokerId } from '../../model/index.ts'
import { apis, type DescribeClusterResponseData, ErrorCode } from '../../protocol/index.ts'
import { AUTHORIZED_OPERATIONS_OMITTED } from '../../security/index.ts'
import { AclOperation, authorize } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

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

/** The brokers with an endpoint on `listenerName`, by id; fenced ones only when asked. */
function brokersOn(
  image: MetadataImage,
  listenerName: string,
  includeFenced: boolean,
): DescribeClusterResponseData.DescribeClusterBrokerIn[] {
  const out: DescribeClusterResponseData.DescribeClusterBrokerIn[] = []
  for (const b of [...image.brokers.values()].sort((x, y) => x.id - y.id)) {
    if (b.fenced && !includeFenced) continue
    const e = b.endpoints.find((x) => x.name === listenerName)
    if (e !== undefined)
      out.push({ brokerId: b.id, host: e.host, port: e.port, rack: b.rack, isFenced: b.fenced })
  }
  return out
}

export function makeDescribeClusterHandler(view: DescribeClusterView): Handler {
  return defineHandler(apis.DescribeCluster, {}, (req, ctx) => {
    const wanted = ctx.apiVersion >= 1 ? req.endpointType : EndpointType.Broker
    const authz = authorize(ctx)
    // A controller listener asks ALTER on the cluster (Kafka's ControllerApis); a broker nothing.
    if (view.endpointType === EndpointType.Controller && !authz.cluster(AclOperation.Alter)) {
      return {
        errorCode: ErrorCode.ClusterAuthorizationFailed,
        errorMessage: null,
        endpointType: view.endpointType,
        clusterId: view.clusterId,
      }
    }
    const ops = req.includeClusterAuthorizedOperations
      ? authz.clusterOperations()
      : AUTHORIZED_OPERATIONS_OMITTED
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
      brokers: brokersOn(view.image(), ctx.listenerName, ctx.apiVersion >= 2 && req.includeFencedBrokers),
      clusterAuthorizedOperations: ops,
    }
  })
}
