// Type stubs for the untyped codec packages the kafkajs driver registers.
declare module 'kafkajs-snappy' {
  const SnappyCodec: () => {
    compress(encoder: { buffer: Buffer }): Promise<Buffer>
    decompress(b: Buffer): Promise<Buffer>
  }
  export default SnappyCodec
}
declare module 'lz4js' {
  export function compress(input: Uint8Array): Uint8Array | number[]
  export function decompress(input: Uint8Array): Uint8Array | number[]
}
declare module 'lz4js/xxh32.js' {
  export function hash(seed: number, input: Uint8Array, index: number, length: number): number
}
