/**
 * `weir dev --brokers N`: an N-node dev cluster on this machine, one `weir start` process per node
 * (broker and controller each, all of them voters), distinct ports and data dirs under one dev
 * directory, one cluster id; prints the bootstrap list once every node serves and stops them all on
 * Ctrl-C or SIGTERM.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

export const DEV_USAGE = `Usage: weir dev [--brokers N] [options]

Starts an N-node cluster (default 3), one process per node, each broker+controller, until Ctrl-C.
Node i (1..N) serves clients on 127.0.0.1:PORT+2(i-1) and its controller on the next port;
its HTTP listener (/console/, /metrics, /v1/health/live, /v1/health/ready) is on 127.0.0.1:PORT+2N+(i-1).
Internal topics get replication factor min(3, N). Logs go to DIR/node-i.log.

Options:
  -n, --brokers N     nodes (1-9; default 3)
  --port PORT         the first node's client port (default 9092)
  --dir DIR           the dev directory (default .weir/dev); data is kept across runs
  --set KEY=VALUE     a config for every node (repeatable)
  --json              print the cluster as one JSON line once it serves
  -h, --help          this help
`

const WEIR_BIN = fileURLToPath(new URL('../../bin/weir.js', import.meta.url))

/** A Kafka-style cluster id: 16 random bytes, URL-safe base64 without padding, never starting with '-'. */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url')
    if (!id.startsWith('-')) return id
  }
}

export interface DevNodeSpec {
  readonly nodeId: number
  readonly port: number
  readonly controllerPort: number
  readonly httpPort: number
  readonly dataDir: string
  readonly args: string[]
}

/** The `weir start` arguments of each node of an N-node dev cluster. */
export function devNodes(options: {
  brokers: number
  port: number
  dir: string
  clusterId: string
  set: readonly string[]
}): DevNodeSpec[] {
  const n = options.brokers
  const rf = Math.min(3, n)
  const ids = Array.from({ length: n }, (_, i) => i + 1)
  const voters = ids.map((id) => `${id}@127.0.0.1:${options.port + 2 * (id - 1) + 1}`).join(',')
  return ids.map((id) => {
    const port = options.port + 2 * (id - 1)
    const dataDir = join(options.dir, `node-${id}`)
    const httpPort = options.port + 2 * n + (id - 1)
    return {
      nodeId: id,
      port,
      controllerPort: port + 1,
      httpPort,
      dataDir,
      args: [
        '--node-id',
        String(id),
        '--listen',
        `127.0.0.1:${port}`,
        '--data-dir',
        dataDir,
        `--cluster-id=${options.clusterId}`,
        '--set',
        `controller.quorum.voters=${voters}`,
        '--set',
        `offsets.topic.replication.factor=${rf}`,
        '--set',
        `transaction.state.log.replication.factor=${rf}`,
        '--set',
        `transaction.state.log.min.isr=${Math.min(2, rf)}`,
        '--set',
        `http.listeners=http://127.0.0.1:${httpPort}`,
        ...options.set.flatMap((kv) => ['--set', kv]),
      ],
    }
  })
}

function parseDevArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    options: {
      brokers: { type: 'string', short: 'n' },
      port: { type: 'string' },
      dir: { type: 'string' },
      set: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  }).values
}

export async function runDev(argv: readonly string[]): Promise<number> {
  let values: ReturnType<typeof parseDevArgs>
  try {
    values = parseDevArgs(argv)
  } catch (e) {
    process.stderr.write(`weir dev: ${(e as Error).message}\n\n${DEV_USAGE}`)
    return 2
  }
  if (values.help === true) {
    process.stdout.write(DEV_USAGE)
    return 0
  }
  const brokers = Number(values.brokers ?? '3')
  const port = Number(values.port ?? '9092')
  if (!Number.isInteger(brokers) || brokers < 1 || brokers > 9) {
    process.stderr.write(`weir dev: --brokers must be 1 to 9, not '${values.brokers}'\n`)
    return 2
  }
  if (!Number.isInteger(port) || port < 1 || port + 3 * brokers > 65535) {
    process.stderr.write(`weir dev: --port must be a port number, not '${values.port}'\n`)
    return 2
  }
  const dir = resolve(values.dir ?? '.weir/dev')
  mkdirSync(dir, { recursive: true })
  // The cluster id lives in the dev directory, so that a second run reuses the formatted nodes.
  const idFile = join(dir, 'cluster.id')
  const clusterId = existsSync(idFile) ? readFileSync(idFile, 'utf8').trim() : newClusterId()
  writeFileSync(idFile, `${clusterId}\n`)
  const specs = devNodes({ brokers, port, dir, clusterId, set: values.set ?? [] })

  const children: ChildProcess[] = []
  let stopping = false
  const exited: Array<Promise<number | null>> = []
  const stopAll = async (): Promise<void> => {
    stopping = true
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM')
    await Promise.all(exited)
  }
  let resolveSignal!: (s: string) => void
  const signalled = new Promise<string>((r) => {
    resolveSignal = r
  })
  const onSignal = (s: NodeJS.Signals) => resolveSignal(s)
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    const started = performance.now()
    const ready = specs.map((spec) => {
      const log = createWriteStream(join(dir, `node-${spec.nodeId}.log`), { flags: 'a' })
      // Its own process group: a Ctrl-C on the terminal reaches `weir dev` only, which stops the nodes in order.
      const child = spawn(process.execPath, [WEIR_BIN, 'start', ...spec.args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      })
      children.push(child)
      child.stderr?.pipe(log)
      exited.push(new Promise((r) => child.once('exit', (code) => r(code))))
      return new Promise<void>((resolveReady, reject) => {
        let out = ''
        child.stdout?.on('data', (d: Buffer) => {
          log.write(d)
          out += d.toString()
          if (/ready in \d+ ms/.test(out)) resolveReady()
        })
        child.once('exit', (code) => {
          if (!stopping)
            reject(
              new Error(
                `node ${spec.nodeId} exited with ${code}; see ${join(dir, `node-${spec.nodeId}.log`)}`,
              ),
            )
        })
      })
    })
    const outcome = await Promise.race([
      Promise.all(ready).then(() => 'ready' as const),
      signalled.then(() => 'signal' as const),
    ])
    if (outcome === 'signal') {
      await stopAll()
      return 0
    }
    const bootstrap = specs.map((s) => `127.0.0.1:${s.port}`).join(',')
    if (values.json === true)
      process.stdout.write(
        `${JSON.stringify({ bootstrap, clusterId, dir, nodes: specs.map((s) => ({ nodeId: s.nodeId, port: s.port, controllerPort: s.controllerPort, httpPort: s.httpPort, dataDir: s.dataDir })) })}\n`,
      )
    else
      process.stdout.write(
        `Weir dev cluster of ${brokers} node${brokers === 1 ? '' : 's'} ready in ${Math.round(performance.now() - started)} ms\n` +
          `  bootstrap: ${bootstrap}\n` +
          `  console:   http://127.0.0.1:${specs[0]!.httpPort}/console/\n` +
          `  metrics:   ${specs.map((s) => `http://127.0.0.1:${s.httpPort}/metrics`).join(' ')}\n` +
          `  cluster:   ${clusterId}\n` +
          `  dir:       ${dir} (logs in node-N.log)\n` +
          '  Ctrl-C stops every node.\n',
      )
    // A node that dies while the cluster runs is reported; the rest keep running.
    for (const [i, c] of children.entries())
      c.once('exit', (code, signal) => {
        if (!stopping)
          process.stderr.write(`weir dev: node ${i + 1} exited (${signal ?? code}); see node-${i + 1}.log\n`)
      })
    await signalled
    process.stderr.write('weir dev: stopping every node\n')
    await stopAll()
    return 0
  } catch (e) {
    process.stderr.write(`weir dev: ${(e as Error).message}\n`)
    await stopAll()
    return 1
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}
