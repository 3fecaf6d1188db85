/**
 * Scenario scripts (test/scenarios/*.txt), in etcd-raft's datadriven style: blocks of comment
 * lines, one command, `----`, and the trace that command produced. `runScript` replays a file and
 * returns it with the actual traces, so a test compares and `--rewrite` saves.
 */
import type { NodeId } from '../../src/model/index.ts'
import type { RaftMessage } from '../../src/raft/index.ts'
import { ScenarioCluster } from './scenario-cluster.ts'

interface Block {
  readonly comments: string[]
  readonly command: string
  readonly expected: string[]
  readonly line: number
}

export function parseScript(text: string): Block[] {
  const lines = text.split('\n')
  const blocks: Block[] = []
  let i = 0
  while (i < lines.length) {
    const comments: string[] = []
    while (i < lines.length && (lines[i]!.trim() === '' || lines[i]!.startsWith('#'))) {
      if (lines[i]!.startsWith('#')) comments.push(lines[i]!)
      i++
    }
    if (i >= lines.length) {
      if (comments.length > 0) blocks.push({ comments, command: '', expected: [], line: i })
      break
    }
    const line = i + 1
    const command = lines[i++]!
    if (lines[i] !== '----') throw new Error(`line ${i + 1}: expected ---- after '${command}'`)
    i++
    const expected: string[] = []
    while (i < lines.length && lines[i]!.trim() !== '') expected.push(lines[i++]!)
    blocks.push({ comments, command, expected, line })
  }
  return blocks
}

function ids(text: string): NodeId[] {
  return text
    .split(',')
    .filter((s) => s !== '')
    .map((s) => Number(s) as NodeId)
}

function options(args: string[]): Map<string, string> {
  const map = new Map<string, string>()
  for (const arg of args) {
    const eq = arg.indexOf('=')
    if (eq > 0) map.set(arg.slice(0, eq), arg.slice(eq + 1))
  }
  return map
}

/** The name traces use: `Vote` for VoteRequest, `VoteResp` for VoteResponse, and so on. */
function shortName(m: RaftMessage): string {
  return m.type.replace(/Request$/, '').replace(/Response$/, 'Resp')
}

function messageFilter(args: string[]): (m: RaftMessage) => boolean {
  const o = options(args)
  const from = o.get('from')
  const to = o.get('to')
  const type = o.get('type')
  return (m) =>
    (from === undefined || ids(from).includes(m.from)) &&
    (to === undefined || ids(to).includes(m.to)) &&
    (type === undefined || shortName(m) === type)
}

/** Execute one command; returns its trace lines. */
function execute(state: { cluster: ScenarioCluster | null }, command: string): string[] {
  const [verb, ...args] = command.trim().split(/\s+/)
  if (verb === 'cluster') {
    const o = options(args)
    const config: Record<string, number> = {}
    for (const [key, value] of o) if (key !== 'voters' && key !== 'observers') config[key] = Number(value)
    state.cluster = new ScenarioCluster(ids(o.get('voters') ?? '1'), ids(o.get('observers') ?? ''), config)
    state.cluster.status()
    return state.cluster.take()
  }
  const cluster = state.cluster
  if (cluster === null) throw new Error('no cluster yet: start with `cluster voters=...`')
  const node = () => Number(args[0]) as NodeId
  switch (verb) {
    case 'fire':
      cluster.fire(node())
      break
    case 'elapse':
      cluster.elapse(Number(args[0]), args[1] !== undefined ? ids(args[1]) : undefined)
      break
    case 'deliver': {
      const count = options(args).get('count')
      cluster.deliver(messageFilter(args), count === undefined ? undefined : Number(count))
      break
    }
    case 'stabilize':
      cluster.deliver()
      break
    case 'drop':
      cluster.drop(messageFilter(args))
      break
    case 'queue':
      for (const m of cluster.queue) cluster.out.push(`queued ${m.from}->${m.to} ${m.type}`)
      break
    case 'propose':
      cluster.propose(node(), args.slice(1))
      break
    case 'resign':
      cluster.act(node(), (raft) => cluster.out.push(`n${node()}: resign -> ${raft.resign()}`))
      break
    case 'snapshot':
      cluster.snapshot(node())
      break
    case 'crash':
      cluster.crash(node())
      break
    case 'restart':
      cluster.restart(node())
      break
    case 'partition': {
      // `partition 1 | 2,3` cuts both ways; `partition 1 -> 2,3` drops only 1's messages to 2 and 3.
      const [a, op, b] = args as [string, string, string]
      for (const x of ids(a)) {
        for (const y of ids(b)) {
          cluster.blocked.add(`${x}>${y}`)
          if (op === '|') cluster.blocked.add(`${y}>${x}`)
        }
      }
      break
    }
    case 'heal':
      cluster.blocked.clear()
      break
    case 'status':
      cluster.status()
      break
    case 'log':
      cluster.log(node())
      break
    case 'describe': {
      const d = cluster.raft(node()).describeQuorum()
      if (d === null) cluster.out.push(`n${node()}: not the leader`)
      else {
        cluster.out.push(`leader=${d.leaderId} epoch=${d.leaderEpoch} hw=${d.highWatermark}`)
        for (const [kind, list] of [
          ['voter', d.currentVoters],
          ['observer', d.observers],
        ] as const) {
          for (const r of list) {
            cluster.out.push(
              `${kind} ${r.replicaId}: logEndOffset=${r.logEndOffset} lastFetch=${r.lastFetchTimestamp} lastCaughtUp=${r.lastCaughtUpTimestamp}`,
            )
          }
        }
      }
      break
    }
    default:
      throw new Error(`unknown command '${verb}'`)
  }
  return cluster.take()
}

/** Replay a script; returns the file as it would be with the traces the code produces now. */
export function runScript(text: string): { actual: string; mismatches: string[] } {
  const state: { cluster: ScenarioCluster | null } = { cluster: null }
  const parts: string[] = []
  const mismatches: string[] = []
  for (const block of parseScript(text)) {
    const lines = [...block.comments]
    if (block.command !== '') {
      let output: string[]
      try {
        output = execute(state, block.command)
      } catch (error) {
        output = [`error: ${error instanceof Error ? error.message : String(error)}`]
      }
      if (output.join('\n') !== block.expected.join('\n')) {
        mismatches.push(
          `line ${block.line}: ${block.command}\n--- expected\n${block.expected.join('\n')}\n--- actual\n${output.join('\n')}`,
        )
      }
      lines.push(block.command, '----', ...output)
    }
    parts.push(lines.join('\n'))
  }
  return { actual: `${parts.join('\n\n')}\n`, mismatches }
}
