/**
 * The frame of a KRaft metadata record (a record value in `__cluster_metadata`): unsigned varints
 * for the frame version (1), the record type's api key and its version, then the record itself.
 */
import {
  type MetadataRecordType,
  metadataRecordTypeByKey,
  type metadataRecordTypes,
} from './generated/metadata-records.ts'
import { DecodeError, Reader } from './wire/reader.ts'
import { Writer } from './wire/writer.ts'

export const METADATA_FRAME_VERSION = 1

export type MetadataRecordName = keyof typeof metadataRecordTypes

export interface DecodedMetadataRecord {
  readonly type: MetadataRecordType<unknown, never>
  readonly version: number
  readonly data: unknown
}

/** Decodes a metadata record value; bad bytes, unknown types or versions throw DecodeError. */
export function decodeMetadataRecord(value: Buffer): DecodedMetadataRecord {
  const r = new Reader(value)
  const frameVersion = r.uvarint()
  if (frameVersion !== METADATA_FRAME_VERSION) throw new DecodeError(`metadata frame version ${frameVersion}`)
  const apiKey = r.uvarint()
  const version = r.uvarint()
  const type = metadataRecordTypeByKey[apiKey]
  if (type === undefined) throw new DecodeError(`unknown metadata record type ${apiKey}`)
  if (version < type.minVersion || version > type.maxVersion)
    throw new DecodeError(`${type.name} version ${version} is outside ${type.minVersion}-${type.maxVersion}`)
  const data = type.read(r, version)
  if (r.remaining !== 0) throw new DecodeError(`${type.name}: ${r.remaining} bytes left over`)
  return { type, version, data }
}

/** Encodes a metadata record value for `type` at `version`. */
export function encodeMetadataRecord<TIn>(
  type: MetadataRecordType<unknown, TIn>,
  version: number,
  data: TIn,
): Buffer {
  const w = new Writer(64)
  w.uvarint(METADATA_FRAME_VERSION)
  w.uvarint(type.apiKey)
  w.uvarint(version)
  type.write(w, data, version)
  return w.toBuffer()
}
