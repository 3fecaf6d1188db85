/** Kafka-protocol client connections: how a node or the `weir` command talks to other nodes. */
export * from './client-security.ts'
export * from './cluster-client.ts'
export * from './fetcher.ts'
export * from './group-member.ts'
export * from './kafka-connection.ts'
export * from './kafka-error.ts'
export * from './murmur2.ts'
export * from './producer.ts'
