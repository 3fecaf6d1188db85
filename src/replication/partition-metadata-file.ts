/**
 * Kafka's `partition.metadata` file (its `PartitionMetadataFile`): the topic id a partition
 * directory belongs to, so a log left by an earlier topic of the same name is told apart.
 */
import { type Disk, isNotFound, joinPath } from '../io/index.ts'
import { Uuid } from '../model/index.ts'
import { type PartitionLog, writeFileDurably } from '../storage/index.ts'

/** Kafka's `partition.metadata` file: the topic id a partition directory belongs to. */
export const PARTITION_METADATA_FILE = 'partition.metadata'

/** The topic id a `partition.metadata` file names (Kafka's format), or null. */
export function parsePartitionMetadata(text: string): Uuid | null {
  const m = /^topic_id: *(\S+)$/m.exec(text)
  return m === null ? null : Uuid(m[1]!)
}

export function formatPartitionMetadata(topicId: Uuid): string {
  return `version: 0\ntopic_id: ${topicId}\n`
}

/** The topic id of `log`'s directory, or null when it has no `partition.metadata`. */
export async function readTopicId(disk: Disk, log: PartitionLog): Promise<Uuid | null> {
  try {
    const text = await disk.readFile(joinPath(log.dir, PARTITION_METADATA_FILE))
    return parsePartitionMetadata(text.toString('utf8'))
  } catch (e) {
    if (isNotFound(e)) return null
    throw e
  }
}

/** Writes `log`'s `partition.metadata` durably. */
export function writeTopicId(disk: Disk, log: PartitionLog, topicId: Uuid): Promise<void> {
  return writeFileDurably(
    disk,
    joinPath(log.dir, PARTITION_METADATA_FILE),
    Buffer.from(formatPartitionMetadata(topicId)),
  )
}
