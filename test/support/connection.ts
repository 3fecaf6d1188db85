/** A `KafkaConnection` to one node for tests and benchmarks: real TCP, the system clock. */
import { KafkaConnection } from '../../src/client/index.ts'
import { nodeTransport, systemClock } from '../../src/io/index.ts'

export function openConnection(
  address: { host: string; port: number },
  clientId: string,
  requestTimeoutMs = 10_000,
  responseBytesMax = 1 << 24,
): Promise<KafkaConnection> {
  return KafkaConnection.open(address, {
    clientId,
    clock: systemClock,
    transport: nodeTransport,
    requestTimeoutMs,
    inFlightRequestsMax: 1,
    responseBytesMax,
    connectTimeoutMs: 2_000,
  })
}
