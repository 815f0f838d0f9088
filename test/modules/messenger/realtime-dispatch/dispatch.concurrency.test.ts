import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createDb } from '../../../../src/platform/db/index.ts';
import { createJobRunner } from '../../../../src/platform/jobs/index.ts';
import { lockKeyOf } from '../../../../src/platform/jobs/schedule.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { newId } from '../../../../src/platform/time.ts';
import { REALTIME_DISPATCH_JOB } from '../../../../src/platform/push/index.ts';
import { realtimeRetentionJob } from '../../../../src/platform/push/retention.job.ts';
import { enqueueRealtime } from '../../../../src/modules/messenger/model/push-rows.ts';
import { requeueQuarantined } from '../../../../src/platform/push/quarantine-sql.ts';
import { connectClient, tokenFor } from '../../../support/signalr.ts';
import { T0, dispatchEnv, gate, insertChat, insertMessage, insertOutbox, outboxRow, uid, type DispatchEnv } from '../support/dispatch.ts';
import { waitFor } from '../../../support/wait.ts';
import { messengerPush } from '../support/push.ts';

/** `n` MessageReceived rows (with their messages) in one chat. */
async function messageRows(env: DispatchEnv, n: number): Promise<{ chatId: string; rowIds: string[]; messageIds: string[] }> {
  const chatId = await insertChat(env.pool, [uid()], { lastSeq: n });
  const rowIds: string[] = [];
  const messageIds: string[] = [];
  for (let seq = 1; seq <= n; seq++) {
    const messageId = await insertMessage(env.pool, chatId, seq, uid());
    messageIds.push(messageId);
    rowIds.push(await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq }));
  }
  return { chatId, rowIds, messageIds };
}

/** Makes the env's hub wait at `g` before each send. */
function holdSends(env: DispatchEnv, g: { wait: Promise<void> }): void {
  const real = env.hubRef.current;
  env.hubRef.current = { ...real, send: async (...args) => (await g.wait, real.send(...args)) };
}

function runner(env: DispatchEnv) {
  const r = createJobRunner({ db: env.database.db, databaseUrl: env.database.url, log: createLogger('silent'), registry: new Registry() });
  return r;
}

describe('RealtimeDispatchJob: parallel instances, cancellation, RowVersion, retention, wake', () => {
  test('parallel instances: the job:scheduled:messenger-realtime-dispatch lock admits one runner; the other skips', async (t) => {
    const env = await dispatchEnv();
    const g = gate();
    holdSends(env, g);
    const { rowIds } = await messageRows(env, 1);
    const [a, b] = [runner(env), runner(env)];
    t.after(() => Promise.all([a.stop(), b.stop()]));
    const job = env.newDispatcher({ pollingIntervalMs: 60_000 });
    assert.equal(lockKeyOf(job.name), 'job:scheduled:messenger-realtime-dispatch');
    assert.equal(job.wakeChannel, 'realtime_outbox');
    a.register(job);
    b.register(env.newDispatcher({ pollingIntervalMs: 60_000 }));

    const first = a.runNow(REALTIME_DISPATCH_JOB);
    await waitFor('runner a to claim the row', async () => (await outboxRow(env.pool, rowIds[0]!)).attempts === 1);
    const probe = await env.pool.query<{ locked: boolean }>(`select pg_try_advisory_lock(hashtext($1)) as locked`, ['job:scheduled:messenger-realtime-dispatch']);
    assert.equal(probe.rows[0]!.locked, false, 'the lock is held under its seed key');
    const second = await b.runNow(REALTIME_DISPATCH_JOB);
    assert.equal(second.outcome, 'skipped');
    assert.equal(second.skipReason, 'lock_busy');
    g.open();
    assert.equal((await first).outcome, 'success');
    assert.equal((await outboxRow(env.pool, rowIds[0]!)).status, 'Done');
    assert.equal(env.sends.length, 1);
    await Promise.all([a.stop(), b.stop()]);
  });

  test('FOR UPDATE SKIP LOCKED: rows another runner holds are skipped, and two runners at once never claim a row twice', async () => {
    const env = await dispatchEnv();
    const { messageIds } = await messageRows(env, 30);
    const holder = new pg.Client({ connectionString: env.database.url });
    await holder.connect();
    try {
      await holder.query('begin');
      const held = await holder.query(`select id from push.realtime_outbox where status = 'Pending' order by id limit 5 for update`);
      assert.equal(held.rows.length, 5);
      const counts = await env.run();
      assert.equal(counts.claimed, 25, 'the 5 locked rows are skipped, not waited for');
      await holder.query('rollback');
    } finally {
      await holder.end();
    }
    assert.equal((await env.run()).claimed, 5);

    // Failover overlap: two dispatchers in small batches over the same rows, at the same time.
    const more = await messageRows(env, 40);
    const [x, y] = [env.newDispatcher({ batchSize: 3 }), env.newDispatcher({ batchSize: 3 })];
    const [cx, cy] = await Promise.all([x.runOnce(env.ctx()), y.runOnce(env.ctx())]);
    assert.equal(cx.claimed + cy.claimed, 40);
    const pushed = env.sends.map((s) => s.payload.MessageId as string);
    for (const id of [...messageIds, ...more.messageIds]) assert.equal(pushed.filter((p) => p === id).length, 1, `message ${id} pushed once`);
  });

  test('cancellation: a stop between rows ends the run gracefully; pushed rows are Done, the rest go back claimable with their attempt returned', async () => {
    const env = await dispatchEnv();
    const { rowIds } = await messageRows(env, 5);
    const stop = new AbortController();
    const real = env.hubRef.current;
    let sent = 0;
    env.hubRef.current = { ...real, send: async (...args) => { await real.send(...args); if (++sent === 2) stop.abort(); } };
    const counts = await env.run(stop.signal);
    assert.deepEqual(counts, { batches: 1, claimed: 5, failed: 0, dispatched: 2, retried: 0, quarantined: 0, released: 3, overtaken: 0 });
    const rows = await Promise.all(rowIds.map((id) => outboxRow(env.pool, id)));
    assert.deepEqual(rows.map((r) => r.status), ['Done', 'Done', 'Pending', 'Pending', 'Pending']);
    for (const r of rows.slice(2)) {
      assert.equal(r.attempts, 0);
      assert.equal(r.next_attempt_at.getTime(), T0.getTime(), 'claimable at once by the next runner');
    }
    assert.equal((await env.run()).dispatched, 3);
  });

  test("RowVersion: a late outcome never overwrites a runbook requeue or another runner's claim", async () => {
    const env = await dispatchEnv();
    const g = gate();
    holdSends(env, g);
    const { rowIds } = await messageRows(env, 2);
    const [requeued, reclaimed] = rowIds as [string, string];
    const run = env.run();
    await waitFor('the claim', async () => (await outboxRow(env.pool, requeued)).attempts === 1);
    // While the push is in flight: one row is quarantined and requeued by on-call, the other is
    // claimed again by a runner that took over after the backoff.
    await env.pool.query(`update push.realtime_outbox set status = 'Quarantined', row_version = row_version + 1 where id = $1`, [requeued]);
    assert.equal(await requeueQuarantined(env.db, [requeued], T0), 1);
    await env.pool.query(
      `update push.realtime_outbox set attempts = 2, next_attempt_at = $2, row_version = row_version + 1 where id = $1`,
      [reclaimed, new Date(T0.getTime() + 4000)],
    );
    g.open();
    const counts = await run;
    assert.equal(counts.overtaken, 2);
    assert.equal(counts.dispatched, 0);
    const [r1, r2] = await Promise.all([outboxRow(env.pool, requeued), outboxRow(env.pool, reclaimed)]);
    assert.deepEqual([r1.status, r1.attempts], ['Pending', 0], 'the requeue stands');
    assert.deepEqual([r2.status, r2.attempts, r2.next_attempt_at.getTime()], ['Pending', 2, T0.getTime() + 4000], "the other runner's claim stands");
  });

  test('retention deletes Done rows older than RetentionDone, in batches, and keeps everything else', async () => {
    const env = await dispatchEnv();
    const chatId = await insertChat(env.pool, [uid()]);
    const old = new Date(T0.getTime() - 25 * 3_600_000);
    const oldDone = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Done', createdAt: old });
    const newDone = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Done', createdAt: new Date(T0.getTime() - 3_600_000) });
    const oldPending = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), createdAt: old });
    const oldQuarantined = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', createdAt: old });
    const result = await realtimeRetentionJob(env.db, { retentionMs: 24 * 3_600_000, eventsRetentionMs: 168 * 3_600_000, cron: '23 * * * *', batchSize: 5000, maxRunMs: 300_000 }).runOnce(env.ctx({ now: () => T0 }));
    assert.deepEqual(result, { batches: 1, claimed: 1, failed: 0, released: 0, deleted: 1, eventsDeleted: 0 });
    const { rows } = await env.pool.query<{ id: string }>(`select id from push.realtime_outbox`);
    assert.deepEqual(new Set(rows.map((r) => r.id)), new Set([newDone, oldPending, oldQuarantined]));
    assert.ok(!rows.some((r) => r.id === oldDone));
  });

  test('a committed row wakes the dispatcher through NOTIFY realtime_outbox, long before the next poll', async (t) => {
    const env = await dispatchEnv();
    const alice = uid();
    const chatId = await insertChat(env.pool, [alice], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, alice);
    const client = await connectClient(env.hubApp.url, await tokenFor(alice), { events: ['message_received'] });
    const r = runner(env);
    t.after(() => r.stop());
    // The dispatcher reads the runner's time; rows are due at their commit time.
    r.register(env.newDispatcher({ pollingIntervalMs: 3_600_000 }));
    await r.start();
    await createDb(env.pool).transaction((tx) => enqueueRealtime(messengerPush(), tx, [{ kind: 'MessageReceived', targetKind: 'ChatGroup', chatId, messageId, seq: 1 }], T0));
    await waitFor('the woken dispatcher to push the row', () => client.received.length === 1);
    // Before the database is dropped (hooks run in registration order): a dropped LISTEN
    // connection would keep reconnecting for a minute.
    await r.stop();
  });
});
