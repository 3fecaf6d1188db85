/** The composition root: a Weir node wired from its configs, and its lifecycle. */

export { tuneMallocForBroker, tuneV8ForBroker } from '../server/index.ts'
export * from './bootstrap-scram.ts'
export * from './controller-channel.ts'
export * from './logs.ts'
export * from './node.ts'
export { METADATA_VERSION, METADATA_VERSION_MIN } from './node-apis.ts'
export * from './node-config.ts'
export * from './topic-log-config.ts'
