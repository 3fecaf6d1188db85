/** The `weir` command: dispatches to its subcommands. */
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
  acl create|list|delete        ACLs, with kafka-acls' flags
  user set|delete|list          SCRAM credentials (salted here, as kafka-configs does)
  console                       the web console on a local port (--listen, default 127.0.0.1:9645)

Run 'weir <command> --help' for a command's options. Every cluster command takes --json,
and --command-config FILE for TLS and SASL (a Kafka client properties file).
Exit codes: 0 done, 1 the cluster refused (the Kafka error is printed), 2 bad usage, 3 cluster unreachable.
`

/** Each command's module is loaded only when run: a cluster command does not load the broker. */
const COMMANDS: Record<string, (argv: readonly string[]) => Promise<number>> = {
  start: async (argv) => (await import('./start.ts')).runStart(argv),
  dev: async (argv) => (await import('./dev-command.ts')).runDev(argv),
  topic: async (argv) => (await import('./topic-command.ts')).runTopic(argv),
  produce: async (argv) => (await import('./produce-command.ts')).runProduce(argv),
  consume: async (argv) => (await import('./consume-command.ts')).runConsume(argv),
  group: async (argv) => (await import('./group-command.ts')).runGroup(argv),
  cluster: async (argv) => (await import('./cluster-command.ts')).runCluster(argv),
  bench: async (argv) => (await import('./bench-command.ts')).runBench(argv),
  acl: async (argv) => (await import('./acl-command.ts')).runAcl(argv),
  user: async (argv) => (await import('./user-command.ts')).runUser(argv),
  console: async (argv) => (await import('./console-command.ts')).runConsole(argv),
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
