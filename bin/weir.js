#!/usr/bin/env node
// The `weir` command. Node 24 runs the TypeScript sources directly (type stripping).
// main.ts loads each command's module only when it runs, so cluster commands start without the broker.
import { main } from '../src/cli/main.ts'

process.exitCode = await main(process.argv.slice(2))
