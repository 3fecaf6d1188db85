/**
 * Raft entries <-> record batches of `__cluster_metadata-0`, as KRaft stores them: data entries are
 * records (value = a metadata record frame) in batches whose partition leader epoch is the entry
 * epoch; a leader change is a control batch holding a LeaderChangeMessage (control type 2).
 */
import { NodeId } from '../model/index.ts'
import {
  BATCH_HEADER_BYTES,
  DecodeError,
  decodeBatch,
  encodeBatch,
  isControl,
  LeaderChangeMessageData,
  LOG_OVERHEAD,
  Reader,
  readBatchHeader,
  Writer,
} from '../protocol/index.ts'
import type { Entry } from '../raft/index.ts'

/** Kafka's ControlRecordType.LEADER_CHANGE. */
export const LEADER_CHANGE_CONTROL_TYPE = 2
const CONTROL_KEY_VERSION = 0
/** Data entries per batch at most, so a batch stays well below any fetch size. */
export const ENTRIES_PER_BATCH_MAX = 1024

function controlKey(type: number): Buffer {
  const key = Buffer.alloc(4)
  key.writeInt16BE(CONTROL_KEY_VERSION, 0)
  key.writeInt16BE(type, 2)
  return key
}

/**
 * Encodes entries (consecutive offsets) as batches: runs of data entries of one epoch share a
 * batch; each leader change is a control batch of its own. `timestampMs` stamps the records.
 */
export function entriesToBatches(entries: readonly Entry[], timestampMs: number): Buffer[] {
  const out: Buffer[] = []
  const timestamp = BigInt(Math.trunc(timestampMs))
  let i = 0
  while (i < entries.length) {
    const first = entries[i]!
    if (first.kind === 'leaderChange') {
      const w = new Writer(64)
      LeaderChangeMessageData.writeLeaderChangeMessage(
        w,
        {
          version: 0,
          leaderId: first.leaderId,
          voters: first.voters.map((voterId) => ({ voterId })),
          grantingVoters: first.grantingVoters.map((voterId) => ({ voterId })),
        },
        0,
      )
      out.push(
        encodeBatch({
          records: [{ key: controlKey(LEADER_CHANGE_CONTROL_TYPE), value: w.toBuffer(), timestamp }],
          baseOffset: first.offset,
          partitionLeaderEpoch: first.epoch,
          control: true,
        }),
      )
      i++
      continue
    }
    const records: Array<{ value: Uint8Array; timestamp: bigint }> = []
    let j = i
    while (j < entries.length && records.length < ENTRIES_PER_BATCH_MAX) {
      const e = entries[j]!
      if (e.kind !== 'data' || e.epoch !== first.epoch) break
      records.push({ value: e.data, timestamp })
      j++
    }
    out.push(encodeBatch({ records, baseOffset: first.offset, partitionLeaderEpoch: first.epoch }))
    i = j
  }
  return out
}

/** Decodes concatenated batches (as stored or fetched) into entries. Malformed bytes: DecodeError. */
export function batchesToEntries(bytes: Buffer): Entry[] {
  const entries: Entry[] = []
  let at = 0
  while (at + LOG_OVERHEAD <= bytes.length) {
    const size = LOG_OVERHEAD + bytes.readInt32BE(at + 8)
    if (size < BATCH_HEADER_BYTES || at + size > bytes.length) break
    const header = readBatchHeader(bytes, at)
    const batch = decodeBatch(bytes, at)
    if (isControl(header.attributes)) {
      for (const r of batch.records) {
        if (r.key === null || r.key.length < 4) throw new DecodeError('control record without a key')
        const type = r.key.readInt16BE(2)
        if (type !== LEADER_CHANGE_CONTROL_TYPE || r.value === null) continue
        const msg = LeaderChangeMessageData.readLeaderChangeMessage(new Reader(r.value), 0)
        entries.push({
          kind: 'leaderChange',
          offset: r.offset,
          epoch: header.partitionLeaderEpoch,
          leaderId: NodeId(msg.leaderId),
          voters: msg.voters.map((v) => NodeId(v.voterId)),
          grantingVoters: msg.grantingVoters.map((v) => NodeId(v.voterId)),
        })
      }
    } else {
      for (const r of batch.records) {
        entries.push({
          kind: 'data',
          offset: r.offset,
          epoch: header.partitionLeaderEpoch,
          data: r.value ?? Buffer.alloc(0),
        })
      }
    }
    at += size
  }
  return entries
}
