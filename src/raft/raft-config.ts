/**
 * The quorum's settings under Kafka's names and defaults (`controller.quorum.*`), the core's limits,
 * and `controller.quorum.voters` parsing. Relationships between settings are asserted here, once.
 */
import { assert, NodeId } from '../model/index.ts'

/** Settings of one node's raft core. Times are milliseconds of the clock passed to `tick`. */
export interface RaftConfig {
  /** This node's id (`node.id`). It votes when it is in `voters`; otherwise it is an observer. */
  readonly nodeId: NodeId
  /** The static voter set (the ids of `controller.quorum.voters`), in any order, without duplicates. */
  readonly voters: readonly NodeId[]
  /** `controller.quorum.election.timeout.ms` (1000): an election times out after this plus a random part. */
  readonly electionTimeoutMs: number
  /** `controller.quorum.fetch.timeout.ms` (2000): a voter that has not fetched successfully for this long starts an election. */
  readonly fetchTimeoutMs: number
  /** `controller.quorum.election.backoff.max.ms` (1000): the cap of the random backoff after a lost election. */
  readonly electionBackoffMsMax: number
  /** `controller.quorum.request.timeout.ms` (2000): an unanswered request is sent again after this. */
  readonly requestTimeoutMs: number
  /** `controller.quorum.retry.backoff.ms` (20): the wait before retrying a request that failed with an error. */
  readonly retryBackoffMs: number
  /** How long a leader may hold a Fetch with nothing to return (KafkaRaftClient's 500 ms). */
  readonly fetchWaitMsMax: number
  /**
   * Each fetch timer runs `fetchTimeoutMs` minus a uniform random part of up to this, so followers
   * that lost the same leader at the same instant rarely split the vote. Kafka defines the fetch
   * timeout as a maximum, which this keeps.
   */
  readonly fetchTimeoutJitterMsMax: number
  /** The `maxBytes` of this node's Fetch requests (Kafka's raft fetch: 8 MiB). */
  readonly fetchBytesMax: number
  /** The most entries one Fetch response carries, whatever their size. */
  readonly fetchEntriesMax: number
  /** The `maxBytes` of a FetchSnapshot request and the largest chunk a leader sends. */
  readonly snapshotChunkBytesMax: number
  /** The largest snapshot a follower will assemble in memory from FetchSnapshot chunks. */
  readonly snapshotBytesMax: number
  /** `propose` refuses (backpressure) once the leader's log holds this many entries above the high watermark. */
  readonly uncommittedEntriesMax: number
  /** The most entries one `propose` call may carry. */
  readonly proposeEntriesMax: number
  /** The most committed entries one Ready hands to the state machine. */
  readonly applyEntriesMax: number
  /** The most observers a leader tracks for DescribeQuorum; the least recently heard is forgotten. */
  readonly observersMax: number
  /** The most messages waiting for the next Ready; beyond, new ones are dropped as a lossy network would. */
  readonly outboxMessagesMax: number
}

/** Kafka's defaults for the `controller.quorum.*` settings, and the core's limits. */
export const RAFT_CONFIG_DEFAULTS = {
  electionTimeoutMs: 1000,
  fetchTimeoutMs: 2000,
  electionBackoffMsMax: 1000,
  requestTimeoutMs: 2000,
  retryBackoffMs: 20,
  fetchWaitMsMax: 500,
  fetchTimeoutJitterMsMax: 200,
  fetchBytesMax: 8 * 1024 * 1024,
  fetchEntriesMax: 4096,
  snapshotChunkBytesMax: 1024 * 1024,
  snapshotBytesMax: 1024 * 1024 * 1024,
  uncommittedEntriesMax: 65_536,
  proposeEntriesMax: 10_000,
  applyEntriesMax: 4096,
  observersMax: 1024,
  outboxMessagesMax: 16_384,
} as const satisfies Omit<RaftConfig, 'nodeId' | 'voters'>

/** What `raftConfig` needs: ids, and any setting to override. */
export type RaftConfigInput = Pick<RaftConfig, 'nodeId' | 'voters'> &
  Partial<Omit<RaftConfig, 'nodeId' | 'voters'>>

/**
 * A complete, checked config: defaults filled in, then every setting and relationship asserted.
 * Example: `raftConfig({ nodeId: NodeId(1), voters: [1, 2, 3].map(NodeId) })`.
 */
export function raftConfig(input: RaftConfigInput): RaftConfig {
  const config: RaftConfig = { ...RAFT_CONFIG_DEFAULTS, ...input, voters: [...input.voters] }
  const positive = [
    'electionTimeoutMs',
    'fetchTimeoutMs',
    'requestTimeoutMs',
    'fetchBytesMax',
    'fetchEntriesMax',
    'snapshotChunkBytesMax',
    'snapshotBytesMax',
    'uncommittedEntriesMax',
    'proposeEntriesMax',
    'applyEntriesMax',
    'observersMax',
    'outboxMessagesMax',
  ] as const
  for (const key of positive) {
    assert(
      Number.isSafeInteger(config[key]) && config[key] > 0,
      `raft config: ${key} must be a positive integer`,
    )
  }
  for (const key of [
    'electionBackoffMsMax',
    'retryBackoffMs',
    'fetchWaitMsMax',
    'fetchTimeoutJitterMsMax',
  ] as const) {
    assert(
      Number.isSafeInteger(config[key]) && config[key] >= 0,
      `raft config: ${key} must be an integer >= 0`,
    )
  }
  assert(Number.isSafeInteger(config.nodeId) && config.nodeId >= 0, 'raft config: nodeId must be >= 0')
  assert(config.voters.length > 0, 'raft config: controller.quorum.voters is empty')
  assert(new Set(config.voters).size === config.voters.length, 'raft config: duplicate voter')
  for (const id of config.voters)
    assert(Number.isSafeInteger(id) && id >= 0, `raft config: bad voter id ${id}`)
  // A fetch that the leader holds must come back before the fetcher gives up on it.
  assert(
    config.fetchWaitMsMax < config.requestTimeoutMs,
    'raft config: fetchWaitMsMax must be < requestTimeoutMs',
  )
  // A leader that holds fetches must still answer often enough to keep followers' fetch timers alive.
  assert(
    config.fetchWaitMsMax < config.fetchTimeoutMs - config.fetchTimeoutJitterMsMax,
    'raft config: fetchWaitMsMax must be < fetchTimeoutMs - fetchTimeoutJitterMsMax',
  )
  assert(
    config.snapshotChunkBytesMax <= config.snapshotBytesMax,
    'raft config: snapshot chunk above snapshot max',
  )
  return config
}

/** One entry of `controller.quorum.voters`: `id@host:port`. */
export interface QuorumVoter {
  readonly id: NodeId
  readonly host: string
  readonly port: number
}

/**
 * Parse `controller.quorum.voters` (`1@localhost:9093,2@[::1]:9093`). Returns the voters or a
 * message saying what is wrong; bad configuration is input, not a programmer error.
 */
export function parseQuorumVoters(text: string): { voters: QuorumVoter[] } | { error: string } {
  const voters: QuorumVoter[] = []
  const seen = new Set<number>()
  for (const raw of text.split(',')) {
    const item = raw.trim()
    const match = /^(\d+)@(\[[^\]]+\]|[^:@[\]]+):(\d+)$/.exec(item)
    if (match === null) return { error: `controller.quorum.voters: '${item}' is not id@host:port` }
    const id = Number(match[1])
    const port = Number(match[3])
    if (!Number.isSafeInteger(id) || id > 2 ** 31 - 1)
      return { error: `controller.quorum.voters: bad id in '${item}'` }
    if (port < 1 || port > 65_535) return { error: `controller.quorum.voters: bad port in '${item}'` }
    if (seen.has(id)) return { error: `controller.quorum.voters: voter ${id} appears twice` }
    seen.add(id)
    const host = match[2]!.startsWith('[') ? match[2]!.slice(1, -1) : match[2]!
    voters.push({ id: NodeId(id), host, port })
  }
  return { voters }
}
