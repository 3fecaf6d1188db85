/** The I/O shell of the KRaft quorum: persistence, timers, KRaft RPCs over the client connections. */

export type { Entry, ProposeResult, RaftStatus, Snapshot } from '../raft/index.ts'
export * from './entry-codec.ts'
export * from './quorum.ts'
export * from './quorum-state-file.ts'
export * from './raft-wire.ts'
export * from './snapshot-file.ts'
