/**
 * The replicated state machine of the simulation: a hash chain over applied entries, so any two
 * nodes' states compare in O(1), and snapshots are small but padded to exercise chunked transfer.
 */
import type { Entry, Snapshot } from '../../src/raft/index.ts'

const decoder = new TextDecoder()
const encoder = new TextEncoder()

/** A stable name for an entry's content: its epoch and its record (or leader change). */
export function entryKey(entry: Entry): string {
  return entry.kind === 'data'
    ? `${entry.epoch}:${decoder.decode(entry.data)}`
    : `${entry.epoch}:leader-change:${entry.leaderId}`
}

/** FNV-1a over a string, continuing from `hash`. */
export function chainHash(hash: number, key: string): number {
  let h = hash ^ 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

export class SimStateMachine {
  /** Entries below this are applied. */
  applied = 0n
  hash = 0

  apply(entry: Entry): void {
    if (entry.offset !== this.applied) {
      throw new Error(
        `state machine: applied ${entry.offset} but expected ${this.applied} (Ready.committed gap)`,
      )
    }
    this.hash = chainHash(this.hash, `${entry.offset}|${entryKey(entry)}`)
    this.applied = entry.offset + 1n
  }

  /** Serialize: endOffset, hash, then `paddingBytes` of filler. */
  snapshotBytes(paddingBytes: number): Uint8Array {
    const head = encoder.encode(`${this.applied}|${this.hash}|`)
    const bytes = new Uint8Array(head.length + paddingBytes)
    bytes.set(head)
    for (let i = 0; i < paddingBytes; i++) bytes[head.length + i] = (i * 31 + 7) & 0xff
    return bytes
  }

  restore(snapshot: Snapshot): void {
    const { endOffset, hash } = parseSnapshot(snapshot.bytes)
    if (endOffset !== snapshot.id.endOffset) {
      throw new Error(`snapshot bytes say ${endOffset}, id says ${snapshot.id.endOffset}`)
    }
    this.applied = endOffset
    this.hash = hash
  }
}

export function parseSnapshot(bytes: Uint8Array): { endOffset: bigint; hash: number } {
  let bars = 0
  let end = 0
  for (; end < bytes.length && bars < 2; end++) if (bytes[end] === 0x7c) bars++
  const [offset, hash] = decoder.decode(bytes.subarray(0, end)).split('|')
  return { endOffset: BigInt(offset!), hash: Number(hash) }
}
