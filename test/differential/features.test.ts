/**
 * Differential: UpdateFeatures (`kafka-features upgrade|downgrade`), the same raw requests to
 * Kafka 4.0 and to Weir, both with StandardAuthorizer (`super.users=User:ANONYMOUS`, the PLAINTEXT
 * listener these requests use) and a SASL client principal without ACLs. transaction.version moves
 * down and back up with the finalized level read back from ApiVersions; the refusals: a level past
 * what the node supports, a downgrade without a downgrade type, a "downgrade" upwards, an unknown
 * upgrade type, a feature Kafka supports that Weir does not (allowed), metadata.version downgrades,
 * a request with one bad update among good ones (nothing written), validateOnly, v0's
 * AllowDowngrade, v2 (no per-feature results), a principal without ALTER on the cluster.
 */
import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import type { KafkaConnection } from '../../src/client/index.ts'
import { apis, ErrorCode } from '../../src/protocol/index.ts'
import { Pair, scenario } from './harness.ts'

let pair: Pair
let alice: { kafka: KafkaConnection; weir: KafkaConnection }

before(async () => {
  pair = await Pair.start(
    'features',
    {
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'allow.everyone.if.no.acl.found': 'false',
      'super.users': 'User:ANONYMOUS',
    },
    { saslUsers: { alice: 'alice-secret' } },
  )
  alice = await pair.login('alice')
})

after(async () => {
  await pair?.stop()
})

const UPGRADE = 1
const SAFE_DOWNGRADE = 2
const UNSAFE_DOWNGRADE = 3

type Update = { feature: string; maxVersionLevel: number; upgradeType?: number; allowDowngrade?: boolean }

function request(updates: Update[], validateOnly = false) {
  return {
    timeoutMs: 30_000,
    featureUpdates: updates.map((u) => ({
      feature: u.feature,
      maxVersionLevel: u.maxVersionLevel,
      upgradeType: u.upgradeType ?? UPGRADE,
      allowDowngrade: u.allowDowngrade ?? false,
    })),
    validateOnly,
  }
}

/** Waits until both sides' ApiVersions finalize transaction.version at `expected`. */
async function finalizedTransactionVersion(expected: number): Promise<void> {
  const level = (r: { finalizedFeatures: readonly { name: string; maxVersionLevel: number }[] }) =>
    r.finalizedFeatures.find((f) => f.name === 'transaction.version')?.maxVersionLevel ?? 0
  const deadline = performance.now() + 15_000
  for (;;) {
    const r = await pair.each(apis.ApiVersions, 4, {
      clientSoftwareName: 'weir-differential',
      clientSoftwareVersion: '1',
    })
    if (level(r.kafka) === expected && level(r.weir) === expected) return
    if (performance.now() > deadline)
      assert.fail(
        `finalized transaction.version: kafka ${level(r.kafka)}, weir ${level(r.weir)}, expected ${expected}`,
      )
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

scenario(
  'UpdateFeatures: transaction.version down and up, and the refusals',
  () => pair,
  async () => {
    const update = (step: string, version: number, updates: Update[], validateOnly = false) =>
      pair.both(step, apis.UpdateFeatures, version, request(updates, validateOnly))
    await finalizedTransactionVersion(2)
    await update('features/past-supported', 1, [{ feature: 'transaction.version', maxVersionLevel: 3 }])
    await update('features/downgrade-as-upgrade', 1, [{ feature: 'transaction.version', maxVersionLevel: 1 }])
    await update('features/downgrade-upwards', 1, [
      { feature: 'transaction.version', maxVersionLevel: 3, upgradeType: SAFE_DOWNGRADE },
    ])
    await update('features/unknown-upgrade-type', 1, [
      { feature: 'transaction.version', maxVersionLevel: 1, upgradeType: 7 },
    ])
    await update('features/negative', 1, [
      { feature: 'transaction.version', maxVersionLevel: -1, upgradeType: UNSAFE_DOWNGRADE },
    ])
    await update('features/unknown-feature', 1, [{ feature: 'weir.no.such.version', maxVersionLevel: 1 }])
    await update('features/metadata-safe-downgrade', 1, [
      { feature: 'metadata.version', maxVersionLevel: 21, upgradeType: SAFE_DOWNGRADE },
    ])
    await update('features/metadata-unsafe-downgrade', 1, [
      { feature: 'metadata.version', maxVersionLevel: 21, upgradeType: UNSAFE_DOWNGRADE },
    ])
    await update('features/metadata-past-supported', 1, [
      { feature: 'metadata.version', maxVersionLevel: 99 },
    ])
    // One bad update refuses the request: the good one is not written either.
    await update('features/one-bad-among-good', 1, [
      { feature: 'transaction.version', maxVersionLevel: 1, upgradeType: SAFE_DOWNGRADE },
      { feature: 'weir.no.such.version', maxVersionLevel: 1 },
    ])
    await update(
      'features/validate-only',
      1,
      [{ feature: 'transaction.version', maxVersionLevel: 1, upgradeType: SAFE_DOWNGRADE }],
      true,
    )
    await finalizedTransactionVersion(2)
    await update('features/v0-without-allow-downgrade', 0, [
      { feature: 'transaction.version', maxVersionLevel: 1 },
    ])
    // Kafka 4's controller reads UpgradeType alone (default UPGRADE): v0's AllowDowngrade does nothing.
    await update('features/v0-allow-downgrade', 0, [
      { feature: 'transaction.version', maxVersionLevel: 1, allowDowngrade: true },
    ])
    await update('features/downgrade', 1, [
      { feature: 'transaction.version', maxVersionLevel: 1, upgradeType: SAFE_DOWNGRADE },
    ])
    await finalizedTransactionVersion(1)
    await update('features/same-level', 1, [{ feature: 'transaction.version', maxVersionLevel: 1 }])
    await update('features/v2-upgrade', 2, [{ feature: 'transaction.version', maxVersionLevel: 2 }])
    await finalizedTransactionVersion(2)
    await update('features/v2-refused', 2, [{ feature: 'transaction.version', maxVersionLevel: 5 }])
    // Without ALTER on the cluster.
    const kafka = await alice.kafka.request(
      apis.UpdateFeatures,
      1,
      request([{ feature: 'transaction.version', maxVersionLevel: 1, upgradeType: SAFE_DOWNGRADE }]),
    )
    const weir = await alice.weir.request(
      apis.UpdateFeatures,
      1,
      request([{ feature: 'transaction.version', maxVersionLevel: 1, upgradeType: SAFE_DOWNGRADE }]),
    )
    assert.equal(kafka.errorCode, ErrorCode.ClusterAuthorizationFailed)
    pair.differ.compare('features/denied', 'UpdateFeatures', 1, kafka, weir, [])
    await finalizedTransactionVersion(2)
  },
)
