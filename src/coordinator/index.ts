/**
 * Consumer groups (the classic protocol) and committed offsets in `__consumer_offsets`; transactions
 * in `__transaction_state`. See README.md.
 */

export * from './coordinator-locator.ts'
export * from './coordinator-records.ts'
export * from './group.ts'
export * from './group-config.ts'
export * from './group-coordinator.ts'
export * from './group-state-machine.ts'
export * from './java-hash.ts'
export * from './load-waiters.ts'
export * from './offsets-log.ts'
export * from './transaction-coordinator.ts'
export * from './transaction-records.ts'
export * from './transaction-state.ts'
