import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../src/platform/time.ts';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { insertChat, insertOutbox, uid } from '../../modules/messenger/support/dispatch.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The failures API a page at a time (an opaque keyset cursor, a stable order while rows come and
 * go), one row's detail, and an action on named rows (a row, or the rows ticked in the console).
 */

const m = await messengerApp({}, {}, { opsBulkChunk: 50, opsBulkPauseMs: 20 });
const operator = await m.token({ admin: true });
const chatId = await insertChat(m.pool, [uid()]);
const KIND = '/api/ops/failures/realtime-quarantined';
type Page = { total: number; items: { id: string; errorCode: string | null }[]; next: string | null };

async function quarantined(n: number, lastError = 'RTO_BACKPLANE_DOWN: Error: Connection is closed.'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await insertOutbox(m.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 }));
  await m.pool.query(`update push.realtime_outbox set last_error = $2 where id = any($1::uuid[])`, [ids, lastError]);
  return ids;
}

test('pages: every row once, in a stable order, with the total; a row added meanwhile does not shift the pages; a forged cursor is 400', async () => {
  await m.pool.query(`delete from push.realtime_outbox`);
  // Same time for all (ties broken by id), as a batch quarantined in one statement has.
  const ids = (await quarantined(5)).sort();
  const first = await m.call<Page>(operator, 'GET', `${KIND}?limit=2`);
  assert.equal(first.status, 200);
  assert.deepEqual([first.body.total, first.body.items.map((r) => r.id)], [5, ids.slice(0, 2)]);
  assert.ok(first.body.next);
  // A row that sorts first arrives between pages: the next page is still the rows after the last one shown.
  const [early] = await quarantined(1);
  await m.pool.query(`update push.realtime_outbox set updated_at = updated_at - interval '1 hour' where id = $1`, [early]);
  const second = await m.call<Page>(operator, 'GET', `${KIND}?limit=2&after=${first.body.next}`);
  assert.deepEqual(second.body.items.map((r) => r.id), ids.slice(2, 4));
  const third = await m.call<Page>(operator, 'GET', `${KIND}?limit=2&after=${second.body.next}`);
  assert.deepEqual([third.body.items.map((r) => r.id), third.body.next], [ids.slice(4), null]);
  assert.equal(third.body.items[0]!.errorCode, 'RTO_BACKPLANE_DOWN', 'the cause code, not the first word of the error');

  for (const after of ['x', Buffer.from('[1,2]').toString('base64url'), Buffer.from('["not a time","a"]').toString('base64url')]) {
    const res = await m.call<{ code: string }>(operator, 'GET', `${KIND}?after=${after}`);
    assert.deepEqual([res.status, res.body.code], [400, 'OPS_INVALID_CURSOR'], after);
  }
  // The audit's pages take the same cursor, with an entry's UUID in it.
  const audit = await m.call<{ code: string }>(operator, 'GET', `/api/ops/audit?after=${Buffer.from(JSON.stringify([new Date().toISOString(), 'not-a-uuid'])).toString('base64url')}`);
  assert.deepEqual([audit.status, audit.body.code], [400, 'OPS_INVALID_CURSOR']);
});

test('a row\'s detail; 404 once it is no longer failed; an id of the wrong shape is 400', async () => {
  await m.pool.query(`delete from push.realtime_outbox`);
  const [id] = await quarantined(1);
  const res = await m.call<{ row: { id: string; fields: Record<string, unknown> }; kind: { runbook: string } }>(operator, 'GET', `${KIND}/rows/${id}`);
  assert.equal(res.status, 200);
  assert.deepEqual([res.body.row.id, res.body.row.fields.attempts, res.body.row.fields.lastError, res.body.kind.runbook],
    [id, 8, 'RTO_BACKPLANE_DOWN: Error: Connection is closed.', '/ops/runbooks/MessengerRealtimeQuarantined']);
  assert.deepEqual((await m.call<{ code: string }>(operator, 'GET', `${KIND}/rows/${newId()}`)).body.code, 'OPS_FAILURE_ROW_NOT_FOUND');
  const bad = await m.call<{ code: string }>(operator, 'GET', `${KIND}/rows/not-a-uuid`);
  assert.deepEqual([bad.status, bad.body.code], [400, 'OPS_INVALID_FILTER']);
});

test('an action on named rows changes only those, audited with their ids', async () => {
  await m.pool.query(`delete from push.realtime_outbox`);
  const ids = await quarantined(4);
  const picked = ids.slice(1, 3);
  const dry = await m.call<{ matched: number }>(operator, 'POST', `${KIND}/actions`, { action: 'discard', filter: { ids: picked } });
  assert.equal(dry.body.matched, 2);
  const run = await m.call<{ auditId: string }>(operator, 'POST', `${KIND}/actions`, { action: 'discard', filter: { ids: picked }, dryRun: false });
  assert.equal(run.status, 202);
  await waitFor('the discard to end', async () => (await m.call<{ status: string }>(operator, 'GET', `/api/ops/audit/${run.body.auditId}`)).body.status === 'done');
  const left = (await m.pool.query<{ id: string }>(`select id from push.realtime_outbox order by id`)).rows.map((r) => r.id);
  assert.deepEqual(left, [ids[0], ids[3]].sort());
  const audit = await m.call<{ filter: { ids: string[] } }>(operator, 'GET', `/api/ops/audit/${run.body.auditId}`);
  assert.deepEqual(audit.body.filter.ids, picked);
  const tooMany = await m.call<{ code: string }>(operator, 'POST', `${KIND}/actions`, { action: 'discard', filter: { ids: Array.from({ length: 101 }, () => newId()) } });
  assert.equal(tooMany.status, 400);
});
