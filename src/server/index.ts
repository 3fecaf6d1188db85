/** The Kafka-protocol server: listener, connections, dispatch, and one handler per API. */
export { Connection, type ConnectionLimits } from './connection.ts'
export { type ConnectionInfo, Dispatcher, type DispatchResult } from './dispatcher.ts'
export * from './fetch-session.ts'
export {
  defineHandler,
  type Handler,
  type HandlerResult,
  NO_RESPONSE,
  type RequestContext,
} from './handler.ts'
export * from './handlers/alter-configs.ts'
export { type FeatureView, makeApiVersionsHandler } from './handlers/api-versions.ts'
export * from './handlers/broker-registration.ts'
export * from './handlers/controller-api.ts'
export * from './handlers/create-partitions.ts'
export * from './handlers/create-topics.ts'
export * from './handlers/delete-topics.ts'
export * from './handlers/describe-cluster.ts'
export * from './handlers/describe-configs.ts'
export * from './handlers/describe-quorum.ts'
export * from './handlers/incremental-alter-configs.ts'
export * from './handlers/metadata.ts'
export * from './handlers/raft-rpc.ts'
export { Listener, type ListenerOptions } from './listener.ts'
export { HandlerRegistry } from './registry.ts'
