/**
 * @platformatic/kafka (the devDependency) against a real `weir start`, in the test's own process:
 * test/compat/clients/platformatic/matrix.ts produces with the default Producer (acks=-1, murmur2
 * of the key) in every codec and with `idempotent: true`, consumes with a group Consumer (commit),
 * and administers with Admin (topics, configs, partitions, listOffsets, listConsumerGroupOffsets,
 * describeGroups). See client-matrix.ts.
 */
import assert from 'node:assert/strict'
import { clientMatrix } from './client-matrix.ts'
import { platformaticDriver } from './clients/platformatic/matrix.ts'

clientMatrix({
  async driver(bootstrap) {
    return platformaticDriver(bootstrap)
  },
  // Metadata of an unknown topic fails with the client's own error, not the protocol's.
  errors: { exists: 'TOPIC_ALREADY_EXISTS', unknown: 'Unknown topic adm-b.' },
  also: {
    committed(out) {
      assert.equal(out.groupState, 'Empty')
    },
  },
})
