/**
 * The durable push path's public surface (seed 000: persist-then-push through
 * messenger.realtime_outbox, and the per-user event stream clients resume from). A kernel part:
 * it knows no module; modules use it only through this file.
 */
export { cursorOf, positionOf } from './cursor.ts';
export { readStream, readStreamHead, streamHead, streamHorizon, trimStream, type StreamEventRow, type StreamPage } from './stream-sql.ts';
export { eventNameOf, type PushRow, type UserFrame, type UserFrames } from './types.ts';
export { createPush, type KindRegistration, type Push } from './port.ts';
export { enqueueRealtime, realtimeInsert, REALTIME_OUTBOX_CHANNEL, type NewPushRow } from './outbox-sql.ts';
export { createRealtimeMetrics, realtimeStateGauges, type RealtimeMetrics } from './metrics.ts';
export { REALTIME_RETENTION_JOB, realtimeRetentionJob } from './retention.job.ts';
export {
  listQuarantined,
  requeueMatching,
  requeueQuarantined,
  type QuarantinedRow,
  type QuarantineFilter,
  type RequeueResult,
} from './quarantine-sql.ts';
