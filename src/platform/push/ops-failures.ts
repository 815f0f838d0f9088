import type { Db } from '../db/index.ts';
import { AppError } from '../http/index.ts';
import { traceIdOf } from '../observability/tracing.ts';
import type { FailureFilter, FailureSource } from '../ops/index.ts';
import type { Clock } from '../time.ts';
import { REALTIME_DISPATCH_JOB } from './dispatch.job.ts';
import { discardQuarantined, listQuarantinedMatching, requeueMatching, type ListedQuarantinedRow, type QuarantineFilter } from './quarantine-sql.ts';

/** The ops console's view of Quarantined realtime rows (seed 000): requeue (back to Pending, due now) or discard (deleted). */

const FIELDS = ['kind', 'chatId', 'targetUserId', 'messageId'] as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function quarantineFilterOf(f: FailureFilter): QuarantineFilter {
  if (f.ids?.some((id) => !UUID.test(id))) throw new AppError('OPS_INVALID_FILTER', 'ids are UUIDs', 400);
  const out: QuarantineFilter = {
    ...(f.ids ? { ids: f.ids.map((id) => id.toLowerCase()) } : {}),
    ...(f.from ? { failedFrom: f.from } : {}),
    ...(f.to ? { failedTo: f.to } : {}),
    // LastError is text ("RTO_BACKPLANE_DOWN: …", rules.ts PUSH_FAILURE): the code is its start.
    ...(f.errorCode ? { lastErrorPrefix: f.errorCode } : {}),
  };
  if (f.field === undefined || f.value === undefined) return out;
  if (f.field !== 'kind' && !UUID.test(f.value)) throw new AppError('OPS_INVALID_FILTER', `${f.field} is a UUID`, 400);
  return { ...out, [f.field]: f.field === 'kind' ? f.value : f.value.toLowerCase() };
}

const rowOf = (r: ListedQuarantinedRow) => ({
  id: r.id,
  at: r.updatedAt.toISOString(),
  errorCode: r.lastError?.split(':')[0] ?? null,
  traceId: traceIdOf(r.traceparent),
  fields: { kind: r.kind, chatId: r.chatId, targetUserId: r.targetUserId, messageId: r.messageId, attempts: r.attempts, lastError: r.lastError, createdAt: r.createdAt.toISOString() },
});

export function realtimeFailureSource(db: Db, clock: Clock): FailureSource {
  return {
    kind: 'realtime-quarantined',
    worker: REALTIME_DISPATCH_JOB,
    title: 'Quarantined realtime rows (push.realtime_outbox)',
    alert: 'MessengerRealtimeQuarantined',
    fields: FIELDS,
    actions: ['requeue', 'discard'],
    list: async (f, limit, after) => (await listQuarantinedMatching(db, quarantineFilterOf(f), limit, after)).map(rowOf),
    count: async (f) => (await requeueMatching(db, quarantineFilterOf(f), 0, clock.now(), true)).matched,
    act: async (action, f, limit) =>
      action === 'discard' ? discardQuarantined(db, quarantineFilterOf(f), limit) : (await requeueMatching(db, quarantineFilterOf(f), limit, clock.now(), false)).requeued,
  };
}
