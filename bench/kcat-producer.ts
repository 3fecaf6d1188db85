/**
 * kcat's producer command line as every bench runs it (bench/broker.ts, bench/peers): one place, so
 * that figures compared across benches come from the same librdkafka settings. Records are read
 * one per line from `file`.
 */
export function kcatProduceArgs(bootstrap: string, topic: string, acks: string, file: string): string[] {
  return [
    '-P',
    '-b',
    bootstrap,
    '-t',
    topic,
    '-X',
    `acks=${acks}`,
    '-X',
    'linger.ms=5',
    '-X',
    'batch.size=1000000',
    '-X',
    'batch.num.messages=100000',
    '-X',
    'queue.buffering.max.messages=2000000',
    '-X',
    'queue.buffering.max.kbytes=2097151',
    '-l',
    file,
  ]
}
