/**
 * AlterPartitionReassignments and ListPartitionReassignments v0 (KIP-455): decided by the active
 * controller (forwarded by brokers like the other controller APIs) and answered once the records
 * commit.
 */
import {
  type AlterPartitionReassignmentsRequestData,
  type AlterPartitionReassignmentsResponseData,
  apis,
  type ErrorCode,
  type ListPartitionReassignmentsRequestData,
  type ListPartitionReassignmentsResponseData,
} from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'
import type { FailureOf } from './controller-api.ts'

/** What the reassignment handlers ask of the controller (local or forwarded). */
export interface ReassignmentApi {
  alterPartitionReassignments(
    req: AlterPartitionReassignmentsRequestData.AlterPartitionReassignmentsRequest,
    version?: number,
  ): Promise<AlterPartitionReassignmentsResponseData.AlterPartitionReassignmentsResponseIn>
  listPartitionReassignments(
    req: ListPartitionReassignmentsRequestData.ListPartitionReassignmentsRequest,
    version?: number,
  ): Promise<ListPartitionReassignmentsResponseData.ListPartitionReassignmentsResponseIn>
}

export function makePartitionReassignmentHandlers(
  controller: ReassignmentApi,
  failureOf: FailureOf,
): Handler[] {
  return [
    defineHandler(apis.AlterPartitionReassignments, {}, async (req, ctx) => {
      const failed = (f: { errorCode: ErrorCode; message: string }) => ({
        throttleTimeMs: 0,
        errorCode: f.errorCode,
        errorMessage: f.message,
        responses: req.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: f.errorCode,
            errorMessage: f.message,
          })),
        })),
      })
      const denied = clusterDenied(ctx)
      if (denied !== null) return failed(denied)
      try {
        return await controller.alterPartitionReassignments(req, ctx.apiVersion)
      } catch (e) {
        return failed(failureOf(e))
      }
    }),
    defineHandler(apis.ListPartitionReassignments, {}, async (req, ctx) => {
      const denied = clusterDenied(ctx)
      if (denied !== null) {
        // Kafka's error response echoes the partitions asked, without their replicas.
        const topics = (req.topics ?? []).map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) => ({
            partitionIndex,
            replicas: [],
            addingReplicas: [],
            removingReplicas: [],
          })),
        }))
        return { throttleTimeMs: 0, errorCode: denied.errorCode, errorMessage: denied.message, topics }
      }
      try {
        return await controller.listPartitionReassignments(req, ctx.apiVersion)
      } catch (e) {
        const f = failureOf(e)
        return { throttleTimeMs: 0, errorCode: f.errorCode, errorMessage: f.message, topics: [] }
      }
    }),
  ]
}
