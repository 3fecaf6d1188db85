/**
 * Topic decisions of the active controller: CreateTopics, DeleteTopics and CreatePartitions turn
 * into TopicRecord, PartitionRecord, ConfigRecord and RemoveTopicRecord, with Kafka's checks and
 * error codes. Pure.
 */
import { ConfigResourceType, type MetadataImage, NO_LEADER } from '../metadata/index.ts'
import { type BrokerId, type TopicName, type Uuid, ZERO_UUID } from '../model/index.ts'
import {
  type CreatePartitionsRequestData,
  type CreatePartitionsResponseData,
  type CreateTopicsRequestData,
  type CreateTopicsResponseData,
  type DeleteTopicsRequestData,
  type DeleteTopicsResponseData,
  ErrorCode,
  metadataRecordTypes as T,
} from '../protocol/index.ts'
import {
  type Decision,
  type DecisionContext,
  type PendingRecord,
  PolicyViolationError,
  pendingRecord,
  randomUuid,
  usableBrokers,
} from './decision.ts'
import { PlacementError, placeReplicas } from './placement.ts'

/** Kafka's limit on topic name length (so that partition directory names fit in 255 bytes). */
export const TOPIC_NAME_LENGTH_MAX = 249
const LEGAL_TOPIC_NAME = /^[a-zA-Z0-9._-]+$/
/** Topics clients may not create or delete themselves. */
export const INTERNAL_TOPICS: ReadonlySet<string> = new Set(['__consumer_offsets', '__transaction_state'])

/**
 * Why a topic name is illegal, in Kafka's words, or null when it is legal. Kafka words a name's
 * illegal characters one way where configs and metadata validate it (`Topic.validate(String)`) and
 * another in CreateTopics (`create`).
 */
export function topicNameProblem(name: string, at: 'validate' | 'create' = 'validate'): string | null {
  if (name.length === 0) return "Topic name is illegal, it can't be empty"
  if (name === '.' || name === '..') return 'Topic name cannot be "." or ".."'
  if (name.length > TOPIC_NAME_LENGTH_MAX) {
    return `Topic name is illegal, it can't be longer than ${TOPIC_NAME_LENGTH_MAX} characters, topic name: ${name}`
  }
  if (!LEGAL_TOPIC_NAME.test(name)) {
    if (at === 'create')
      return `Topic name is invalid: '${name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'`
    return `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`
  }
  return null
}

/** '.' and '_' collide in metric names, so Kafka refuses topics that differ only by them. */
function collisionName(name: string): string {
  return name.replaceAll('.', '_')
}

interface Failure {
  readonly errorCode: ErrorCode
  readonly message: string
}

type TopicResult = CreateTopicsResponseData.CreatableTopicResultIn

/** Everything decided for one topic to create. */
interface TopicPlan {
  readonly name: TopicName
  readonly id: Uuid
  readonly assignments: readonly (readonly BrokerId[])[]
  readonly configs: ReadonlyMap<string, string>
}

function fail(name: TopicName, f: Failure): TopicResult {
  return { name, errorCode: f.errorCode, errorMessage: f.message }
}

function planAssignments(
  ctx: DecisionContext,
  topic: CreateTopicsRequestData.CreatableTopic,
): { assignments: BrokerId[][] } | Failure {
  const image = ctx.image
  if (topic.assignments.length > 0) {
    if (topic.numPartitions !== -1 || topic.replicationFactor !== -1) {
      return {
        errorCode: ErrorCode.InvalidRequest,
        message:
          'Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.',
      }
    }
    const sorted = [...topic.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex)
    const rf = sorted[0]!.brokerIds.length
    const out: BrokerId[][] = []
    for (const [i, a] of sorted.entries()) {
      if (a.partitionIndex !== i) {
        return {
          errorCode: ErrorCode.InvalidReplicaAssignment,
          message: 'Partitions should be numbered consecutively starting from 0.',
        }
      }
      const problem = assignmentProblem(image, a.brokerIds, rf, i)
      if (problem !== null) return problem
      out.push(a.brokerIds)
    }
    return { assignments: out }
  }
  const numPartitions = topic.numPartitions === -1 ? ctx.settings.defaultNumPartitions : topic.numPartitions
  const rf = topic.replicationFactor === -1 ? ctx.settings.defaultReplicationFactor : topic.replicationFactor
  if (numPartitions <= 0) {
    return {
      errorCode: ErrorCode.InvalidPartitions,
      message: 'Number of partitions was set to an invalid non-positive value.',
    }
  }
  if (rf <= 0) {
    return {
      errorCode: ErrorCode.InvalidReplicationFactor,
      message: 'Replication factor must be larger than 0, or -1 to use the default value.',
    }
  }
  const brokers = usableBrokers(image)
  if (rf > brokers.length) {
    return {
      errorCode: ErrorCode.InvalidReplicationFactor,
      message: `Unable to replicate the partition ${rf} time(s): The target replication factor of ${rf} cannot be reached because only ${brokers.length} broker(s) are registered.`,
    }
  }
  try {
    return {
      assignments: placeReplicas(
        brokers,
        { partitionCount: numPartitions, replicationFactor: rf },
        {
          startIndex: ctx.random.int(brokers.length),
          shift: ctx.random.int(Math.max(brokers.length - 1, 1)),
        },
      ),
    }
  } catch (e) {
    if (e instanceof PlacementError)
      return { errorCode: ErrorCode.InvalidReplicationFactor, message: e.message }
    throw e
  }
}

/**
 * The partition replicas each broker holds, and those a request places, against
 * `max.broker.partitions`: a topic (or its new partitions) that would take a broker past it is
 * refused whole, with POLICY_VIOLATION, as a CreateTopicPolicy refuses; the rest of the request
 * goes on. Counted from the image once per request, only when there is a bound.
 */
class ReplicaBudget {
  readonly #image: MetadataImage
  readonly #max: number
  #held: Map<BrokerId, number> | null = null

  constructor(ctx: DecisionContext) {
    this.#image = ctx.image
    this.#max = ctx.settings.brokerPartitionsMax ?? 0
  }

  /**
   * Why these assignments do not fit, or null: then they count as held for the rest of the request.
   * An internal topic (`refuse` false) always fits: the brokers need it to serve groups.
   */
  take(assignments: readonly (readonly BrokerId[])[], refuse = true): Failure | null {
    if (this.#max <= 0) return null
    this.#held ??= replicasByBroker(this.#image)
    const held = this.#held
    const adding = new Map<BrokerId, number>()
    for (const replicas of assignments) for (const b of replicas) adding.set(b, (adding.get(b) ?? 0) + 1)
    for (const [b, n] of adding) {
      const has = held.get(b) ?? 0
      if (refuse && has + n > this.#max) {
        return {
          errorCode: ErrorCode.PolicyViolation,
          message: `Unable to place ${n} more partition replica(s) on broker ${b}: it holds ${has} of at most ${this.#max} (max.broker.partitions).`,
        }
      }
    }
    for (const [b, n] of adding) held.set(b, (held.get(b) ?? 0) + n)
    return null
  }
}

function replicasByBroker(image: MetadataImage): Map<BrokerId, number> {
  const held = new Map<BrokerId, number>()
  for (const topic of image.topicsById.values()) {
    for (const p of topic.partitions.values()) for (const b of p.replicas) held.set(b, (held.get(b) ?? 0) + 1)
  }
  return held
}

function assignmentProblem(
  image: MetadataImage,
  brokerIds: readonly BrokerId[],
  rf: number,
  partition: number,
): Failure | null {
  if (brokerIds.length === 0) {
    return {
      errorCode: ErrorCode.InvalidReplicaAssignment,
      message: `Partition ${partition} has no replicas.`,
    }
  }
  if (brokerIds.length !== rf) {
    return {
      errorCode: ErrorCode.InvalidReplicaAssignment,
      message: 'All partitions in the manual partition assignment must have the same number of replicas.',
    }
  }
  if (new Set(brokerIds).size !== brokerIds.length) {
    return {
      errorCode: ErrorCode.InvalidReplicaAssignment,
      message: `The manual partition assignment includes the same broker twice: ${brokerIds.join(', ')}.`,
    }
  }
  for (const id of brokerIds) {
    if (!image.brokers.has(id)) {
      return {
        errorCode: ErrorCode.InvalidReplicaAssignment,
        message: `The manual partition assignment includes broker ${id}, but no such broker is registered.`,
      }
    }
  }
  return null
}

/** PartitionRecords for new partitions: ISR is the unfenced replicas, leader the first of them. */
function partitionRecords(
  image: MetadataImage,
  topicId: Uuid,
  first: number,
  assignments: readonly (readonly BrokerId[])[],
): PendingRecord[] {
  return assignments.map((replicas, i) => {
    const isr = replicas.filter((id) => {
      const b = image.brokers.get(id)
      return b !== undefined && !b.fenced
    })
    return pendingRecord(T.Partition, 0, {
      partitionId: first + i,
      topicId,
      replicas,
      isr,
      removingReplicas: [],
      addingReplicas: [],
      leader: isr[0] ?? NO_LEADER,
      leaderRecoveryState: 0,
      leaderEpoch: 0,
      partitionEpoch: 0,
    })
  })
}

export interface CreateTopicsOptions {
  /** The topic's configs as CreateTopics v5+ returns them; called only for created topics. */
  readonly describeConfigs?: (
    name: TopicName,
    overrides: ReadonlyMap<string, string>,
  ) => CreateTopicsResponseData.CreatableTopicConfigsIn[]
  /** A broker creating an internal topic (`__consumer_offsets` for its group coordinator). */
  readonly allowInternal?: boolean
}

/** CreateTopics (all versions): validates every topic on its own; valid ones are created together. */
/** The most partitions one CreateTopics may create (Kafka's `MAX_PARTITIONS_PER_BATCH`). */
export const PARTITIONS_PER_REQUEST_MAX = 10_000

export function createTopics(
  ctx: DecisionContext,
  req: CreateTopicsRequestData.CreateTopicsRequest,
  options: CreateTopicsOptions = {},
): Decision<CreateTopicsResponseData.CreateTopicsResponseIn> {
  // Before any other check, as Kafka's validateTotalNumberOfPartitions: the whole request fails.
  let partitions = 0
  for (const t of req.topics) {
    if (t.assignments.length > 0) partitions += t.assignments.length
    else if (t.numPartitions === -1) partitions += ctx.settings.defaultNumPartitions
    else if (t.numPartitions > 0) partitions += t.numPartitions
  }
  if (partitions > PARTITIONS_PER_REQUEST_MAX) {
    throw new PolicyViolationError('Excessively large number of partitions per request.')
  }
  const counts = new Map<string, number>()
  for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1)
  const collisions = new Map<string, string>()
  for (const name of ctx.image.topicsByName.keys()) collisions.set(collisionName(name), name)
  const results: TopicResult[] = []
  const plans: TopicPlan[] = []
  const budget = new ReplicaBudget(ctx)
  const duplicates = new Set<string>()
  for (const topic of req.topics) {
    const name = topic.name
    if ((counts.get(name) ?? 0) > 1) {
      // One result per duplicated name, as Kafka's ControllerApis answers.
      if (!duplicates.has(name))
        results.push(fail(name, { errorCode: ErrorCode.InvalidRequest, message: 'Duplicate topic name.' }))
      duplicates.add(name)
      continue
    }
    const illegal = topicNameProblem(name, 'create')
    if (illegal !== null) {
      results.push(fail(name, { errorCode: ErrorCode.InvalidTopicException, message: illegal }))
      continue
    }
    if (INTERNAL_TOPICS.has(name) && options.allowInternal !== true) {
      results.push(
        fail(name, {
          errorCode: ErrorCode.InvalidRequest,
          message: `Creation of internal topic ${name} is prohibited.`,
        }),
      )
      continue
    }
    if (ctx.image.topicsByName.has(name)) {
      results.push(
        fail(name, { errorCode: ErrorCode.TopicAlreadyExists, message: `Topic '${name}' already exists.` }),
      )
      continue
    }
    const colliding = collisions.get(collisionName(name))
    if (colliding !== undefined) {
      results.push(
        fail(name, {
          errorCode: ErrorCode.InvalidTopicException,
          message: `Topic '${name}' collides with existing topic: ${colliding}`,
        }),
      )
      continue
    }
    const configs = new Map<string, string>()
    let configFailure: Failure | null = null
    for (const c of topic.configs) {
      if (c.value === null) {
        configFailure = {
          errorCode: ErrorCode.InvalidConfig,
          message: `Null value not supported for topic configs: ${c.name}`,
        }
        break
      }
      configs.set(c.name, c.value)
    }
    const problem = configFailure === null ? ctx.validateTopicConfigs(configs) : null
    if (problem !== null) configFailure = { errorCode: ErrorCode.InvalidConfig, message: problem.message }
    if (configFailure !== null) {
      results.push(fail(name, configFailure))
      continue
    }
    const placed = planAssignments(ctx, topic)
    if ('errorCode' in placed) {
      results.push(fail(name, placed))
      continue
    }
    const over = budget.take(placed.assignments, !INTERNAL_TOPICS.has(name))
    if (over !== null) {
      results.push(fail(name, over))
      continue
    }
    const id = randomUuid(ctx.random)
    plans.push({ name, id, assignments: placed.assignments, configs })
    collisions.set(collisionName(name), name)
    results.push({
      name,
      topicId: id,
      errorCode: ErrorCode.None,
      errorMessage: null,
      numPartitions: placed.assignments.length,
      replicationFactor: placed.assignments[0]!.length,
      configs: options.describeConfigs?.(name, configs) ?? [],
    })
  }
  if (req.validateOnly) return { records: [], response: { topics: results } }
  const records: PendingRecord[] = []
  for (const plan of plans) {
    records.push(pendingRecord(T.Topic, 0, { name: plan.name, topicId: plan.id }))
    for (const [key, value] of plan.configs) {
      records.push(
        pendingRecord(T.Config, 0, {
          resourceType: ConfigResourceType.Topic,
          resourceName: plan.name,
          name: key,
          value,
        }),
      )
    }
    records.push(...partitionRecords(ctx.image, plan.id, 0, plan.assignments))
  }
  return { records, response: { topics: results } }
}

/** DeleteTopics (all versions): by name (v1-5) or by name or id (v6+). */
export function deleteTopics(
  ctx: DecisionContext,
  req: DeleteTopicsRequestData.DeleteTopicsRequest,
): Decision<DeleteTopicsResponseData.DeleteTopicsResponseIn> {
  const responses: DeleteTopicsResponseData.DeletableTopicResultIn[] = []
  const invalid = (name: TopicName | null, topicId: Uuid, errorMessage: string) =>
    responses.push({ name, topicId, errorCode: ErrorCode.InvalidRequest, errorMessage })
  // As Kafka's ControllerApis.deleteTopics: a topic named both ways, or by neither, is refused; a
  // name or id given twice gets one INVALID_REQUEST result and is not deleted.
  const wanted: Array<{ name: TopicName | null; topicId: Uuid | null }> = []
  for (const name of req.topicNames) wanted.push({ name, topicId: null })
  for (const t of req.topics) {
    if (t.name === null && t.topicId === ZERO_UUID)
      invalid(null, ZERO_UUID, 'Neither topic name nor id were specified.')
    else if (t.name !== null && t.topicId !== ZERO_UUID)
      invalid(t.name, t.topicId, 'You may not specify both topic name and topic id.')
    else wanted.push({ name: t.name, topicId: t.name === null ? t.topicId : null })
  }
  const counts = new Map<string, number>()
  const keyOf = (w: { name: TopicName | null; topicId: Uuid | null }) =>
    w.topicId !== null ? `id:${w.topicId}` : `name:${w.name}`
  for (const w of wanted) counts.set(keyOf(w), (counts.get(keyOf(w)) ?? 0) + 1)
  const records: PendingRecord[] = []
  const deleting = new Set<Uuid>()
  const duplicates = new Set<string>()
  for (const w of wanted) {
    if ((counts.get(keyOf(w)) ?? 0) > 1) {
      if (!duplicates.has(keyOf(w))) {
        if (w.topicId !== null) invalid(null, w.topicId, 'Duplicate topic id.')
        else invalid(w.name, ZERO_UUID, 'Duplicate topic name.')
      }
      duplicates.add(keyOf(w))
      continue
    }
    const topic =
      w.topicId !== null
        ? ctx.image.topicsById.get(w.topicId)
        : w.name !== null
          ? ctx.image.topicsByName.get(w.name)
          : undefined
    const echo = { name: w.name ?? topic?.name ?? null, topicId: topic?.id ?? w.topicId ?? undefined }
    if (!ctx.settings.deleteTopicEnable) {
      responses.push({
        ...echo,
        errorCode: ErrorCode.TopicDeletionDisabled,
        errorMessage: 'Topic deletion is disabled.',
      })
      continue
    }
    if (topic === undefined) {
      responses.push({
        ...echo,
        errorCode: w.topicId !== null ? ErrorCode.UnknownTopicId : ErrorCode.UnknownTopicOrPartition,
        errorMessage:
          w.topicId !== null
            ? `Topic id ${w.topicId} not found.`
            : 'This server does not host this topic-partition.',
      })
      continue
    }
    if (INTERNAL_TOPICS.has(topic.name)) {
      responses.push({
        ...echo,
        errorCode: ErrorCode.InvalidRequest,
        errorMessage: `Deletion of internal topic ${topic.name} is prohibited.`,
      })
      continue
    }
    responses.push({ ...echo, errorCode: ErrorCode.None, errorMessage: null })
    if (!deleting.has(topic.id)) {
      deleting.add(topic.id)
      records.push(pendingRecord(T.RemoveTopic, 0, { topicId: topic.id }))
    }
  }
  return { records, response: { responses } }
}

/** CreatePartitions (all versions): grows topics; never shrinks them. */
export function createPartitions(
  ctx: DecisionContext,
  req: CreatePartitionsRequestData.CreatePartitionsRequest,
): Decision<CreatePartitionsResponseData.CreatePartitionsResponseIn> {
  const results: CreatePartitionsResponseData.CreatePartitionsTopicResultIn[] = []
  const records: PendingRecord[] = []
  const budget = new ReplicaBudget(ctx)
  const counts = new Map<string, number>()
  for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1)
  const duplicates = new Set<string>()
  for (const t of req.topics) {
    const failWith = (errorCode: ErrorCode, errorMessage: string | null) =>
      results.push({ name: t.name, errorCode, errorMessage })
    if ((counts.get(t.name) ?? 0) > 1) {
      // One result per duplicated name, as Kafka's ControllerApis answers.
      if (!duplicates.has(t.name)) failWith(ErrorCode.InvalidRequest, 'Duplicate topic name.')
      duplicates.add(t.name)
      continue
    }
    const topic = ctx.image.topicsByName.get(t.name)
    if (topic === undefined) {
      // Kafka throws a bare UnknownTopicOrPartitionException here: no message.
      failWith(ErrorCode.UnknownTopicOrPartition, null)
      continue
    }
    const current = topic.partitions.size
    if (t.count < current) {
      failWith(
        ErrorCode.InvalidPartitions,
        `The topic ${t.name} currently has ${current} partition(s); ${t.count} would not be an increase.`,
      )
      continue
    }
    if (t.count === current) {
      failWith(ErrorCode.InvalidPartitions, `Topic already has ${current} partition(s).`)
      continue
    }
    const added = t.count - current
    const rf = topic.partitions.get(0)?.replicas.length ?? 1
    let assignments: BrokerId[][]
    if (t.assignments !== null) {
      if (t.assignments.length !== added) {
        failWith(
          ErrorCode.InvalidReplicaAssignment,
          `Attempted to add ${added} additional partition(s), but only ${t.assignments.length} assignment(s) were specified.`,
        )
        continue
      }
      const problem = t.assignments
        .map((a, i) => assignmentProblem(ctx.image, a.brokerIds, rf, current + i))
        .find((p) => p !== null)
      if (problem !== undefined && problem !== null) {
        failWith(problem.errorCode, problem.message)
        continue
      }
      assignments = t.assignments.map((a) => a.brokerIds)
    } else {
      const brokers = usableBrokers(ctx.image)
      if (rf > brokers.length) {
        failWith(
          ErrorCode.InvalidReplicationFactor,
          `Unable to replicate the partition ${rf} time(s): The target replication factor of ${rf} cannot be reached because only ${brokers.length} broker(s) are registered.`,
        )
        continue
      }
      assignments = placeReplicas(
        brokers,
        { partitionCount: added, replicationFactor: rf, firstPartition: current },
        {
          startIndex: ctx.random.int(brokers.length),
          shift: ctx.random.int(Math.max(brokers.length - 1, 1)),
        },
      )
    }
    const over = budget.take(assignments)
    if (over !== null) {
      failWith(over.errorCode, over.message)
      continue
    }
    results.push({ name: t.name, errorCode: ErrorCode.None, errorMessage: null })
    if (!req.validateOnly) records.push(...partitionRecords(ctx.image, topic.id, current, assignments))
  }
  return { records, response: { results } }
}
