/** Kafka's own command-line tools (the 4.4.0 jars through tools/kafka/tool.sh) for compat tests. */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { REPO } from './weir-process.ts'

const run = promisify(execFile)

/** What a tool run printed and how it exited (a failure is a result here, not an error). */
export interface ToolRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `tool` (e.g. `kafka-topics`, or a class name) with `args`, whatever it exits with. */
export async function runKafkaTool(...args: string[]): Promise<ToolRun> {
  try {
    const { stdout, stderr } = await run(join(REPO, 'tools/kafka/tool.sh'), args, {
      timeout: 120_000,
      maxBuffer: 64 * 1024 * 1024,
    })
    return { code: 0, stdout, stderr }
  } catch (e) {
    const err = e as { code?: unknown; stdout?: string; stderr?: string; message: string }
    if (typeof err.code !== 'number') throw e // not run at all, or timed out
    return { code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }
  }
}

/** Runs `tool` (e.g. `kafka-topics`) with `args`; its stdout, or an error with both outputs. */
export async function kafkaTool(...args: string[]): Promise<string> {
  try {
    return (await run(join(REPO, 'tools/kafka/tool.sh'), args, { timeout: 120_000 })).stdout
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string }
    throw new Error(`${args[0]} failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`)
  }
}

export interface DescribedPartition {
  readonly leader: number
  readonly replicas: number[]
  readonly isr: number[]
}

/** `kafka-topics --describe` parsed: partition -> leader (-1 for none), replicas, ISR. */
export async function describeTopic(
  bootstrap: string,
  topic: string,
): Promise<Map<number, DescribedPartition>> {
  const out = await kafkaTool('kafka-topics', '--bootstrap-server', bootstrap, '--describe', '--topic', topic)
  const parts = new Map<number, DescribedPartition>()
  for (const line of out.split('\n')) {
    const m = /Partition: (\d+)\s+Leader: (-?\d+|none)\s+Replicas: ([\d,]*)\s+Isr: ([\d,]*)/.exec(line)
    if (m === null) continue
    const list = (s: string) => (s === '' ? [] : s.split(',').map(Number))
    parts.set(Number(m[1]), {
      leader: m[2] === 'none' ? -1 : Number(m[2]),
      replicas: list(m[3]!),
      isr: list(m[4]!),
    })
  }
  return parts
}
