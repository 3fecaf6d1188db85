/**
 * A hand-driven quorum for scenario scripts: every node has its own clock, messages wait in a
 * queue until a command delivers them, and each Ready is handled at once (persist, send, apply,
 * advance) with a readable line per effect. Deterministic: node n draws from SeededRandom(n).
 */
import { SeededRandom } from '../../src/io/random.ts'
import type { NodeId } from '../../src/model/index.ts'
import {
  type Entry,
  formatMessage,
  type PersistentState,
  type RaftConfigInput,
  type RaftMessage,
  RaftNode,
  type RaftStatus,
  type Ready,
  type Snapshot,
} from '../../src/raft/index.ts'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

interface Disk {
  state: PersistentState | undefined
  snapshot: Snapshot | undefined
  entries: Entry[]
}

class ScenarioNode {
  readonly id: NodeId
  raft: RaftNode | null = null
  nowMs = 0
  disk: Disk = { state: undefined, snapshot: undefined, entries: [] }
  /** The state machine: applied records, in order. */
  applied: string[] = []
  appliedOffset = 0n
  constructor(id: NodeId) {
    this.id = id
  }
}

export function describeEntry(entry: Entry): string {
  const body = entry.kind === 'data' ? decoder.decode(entry.data) : `LeaderChange(leader=${entry.leaderId})`
  return `${entry.offset}@${entry.epoch} ${body}`
}

function describeState(s: PersistentState): string {
  return `epoch=${s.epoch} voted=${s.votedId ?? '-'} leader=${s.leaderId ?? '-'}`
}

function roleLine(s: RaftStatus): string {
  return `${s.role} epoch=${s.epoch} leader=${s.leaderId ?? '-'} hw=${s.highWatermark}`
}

export class ScenarioCluster {
  readonly nodes = new Map<NodeId, ScenarioNode>()
  readonly voters: NodeId[]
  readonly config: Omit<RaftConfigInput, 'nodeId' | 'voters'>
  /** Messages sent and not yet delivered, in send order. */
  queue: RaftMessage[] = []
  readonly blocked = new Set<string>()
  readonly out: string[] = []

  constructor(voters: NodeId[], observers: NodeId[], config: Omit<RaftConfigInput, 'nodeId' | 'voters'>) {
    this.voters = voters
    this.config = config
    for (const id of [...voters, ...observers]) {
      const node = new ScenarioNode(id)
      this.nodes.set(id, node)
      this.#start(node)
      this.#drain(node)
    }
  }

  node(id: NodeId): ScenarioNode {
    const node = this.nodes.get(id)
    if (node === undefined) throw new Error(`no node ${id}`)
    return node
  }

  raft(id: NodeId): RaftNode {
    const raft = this.node(id).raft
    if (raft === null) throw new Error(`node ${id} is down`)
    return raft
  }

  /** Run `fn` against a node and report what it changed (role, Ready effects). */
  act(id: NodeId, fn: (raft: RaftNode) => void): void {
    const node = this.node(id)
    const raft = this.raft(id)
    const before = roleLine(raft.status())
    fn(raft)
    const after = roleLine(raft.status())
    if (after !== before) this.out.push(`n${id}: ${after}`)
    this.#drain(node)
  }

  /** Move node clocks forward by `ms` (each ticked; the ones listed, or all live ones). */
  elapse(ms: number, ids?: NodeId[]): void {
    for (const id of ids ?? [...this.nodes.keys()]) {
      const node = this.node(id)
      if (node.raft === null) continue
      node.nowMs += ms
      this.act(id, (raft) => raft.tick(node.nowMs))
    }
  }

  /** Move a node's clock to its next deadline and tick it: "its timer fires". */
  fire(id: NodeId): void {
    const node = this.node(id)
    const deadline = this.raft(id).nextDeadlineMs()
    if (!Number.isFinite(deadline)) throw new Error(`node ${id} has no deadline`)
    this.out.push(`n${id}: timer fires after ${Math.max(0, deadline - node.nowMs)} ms`)
    node.nowMs = Math.max(node.nowMs, deadline)
    this.act(id, (raft) => raft.tick(node.nowMs))
  }

  /**
   * Deliver queued messages matching `filter`, in order, until none match (messages they cause
   * are delivered too when they match). Returns how many were delivered.
   */
  deliver(filter: (m: RaftMessage) => boolean = () => true, max = 10_000): number {
    let delivered = 0
    for (;;) {
      const index = this.queue.findIndex(filter)
      if (index < 0 || delivered >= max) return delivered
      const [message] = this.queue.splice(index, 1)
      delivered++
      const target = this.nodes.get(message!.to)
      if (
        target?.raft === null ||
        target === undefined ||
        this.blocked.has(`${message!.from}>${message!.to}`)
      ) {
        this.out.push(`drop ${formatMessage(message!)}`)
        continue
      }
      this.act(message!.to, (raft) => {
        raft.tick(target.nowMs)
        raft.step(message!)
      })
    }
  }

  /** Drop queued messages matching `filter`. */
  drop(filter: (m: RaftMessage) => boolean): void {
    const kept: RaftMessage[] = []
    for (const m of this.queue) {
      if (filter(m)) this.out.push(`drop ${formatMessage(m)}`)
      else kept.push(m)
    }
    this.queue = kept
  }

  propose(id: NodeId, records: string[]): void {
    this.act(id, (raft) => {
      const result = raft.propose(records.map((r) => encoder.encode(r)))
      this.out.push(
        result.kind === 'appended'
          ? `n${id}: proposed ${result.baseOffset}..${result.lastOffset} in epoch ${result.epoch}`
          : `n${id}: propose refused: ${JSON.stringify(result, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`,
      )
    })
  }

  /** The state machine snapshots everything it applied; raft forgets the log below it. */
  snapshot(id: NodeId): void {
    const node = this.node(id)
    const raft = this.raft(id)
    const at = node.appliedOffset
    const bytes = encoder.encode(JSON.stringify({ at: String(at), applied: node.applied }))
    const epoch = raft.log.epochAt(at - 1n) ?? 0
    const snapshot: Snapshot = { id: { endOffset: at, epoch }, bytes }
    node.disk.snapshot = snapshot
    node.disk.entries = node.disk.entries.filter((e) => e.offset >= at)
    const id_ = raft.snapshot(at, bytes)
    this.out.push(
      `n${id}: snapshot ${id_.epoch}@${id_.endOffset} (${bytes.length} bytes); log starts at ${raft.log.startOffset}`,
    )
  }

  crash(id: NodeId): void {
    const node = this.node(id)
    node.raft = null
    this.out.push(`n${id}: crash`)
  }

  restart(id: NodeId): void {
    const node = this.node(id)
    this.#start(node)
    this.out.push(`n${id}: restart as ${roleLine(node.raft!.status())}`)
    this.#drain(node)
  }

  status(): void {
    for (const [id, node] of this.nodes) {
      if (node.raft === null) {
        this.out.push(`n${id}: down`)
        continue
      }
      const s = node.raft.status()
      this.out.push(
        `n${id}: ${roleLine(s)} voted=${s.votedId ?? '-'} log=${s.logStartOffset}..${s.logEndOffset} lastEpoch=${s.lastEpoch} applied=${node.appliedOffset}`,
      )
    }
  }

  log(id: NodeId): void {
    const raft = this.raft(id)
    if (raft.log.startOffset > 0n) {
      this.out.push(`n${id}: snapshot ${raft.log.snapshotId.epoch}@${raft.log.snapshotId.endOffset}`)
    }
    for (let offset = raft.log.startOffset; offset < raft.log.endOffset; offset++) {
      this.out.push(`n${id}: ${describeEntry(raft.log.entryAt(offset)!)}`)
    }
  }

  take(): string[] {
    return this.out.splice(0)
  }

  #start(node: ScenarioNode): void {
    node.applied = []
    node.appliedOffset = 0n
    const snapshot = node.disk.snapshot
    if (snapshot !== undefined) this.#restore(node, snapshot)
    node.raft = new RaftNode({
      config: { ...this.config, nodeId: node.id, voters: this.voters },
      random: new SeededRandom(node.id),
      nowMs: node.nowMs,
      persisted: {
        ...(node.disk.state !== undefined ? { state: node.disk.state } : {}),
        ...(snapshot !== undefined ? { snapshot } : {}),
        entries: node.disk.entries,
      },
    })
  }

  #restore(node: ScenarioNode, snapshot: Snapshot): void {
    const image = JSON.parse(decoder.decode(snapshot.bytes)) as { at: string; applied: string[] }
    node.applied = image.applied
    node.appliedOffset = BigInt(image.at)
  }

  /** Handle every Ready: persist, send (queue), apply, advance; one line per effect. */
  #drain(node: ScenarioNode): void {
    const raft = node.raft!
    while (raft.hasReady()) {
      const ready = raft.ready()
      this.#persist(node, ready)
      for (const m of ready.messages) {
        this.out.push(`n${node.id}: send ${formatMessage(m)}`)
        this.queue.push(m)
      }
      if (ready.snapshot !== undefined) this.#restore(node, ready.snapshot)
      if (ready.committed.length > 0) {
        for (const e of ready.committed) {
          node.applied.push(describeEntry(e))
          node.appliedOffset = e.offset + 1n
        }
        const first = ready.committed[0]!.offset
        const last = ready.committed.at(-1)!.offset
        this.out.push(`n${node.id}: apply ${first}..${last} (hw ${ready.highWatermark})`)
      }
      raft.advance(ready)
    }
  }

  #persist(node: ScenarioNode, ready: Ready): void {
    const id = node.id
    const disk = node.disk
    if (ready.snapshot !== undefined) {
      disk.snapshot = ready.snapshot
      disk.entries = []
      this.out.push(`n${id}: install snapshot ${ready.snapshot.id.epoch}@${ready.snapshot.id.endOffset}`)
    }
    if (ready.truncateTo !== undefined) {
      disk.entries = disk.entries.filter((e) => e.offset < ready.truncateTo!)
      this.out.push(`n${id}: truncate log to ${ready.truncateTo}`)
    }
    if (ready.entries.length > 0) {
      disk.entries.push(...ready.entries)
      const list =
        ready.entries.length <= 3
          ? ready.entries.map(describeEntry).join(', ')
          : `${describeEntry(ready.entries[0]!)} .. ${describeEntry(ready.entries.at(-1)!)}`
      this.out.push(`n${id}: append ${list}`)
    }
    if (ready.state !== undefined) {
      disk.state = ready.state
      this.out.push(`n${id}: persist ${describeState(ready.state)}`)
    }
  }
}
