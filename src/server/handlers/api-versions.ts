/**
 * ApiVersions v0-4. Serves exactly the registry's handlers and their versions. Features (KIP-584)
 * come from the caller: the metadata image once a node has one.
 */
import { type ApiVersionsResponseData, apis, ErrorCode } from '../../protocol/index.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { HandlerRegistry } from '../registry.ts'

export interface FeatureView {
  readonly supported: readonly ApiVersionsResponseData.SupportedFeatureKey[]
  readonly finalized: readonly ApiVersionsResponseData.FinalizedFeatureKey[]
  /** -1 while unknown. */
  readonly finalizedEpoch: bigint
}

/** KIP-511: client software name and version must match this. */
const CLIENT_SOFTWARE = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/

export function makeApiVersionsHandler(registry: HandlerRegistry, features: () => FeatureView): Handler {
  return defineHandler(apis.ApiVersions, {}, (req, ctx) => {
    if (
      ctx.apiVersion >= 3 &&
      (!CLIENT_SOFTWARE.test(req.clientSoftwareName) || !CLIENT_SOFTWARE.test(req.clientSoftwareVersion))
    ) {
      return { errorCode: ErrorCode.InvalidRequest, apiKeys: registry.apiVersions() }
    }
    const f = features()
    return {
      errorCode: ErrorCode.None,
      apiKeys: registry.apiVersions(),
      // As Kafka (KAFKA-17011): before v4 a client may not take a range from 0, so those are left out.
      supportedFeatures: ctx.apiVersion >= 4 ? f.supported : f.supported.filter((x) => x.minVersion > 0),
      finalizedFeatures: f.finalized,
      finalizedFeaturesEpoch: f.finalizedEpoch,
    }
  })
}
