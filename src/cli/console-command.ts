/**
 * `weir console`: the web console against any Kafka-compatible cluster (Apache Kafka included), on
 * a local HTTP port, until Ctrl-C. It speaks only the Kafka protocol to the cluster.
 */
import { createServer } from 'node:http'
import type { ClientSecurity } from '../client/index.ts'
import { ConsoleHttp, type PasswordMechanism } from '../console/index.ts'
import { nodeTransport, systemClock } from '../io/index.ts'
import {
  COMMON_USAGE,
  clusterTarget,
  help,
  parse,
  runCommand,
  securityOf,
  UsageError,
} from './command-support.ts'

export const CONSOLE_USAGE = `Usage: weir console [-b HOST:PORT[,...]] [--listen HOST:PORT] [--command-config FILE]

Serves the web console at http://HOST:PORT/console/ (default --listen 127.0.0.1:9645) for the
cluster at --bootstrap-server, until Ctrl-C: brokers, the quorum, topics and partitions, consumer
groups and lag, a partition's records; create topics, edit their configs, produce, reset offsets.

With --command-config whose security.protocol is SASL_PLAINTEXT or SASL_SSL and whose
sasl.mechanism is PLAIN or SCRAM-SHA-256/512 but which has no sasl.jaas.config, each user logs in
with their own Kafka user name and password, and the cluster's ACLs apply to them. With a
sasl.jaas.config, the console acts as that one principal for everyone who reaches it.

Options:
  --listen HOST:PORT   where the console listens (loopback unless told otherwise)

${COMMON_USAGE}`

const OPTIONS = { listen: { type: 'string' } } as const

const PASSWORD_MECHANISMS: readonly string[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']

export function runConsole(argv: readonly string[]): Promise<number> {
  return runCommand('console', async () => {
    const { values, positionals } = parse(argv, OPTIONS)
    if (values.help === true) return help(CONSOLE_USAGE)
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`)
    const listen = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(values.listen ?? '127.0.0.1:9645')
    if (listen === null || Number(listen[2]) > 65_535) throw new UsageError('--listen takes HOST:PORT')
    const { bootstrap, properties } = clusterTarget(values)
    const props = new Map(properties ?? [])
    const protocol = (props.get('security.protocol') ?? 'PLAINTEXT').toUpperCase()
    const mechanism = (props.get('sasl.mechanism') ?? 'GSSAPI').toUpperCase()
    let credentials: PasswordMechanism | null = null
    if (protocol.startsWith('SASL_') && !props.has('sasl.jaas.config')) {
      if (!PASSWORD_MECHANISMS.includes(mechanism))
        throw new UsageError(
          `--command-config: users log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, not ${mechanism}; or give sasl.jaas.config`,
        )
      credentials = mechanism as PasswordMechanism
      // The TLS part is read as for SSL; each user's SASL credentials replace the rest.
      props.set('security.protocol', protocol === 'SASL_SSL' ? 'SSL' : 'PLAINTEXT')
    }
    const security = securityOf(props)
    const consoleHttp = new ConsoleHttp({
      bootstrap,
      security:
        credentials === null ? security : { ...security, protocol: protocol as ClientSecurity['protocol'] },
      credentials,
      clock: systemClock,
      transport: nodeTransport,
    })
    const server = createServer({ maxHeaderSize: 8192, headersTimeout: 10_000, requestTimeout: 60_000 })
    server.maxConnections = 64
    server.on('request', (req, res) => {
      if (consoleHttp.handle(req, res)) return
      req.resume()
      res.statusCode = 404
      res.setHeader('Content-Type', 'text/plain; charset=utf-8')
      res.end('not found\n')
    })
    const host = listen[1]!.replace(/^\[|\]$/g, '')
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(Number(listen[2]), host, () => resolve())
    })
    const address = server.address() as { address: string; port: number }
    const shown = address.address.includes(':') ? `[${address.address}]` : address.address
    process.stdout.write(
      `Weir console for ${bootstrap.join(',')} at http://${shown}:${address.port}/console/\n  Ctrl-C stops it.\n`,
    )
    await new Promise<void>((resolve) => {
      const stop = () => resolve()
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
    })
    consoleHttp.close()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    return 0
  })
}
