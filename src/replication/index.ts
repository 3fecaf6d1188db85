/** Replica management: hosted partitions, ISR and high watermark, producer state, delayed operations. */
export * from './delayed-operations.ts'
export * from './leader-epoch-cache.ts'
export * from './partition.ts'
export * from './producer-id-manager.ts'
export * from './producer-state.ts'
export * from './read-replica-selector.ts'
export * from './replica-log-state.ts'
export * from './replica-manager.ts'
