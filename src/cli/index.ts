/** The `weir` command line, and the embedded cluster for tests (`startCluster`). */
export {
  type EmbeddedCluster,
  type EmbeddedNode,
  freePorts,
  type StartClusterOptions,
  startCluster,
} from './embedded-cluster.ts'
export { main } from './main.ts'
export { DEFAULT_DATA_DIR, runStart, START_USAGE, startConfig } from './start.ts'
