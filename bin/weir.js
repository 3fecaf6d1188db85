#!/usr/bin/env node
// The `weir` command. Node 24 runs the TypeScript sources directly (type stripping).
// Node's compile cache (in the OS temp dir) keeps the stripped and compiled modules between runs:
// a cluster command starts in about a fifth of the time. main.ts then loads each command's module
// only when it runs, so cluster commands never load the broker.
import { enableCompileCache } from 'node:module'

enableCompileCache?.()
const { main } = await import('../src/cli/main.ts')
process.exitCode = await main(process.argv.slice(2))
