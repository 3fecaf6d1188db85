/**
 * Configs in a three-node Weir cluster with Kafka's `kafka-configs`: a broker that is not the
 * active controller forwards IncrementalAlterConfigs over the wire, and every node then describes
 * the committed configs. Java is required (see kafka-configs.test.ts).
 */
// compat-cluster: skip it starts its own three-node cluster (the cluster side of kafka-configs.test.ts)
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { freePorts, REPO, tempDir, WeirProcess, waitFor, writeProperties } from '../support/weir-process.ts'

const run = promisify(execFile)
const dir = tempDir('weir-configs-cluster-')
const nodes: WeirProcess[] = []
const clientPorts: number[] = []

async function kafkaConfigs(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run(
    join(REPO, 'tools/kafka/tool.sh'),
    ['kafka-configs', '--bootstrap-server', `127.0.0.1:${port}`, ...args],
    { timeout: 90_000 },
  )
  return stdout
}

before(async () => {
  const ports = await freePorts(6)
  const voters = [0, 1, 2].map((i) => `${i + 1}@127.0.0.1:${ports[i * 2 + 1]}`).join(',')
  for (const i of [0, 1, 2]) {
    clientPorts.push(ports[i * 2] ?? 0)
    const config = writeProperties(dir.path, `n${i + 1}.properties`, {
      'node.id': i + 1,
      listeners: `PLAINTEXT://127.0.0.1:${ports[i * 2]},CONTROLLER://127.0.0.1:${ports[i * 2 + 1]}`,
      'controller.quorum.voters': voters,
      'log.dirs': `${dir.path}/n${i + 1}`,
      'cluster.id': 'configsClusterTest',
    })
    nodes.push(new WeirProcess(['--config', config]))
  }
  await Promise.all(nodes.map((n) => n.start()))
})

after(async () => {
  for (const n of nodes) await n.stop()
  dir.remove()
})

test('every broker forwards config changes to the active controller and describes them', async () => {
  for (const [i, port] of clientPorts.entries()) {
    const id = i + 1
    const out = await kafkaConfigs(
      port,
      '--entity-type',
      'brokers',
      '--entity-name',
      String(id),
      '--alter',
      '--add-config',
      `log.retention.ms=${id * 1000}`,
    )
    assert.match(out, new RegExp(`Completed updating config for broker ${id}\\.`))
  }
  await kafkaConfigs(
    clientPorts[2] ?? 0,
    '--entity-type',
    'brokers',
    '--entity-default',
    '--alter',
    '--add-config',
    'log.segment.bytes=2097152',
  )
  for (const [i, port] of clientPorts.entries()) {
    const id = i + 1
    // Each node describes its own BROKER resource, once the change has reached its image.
    await waitFor(`broker ${id}'s dynamic config`, async () => {
      const out = await kafkaConfigs(
        port,
        '--entity-type',
        'brokers',
        '--entity-name',
        String(id),
        '--describe',
      )
      return out.includes(`log.retention.ms=${id * 1000} `) ? out : undefined
    })
    const defaults = await waitFor(`the cluster default on node ${id}`, async () => {
      const out = await kafkaConfigs(port, '--entity-type', 'brokers', '--entity-default', '--describe')
      return out.includes('log.segment.bytes=2097152') ? out : undefined
    })
    assert.match(defaults, /DYNAMIC_DEFAULT_BROKER_CONFIG:log\.segment\.bytes=2097152/)
  }
})
