/** A `weir console` process on a free loopback port, for tests and benches. */
import { type ChildProcess, spawn } from 'node:child_process'
import { NODE, WEIR, waitFor } from './weir-process.ts'

/** Starts `weir console` with `args` (e.g. `-b HOST:PORT`); resolves with its base URL once it listens. */
export async function startWeirConsole(
  args: readonly string[],
): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(NODE, [WEIR, 'console', ...args, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const collect = (d: Buffer) => {
    out += d.toString()
  }
  child.stdout!.on('data', collect)
  child.stderr!.on('data', collect)
  const base = await waitFor(
    'weir console to listen',
    () => {
      if (child.exitCode !== null) throw new Error(`weir console exited ${child.exitCode}: ${out}`)
      return /at (http:\/\/[^/]+)\/console\//.exec(out)?.[1]
    },
    30_000,
  )
  return { child, base }
}
