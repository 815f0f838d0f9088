import { Value } from '@sinclair/typebox/value';
import { AppError } from '../../../platform/http/index.ts';
import { traceIdOf } from '../../../platform/observability/index.ts';
import type { FailureFilter, FailureSource } from '../../../platform/ops/index.ts';
import { Uuid } from '../../../platform/types/index.ts';
import type { NotificationsContext } from '../context.ts';
import { CHANNELS, RETRY_WORKER_JOB, type Channel } from '../model.ts';
import { reopen } from './reopen.ts';
import { countTerminal, listTerminal, type TerminalFilter, type TerminalRow } from './sql.ts';

/**
 * The ops console's view of terminal Failed notifications (seed 004, runbook
 * NotificationsTerminalFailures): listed and filtered like the reprocess call's rows, and `retry`
 * is that call's reopen (a new DeliveryCycle, Attempts 0, due now, with its status frame). No
 * discard: a terminal notification is already final (it stays in the user's feed and history), so
 * there is nothing to throw away.
 */

const FIELDS = ['channel', 'recipientUserId', 'correlationId'] as const;

function terminalFilterOf(f: FailureFilter): TerminalFilter {
  if (f.ids?.some((id) => !Value.Check(Uuid, id))) throw new AppError('OPS_INVALID_FILTER', 'ids are UUIDs', 400);
  const out: TerminalFilter = {
    ...(f.ids ? { ids: f.ids.map((id) => id.toLowerCase()) } : {}),
    ...(f.from ? { failedFrom: f.from } : {}),
    ...(f.to ? { failedBefore: f.to } : {}),
    // LastError holds the code itself (NTF_PROVIDER_TRANSIENT, …).
    ...(f.errorCode ? { errorCode: f.errorCode } : {}),
  };
  if (f.field === undefined || f.value === undefined) return out;
  if (f.field === 'channel') {
    if (!(CHANNELS as readonly string[]).includes(f.value)) throw new AppError('OPS_INVALID_FILTER', `channel is one of ${CHANNELS.join(', ')}`, 400);
    return { ...out, channel: f.value as Channel };
  }
  if (f.field === 'recipientUserId') {
    if (!Value.Check(Uuid, f.value)) throw new AppError('OPS_INVALID_FILTER', 'recipientUserId is a UUID', 400);
    return { ...out, recipientUserId: f.value.toLowerCase() };
  }
  return { ...out, correlationId: f.value };
}

const rowOf = (r: TerminalRow) => ({
  id: r.id,
  at: r.failedAt.toISOString(),
  errorCode: r.lastError,
  traceId: traceIdOf(r.traceparent),
  fields: {
    channel: r.channel,
    recipientUserId: r.recipientUserId,
    correlationId: r.correlationId,
    deliveryCycle: r.deliveryCycle,
    attempts: r.attempts,
    createdAt: r.createdAt.toISOString(),
  },
});

export function terminalFailureSource(ctx: Pick<NotificationsContext, 'db' | 'clock' | 'userFrames' | 'log'>): FailureSource {
  return {
    kind: 'notifications-terminal',
    worker: RETRY_WORKER_JOB,
    title: 'Terminal Failed notifications (notifications.notifications)',
    alert: 'NotificationsTerminalFailures',
    fields: FIELDS,
    actions: ['retry'],
    list: async (f, limit, after) => (await listTerminal(ctx.db, terminalFilterOf(f), limit, after)).map(rowOf),
    count: (f) => countTerminal(ctx.db, terminalFilterOf(f)),
    act: async (_action, f, limit, actor) => {
      const rows = await reopen(ctx, terminalFilterOf(f), limit);
      if (rows.length > 0) ctx.log.info({ actor, reprocessed: rows.length, via: 'ops' }, 'terminal notifications reprocessed');
      return rows.length;
    },
  };
}
