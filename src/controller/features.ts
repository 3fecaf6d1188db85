/**
 * UpdateFeatures (KIP-584, as Kafka 4's FeatureControlManager): each named feature moves to its
 * new level when the upgrade type allows the direction, this controller and every registered
 * broker and controller support the level, and (metadata.version) the move keeps what the log
 * holds; a level of 0 removes a feature. The updates are one atomic batch of FeatureLevelRecords,
 * written only if every update is valid (validateOnly: none). The first invalid one refuses the
 * request: INVALID_UPDATE_VERSION at the top with Kafka's message and no per-feature results; a
 * success lists each feature with Kafka's "NONE". v0's AllowDowngrade is not read, as Kafka 4's
 * controller reads only UpgradeType (default UPGRADE). Pure.
 */
import type { MetadataImage } from '../metadata/index.ts'
import {
  ErrorCode,
  metadataRecordTypes as T,
  type UpdateFeaturesRequestData,
  type UpdateFeaturesResponseData,
} from '../protocol/index.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'

/** A feature this controller's software supports, and the levels. */
export interface SupportedFeature {
  readonly name: string
  readonly minVersion: number
  readonly maxVersion: number
}

export interface FeatureUpdateContext {
  readonly image: MetadataImage
  /** This controller's node id (named in its refusals). */
  readonly nodeId: number
  readonly supported: readonly SupportedFeature[]
}

/** UpdateFeaturesRequest.UpgradeType. */
const UPGRADE = 1
const SAFE_DOWNGRADE = 2
const UNSAFE_DOWNGRADE = 3

const METADATA_VERSION = 'metadata.version'

type Refusal = { readonly errorCode: ErrorCode; readonly message: string }

export function updateFeatures(
  ctx: FeatureUpdateContext,
  req: UpdateFeaturesRequestData.UpdateFeaturesRequest,
  version: number,
): Decision<UpdateFeaturesResponseData.UpdateFeaturesResponseIn> {
  const records: PendingRecord[] = []
  let refusal: Refusal | null = null
  for (const u of req.featureUpdates) {
    const r = updateFeature(ctx, u.feature, u.maxVersionLevel, version === 0 ? UPGRADE : u.upgradeType)
    if ('errorCode' in r) {
      refusal = r
      break
    }
    records.push(r)
  }
  if (refusal !== null) {
    return {
      records: [],
      response: {
        throttleTimeMs: 0,
        errorCode: refusal.errorCode,
        errorMessage: `The update failed for all features since the following feature had an error: ${refusal.message}`,
        results: [],
      },
    }
  }
  return {
    records: req.validateOnly ? [] : records,
    response: {
      throttleTimeMs: 0,
      errorCode: ErrorCode.None,
      errorMessage: null,
      // v2 has no per-feature results.
      results: req.featureUpdates.map((u) => ({
        feature: u.feature,
        errorCode: ErrorCode.None,
        errorMessage: 'NONE',
      })),
    },
  }
}

function updateFeature(
  ctx: FeatureUpdateContext,
  name: string,
  level: number,
  upgradeType: number,
): PendingRecord | Refusal {
  const invalid = (message: string): Refusal => ({
    errorCode: ErrorCode.InvalidUpdateVersion,
    message: `Invalid update version ${level} for feature ${name}. ${message}`,
  })
  if (upgradeType !== UPGRADE && upgradeType !== SAFE_DOWNGRADE && upgradeType !== UNSAFE_DOWNGRADE)
    return invalid('The controller does not support the given upgrade type.')
  const current = ctx.image.features.get(name) ?? 0
  if (level < 0) return invalid('A feature version cannot be less than 0.')
  const unsupported = reasonNotSupported(ctx, name, level)
  if (unsupported !== null) return invalid(unsupported)
  if (level < current && upgradeType === UPGRADE)
    return invalid(
      "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
    )
  if (level > current && upgradeType !== UPGRADE) return invalid("Can't downgrade to a newer version.")
  if (name === METADATA_VERSION && level < current) {
    // Every level this build writes changes what the log holds from the one before it, so no
    // downgrade is lossless; Kafka 4 refuses the lossy ones too.
    const message =
      upgradeType === UNSAFE_DOWNGRADE
        ? 'Unsafe metadata downgrade is not supported in this version.'
        : 'Refusing to perform the requested downgrade because it might delete metadata information.'
    return {
      errorCode: ErrorCode.InvalidUpdateVersion,
      message: `Invalid metadata.version ${level}. ${message}`,
    }
  }
  return pendingRecord(T.FeatureLevel, 0, { name, featureLevel: level })
}

/** Why `level` of `name` cannot be finalized (who does not support it), or null. */
function reasonNotSupported(ctx: FeatureUpdateContext, name: string, level: number): string | null {
  const local = ctx.supported.find((f) => f.name === name)
  const localReason = notIn(
    level,
    `Local controller ${ctx.nodeId}`,
    local?.minVersion ?? 0,
    local?.maxVersion ?? 0,
  )
  if (localReason !== null) return localReason
  const registered = [
    ...[...ctx.image.brokers.values()].map((b) => ({ who: `broker${b.id}`, features: b.features })),
    ...[...ctx.image.controllers.values()]
      .filter((c) => c.id !== ctx.nodeId)
      .map((c) => ({ who: `controller ${c.id}`, features: c.features })),
  ]
  for (const { who, features } of registered) {
    const f = features.find((x) => x.name === name)
    const reason = notIn(level, who, f?.minSupportedVersion ?? 0, f?.maxSupportedVersion ?? 0)
    if (reason !== null) return reason
  }
  return null
}

/** Kafka's QuorumFeatures.reasonNotSupported: a range ending at 0 is a feature not supported at all. */
function notIn(level: number, who: string, min: number, max: number): string | null {
  if (level >= min && level <= max) return null
  if (max === 0) return `${who} does not support this feature.`
  return `${who} only supports versions ${min}-${max}`
}
