/**
 * A log directory's `meta.properties` (KRaft, version 1): which cluster and node the directory
 * belongs to, in Java properties text, so a disk moved to the wrong node is refused.
 */

export interface MetaProperties {
  readonly version: number
  readonly clusterId: string
  readonly nodeId: number
  /** Kafka's directory.id (a Uuid), when known. */
  readonly directoryId?: string
}

/** meta.properties is missing a key, is damaged, or names another cluster or node. */
export class MetaPropertiesError extends Error {
  override name = 'MetaPropertiesError'
}

/** Parse Java properties text (`key=value` lines, `#` and `!` comments, `\` escapes). */
export function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue
    const m = /^((?:\\.|[^=:\s\\])+)\s*[=:\s]\s*(.*)$/.exec(line)
    if (m === null) {
      out.set(unescapeProperty(line), '')
      continue
    }
    out.set(unescapeProperty(m[1]!), unescapeProperty(m[2]!))
  }
  return out
}

function unescapeProperty(s: string): string {
  return s.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c))
}

/** Parse meta.properties; version 1 needs cluster.id and node.id (version 0 has broker.id). */
export function parseMetaProperties(text: string): MetaProperties {
  const p = parseProperties(text)
  const version = Number(p.get('version') ?? 'NaN')
  if (version !== 0 && version !== 1)
    throw new MetaPropertiesError(`meta.properties: unknown version ${p.get('version')}`)
  const clusterId = p.get('cluster.id')
  if (clusterId === undefined || clusterId === '')
    throw new MetaPropertiesError('meta.properties: no cluster.id')
  const nodeText = version === 1 ? p.get('node.id') : p.get('broker.id')
  const nodeId = Number(nodeText)
  if (nodeText === undefined || !Number.isInteger(nodeId)) {
    throw new MetaPropertiesError(`meta.properties: no valid ${version === 1 ? 'node.id' : 'broker.id'}`)
  }
  const directoryId = p.get('directory.id')
  return directoryId === undefined
    ? { version, clusterId, nodeId }
    : { version, clusterId, nodeId, directoryId }
}

/** The text of meta.properties (keys sorted; no timestamp comment, so it is reproducible). */
export function formatMetaProperties(meta: MetaProperties): string {
  const lines = ['#', '#Written by Weir', `cluster.id=${meta.clusterId}`]
  if (meta.directoryId !== undefined) lines.push(`directory.id=${meta.directoryId}`)
  lines.push(`node.id=${meta.nodeId}`, `version=${meta.version}`)
  return `${lines.join('\n')}\n`
}
