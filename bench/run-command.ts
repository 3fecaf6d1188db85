/** Runs a command to its end: its stdout, or an error with the start of its stderr (benches). */
import { spawn } from 'node:child_process'

export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 65536) err += d.toString()
    })
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${err}`)),
    )
  })
}
