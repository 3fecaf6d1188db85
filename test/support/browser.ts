/**
 * A real headless Chromium (Debian's `chromium`, installed by tools/test-deps.sh) driven by
 * playwright-core, which never downloads a browser of its own. `CHROMIUM` overrides the path.
 */
import { execFileSync } from 'node:child_process'
import { type Browser, chromium } from 'playwright-core'

export function chromiumPath(): string {
  if (process.env.CHROMIUM !== undefined) return process.env.CHROMIUM
  return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], {
    encoding: 'utf8',
  }).trim()
}

export function launchBrowser(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] })
}
