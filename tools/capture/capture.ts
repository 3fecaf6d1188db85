// One capture session: a fresh Kafka broker advertising a recording proxy, one client's scenario
// driven through it, and the chosen exchanges written as golden fixtures. run-all.ts loops over the
// clients; clients.ts says how each one is prepared and driven.
import { spawn, spawnSync } from 'node:child_process'
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { createInterface } from 'node:readline'
import { freePort, type KafkaBroker, startKafka } from '../kafka/kafka.ts'
import { formatFixture } from './fixtures.ts'
import { type Exchange, type RecordingProxy, startProxy } from './proxy.ts'

/** What a client's capture function gets. */
export interface CaptureContext {
  /** `127.0.0.1:<proxy port>`: the only address clients are given. */
  bootstrap: string
  /** A topic and a group id of this client's own. */
  topic: string
  group: string
  /** Labels the requests from now on with a scenario step, and notes what the step sends. */
  step(slug: string, note: string): Promise<void>
  /** Records the client's name and version, e.g. `kafkajs 2.2.4`. */
  version(text: string): void
  /** Runs `fn` with new connections labelled as setup: their exchanges are not kept. */
  setup<T>(fn: () => Promise<T>): Promise<T>
  /**
   * Runs a command to completion. Lines `@@step <slug> <note>` and `@@version <text>` on its stdout
   * call step() and version(); it fails on a non-zero exit unless `allowFail`.
   */
  run(command: string, args: string[], options?: RunOptions): Promise<{ code: number; stdout: string }>
}

export interface RunOptions {
  env?: Record<string, string>
  cwd?: string
  input?: string
  timeoutMs?: number
  allowFail?: boolean
}

export interface CaptureClient {
  /** The fixture folder's name, e.g. `kafkajs`. */
  name: string
  /** Installs or builds what the scenario needs; throws (with the reason) when the client can't run here. */
  prepare(root: string): Promise<void>
  /** Drives the scenario through `ctx.bootstrap`. */
  capture(ctx: CaptureContext, root: string): Promise<void>
  /** Overrides of `keepPerApi` for this client (apiKey -> exchanges kept per version). */
  keep?: Record<number, number>
}

export interface CaptureResult {
  client: string
  version: string
  exchanges: number
  files: string[]
  startMs: number
  captureMs: number
}

/** How many exchanges to keep per (apiKey, apiVersion), each from a different step; 1 when absent. */
const keepPerApi: Record<number, number> = {
  0: 5, // Produce: one per compression codec
  1: 2, // Fetch
  3: 2, // Metadata
  19: 2, // CreateTopics: success and TOPIC_ALREADY_EXISTS
}

const setupLabel = '(setup)'

/**
 * Picks the exchanges worth keeping: per (apiKey, apiVersion), one per step, preferring in each step
 * the exchange with a response and then the largest response (so a Fetch with records beats an empty
 * one), and at most keepPerApi[apiKey] steps, the ones with the largest responses.
 */
export function selectExchanges(
  exchanges: readonly Exchange[],
  keep: Record<number, number> = {},
): Exchange[] {
  const limits: Record<number, number> = { ...keepPerApi, ...keep }
  const score = (e: Exchange): number => (e.response === null ? -1 : e.response.length)
  const groups = new Map<string, Map<string, Exchange>>()
  for (const e of exchanges) {
    if (e.connectionLabel === setupLabel) continue
    const key = `${e.apiKey}/${e.apiVersion}/${isBrokerInternal(e)}`
    const steps = groups.get(key) ?? new Map<string, Exchange>()
    groups.set(key, steps)
    const best = steps.get(e.requestLabel)
    if (best === undefined || score(e) > score(best)) steps.set(e.requestLabel, e)
  }
  const kept: Exchange[] = []
  for (const steps of groups.values()) {
    const ranked = [...steps.values()].sort((a, b) => score(b) - score(a) || a.sequence - b.sequence)
    kept.push(...ranked.slice(0, limits[ranked[0]!.apiKey] ?? 1))
  }
  return kept.sort((a, b) => a.sequence - b.sequence)
}

function slug(text: string): string {
  return text.replace(/[^a-zA-Z0-9]+/g, '-').replace(/^-|-$/g, '') || 'start'
}

/**
 * The broker's own clients (transaction markers, KIP-890 AddPartitionsToTxn verification, the share-group
 * state persister) reach it through its advertised listener, so through the proxy: their frames are
 * kept apart from the client's, recognised by their client ids.
 */
export function isBrokerInternal(e: Exchange): boolean {
  return e.clientId !== null && /^(broker-\d+-|AddPartitionsManager-|Persister-)/.test(e.clientId)
}

/** The folder of the broker-internal fixtures, shared by every client's capture. */
export const brokerInternalDir = 'kafka-broker'

/**
 * Writes the kept exchanges of one client's capture: the client's into `<outDir>/<client>/` (emptied
 * first), the broker-internal ones into `<outDir>/kafka-broker/` as `...-via-<client>-...` (replacing
 * those of an earlier capture of the same client). Returns the paths written, relative to `outDir`.
 */
export function writeFixtures(
  outDir: string,
  kept: readonly Exchange[],
  info: {
    clientName: string
    client: string
    kafkaVersion: string
    notes: ReadonlyMap<string, string>
    apiNames: ReadonlyMap<number, string>
  },
): string[] {
  const via = `-via-${info.clientName}-`
  rmSync(join(outDir, info.clientName), { recursive: true, force: true })
  mkdirSync(join(outDir, info.clientName), { recursive: true })
  mkdirSync(join(outDir, brokerInternalDir), { recursive: true })
  for (const old of readdirSync(join(outDir, brokerInternalDir)).filter((f) => f.includes(via))) {
    rmSync(join(outDir, brokerInternalDir, old))
  }
  const files: string[] = []
  const write = (path: string, meta: Record<string, string>, bytes: Buffer): void => {
    writeFileSync(join(outDir, path), formatFixture(meta, bytes))
    files.push(path)
  }
  for (const e of kept) {
    const internal = isBrokerInternal(e)
    const apiName = info.apiNames.get(e.apiKey) ?? `Api${e.apiKey}`
    const step = slug(e.requestLabel)
    const stem = internal
      ? join(brokerInternalDir, `${apiName}-v${e.apiVersion}${via}${step}`)
      : join(info.clientName, `${apiName}-v${e.apiVersion}-${step}`)
    const common = {
      client: internal ? `kafka-broker ${info.kafkaVersion}` : info.client,
      broker: `Apache Kafka ${info.kafkaVersion}`,
      api: `${apiName} (${e.apiKey}) v${e.apiVersion}`,
      apiKey: String(e.apiKey),
      apiVersion: String(e.apiVersion),
    }
    const note = info.notes.get(e.requestLabel) ?? 'connection start-up before the first step'
    const scenario = {
      clientId: e.clientId ?? '(null)',
      scenario: info.clientName,
      step,
      note: internal ? `the broker's own request to its advertised listener during: ${note}` : note,
    }
    const request = `${stem}-request.hex`
    write(
      request,
      { ...common, direction: 'request', correlationId: String(e.correlationId), ...scenario },
      e.request,
    )
    if (e.response !== null) {
      const meta = { ...common, direction: 'response', correlationId: String(e.correlationId), ...scenario }
      write(`${stem}-response.hex`, { ...meta, request: basename(request) }, e.response)
    }
  }
  return files
}

/** Starts a broker and a proxy, runs one client's scenario, and writes its fixtures under `outDir`. */
export async function captureClient(
  client: CaptureClient,
  options: { root: string; outDir: string; kafkaVersion: string; apiNames: ReadonlyMap<number, string> },
): Promise<CaptureResult> {
  const brokerPort = await freePort()
  const proxy: RecordingProxy = await startProxy({ listenPort: 0, targetPort: brokerPort })
  const dataDir = mkdtempSync(join(tmpdir(), `weir-capture-${client.name}-`))
  let broker: KafkaBroker | undefined
  const notes = new Map<string, string>()
  let version = client.name
  const started = performance.now()
  const logs = join(options.root, '.cache', 'capture', 'logs')
  mkdirSync(logs, { recursive: true })
  // What the client's commands printed, for a look after a failure.
  const driverLog = join(logs, `${client.name}-driver.log`)
  writeFileSync(driverLog, '')
  try {
    broker = await startKafka({ port: brokerPort, advertisedPort: proxy.port, dataDir })
    proxy.setLabel(client.name, '')
    let inSetup = false
    const ctx: CaptureContext = {
      bootstrap: `127.0.0.1:${proxy.port}`,
      topic: `golden-${client.name}`,
      group: `golden-${client.name}-group`,
      async step(s, note) {
        notes.set(s, note)
        proxy.setRequestLabel(s)
      },
      version(text) {
        version = text
      },
      async setup(fn) {
        inSetup = true
        proxy.setLabel(setupLabel, setupLabel)
        try {
          return await fn()
        } finally {
          inSetup = false
          proxy.setLabel(client.name, '')
        }
      },
      run: (command, args, runOptions = {}) =>
        runCommand(command, args, runOptions, {
          step: (s, note) => {
            if (!inSetup) void ctx.step(s, note)
          },
          version: (text) => ctx.version(text),
          log: (text) => appendFileSync(driverLog, text),
        }),
    }
    await client.capture(ctx, options.root)
    // Let the last responses arrive, then drop whatever the client left open.
    await new Promise((done) => setTimeout(done, 500))
    proxy.closeConnections()
    const kept = selectExchanges(proxy.exchanges, client.keep)
    const files = writeFixtures(options.outDir, kept, {
      clientName: client.name,
      client: version,
      kafkaVersion: options.kafkaVersion,
      notes,
      apiNames: options.apiNames,
    })
    return {
      client: client.name,
      version,
      exchanges: proxy.exchanges.length,
      files,
      startMs: broker.startMs,
      captureMs: Math.round(performance.now() - started),
    }
  } finally {
    await proxy.stop()
    await broker?.stop()
    // Keep the broker's log for a look after a failure; the data goes.
    if (broker !== undefined && existsSync(broker.logFile))
      copyFileSync(broker.logFile, join(logs, `${client.name}-server.log`))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

function runCommand(
  command: string,
  args: string[],
  options: RunOptions,
  on: { step(slug: string, note: string): void; version(text: string): void; log(text: string): void },
): Promise<{ code: number; stdout: string }> {
  on.log(`$ ${command} ${args.join(' ')}\n`)
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 180_000)
    let stdout = ''
    let stderr = ''
    createInterface({ input: child.stdout }).on('line', (line) => {
      const step = /^@@step (\S+) ?(.*)$/.exec(line)
      const version = /^@@version (.+)$/.exec(line)
      if (step !== null) on.step(step[1]!, step[2]!)
      else if (version !== null) on.version(version[1]!)
      else stdout += `${line}\n`
      on.log(`${line}\n`)
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      on.log(chunk.toString())
    })
    child.stdin.end(options.input ?? '')
    child.once('error', fail)
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const result = { code: code ?? -1, stdout }
      if (code === 0 || options.allowFail) return done(result)
      fail(new Error(`${command} ${args.join(' ')} exited ${code ?? signal}:\n${stderr.slice(-3000)}`))
    })
  })
}

/** Reads Kafka's API names (apiKey -> `Produce`, ...) from the message schemas in the kafka-clients jar. */
export function apiNamesFromJar(libs: string, kafkaVersion: string, cacheDir: string): Map<number, string> {
  const jar = readdirSync(libs).find((f) => f === `kafka-clients-${kafkaVersion}.jar`)
  if (jar === undefined) throw new Error(`no kafka-clients-${kafkaVersion}.jar in ${libs}`)
  const dir = join(cacheDir, `messages-${kafkaVersion}`)
  const messages = join(dir, 'common', 'message')
  try {
    readdirSync(messages)
  } catch {
    mkdirSync(dir, { recursive: true })
    const unzip = spawnSync('jar', ['xf', join(libs, jar), 'common/message'], { cwd: dir, stdio: 'inherit' })
    if (unzip.status !== 0) throw new Error(`jar xf ${jar} failed`)
  }
  const names = new Map<number, string>()
  for (const file of readdirSync(messages).filter((f) => f.endsWith('Request.json'))) {
    const text = readFileSync(join(messages, file), 'utf8')
    const key = /"apiKey":\s*(\d+)/.exec(text)
    const name = /"name":\s*"(\w+)Request"/.exec(text)
    if (key !== null && name !== null) names.set(Number(key[1]), name[1]!)
  }
  return names
}
