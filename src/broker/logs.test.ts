import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import pino from 'pino'
import { alterBrokerLoggers, describeBrokerLoggers } from '../server/index.ts'
import { jsonSink, LOGGER_NAMES, type LogSink, NodeLogs } from './logs.ts'

function capture(): { sink: LogSink; lines: string[] } {
  const lines: string[] = []
  return { sink: (l) => lines.push(`${l.logger} ${l.level} ${l.message}`), lines }
}

describe('NodeLogs', () => {
  it("follows log4j's hierarchy: a logger's own level, else its nearest ancestor's, else root's", () => {
    const { sink, lines } = capture()
    const logs = new NodeLogs(sink)
    const replication = logs.logger(LOGGER_NAMES.replication)
    const controller = logs.logger(LOGGER_NAMES.controller)
    replication('info', 'a')
    logs.setLevel('kafka', 'WARN')
    replication('info', 'hidden: kafka.* at WARN')
    replication('warn', 'b')
    controller('info', 'c: org.apache.kafka.* still at INFO')
    logs.setLevel(LOGGER_NAMES.replication, 'DEBUG')
    replication('info', 'd: its own level wins')
    logs.setLevel(LOGGER_NAMES.replication, null)
    replication('info', 'hidden again: back to kafka at WARN')
    logs.setLevel('root', 'ERROR')
    controller('warn', 'hidden: root at ERROR')
    controller('error', 'e')
    assert.deepEqual(lines, [
      'kafka.server.ReplicaManager info a',
      'kafka.server.ReplicaManager warn b',
      'org.apache.kafka.controller.QuorumController info c: org.apache.kafka.* still at INFO',
      'kafka.server.ReplicaManager info d: its own level wins',
      'org.apache.kafka.controller.QuorumController error e',
    ])
    assert.equal(logs.level(LOGGER_NAMES.groups), 'ERROR')
    assert.equal(logs.level(LOGGER_NAMES.replication), 'WARN')
  })

  it('answers BROKER_LOGGER describes and changes as Kafka checks them', () => {
    const logs = new NodeLogs(() => {})
    const set = (name: string, value: string | null, op = 0, validateOnly = false) =>
      alterBrokerLoggers(
        logs,
        { resourceType: 8, resourceName: '1', configs: [{ name, value, configOperation: op }] },
        validateOnly,
      )
    assert.deepEqual(set('kafka.server.ReplicaManager', 'DEBUG'), { errorCode: 0, errorMessage: null })
    assert.deepEqual(
      describeBrokerLoggers(logs, ['kafka.server.ReplicaManager', 'root']).map((c) => [c.name, c.value]),
      [
        ['root', 'INFO'],
        ['kafka.server.ReplicaManager', 'DEBUG'],
      ],
    )
    assert.equal(set('kafka', 'TRACE', 0, true).errorCode, 0)
    assert.equal(logs.level('kafka'), 'INFO', 'validateOnly changes nothing')
    assert.deepEqual(set('kafka', 'debug'), {
      errorCode: 40,
      errorMessage:
        'Cannot set the log level of kafka to debug as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN',
    })
    assert.deepEqual(set('no.such', 'DEBUG'), {
      errorCode: 40,
      errorMessage: 'Logger no.such does not exist!',
    })
    assert.equal(set('root', null, 1).errorCode, 42)
    assert.equal(
      set('kafka', 'DEBUG', 2).errorMessage,
      'APPEND operation is not allowed for the BROKER_LOGGER resource',
    )
    assert.equal(set('kafka.server.ReplicaManager', null, 1).errorCode, 0)
    assert.equal(logs.level('kafka.server.ReplicaManager'), 'INFO')
    assert.equal(describeBrokerLoggers(logs, null).length, Object.keys(LOGGER_NAMES).length)
  })

  it('log.format=json: one object a line with time, level, node, logger and message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'weir-logs-'))
    try {
      const file = join(dir, 'log.jsonl')
      const logs = new NodeLogs(jsonSink(3, false, pino.destination({ dest: file, sync: true })))
      logs.logger(LOGGER_NAMES.raft)('info', 'quorum: leader in epoch 2')
      logs.logger(LOGGER_NAMES.storage)('error', 'log dir /x failed: "EIO"')
      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      assert.equal(lines.length, 2)
      assert.deepEqual(Object.keys(lines[0]!), ['level', 'time', 'node', 'logger', 'message'])
      assert.deepEqual(
        lines.map((l) => [l.level, l.node, l.logger, l.message]),
        [
          ['INFO', 3, 'org.apache.kafka.raft.KafkaRaftClient', 'quorum: leader in epoch 2'],
          ['ERROR', 3, 'kafka.log.LogManager', 'log dir /x failed: "EIO"'],
        ],
      )
      assert.ok(!Number.isNaN(Date.parse(String(lines[0]!.time))))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
