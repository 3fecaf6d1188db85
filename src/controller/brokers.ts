/**
 * Broker lifecycle decisions: registration (a new broker epoch), heartbeats (unfence once caught
 * up, controlled shutdown) and fencing when heartbeats lapse. Pure; the session clock is the
 * caller's.
 */
import type { MetadataImage } from '../metadata/index.ts'
import type { BrokerId } from '../model/index.ts'
import {
  type BrokerHeartbeatRequestData,
  type BrokerHeartbeatResponseData,
  type BrokerRegistrationRequestData,
  type BrokerRegistrationResponseData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import { type Decision, type PendingRecord, pendingRecord } from './decision.ts'
import { aliveIn, electLeaderless, moveAwayFrom, moveLeadershipsAwayFrom } from './elections.ts'

/** BrokerRegistrationChangeRecord.fenced values. */
const FENCE = 1
const UNFENCE = -1

export interface RegistrationContext {
  readonly image: MetadataImage
  readonly clusterId: string
  /** The offset the registration record will have: it becomes the broker epoch, as in Kafka. */
  readonly nextOffset: bigint
  /** Whether the broker's current registration still has a live session. */
  readonly hasLiveSession: (id: BrokerId) => boolean
  /** Finalized features the broker must support (name -> level). */
  readonly finalizedFeatures: ReadonlyMap<string, number>
}

export function registerBroker(
  ctx: RegistrationContext,
  req: BrokerRegistrationRequestData.BrokerRegistrationRequest,
): Decision<BrokerRegistrationResponseData.BrokerRegistrationResponseIn> {
  const refuse = (errorCode: ErrorCode) => ({ records: [], response: { errorCode, brokerEpoch: -1n } })
  if (req.clusterId !== ctx.clusterId) return refuse(ErrorCode.InconsistentClusterId)
  const existing = ctx.image.brokers.get(req.brokerId)
  if (
    existing !== undefined &&
    existing.incarnationId !== req.incarnationId &&
    ctx.hasLiveSession(req.brokerId)
  ) {
    return refuse(ErrorCode.DuplicateBrokerRegistration)
  }
  for (const [name, level] of ctx.finalizedFeatures) {
    const f = req.features.find((x) => x.name === name)
    if (level > 0 && (f === undefined || level < f.minSupportedVersion || level > f.maxSupportedVersion)) {
      return refuse(ErrorCode.UnsupportedVersion)
    }
  }
  // v3 carries LogDirs (KIP-858; metadata.version 3.7-IV2 and later, which Weir runs).
  const record = pendingRecord(T.RegisterBroker, 3, {
    brokerId: req.brokerId,
    incarnationId: req.incarnationId,
    brokerEpoch: ctx.nextOffset,
    endPoints: req.listeners.map((l) => ({
      name: l.name,
      host: l.host,
      port: l.port,
      securityProtocol: l.securityProtocol,
    })),
    features: req.features.map((f) => ({
      name: f.name,
      minSupportedVersion: f.minSupportedVersion,
      maxSupportedVersion: f.maxSupportedVersion,
    })),
    rack: req.rack,
    fenced: true,
    inControlledShutdown: false,
    logDirs: req.logDirs,
  })
  // A new incarnation of a known broker (a restart, perhaps after a crash that lost unflushed
  // writes) must not lead again in the epoch it led before, nor count as in sync: it leaves every
  // ISR it is in (but the last member's) and its leaderships move, as Kafka's unclean-shutdown
  // handling at registration. When it unfences it is elected again in a new epoch, so replicas
  // that hold what it lost see the divergence and truncate.
  const moved =
    existing !== undefined && existing.incarnationId !== req.incarnationId
      ? moveAwayFrom(ctx.image, req.brokerId)
      : []
  return {
    records: [record, ...moved],
    response: { errorCode: ErrorCode.None, brokerEpoch: ctx.nextOffset },
  }
}

export interface HeartbeatContext {
  readonly image: MetadataImage
  /** The offset up to which the metadata log is committed (the controller's high watermark). */
  readonly committedOffset: bigint
  /**
   * The lowest metadata offset the other active brokers (unfenced, not shutting down) reported in
   * their last heartbeats (Kafka's `lowestActiveOffset`); null when there is none. Absent: a broker
   * shutting down waits for nobody.
   */
  readonly lowestActiveOffset?: (excluding: BrokerId) => bigint | null
  /**
   * The offset of the last record this controller wrote for the broker's controlled shutdown;
   * undefined (another controller wrote them): nothing to wait for.
   */
  readonly controlledShutdownOffset?: (id: BrokerId) => bigint | undefined
}

/**
 * A heartbeat: stale epochs are refused; a fenced broker that has caught up with the metadata log
 * (its offset reached its own registration) is unfenced and leads again where it is the first live
 * ISR member of a leaderless partition; a broker asking to shut down hands its leaderships over
 * and is fenced, and is told it may stop once that is committed and every other active broker has
 * applied it (Kafka's BrokerHeartbeatManager: `shouldShutDown` when the broker leads nothing and
 * the lowest active offset reached its controlled-shutdown offset), so that while it waits it keeps
 * answering the clients that still send to it with the new leaders, who already lead; a broker
 * reporting offline log dirs hands over the leaderships another live ISR member can take
 * (`moveLeadershipsAwayFrom`).
 */
export function brokerHeartbeat(
  ctx: HeartbeatContext,
  req: BrokerHeartbeatRequestData.BrokerHeartbeatRequest,
): Decision<BrokerHeartbeatResponseData.BrokerHeartbeatResponseIn> {
  const b = ctx.image.brokers.get(req.brokerId)
  if (b === undefined || b.epoch !== req.brokerEpoch) {
    return {
      records: [],
      response: {
        errorCode: ErrorCode.StaleBrokerEpoch,
        isCaughtUp: false,
        isFenced: true,
        shouldShutDown: false,
      },
    }
  }
  const caughtUp = req.currentMetadataOffset >= b.epoch
  const records: PendingRecord[] = []
  let fenced = b.fenced
  let shouldShutDown = false
  if (req.wantShutDown) {
    // Controlled shutdown: leaderships move to live ISR members, then the broker is fenced, so a
    // restart re-registers at once and is given its leaderships back when it unfences.
    const entering = !b.inControlledShutdown
    if (entering) {
      records.push(
        pendingRecord(T.BrokerRegistrationChange, 1, {
          brokerId: b.id,
          brokerEpoch: b.epoch,
          inControlledShutdown: 1,
        }),
      )
    }
    records.push(...moveAwayFrom(ctx.image, b.id))
    if (!b.fenced)
      records.push(
        pendingRecord(T.BrokerRegistrationChange, 0, { brokerId: b.id, brokerEpoch: b.epoch, fenced: FENCE }),
      )
    fenced = true
    // The first answer is never yes: the moves are not committed yet. Later ones say yes once
    // nothing is left to move and everyone else has applied the moves.
    if (!entering && records.length === 0) {
      const offset = ctx.controlledShutdownOffset?.(b.id) ?? -1n
      const lowest = ctx.lowestActiveOffset?.(b.id) ?? null
      shouldShutDown = ctx.committedOffset >= offset && (lowest === null || lowest >= offset)
    }
  } else if (req.wantFence && !b.fenced) {
    records.push(
      pendingRecord(T.BrokerRegistrationChange, 0, { brokerId: b.id, brokerEpoch: b.epoch, fenced: FENCE }),
    )
    records.push(...moveAwayFrom(ctx.image, b.id))
    fenced = true
  } else if (!req.wantFence && b.fenced && caughtUp && !b.inControlledShutdown) {
    records.push(
      pendingRecord(T.BrokerRegistrationChange, 0, { brokerId: b.id, brokerEpoch: b.epoch, fenced: UNFENCE }),
    )
    const alive = aliveIn(ctx.image)
    records.push(...electLeaderless(ctx.image, (id) => id === b.id || alive(id)))
    fenced = false
  }
  if (!fenced && !shouldShutDown && req.offlineLogDirs.length > 0) {
    // KIP-858's handling of a failed log dir, without directory assignments. When every dir the
    // broker registered is offline, none of its replicas can take writes: it leaves every ISR (as
    // Kafka's handleDirectoriesOffline), so acks=all does not wait replica.lag.time.max.ms for it;
    // it rejoins through AlterPartition once its dir is back and it has caught up. Otherwise only
    // its leaderships move (which partitions are on the failed dir is not known).
    const allOffline = b.logDirs.length > 0 && b.logDirs.every((d) => req.offlineLogDirs.includes(d))
    records.push(...(allOffline ? moveAwayFrom(ctx.image, b.id) : moveLeadershipsAwayFrom(ctx.image, b.id)))
  }
  return {
    records,
    response: { errorCode: ErrorCode.None, isCaughtUp: caughtUp, isFenced: fenced, shouldShutDown },
  }
}

/** Fences a broker whose session lapsed (`broker.session.timeout.ms`) and moves its leaderships away. */
export function fenceBroker(image: MetadataImage, id: BrokerId): PendingRecord[] {
  const b = image.brokers.get(id)
  if (b === undefined || b.fenced) return []
  return [
    pendingRecord(T.BrokerRegistrationChange, 0, { brokerId: id, brokerEpoch: b.epoch, fenced: FENCE }),
    ...moveAwayFrom(image, id),
  ]
}
