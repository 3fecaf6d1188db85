/**
 * franz-go (kgo and kadm, from the Go module proxy) against a real `weir start`:
 * test/compat/clients/franz-go/compat, built by tools/compat-install.sh, produces with kgo's
 * default producer (idempotent, acks=all, sticky key partitioner) in every codec, consumes with
 * kgo.ConsumerGroup (commit) and group-less kgo.ConsumePartitions (AtStart, AfterMilli), and
 * administers with kadm (topics, configs, partitions, offsets, FetchOffsets, DescribeProducers).
 * See client-matrix.ts.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO } from '../support/weir-process.ts'
import { clientMatrix, describeProducers, PARTITIONS, runDriver } from './client-matrix.ts'

clientMatrix({
  async driver(bootstrap) {
    const binary = execFileSync(join(REPO, 'tools/compat-install.sh'), ['franz-go'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .at(-1)!
    return (command, ...args) => runDriver(binary, [command, ...args], { BOOTSTRAP: bootstrap() })
  },
  errors: { exists: 'TOPIC_ALREADY_EXISTS', unknown: 'UNKNOWN_TOPIC_OR_PARTITION' },
  also: {
    // kgo's default producer is idempotent: a producer id per codec's client on every partition.
    async produced(_out, weir) {
      const producers = await describeProducers(weir.bootstrap, 'codecs', PARTITIONS)
      assert.ok(producers.length >= 5, `${producers.length} producer states`)
      assert.ok(producers.every((p) => p.producerId >= 0 && p.epoch === 0 && p.lastSequence >= 0))
    },
    // kadm.DescribeProducers sees what Weir says.
    idempotent(out, producers) {
      assert.deepEqual(
        (out.producers as Array<Record<string, number>>).map((p) => ({
          partition: p.partition,
          producerId: p.producerId,
          epoch: p.epoch,
          lastSequence: p.lastSequence,
        })),
        producers,
      )
    },
    committed(out) {
      assert.equal(out.groupState, 'Empty')
    },
  },
})
