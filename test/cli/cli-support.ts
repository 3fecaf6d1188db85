/**
 * Runs `bin/weir.js` as a child process (asynchronously: the embedded cluster it talks to lives in
 * the test's own event loop), with stdin, and returns its exit code and output.
 */
import { spawn } from 'node:child_process'
import { NODE, WEIR } from '../support/weir-process.ts'

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export async function weir(
  args: readonly string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = spawn(NODE, [WEIR, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString()
  })
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString()
  })
  child.stdin.end(options.input ?? '')
  const timeoutMs = options.timeoutMs ?? 60_000
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)))
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** Runs a command that must succeed and returns its stdout parsed as JSON. */
export async function weirJson<T = unknown>(args: readonly string[], input?: string): Promise<T> {
  const r = await weir([...args, '--json'], input === undefined ? {} : { input })
  if (r.code !== 0) throw new Error(`weir ${args.join(' ')} exited ${r.code}:\n${r.stderr}${r.stdout}`)
  return JSON.parse(r.stdout) as T
}

/** Runs a command that must succeed and returns its stdout. */
export async function weirOk(args: readonly string[], input?: string): Promise<string> {
  const r = await weir(args, input === undefined ? {} : { input })
  if (r.code !== 0) throw new Error(`weir ${args.join(' ')} exited ${r.code}:\n${r.stderr}${r.stdout}`)
  return r.stdout
}
