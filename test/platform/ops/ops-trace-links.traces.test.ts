import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SpanKind } from '@opentelemetry/api';
import { startTestTracing } from '../../support/tracing.ts';
import { waitFor } from '../../support/wait.ts';
import { failedFanOutTasks, quarantinedRealtimeRows, terminalNotifications, traceWorld, TRACE_URL, type Written } from './trace-links.ts';

/**
 * With tracing on, each failed row the console lists from the database links to the trace of the
 * request that wrote it: the row keeps that request's traceparent, and the list answers its trace id
 * and OPS_TRACE_URL filled with it — for a realtime row whatever wrote it (a batched send included),
 * a notification, and a fan-out task with the sub-task split from it.
 */

const tracing = await startTestTracing();
const w = await traceWorld();

async function assertLinked(kind: string, written: Written): Promise<void> {
  const listed = new Map((await w.listed(kind)).map((r) => [r.id, r]));
  for (const [id, trace] of written) {
    // The server span of the request is the one its traceparent continued (exported as it ends).
    await waitFor(`the server span of trace ${trace}`, () => tracing.spans().some((s) => s.kind === SpanKind.SERVER && s.spanContext().traceId === trace));
    const row = listed.get(id);
    assert.ok(row, `${kind} lists ${id}`);
    assert.deepEqual({ traceId: row.traceId, traceUrl: row.traceUrl }, { traceId: trace, traceUrl: TRACE_URL.replace('{traceId}', trace) }, `${kind} ${id}`);
  }
}

test('realtime-quarantined: each row links to the trace of the request that wrote it, a batched send to its own request', async () => {
  const written = await quarantinedRealtimeRows(w);
  assert.equal(new Set(written.values()).size, 11, 'a chat, nine sends and a mark-read: one trace each');
  await assertLinked('realtime-quarantined', written);
});

test('notifications-terminal: a terminal failure links to the trace of the request that created the notification', async () => {
  await assertLinked('notifications-terminal', await terminalNotifications(w));
});

test('identity-fanout-failed: a Failed task and its sub-task link to the trace of the role change that queued the task', async () => {
  await assertLinked('identity-fanout-failed', await failedFanOutTasks(w));
});
