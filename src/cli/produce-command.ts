/** `weir produce TOPIC`: one record per stdin line, batched per partition, through client/Producer. */
import { createInterface } from 'node:readline'
import { COMPRESSION_NAMES, type Delivered, Producer } from '../client/index.ts'
import {
  COMMON_USAGE,
  help,
  intFlag,
  keyValues,
  parse,
  printJson,
  runCommand,
  UsageError,
  withClient,
} from './command-support.ts'

export const PRODUCE_USAGE = `Usage: weir produce TOPIC [options] < lines

Produces one record per line of stdin (the line without its newline is the value).

Options:
  -k, --key-separator SEP     split each line at the first SEP into key and value
  -H, --header KEY=VALUE      a header on every record (repeatable)
  -p, --partition N           every record to partition N (default: murmur2 of the key, round-robin without one)
  -a, --acks 0|1|all          default all
  -z, --compression CODEC     none, gzip, snappy, lz4, zstd (default none)
  --linger-ms MS              how long a partition's batch waits for more records (default 5)

${COMMON_USAGE}`

const OPTIONS = {
  'key-separator': { type: 'string', short: 'k' },
  header: { type: 'string', short: 'H', multiple: true },
  partition: { type: 'string', short: 'p' },
  acks: { type: 'string', short: 'a' },
  compression: { type: 'string', short: 'z' },
  'linger-ms': { type: 'string' },
} as const

export function parseAcks(value: string | undefined): number {
  if (value === undefined || value === 'all' || value === '-1') return -1
  if (value === '0' || value === '1') return Number(value)
  throw new UsageError(`--acks must be 0, 1 or all, not '${value}'`)
}

export function parseCompression(value: string | undefined) {
  const codec = COMPRESSION_NAMES[value ?? 'none']
  if (codec === undefined)
    throw new UsageError(
      `--compression must be one of ${Object.keys(COMPRESSION_NAMES).join(', ')}, not '${value}'`,
    )
  return codec
}

export async function runProduce(argv: readonly string[]): Promise<number> {
  return runCommand('produce', async () => {
    const { values, positionals } = parse(argv, OPTIONS)
    if (values.help === true) return help(PRODUCE_USAGE)
    if (positionals.length !== 1) throw new UsageError('give exactly one topic')
    const topic = positionals[0]!
    const separator = values['key-separator']
    if (separator === '') throw new UsageError('--key-separator cannot be empty')
    const headers = keyValues(values.header, 'header').map(([key, value]) => ({
      key,
      value: Buffer.from(value),
    }))
    const partition =
      values.partition === undefined ? undefined : intFlag(values.partition, 'partition', 0, 0)
    const acks = parseAcks(values.acks)
    const compression = parseCompression(values.compression)
    const lingerMs = intFlag(values['linger-ms'], 'linger-ms', 5, 0)
    return withClient(values, async (client) => {
      const producer = new Producer(client, {
        acks,
        compression,
        lingerMs,
        deliveryTimeoutMs: client.retryTimeoutMs,
      })
      await producer.prepare(topic)
      let count = 0
      let firstError: Error | null = null
      const ranges = new Map<number, { first: bigint; last: bigint; records: number }>()
      const onDelivery = (e: Error | null, d: Delivered | null) => {
        if (e !== null) {
          firstError ??= e
          return
        }
        const r = ranges.get(d!.partition)
        if (r === undefined) ranges.set(d!.partition, { first: d!.offset, last: d!.offset, records: 1 })
        else {
          if (d!.offset < r.first) r.first = d!.offset
          if (d!.offset > r.last) r.last = d!.offset
          r.records++
        }
      }
      const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY })
      for await (const line of lines) {
        if (firstError !== null) break
        let key: Buffer | null = null
        let value = line
        if (separator !== undefined) {
          const i = line.indexOf(separator)
          if (i < 0) throw new UsageError(`line ${count + 1} has no key separator '${separator}'`)
          key = Buffer.from(line.slice(0, i))
          value = line.slice(i + separator.length)
        }
        producer.append(topic, { key, value: Buffer.from(value), headers }, onDelivery, partition)
        count++
        if (producer.buffered > 10_000) await producer.waitBelow(5_000)
      }
      await producer.flush()
      if (firstError !== null) throw firstError
      const partitions = [...ranges].sort((a, b) => a[0] - b[0])
      if (values.json === true)
        printJson({
          topic,
          records: count,
          partitions: partitions.map(([p, r]) => ({
            partition: p,
            records: r.records,
            firstOffset: r.first,
            lastOffset: r.last,
          })),
        })
      else
        process.stdout.write(
          `produced ${count} record${count === 1 ? '' : 's'} to ${topic}${acks === 0 ? ' (acks=0: not confirmed)' : partitions.length === 0 ? '' : ` (${partitions.map(([p, r]) => `partition ${p}: offsets ${r.first}-${r.last}`).join(', ')})`}\n`,
        )
      return 0
    })
  })
}
