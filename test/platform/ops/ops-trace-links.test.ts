import { test } from 'node:test';
import assert from 'node:assert/strict';
import { failedFanOutTasks, quarantinedRealtimeRows, terminalNotifications, traceWorld, type Written } from './trace-links.ts';

/**
 * With tracing off (the default) no failed row stores a traceparent, even from a request that sent
 * one, so the console lists it without a trace id or link although OPS_TRACE_URL is set. With
 * tracing on: ops-trace-links.traces.test.ts.
 */

const w = await traceWorld();

async function assertUnlinked(kind: string, table: string, written: Written): Promise<void> {
  const listed = new Map((await w.listed(kind)).map((r) => [r.id, r]));
  const ids = [...written.keys()];
  assert.ok(ids.length > 0);
  for (const id of ids) assert.deepEqual(listed.get(id) && { traceId: listed.get(id)!.traceId, traceUrl: listed.get(id)!.traceUrl }, { traceId: null, traceUrl: null }, `${kind} ${id}`);
  const { rows } = await w.database.pool.query(`select traceparent from ${table} where id = any($1::uuid[])`, [ids]);
  assert.deepEqual(rows.map((r) => r.traceparent), ids.map(() => null), `${table} stores no traceparent`);
}

test('realtime-quarantined: no trace link', async () => {
  await assertUnlinked('realtime-quarantined', 'push.realtime_outbox', await quarantinedRealtimeRows(w));
});

test('notifications-terminal: no trace link', async () => {
  await assertUnlinked('notifications-terminal', 'notifications.notifications', await terminalNotifications(w));
});

test('identity-fanout-failed: no trace link', async () => {
  await assertUnlinked('identity-fanout-failed', 'identity.access_fanout_tasks', await failedFanOutTasks(w));
});
