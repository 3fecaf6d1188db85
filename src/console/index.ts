/** The web console: a page and its JSON API over the Kafka protocol, for a node's HTTP listener and `weir console`. */
export * from './console-api.ts'
export * from './console-http.ts'
