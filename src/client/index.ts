/** Kafka-protocol client connections: how a node or the `weir` command talks to other nodes. */
export * from './kafka-connection.ts'
