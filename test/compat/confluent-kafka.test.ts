/**
 * librdkafka through confluent-kafka-python (pinned in clients/python/matrix-requirements.txt,
 * installed by tools/compat-install.sh into .cache/compat/pyvenv) against a real `weir start`:
 * test/compat/clients/python/confluent_matrix.py produces with librdkafka's defaults (acks=all)
 * in every codec and with enable.idempotence, consumes with a group Consumer (subscribe, commit)
 * and group-less (assign, offsets_for_times), and administers with AdminClient (topics, configs,
 * partitions, list_offsets, list_consumer_group_offsets, describe_consumer_groups). See
 * client-matrix.ts.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO } from '../support/weir-process.ts'
import { clientMatrix, runDriver } from './client-matrix.ts'

const SCRIPT = join(REPO, 'test/compat/clients/python/confluent_matrix.py')

clientMatrix({
  async driver(bootstrap) {
    const python = execFileSync(join(REPO, 'tools/compat-install.sh'), ['confluent-kafka'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .at(-1)!
    return (command, ...args) => runDriver(python, [SCRIPT, command, ...args], { BOOTSTRAP: bootstrap() })
  },
  errors: { exists: 'TOPIC_ALREADY_EXISTS', unknown: 'UNKNOWN_TOPIC_OR_PART' },
  also: {
    committed(out) {
      assert.equal(out.groupState, 'EMPTY')
    },
  },
})
