/** Ports to the world (time, randomness, disk) and their real and simulated implementations. */
export * from './clock.ts'
export * from './disk.ts'
export * from './node-disk.ts'
export * from './random.ts'
export * from './sim-disk.ts'
export * from './slow-disk.ts'
export * from './tls-transport.ts'
export * from './transport.ts'
