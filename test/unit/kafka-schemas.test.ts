/**
 * The pieces that turn Kafka's published jars into the codec's input: the zip reader and the error
 * table derived from Java sources (tools/codegen). The real jars are exercised by `npm run
 * codegen:check`; these pin the rules on small inputs.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { crc32, deflateRawSync } from 'node:zlib'
import { kafkaErrors } from '../../tools/codegen/kafka-errors.ts'
import { zipEntries } from '../../tools/codegen/zip.ts'

/** A zip of `files`, each stored or deflated: local headers, central directory, end record. */
function zip(files: ReadonlyArray<{ name: string; data: Buffer; deflate: boolean }>): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const f of files) {
    const body = f.deflate ? deflateRawSync(f.data) : f.data
    const name = Buffer.from(f.name)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(f.deflate ? 8 : 0, 8)
    local.writeUInt32LE(crc32(f.data), 14)
    local.writeUInt32LE(body.length, 18)
    local.writeUInt32LE(f.data.length, 22)
    local.writeUInt16LE(name.length, 26)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(f.deflate ? 8 : 0, 10)
    central.writeUInt32LE(crc32(f.data), 16)
    central.writeUInt32LE(body.length, 20)
    central.writeUInt32LE(f.data.length, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    locals.push(local, name, body)
    centrals.push(central, name)
    offset += 30 + name.length + body.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(files.length, 8)
  end.writeUInt16LE(files.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}

test('zipEntries reads stored and deflated entries and checks their CRC', () => {
  const json = Buffer.from(`{ "name": "X" }\n`.repeat(50))
  const archive = zip([
    { name: 'common/message/X.json', data: json, deflate: true },
    { name: 'META-INF/MANIFEST.MF', data: Buffer.from('Manifest-Version: 1.0\n'), deflate: false },
  ])
  const entries = zipEntries(archive)
  assert.deepEqual(
    entries.map((e) => e.name),
    ['common/message/X.json', 'META-INF/MANIFEST.MF'],
  )
  assert.ok(entries[0]!.read().equals(json))
  assert.equal(entries[1]!.read().toString(), 'Manifest-Version: 1.0\n')
  const damaged = Buffer.from(archive)
  damaged[30 + 'common/message/X.json'.length + 2]! ^= 0xff
  assert.throws(() => zipEntries(damaged)[0]!.read(), /zip: /)
  assert.throws(
    () => zipEntries(Buffer.from('not a zip at all, not even close')),
    /no end of central directory/,
  )
})

const ERRORS_JAVA = `package org.apache.kafka.common.protocol;

import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.InvalidRecordException;

/** The errors; a "quoted" word and a char ';' must not confuse the reader. */
public enum Errors {
    UNKNOWN_SERVER_ERROR(-1, "The server experienced an unexpected error.",
            UnknownServerException::new),
    NONE(0, null, message -> null),
    // A comment between entries.
    NOT_LEADER_OR_FOLLOWER(6, "Not the leader, " +
            "or not a replica \\"here\\".",
            NotLeaderOrFollowerException::new),
    INVALID_RECORD(87, "This record has failed the validation on broker and hence will be rejected.", InvalidRecordException::new);

    private static final char SEMI = ';';
}
`
const SOURCES: Record<string, string> = {
  'org/apache/kafka/common/protocol/Errors.java': ERRORS_JAVA,
  'org/apache/kafka/common/errors/UnknownServerException.java':
    'package org.apache.kafka.common.errors;\npublic class UnknownServerException extends ApiException {}',
  'org/apache/kafka/common/errors/ApiException.java':
    'package org.apache.kafka.common.errors;\nimport org.apache.kafka.common.KafkaException;\npublic class ApiException extends KafkaException {}',
  'org/apache/kafka/common/KafkaException.java':
    'package org.apache.kafka.common;\npublic class KafkaException extends RuntimeException {}',
  'org/apache/kafka/common/errors/NotLeaderOrFollowerException.java':
    'package org.apache.kafka.common.errors;\n/** extends RetriableException through InvalidMetadataException */\npublic class NotLeaderOrFollowerException extends InvalidMetadataException {}',
  'org/apache/kafka/common/errors/InvalidMetadataException.java':
    'package org.apache.kafka.common.errors;\npublic abstract class InvalidMetadataException extends RetriableException {}',
  'org/apache/kafka/common/InvalidRecordException.java':
    'package org.apache.kafka.common;\nimport org.apache.kafka.common.errors.ApiException;\npublic class InvalidRecordException extends ApiException {}',
}

test("kafkaErrors reads Errors.java's entries; retriable follows the extends chain to RetriableException", () => {
  assert.deepEqual(
    kafkaErrors((path) => SOURCES[path]),
    [
      {
        code: -1,
        name: 'UNKNOWN_SERVER_ERROR',
        retriable: false,
        exception: 'UnknownServerException',
        message: 'The server experienced an unexpected error.',
      },
      { code: 0, name: 'NONE', retriable: false, exception: null, message: null },
      {
        code: 6,
        name: 'NOT_LEADER_OR_FOLLOWER',
        retriable: true,
        exception: 'NotLeaderOrFollowerException',
        message: 'Not the leader, or not a replica "here".',
      },
      {
        code: 87,
        name: 'INVALID_RECORD',
        retriable: false,
        exception: 'InvalidRecordException',
        message: 'This record has failed the validation on broker and hence will be rejected.',
      },
    ],
  )
})

test('kafkaErrors refuses what it does not understand rather than guess', () => {
  const odd = ERRORS_JAVA.replace(
    'UnknownServerException::new',
    'message -> new UnknownServerException(message)',
  )
  assert.throws(
    () => kafkaErrors((path) => (path.endsWith('Errors.java') ? odd : SOURCES[path])),
    /exception builder is not Class::new/,
  )
  assert.throws(() => kafkaErrors(() => undefined), /no org\/apache\/kafka\/common\/protocol\/Errors.java/)
})
