/**
 * The durable push path's public surface (seed 000: persist-then-push through
 * push.realtime_outbox, and the per-user event stream clients resume from). A kernel part:
 * it knows no module; modules use it only through this file.
 */
export { cursorOf, positionOf } from './cursor.ts';
export { changedGroups, readStream, readStreamHead, trimStream, type ChangedGroups, type StreamEventRow, type StreamPage } from './stream-sql.ts';
export { eventsAfter, type StreamEvent } from './replay.ts';
export { closeSpansSql, openSpansSql } from './spans-sql.ts';
export { DEPRECATED_EVENT_STREAM_PATH, EVENT_STREAM_PATH, registerEventStreamRoutes } from './stream-routes.ts';
export { registerRealtimeOutboxRoutes, type RunbookRouteDeps } from './runbook-routes.ts';
export { StreamErrors } from './errors.ts';
export { eventNameOf, type PushRow, type UserFrame, type UserFrames } from './types.ts';
export { chatGroupOf, createPush, KIND_NOT_REGISTERED, type KindRegistration, type Push, type PushKinds, type ReferencedKinds } from './port.ts';
export type { BuildResult, Delivery, HubSend, MembershipOp, Payload } from './delivery.ts';
export type { NewPushRow, PushRows, PushRowsFrom } from './outbox-sql.ts';
export { PUSH_ROW_STATUSES, PUSH_TARGET_KINDS, type PushRowStatus, type PushTargetKind } from './push-schema.ts';
export { claimDue, NO_CLAIM_READS, recordOutcomes, type ClaimedRow, type ClaimParams, type OutcomeUpdate } from './claim-sql.ts';
export { claimReadsSql, type BesideRead, type ClaimReads, type ClaimReadsSql, type OwnerClaimReads } from './claim-reads.ts';
export { ATTEMPTS_EXHAUSTED, lastErrorText, outcomeOf, REF_NOT_FOUND, type PushResult, type RowOutcome } from './rules.ts';
export { CLAIMED_TIMING_CHANNEL, createDispatchSteps, DISPATCH_COUNTS, type ClaimedTiming, type DispatchResult, type DispatchRow, type RealtimeDispatchQuarantinedEvent } from './dispatcher.ts';
export { pushDispatchJob, REALTIME_DISPATCH_JOB, type DispatchSettings, type PushDispatchDeps } from './dispatch.job.ts';
export { createRealtimeMetrics, realtimeStateGauges, type RealtimeMetrics } from './metrics.ts';
export { REALTIME_RETENTION_JOB, realtimeRetentionJob } from './retention.job.ts';
export { pushJobs, type PushJobsDeps } from './jobs.ts';
export { dispatchSettingsOf, pushOptionsOf, pushSettingProblems, pushSettings, type PushSettings } from './settings.ts';
export { PUSH_DEFAULTS, pushOptionsProblems, type PushOptions, type PushTuning } from './defaults.ts';
export { realtimeFailureSource } from './ops-failures.ts';
export {
  discardQuarantined,
  listQuarantinedMatching,
  listQuarantined,
  requeueMatching,
  requeueQuarantined,
  type QuarantinedRow,
  type QuarantineFilter,
  type RequeueResult,
} from './quarantine-sql.ts';
