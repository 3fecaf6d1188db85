/** Helpers for the controller's tests (not part of the module's public entry). */
import { applyRecords, type MetadataImage } from '../metadata/index.ts'
import { decodeMetadataRecord, encodeMetadataRecord } from '../protocol/index.ts'
import type { PendingRecord } from './decision.ts'

/** `records` applied to `image` as a broker would see them: encoded, committed and decoded. */
export function commit(image: MetadataImage, records: readonly PendingRecord[]): MetadataImage {
  return applyRecords(
    image,
    records.map((r) => decodeMetadataRecord(encodeMetadataRecord(r.type, r.version, r.data))),
  )
}
