/**
 * Bytes after a request body are ignored, as Kafka's broker ignores them: librdkafka 2.x (kcat,
 * confluent-kafka) asks Metadata v9+ for all topics with 3 bytes more than the schema reads, and a
 * broker that refused them would close the connection on every `list_topics()`.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decodeRequest } from '../../src/protocol/codec.ts'

test("librdkafka 2.16's Metadata v12 for all topics decodes (3 bytes after the body)", () => {
  // As sent by confluent-kafka 2.16.1 (librdkafka 2.16.0): key 3, version 12, correlation 3,
  // client id "rdkafka", header tags; then a 4-byte array-count placeholder left unshrunk (0x00 is
  // the compact null: all topics), then allow_auto_topic_creation (1),
  // include_topic_authorized_operations (0) and the body's tags.
  const frame = Buffer.from('0003000c00000003000772646b61666b610000000000010000', 'hex')
  const d = decodeRequest(frame)
  assert.equal(d.kind, 'ok')
  if (d.kind !== 'ok') return
  assert.equal(d.api.name, 'Metadata')
  assert.equal(d.header.clientId, 'rdkafka')
  assert.equal(d.header.correlationId, 3)
  // Read as Kafka reads it: all topics, the placeholder's zeros as the two flags.
  assert.deepEqual((d.body as { topics: unknown }).topics, null)
})
