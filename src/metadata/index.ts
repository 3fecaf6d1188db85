/** Cluster metadata: records of `__cluster_metadata` applied to an immutable MetadataImage. */
export { applyRecords, type MetadataChanges, MetadataDelta, MetadataError } from './delta.ts'
export * from './image.ts'
export * from './loader.ts'
