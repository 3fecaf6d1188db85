/** The `weir` command: dispatches to its subcommands. */
import { runBench } from './bench-command.ts'
import { runCluster } from './cluster-command.ts'
import { runConsume } from './consume-command.ts'
import { runDev } from './dev-command.ts'
import { runGroup } from './group-command.ts'
import { runProduce } from './produce-command.ts'
import { runStart } from './start.ts'
import { runTopic } from './topic-command.ts'

export const USAGE = `Usage: weir <command> [options]

Run a cluster:
  start                         run one Weir node in the foreground
  dev --brokers N               run an N-node dev cluster (one process per node) until Ctrl-C

Talk to any Kafka-compatible cluster (--bootstrap-server, default 127.0.0.1:9092):
  topic create|list|describe|alter|delete
  produce TOPIC                 records from stdin, one per line
  consume TOPIC                 records to stdout
  group list|describe|delete|reset-offsets
  cluster status                quorum leader and epoch, brokers, under-replicated and offline partitions
  bench produce|consume         throughput and latency percentiles

Run 'weir <command> --help' for a command's options. Every cluster command takes --json.
Exit codes: 0 done, 1 the cluster refused (the Kafka error is printed), 2 bad usage, 3 cluster unreachable.
`

const COMMANDS: Record<string, (argv: readonly string[]) => Promise<number>> = {
  start: runStart,
  dev: runDev,
  topic: runTopic,
  produce: runProduce,
  consume: runConsume,
  group: runGroup,
  cluster: runCluster,
  bench: runBench,
}

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(USAGE)
    return command === undefined ? 2 : 0
  }
  const run = COMMANDS[command]
  if (run === undefined) {
    process.stderr.write(`weir: unknown command '${command}'\n\n${USAGE}`)
    return 2
  }
  return run(rest)
}
