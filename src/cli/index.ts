/** The `weir` command line, and the embedded cluster for tests (`startCluster`). */
export {
  type ClientMechanism,
  type ClusterSecurity,
  type EmbeddedCluster,
  type EmbeddedNode,
  freePorts,
  type SecurityOptions,
  type StartClusterOptions,
  startCluster,
} from './embedded-cluster.ts'
export { main } from './main.ts'
export { DEFAULT_DATA_DIR, runStart, START_USAGE, startConfig } from './start.ts'
