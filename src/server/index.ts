/** The Kafka-protocol server: listener, connections, dispatch, and one handler per API. */

export * from './authorize.ts'
export { Connection, type ConnectionLimits } from './connection.ts'
export { type ConnectionQuotaConfig, ConnectionQuotas, type ConnectionRefusal } from './connection-quotas.ts'
export { type ConnectionInfo, Dispatcher, type DispatcherOptions, type DispatchResult } from './dispatcher.ts'
export * from './fetch-session.ts'
export {
  defineHandler,
  type Handler,
  type HandlerResult,
  NO_RESPONSE,
  type RequestContext,
} from './handler.ts'
export * from './handlers/acls.ts'
export * from './handlers/allocate-producer-ids.ts'
export * from './handlers/alter-configs.ts'
export * from './handlers/alter-partition.ts'
export { type FeatureView, makeApiVersionsHandler } from './handlers/api-versions.ts'
export * from './handlers/broker-loggers.ts'
export * from './handlers/broker-registration.ts'
export * from './handlers/controller-api.ts'
export * from './handlers/create-partitions.ts'
export * from './handlers/create-topics.ts'
export * from './handlers/current-leader.ts'
export * from './handlers/delete-groups.ts'
export * from './handlers/delete-records.ts'
export * from './handlers/delete-topics.ts'
export * from './handlers/describe-client-quotas.ts'
export * from './handlers/describe-cluster.ts'
export * from './handlers/describe-configs.ts'
export * from './handlers/describe-groups.ts'
export * from './handlers/describe-log-dirs.ts'
export * from './handlers/describe-producers.ts'
export * from './handlers/describe-quorum.ts'
export * from './handlers/elect-leaders.ts'
export * from './handlers/fetch.ts'
export * from './handlers/find-coordinator.ts'
export * from './handlers/heartbeat.ts'
export * from './handlers/incremental-alter-configs.ts'
export * from './handlers/init-producer-id.ts'
export * from './handlers/join-group.ts'
export * from './handlers/leave-group.ts'
export * from './handlers/list-groups.ts'
export * from './handlers/list-offsets.ts'
export * from './handlers/metadata.ts'
export * from './handlers/offset-commit.ts'
export * from './handlers/offset-delete.ts'
export * from './handlers/offset-fetch.ts'
export * from './handlers/offset-for-leader-epoch.ts'
export * from './handlers/partition-reassignments.ts'
export * from './handlers/produce.ts'
export * from './handlers/raft-rpc.ts'
export * from './handlers/scram-credentials.ts'
export * from './handlers/sync-group.ts'
export * from './handlers/transactions.ts'
export * from './handlers/txn-offset-commit.ts'
export * from './handlers/update-features.ts'
export * from './handlers/write-txn-markers.ts'
export { Listener, type ListenerOptions, type ListenerTls, type SslClientAuth } from './listener.ts'
export {
  type MallocInfo,
  mallocInfo,
  mallocTrim,
  mallocTunable,
  tuneMallocForBroker,
} from './malloc-tuning.ts'
export {
  GC_EVERY_READ_BYTES_DEFAULT,
  GC_MAJOR_EVERY_COLLECTIONS,
  type GcKind,
  ReadGcPacer,
  v8Gc,
} from './read-gc-pacer.ts'
export { HandlerRegistry } from './registry.ts'
export * from './sasl-authenticator.ts'
export { externalMemoryInGlobalLimit, tuneV8ForBroker } from './v8-tuning.ts'
