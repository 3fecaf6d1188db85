/**
 * DescribeClientQuotas v0-1: Weir keeps no client quotas (it does not serve AlterClientQuotas), so
 * every filter matches nothing. `kafka-configs --describe --entity-type users` asks it beside
 * DescribeUserScramCredentials.
 */
import { apis, ErrorCode } from '../../protocol/index.ts'
import { clusterDenied } from '../authorize.ts'
import { defineHandler, type Handler } from '../handler.ts'

export function makeDescribeClientQuotasHandler(): Handler {
  return defineHandler(apis.DescribeClientQuotas, {}, (_req, ctx) => {
    const denied = clusterDenied(ctx)
    if (denied !== null) return { errorCode: denied.errorCode, errorMessage: denied.message, entries: null }
    return { errorCode: ErrorCode.None, errorMessage: null, entries: [] }
  })
}
