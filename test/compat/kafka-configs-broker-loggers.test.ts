// compat-cluster: skip it reads the log lines of the one node it starts
/**
 * Log levels changed at run time with Kafka's own `kafka-configs --entity-type broker-loggers`
 * against a real `weir start --set log.format=json`: every log line is one JSON object with time,
 * level, node, logger and message; the loggers are described at INFO; a level set on
 * kafka.server.BrokerLifecycleManager shows in the describe and silences that logger's INFO lines
 * (its controlled-shutdown line) while root's still appear; deleting the level restores it.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { LOGGER_NAMES } from '../../src/broker/index.ts'
import { kafkaTool } from '../support/kafka-tools.ts'
import { freePorts, tempDir, WeirProcess } from '../support/weir-process.ts'

const dir = tempDir('weir-broker-loggers-')
let node: WeirProcess
let bootstrap: string

before(async () => {
  const [port] = (await freePorts(1)) as [number]
  bootstrap = `127.0.0.1:${port}`
  node = new WeirProcess([
    '--data-dir',
    join(dir.path, 'data'),
    '--listen',
    bootstrap,
    '--set',
    'log.format=json',
  ])
  await node.start()
})

after(async () => {
  await node?.stop()
  dir.remove()
})

const loggers = (...args: string[]) =>
  kafkaTool(
    'kafka-configs',
    '--bootstrap-server',
    bootstrap,
    '--entity-type',
    'broker-loggers',
    '--entity-name',
    '1',
    ...args,
  )

/** The JSON log lines so far (the ready banner on stdout is not one). */
function logLines(): Array<Record<string, unknown>> {
  return node.output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
}

test('every log line is one JSON object: time, level, node, logger, message', () => {
  const lines = logLines()
  assert.ok(lines.length >= 3, node.output)
  for (const l of lines) {
    assert.deepEqual(Object.keys(l), ['level', 'time', 'node', 'logger', 'message'])
    assert.equal(l.node, 1)
    assert.ok(Object.values(LOGGER_NAMES).includes(String(l.logger) as never), String(l.logger))
  }
  assert.ok(
    lines.some((l) => l.logger === LOGGER_NAMES.lifecycle && l.message === 'broker unfenced: serving'),
  )
  assert.doesNotMatch(node.output, /^\[\d{4}-/m, 'no line in the text format')
})

test('kafka-configs describes the loggers, sets a level, deletes it; the level silences its INFO lines', async () => {
  const described = await loggers('--describe')
  for (const name of Object.values(LOGGER_NAMES))
    assert.match(described, new RegExp(`${name.replaceAll('.', '\\.')}=INFO`))
  await loggers('--alter', '--add-config', `${LOGGER_NAMES.lifecycle}=WARN`)
  assert.match(await loggers('--describe'), /kafka\.server\.BrokerLifecycleManager=WARN/)
  await loggers('--alter', '--delete-config', LOGGER_NAMES.lifecycle)
  assert.match(await loggers('--describe'), /kafka\.server\.BrokerLifecycleManager=INFO/)
  await loggers('--alter', '--add-config', `${LOGGER_NAMES.lifecycle}=WARN`)
  await node.stop()
  const messages = logLines().map((l) => `${l.logger} ${l.message}`)
  assert.ok(messages.includes('root SIGTERM: shutting down'), messages.join('\n'))
  assert.ok(
    !messages.some((m) => m.startsWith(`${LOGGER_NAMES.lifecycle} controlled shutdown`)),
    'the lifecycle logger at WARN logs no INFO line',
  )
})
