/**
 * The `quorum-state` file of `__cluster_metadata-0`, in Kafka's JSON form (QuorumStateData v0):
 * the epoch, the vote and the leader a voter must remember across restarts. Replaced atomically.
 */
import type { Disk } from '../io/index.ts'
import { isNotFound, joinPath } from '../io/index.ts'
import { NodeId } from '../model/index.ts'
import type { PersistentState } from '../raft/index.ts'
import { writeFileDurably } from '../storage/index.ts'

export const QUORUM_STATE_FILE = 'quorum-state'

export class QuorumStateError extends Error {
  override name = 'QuorumStateError'
}

interface QuorumStateJson {
  clusterId: string
  leaderId: number
  leaderEpoch: number
  votedId: number
  appliedOffset: number
  currentVoters: Array<{ voterId: number }>
  data_version: number
}

/** Reads the state; undefined when there is no file yet (a new node). */
export async function readQuorumState(disk: Disk, dir: string): Promise<PersistentState | undefined> {
  let bytes: Buffer
  try {
    bytes = await disk.readFile(joinPath(dir, QUORUM_STATE_FILE))
  } catch (e) {
    if (isNotFound(e)) return undefined
    throw e
  }
  let json: QuorumStateJson
  try {
    json = JSON.parse(bytes.toString('utf8')) as QuorumStateJson
  } catch (e) {
    throw new QuorumStateError(`${dir}/${QUORUM_STATE_FILE} is not JSON: ${(e as Error).message}`)
  }
  if (
    !Number.isInteger(json.leaderEpoch) ||
    !Number.isInteger(json.leaderId) ||
    !Number.isInteger(json.votedId)
  ) {
    throw new QuorumStateError(`${dir}/${QUORUM_STATE_FILE} lacks leaderEpoch, leaderId or votedId`)
  }
  return {
    epoch: json.leaderEpoch,
    leaderId: json.leaderId < 0 ? null : NodeId(json.leaderId),
    votedId: json.votedId < 0 ? null : NodeId(json.votedId),
  }
}

/** Writes the state durably (temporary file, fsync, rename, directory fsync). */
export async function writeQuorumState(
  disk: Disk,
  dir: string,
  state: PersistentState,
  voters: readonly NodeId[],
): Promise<void> {
  const json: QuorumStateJson = {
    clusterId: '',
    leaderId: state.leaderId ?? -1,
    leaderEpoch: state.epoch,
    votedId: state.votedId ?? -1,
    appliedOffset: 0,
    currentVoters: voters.map((voterId) => ({ voterId })),
    data_version: 0,
  }
  await writeFileDurably(disk, joinPath(dir, QUORUM_STATE_FILE), Buffer.from(JSON.stringify(json)))
}
