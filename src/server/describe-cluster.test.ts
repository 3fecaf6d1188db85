import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type BrokerRegistration, EMPTY_IMAGE, type MetadataImage } from '../metadata/index.ts'
import type { BrokerId, Uuid } from '../model/index.ts'
import type { DescribeClusterRequestData, DescribeClusterResponseData } from '../protocol/index.ts'
import type { RequestContext } from './handler.ts'
import { EndpointType, makeDescribeClusterHandler } from './handlers/describe-cluster.ts'

function broker(id: number, fenced: boolean): BrokerRegistration {
  return {
    id: id as BrokerId,
    epoch: BigInt(id),
    incarnationId: 'AAAAAAAAAAAAAAAAAAAAAA' as Uuid,
    endpoints: [{ name: 'PLAINTEXT', host: `h${id}`, port: 9000 + id, securityProtocol: 0 }],
    features: [],
    rack: null,
    fenced,
    inControlledShutdown: false,
    logDirs: [],
  }
}

const image: MetadataImage = {
  ...EMPTY_IMAGE,
  brokers: new Map([3, 1, 2].map((id) => [id as BrokerId, broker(id, id === 2)])),
}
const handler = makeDescribeClusterHandler({
  clusterId: 'c',
  nodeId: 1 as BrokerId,
  endpointType: EndpointType.Broker,
  image: () => image,
  controllers: () => ({ nodes: [], activeId: 1 as BrokerId }),
})

function describe(version: number, includeFencedBrokers: boolean): Array<[number, boolean]> {
  const req: DescribeClusterRequestData.DescribeClusterRequest = {
    includeClusterAuthorizedOperations: false,
    endpointType: EndpointType.Broker,
    includeFencedBrokers,
  }
  const ctx = { apiVersion: version, listenerName: 'PLAINTEXT' } as RequestContext
  const res = handler.handle(req, ctx) as DescribeClusterResponseData.DescribeClusterResponseIn
  return (res.brokers ?? []).map((b) => [b.brokerId as number, b.isFenced ?? false])
}

test('DescribeCluster lists unfenced brokers; v2 with includeFencedBrokers adds the fenced (KIP-1073)', () => {
  assert.deepEqual(describe(1, true), [
    [1, false],
    [3, false],
  ])
  assert.deepEqual(describe(2, false), [
    [1, false],
    [3, false],
  ])
  assert.deepEqual(describe(2, true), [
    [1, false],
    [2, true],
    [3, false],
  ])
})
