/**
 * Real Weir processes for compat and fault tests: `bin/weir.js start` in a child process, waited
 * for until it prints that it is ready, stopped with SIGTERM or killed with SIGKILL.
 */

import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const REPO = join(import.meta.dirname, '../..')
export const NODE = join(REPO, 'node_modules/.bin/node')
export const WEIR = join(REPO, 'bin/weir.js')

import { freePorts } from '../../tools/free-ports.ts'

export { freePorts }

export function tempDir(prefix: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

export interface WeirProcessOptions {
  /**
   * A command the node runs under, e.g. `['ip', 'netns', 'exec', 'ns1']` (which execs in place, so
   * the pid is still the node's and signals reach it directly).
   */
  readonly prefix?: readonly string[]
  /** Extra environment variables for the process. */
  readonly env?: Readonly<Record<string, string>>
}

export class WeirProcess {
  readonly args: readonly string[]
  readonly #options: WeirProcessOptions
  #child: ChildProcess | null = null
  #output = ''
  #exited: Promise<number | null> | null = null

  constructor(args: readonly string[], options: WeirProcessOptions = {}) {
    this.args = args
    this.#options = options
  }

  /** True while the process runs (started and not exited). */
  get running(): boolean {
    return this.#child !== null && this.#child.exitCode === null && this.#child.signalCode === null
  }

  /** Everything the process printed so far (stdout and stderr). */
  get output(): string {
    return this.#output
  }

  get pid(): number | undefined {
    return this.#child?.pid
  }

  /** Starts the process and resolves once it printed its ready line. */
  async start(timeoutMs = 30_000): Promise<void> {
    const prefix = this.#options.prefix ?? []
    const command = [...prefix, NODE, WEIR, 'start', ...this.args]
    const child = spawn(command[0]!, command.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: this.#options.env === undefined ? process.env : { ...process.env, ...this.#options.env },
    })
    this.#child = child
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        if (signal !== null) this.#output += `\n[weir-process: killed by ${signal}]\n`
        resolve(code)
      }),
    )
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`not ready within ${timeoutMs} ms:\n${this.#output}`)),
        timeoutMs,
      )
      const onData = (d: Buffer) => {
        this.#output += d.toString()
        if (/ready in \d+ ms/.test(this.#output)) {
          clearTimeout(timer)
          resolve()
        }
      }
      child.stdout?.on('data', onData)
      child.stderr?.on('data', (d: Buffer) => {
        this.#output += d.toString()
      })
      void this.#exited?.then((code) => {
        clearTimeout(timer)
        reject(new Error(`exited with ${code} before it was ready:\n${this.#output}`))
      })
    })
    await ready
  }

  /** SIGTERM and wait for a clean exit. */
  async stop(): Promise<number | null> {
    if (this.#child === null || this.#child.exitCode !== null) return this.#child?.exitCode ?? null
    this.#child.kill('SIGTERM')
    return this.#exited
  }

  /** SIGKILL: no shutdown at all, as a crash. */
  async kill(): Promise<void> {
    if (this.#child === null || this.#child.exitCode !== null || this.#child.signalCode !== null) return
    this.#child.kill('SIGKILL')
    await this.#exited
  }

  /** Sends `signal` (e.g. SIGSTOP, SIGCONT) to a running process; false when it is not running. */
  signal(signal: NodeJS.Signals): boolean {
    if (!this.running) return false
    return this.#child!.kill(signal)
  }

  /** SIGKILL now, without waiting (for process 'exit' handlers, which cannot await). */
  killNow(): void {
    if (this.running) this.#child!.kill('SIGKILL')
  }
}

/**
 * The settings of one combined node (broker and controller, node 1, a voter quorum of itself) on
 * loopback: PLAINTEXT on `port`, CONTROLLER on `controllerPort`, then `extra` (log dirs, ids, ...).
 */
export function combinedNodeProperties(
  port: number,
  controllerPort: number,
  extra: Record<string, string | number> = {},
): Record<string, string | number> {
  return {
    'node.id': 1,
    'process.roles': 'broker,controller',
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'controller.listener.names': 'CONTROLLER',
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    ...extra,
  }
}

/** Writes a server.properties file and returns its path. */
export function writeProperties(dir: string, name: string, props: Record<string, string | number>): string {
  const path = join(dir, name)
  writeFileSync(
    path,
    `${Object.entries(props)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n')}\n`,
  )
  return path
}

/**
 * The properties file of one combined node on two free ports, its logs and metadata in `dir`, as the
 * benches that compare one Weir node with one Kafka broker run it. Returns the client port too.
 */
export async function singleNodeConfig(dir: string): Promise<{ port: number; config: string }> {
  const [port, controllerPort] = (await freePorts(2)) as [number, number]
  const config = writeProperties(
    dir,
    'weir.properties',
    combinedNodeProperties(port, controllerPort, {
      'log.dirs': join(dir, 'weir-data'),
      'metadata.log.dir': join(dir, 'weir-metadata'),
      'offsets.topic.replication.factor': 1,
    }),
  )
  return { port, config }
}

/** Waits until `fn` returns something other than undefined, polling. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v !== undefined) return v
    } catch (e) {
      lastError = e
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** A port whose successor is free too (`--listen` puts the controller on port + 1). */
export async function portPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const [port] = await freePorts(1)
    const next = (port ?? 0) + 1
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer()
      s.once('error', () => resolve(false))
      s.listen(next, '127.0.0.1', () => s.close(() => resolve(true)))
    })
    if (port !== undefined && free) return port
  }
  throw new Error('no two consecutive free ports')
}
