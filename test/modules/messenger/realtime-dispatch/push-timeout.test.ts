import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp } from '../support/app.ts';
import { outboxRow } from '../support/dispatch.ts';
import { startTcpProxy } from '../../../support/tcp-proxy.ts';
import { waitFor } from '../../../support/wait.ts';

const sharedRedis = process.env.REDIS_URL;
if (!sharedRedis) throw new Error('REDIS_URL is unset: run the tests with `npm test` (scripts/services.sh starts Redis)');

/** The messenger with its backplane reaching Redis through a proxy the test can hang; bob connected, in a chat with alice. */
async function setup(t: TestContext, env: Record<string, string>, timeouts: { realtimePushTimeoutMs: number; redisCommandTimeoutMs: number }) {
  const proxy = await startTcpProxy(Number(new URL(sharedRedis!).port));
  const m = await messengerApp({ REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: `redis://127.0.0.1:${proxy.port}`, ...env }, {}, { ...timeouts, dispatchBackoffJitter: 0 });
  // Before the app's own close: its presence writes must reach Redis.
  t.after(() => proxy.restore());
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  // A short MaxRunDuration may release part of the chat's own rows under load: dispatch until none is left.
  const left = async () => (await m.pool.query(`select 1 from push.realtime_outbox where status = 'Pending'`)).rowCount ?? 0;
  await waitFor('the chat creation dispatched', async () => ((await m.dispatch()) && (await left())) === 0);
  const client = await m.connect(bob.token, ['message_received']);
  const send = async (body: string) => {
    const sent = await m.call<{ id: string; seq: number }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body });
    assert.equal(sent.status, 201);
    const { rows } = await m.pool.query<{ id: string }>(`select id from push.realtime_outbox where message_id = $1`, [sent.body.id]);
    return { rowId: rows[0]!.id, seq: sent.body.seq };
  };
  const seqsSeen = () => new Set(client.received.map((r) => (r.payload as { Seq: number }).Seq));
  return { m, proxy, send, seqsSeen };
}

describe('realtime pushes over a hung Redis connection', () => {
  test('a push past the push timeout is a failed attempt of its row; MaxRunDuration passing meanwhile releases the rows not pushed yet', async (t) => {
    const { m, proxy, send, seqsSeen } = await setup(
      t,
      { MESSENGER_REALTIME_MAX_RUN_DURATION: '100ms' },
      // Only the push timeout can end the hung PUBLISH.
      { redisCommandTimeoutMs: 600_000, realtimePushTimeoutMs: 300 },
    );
    proxy.hang();
    const sent = [await send('one'), await send('two'), await send('three')];

    const counts = await m.dispatch();
    assert.deepEqual([counts.claimed, counts.retried, counts.released, counts.dispatched], [3, 1, 2, 0]);
    const first = await outboxRow(m.pool, sent[0]!.rowId);
    assert.deepEqual([first.status, first.attempts], ['Pending', 1]);
    assert.match(first.last_error ?? '', /realtime push timed out after 300 ms/);
    assert.equal(first.next_attempt_at.getTime() - m.clock.now().getTime(), 2000, 'retried after the backoff');
    for (const { rowId } of sent.slice(1)) {
      const row = await outboxRow(m.pool, rowId);
      assert.deepEqual([row.status, row.attempts, row.last_error], ['Pending', 0, null], 'released: attempt given back');
      assert.ok(row.next_attempt_at.getTime() <= m.clock.now().getTime(), 'released: claimable at once');
    }

    proxy.restore();
    assert.equal((await m.dispatch()).dispatched, 2, 'the released rows go out at the next run');
    m.clock.advance(2000);
    assert.equal((await m.dispatch()).dispatched, 1, 'the timed-out row after its backoff');
    await waitFor('every message at the client', () => sent.every((s) => seqsSeen().has(s.seq)));
  });

  test('the Redis command timeout ends a hung PUBLISH: the row is retried, the run returns', async (t) => {
    const { m, proxy, send, seqsSeen } = await setup(t, {}, { redisCommandTimeoutMs: 200, realtimePushTimeoutMs: 600_000 });
    proxy.hang();
    const sent = await send('hung');
    const counts = await m.dispatch();
    assert.deepEqual([counts.claimed, counts.retried], [1, 1]);
    const row = await outboxRow(m.pool, sent.rowId);
    assert.deepEqual([row.status, row.attempts], ['Pending', 1]);
    assert.match(row.last_error ?? '', /Command timed out/);

    proxy.restore();
    m.clock.advance(2000);
    assert.equal((await m.dispatch()).dispatched, 1);
    await waitFor('the message at the client', () => seqsSeen().has(sent.seq));
  });
});
