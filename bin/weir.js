#!/usr/bin/env node
// The `weir` command. Node 24 runs the TypeScript sources directly (type stripping).
import { main } from '../src/cli/index.ts'

process.exitCode = await main(process.argv.slice(2))
