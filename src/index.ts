/**
 * The package entry (`import { startCluster } from 'weir'`): an embedded Weir cluster for tests.
 * See README.md, "Embedded clusters for tests".
 */
export {
  type ClientMechanism,
  type ClusterSecurity,
  type EmbeddedCluster,
  type EmbeddedNode,
  type SecurityOptions,
  type StartClusterOptions,
  startCluster,
} from './cli/index.ts'
