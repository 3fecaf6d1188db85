/**
 * The Java client (kafka-clients 4.x from Maven Central, the jars tools/kafka/install.sh fetches)
 * against a real `weir start`: test/compat/clients/java/CompatMatrix.java, compiled by
 * tools/compat-install.sh, drives KafkaProducer with its defaults (idempotent, acks=all) in every
 * codec, KafkaConsumer in a classic group (group.id, subscribe, commitSync) and group-less
 * (assign, seekToBeginning, offsetsForTimes), and Admin (topics, configs, partitions, listOffsets,
 * describeProducers, listConsumerGroupOffsets, describeConsumerGroups). See client-matrix.ts.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO } from '../support/weir-process.ts'
import {
  clientMatrix,
  describeProducers,
  PARTITIONS,
  type ProducerState,
  runDriver,
} from './client-matrix.ts'

clientMatrix({
  async driver(bootstrap) {
    const classpath = execFileSync(join(REPO, 'tools/compat-install.sh'), ['java'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .at(-1)!
    const jvm = [
      '-Xmx256m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      `-Dlog4j2.configurationFile=${join(REPO, 'tools/kafka/log4j2-tools.properties')}`,
      '-cp',
      classpath,
      'CompatMatrix',
    ]
    return (command, ...args) => runDriver('java', [...jvm, command, ...args], { BOOTSTRAP: bootstrap() })
  },
  errors: { exists: 'TopicExistsException', unknown: 'UnknownTopicOrPartitionException' },
  also: {
    // The default producer is idempotent: every partition has a producer id per codec's producer.
    async produced(_out, weir) {
      const producers = await describeProducers(weir.bootstrap, 'codecs', PARTITIONS)
      assert.ok(producers.length >= 5, `${producers.length} producer states`)
      assert.ok(producers.every((p) => p.producerId >= 0 && p.epoch === 0 && p.lastSequence >= 0))
    },
    // Admin.describeProducers sees what Weir says.
    idempotent(out, producers) {
      assert.deepEqual(out.producers, producers as ProducerState[])
    },
    committed(out) {
      assert.equal(out.groupState, 'Empty')
    },
  },
})
