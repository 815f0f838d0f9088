import { Value } from '@sinclair/typebox/value';
import { AppError } from '../../../platform/http/index.ts';
import { traceIdOf } from '../../../platform/observability/index.ts';
import type { FailureFilter, FailureSource } from '../../../platform/ops/index.ts';
import { Uuid } from '../../../platform/types/index.ts';
import type { IdentityContext } from '../context.ts';
import { ACCESS_FANOUT_JOB } from './access-fanout.job.ts';
import { countFailedTasks, listFailedTasks, replayFailedTasks, type FailedTask, type FailedTaskFilter } from './failed-tasks-sql.ts';

/**
 * The ops console's view of Failed access fan-out tasks (seed 003: a task whose pages failed
 * MaxAttempts times, runbook IdentityAccessFanoutTasksFailed). `retry` is the runbook's replay:
 * Pending, AttemptCount 0, resumed from its Cursor. A page that failed on a task still within its
 * attempts is retried by the worker itself after the retry backoff, so it is not listed here.
 */

const FIELDS = ['roleId', 'companyId', 'parentId'] as const;

function failedFilterOf(f: FailureFilter): FailedTaskFilter {
  if (f.ids?.some((id) => !Value.Check(Uuid, id))) throw new AppError('OPS_INVALID_FILTER', 'ids are UUIDs', 400);
  const out: FailedTaskFilter = {
    ...(f.ids ? { ids: f.ids.map((id) => id.toLowerCase()) } : {}),
    ...(f.from ? { failedFrom: f.from } : {}),
    ...(f.to ? { failedBefore: f.to } : {}),
    // LastError is the failed page's error text: the code (or class) is its start.
    ...(f.errorCode ? { lastErrorPrefix: f.errorCode } : {}),
  };
  if (f.field === undefined || f.value === undefined) return out;
  if (!Value.Check(Uuid, f.value)) throw new AppError('OPS_INVALID_FILTER', `${f.field} is a UUID`, 400);
  return { ...out, [f.field]: f.value.toLowerCase() };
}

const rowOf = (t: FailedTask) => ({
  id: t.id,
  at: t.updatedAt.toISOString(),
  errorCode: t.lastError?.split(':')[0] ?? null,
  traceId: traceIdOf(t.traceparent),
  fields: {
    roleId: t.roleId,
    companyId: t.companyId,
    parentId: t.parentId,
    roleVersion: t.roleVersion,
    cursor: t.cursor,
    processedCount: t.processedCount,
    attemptCount: t.attemptCount,
    lastError: t.lastError,
    createdAt: t.createdAt.toISOString(),
  },
});

export function failedFanOutSource(ctx: Pick<IdentityContext, 'db' | 'clock' | 'log'>): FailureSource {
  return {
    kind: 'identity-fanout-failed',
    worker: ACCESS_FANOUT_JOB,
    title: 'Failed access fan-out tasks (identity.access_fanout_tasks)',
    alert: 'IdentityAccessFanoutTasksFailed',
    fields: FIELDS,
    actions: ['retry'],
    list: async (f, limit, after) => (await listFailedTasks(ctx.db, failedFilterOf(f), limit, after)).map(rowOf),
    count: (f) => countFailedTasks(ctx.db, failedFilterOf(f)),
    act: async (_action, f, limit, actor) => {
      const tasks = await ctx.db.transaction((tx) => replayFailedTasks(tx, failedFilterOf(f), limit, ctx.clock.now()));
      if (tasks.length > 0) ctx.log.info({ actor, taskIds: tasks.map((t) => t.id), via: 'ops' }, 'access fan-out tasks replayed');
      return tasks.length;
    },
  };
}
