/** The `weir` command: dispatches to its subcommands. */
import { runStart, START_USAGE } from './start.ts'

const USAGE = `Usage: weir <command> [options]

Commands:
  start    run a Weir node in the foreground

Run 'weir <command> --help' for a command's options.
`

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'start':
      return runStart(rest)
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(`${USAGE}\n${START_USAGE}`)
      return command === undefined ? 2 : 0
    default:
      process.stderr.write(`weir: unknown command '${command}'\n\n${USAGE}`)
      return 2
  }
}
