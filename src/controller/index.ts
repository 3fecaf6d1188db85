/** The active controller's decisions: requests and heartbeats in, metadata records out. */

export * from './acls.ts'
export * from './alter-partition.ts'
export * from './brokers.ts'
export * from './configs.ts'
export * from './decision.ts'
export * from './elections.ts'
export * from './placement.ts'
export * from './producer-ids.ts'
export * from './quorum-controller.ts'
export * from './scram.ts'
export * from './topics.ts'
