/** Replica management: hosted partitions, ISR and high watermark, producer state, delayed operations. */
export * from './producer-state.ts'
