/**
 * Runs seeds [start, start + count) on `workers` worker threads, each a fresh instance of the
 * module at `workerUrl` started with `workerData: { role }`; each worker answers a posted seed
 * with one summary message. Results arrive in completion order. Shared by the raft and the
 * whole-cluster simulators' command lines and tests.
 */
import { Worker } from 'node:worker_threads'

export async function runSeedPool<S>(o: {
  readonly start: number
  readonly count: number
  readonly workers: number
  readonly workerUrl: URL
  readonly role: string
  readonly onResult: (summary: S) => void
}): Promise<void> {
  let next = o.start
  const end = o.start + o.count
  await Promise.all(
    Array.from({ length: Math.min(o.workers, o.count) }, async () => {
      const worker = new Worker(o.workerUrl, { workerData: { role: o.role } })
      try {
        while (next < end) {
          const seed = next++
          const summary = await new Promise<S>((resolve, reject) => {
            worker.once('message', resolve)
            worker.once('error', reject)
            worker.postMessage(seed)
          })
          worker.removeAllListeners('error')
          o.onResult(summary)
        }
      } finally {
        await worker.terminate()
      }
    }),
  )
}
