/**
 * The durable push path's public surface (seed 000: persist-then-push through
 * messenger.realtime_outbox, and the per-user event stream clients resume from). A kernel part:
 * it knows no module; modules use it only through this file.
 */
export { cursorOf, positionOf } from './cursor.ts';
export { readStream, readStreamHead, streamHead, streamHorizon, trimStream, type StreamEventRow, type StreamPage } from './stream-sql.ts';
export type { PushRow } from './types.ts';
