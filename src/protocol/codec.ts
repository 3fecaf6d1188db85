/**
 * Whole requests and responses: header version rules, then the generated body codec. Frames here
 * are Kafka frames without their 4-byte size prefix; encoders return pieces with the prefix.
 */
import { type Api, ApiKey, apiByKey } from './generated/apis.ts'
import {
  type RequestHeader,
  type RequestHeaderIn,
  readRequestHeader,
  writeRequestHeader,
} from './generated/messages/request-header.ts'
import { readResponseHeader, writeResponseHeader } from './generated/messages/response-header.ts'
import { DecodeError, Reader } from './wire/reader.ts'
import { EncodeError, Writer } from './wire/writer.ts'

export function isFlexible(flexibleMin: number, version: number): boolean {
  return flexibleMin >= 0 && version >= flexibleMin
}

/** Request header version for an API version (Kafka's ApiKeys.requestHeaderVersion). */
export function requestHeaderVersion(api: Api<unknown, never, unknown, never>, version: number): number {
  // Header v0 (no client id) served only ControlledShutdown v0, an API Kafka 4.0 removed.
  return isFlexible(api.requestFlexibleMin, version) ? 2 : 1
}

/** Response header version (ApiVersions always answers with v0 so any client can read it). */
export function responseHeaderVersion(api: Api<unknown, never, unknown, never>, version: number): number {
  if (api.apiKey === ApiKey.ApiVersions) return 0
  return isFlexible(api.responseFlexibleMin, version) ? 1 : 0
}

/** The first fields of every request header, readable whatever the API and version. */
export interface RequestPrefix {
  readonly apiKey: number
  readonly apiVersion: number
  readonly correlationId: number
}

/** Reads api key, version and correlation id: the part of a header every version shares. */
export function readRequestPrefix(frame: Buffer): RequestPrefix {
  if (frame.length < 8) throw new DecodeError(`request of ${frame.length} bytes is shorter than a header`)
  return {
    apiKey: frame.readInt16BE(0),
    apiVersion: frame.readInt16BE(2),
    correlationId: frame.readInt32BE(4),
  }
}

export type DecodedRequest =
  | {
      readonly kind: 'ok'
      readonly api: Api<unknown, never, unknown, never>
      readonly header: RequestHeader
      readonly body: unknown
    }
  /** The api key is not one Kafka defines. */
  | { readonly kind: 'unknown-api'; readonly prefix: RequestPrefix }
  /** The version is outside what the schemas define; the header was still read. */
  | {
      readonly kind: 'unsupported-version'
      readonly api: Api<unknown, never, unknown, never>
      readonly prefix: RequestPrefix
    }

/**
 * Decodes a request frame. Malformed bytes throw `DecodeError` (the connection should close);
 * an unknown api or version is a value, so the caller can answer it. Bytes after the body are
 * ignored, as Kafka's broker ignores them (`RequestContext.parseRequest` reads the body and
 * stops): librdkafka 2.x sends Metadata v9+ for all topics with a 4-byte array-count placeholder
 * where the compact null takes 1 byte, so 3 bytes follow the body.
 */
export function decodeRequest(frame: Buffer): DecodedRequest {
  const prefix = readRequestPrefix(frame)
  const api = apiByKey[prefix.apiKey]
  if (api === undefined) return { kind: 'unknown-api', prefix }
  if (prefix.apiVersion < api.minVersion || prefix.apiVersion > api.maxVersion) {
    return { kind: 'unsupported-version', api, prefix }
  }
  const r = new Reader(frame)
  const header = readRequestHeader(r, requestHeaderVersion(api, prefix.apiVersion))
  const body = api.readRequest(r, prefix.apiVersion)
  return { kind: 'ok', api, header, body }
}

/** Encodes a request frame with its size prefix, as pieces for a vectored write. */
export function encodeRequest<ReqIn>(
  api: Api<unknown, ReqIn, unknown, never>,
  header: Omit<RequestHeaderIn, 'requestApiKey'>,
  body: ReqIn,
): Buffer[] {
  const version = header.requestApiVersion ?? 0
  const w = new Writer()
  w.int32(0)
  writeRequestHeader(w, { ...header, requestApiKey: api.apiKey }, requestHeaderVersion(api as Api, version))
  api.writeRequest(w, body, version)
  return sealFrame(w)
}

/** Encodes a response frame with its size prefix, as pieces for a vectored write. */
export function encodeResponse<ResIn>(
  api: Api<unknown, never, unknown, ResIn>,
  version: number,
  correlationId: number,
  body: ResIn,
): Buffer[] {
  const w = new Writer()
  w.int32(0)
  writeResponseHeader(w, { correlationId }, responseHeaderVersion(api as Api, version))
  api.writeResponse(w, body, version)
  return sealFrame(w)
}

/** Decodes a response frame (without size prefix) for a known api and version. */
export function decodeResponse<Res>(
  api: Api<unknown, never, Res, never>,
  version: number,
  frame: Buffer,
): { readonly correlationId: number; readonly body: Res } {
  const r = new Reader(frame)
  const header = readResponseHeader(r, responseHeaderVersion(api, version))
  const body = api.readResponse(r, version)
  if (r.remaining !== 0)
    throw new DecodeError(`${api.name} v${version} response: ${r.remaining} bytes left over`)
  return { correlationId: header.correlationId, body }
}

function sealFrame(w: Writer): Buffer[] {
  const size = w.length - 4
  if (size > 0x7fffffff) throw new EncodeError(`frame of ${size} bytes is too large`)
  w.patchInt32(0, size)
  return w.chunks()
}
