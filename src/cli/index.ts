/** The `weir` command line. */
export { main } from './main.ts'
export { DEFAULT_DATA_DIR, runStart, START_USAGE, startConfig } from './start.ts'
