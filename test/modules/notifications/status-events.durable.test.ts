import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../../src/platform/time.ts';
import { startPrivateRedis } from '../../support/redis.ts';
import { connectClient, type TestClient } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';
import { crashBetweenAcceptanceAndCommit } from './delivery/fixtures/crash.ts';
import { MINUTE, notificationsWorld, notify, postReceipt, seedFailed, setChannel, stored } from './support.ts';

/**
 * NotificationStatusChanged is durable: each frame is stored in the transaction of the change it
 * announces (a NotificationStatusChanged row of push.realtime_outbox) and pushed by the
 * single-runner realtime dispatcher. A backplane (Redis) outage delays frames, a SIGKILLed worker
 * loses none: they arrive after recovery, in order.
 */
const redis = await startPrivateRedis();
const w = await notificationsWorld({ REALTIME_BACKPLANE_ENABLED: 'true', REDIS_URL: redis.url }, { tuning: { redisCommandTimeoutMs: 500 } });
const a = w.main;
await a.app.listen({ host: '127.0.0.1', port: 0 });
const hubUrl = `http://127.0.0.1:${(a.app.server.address() as { port: number }).port}/hubs/messenger`;
await setChannel(a, 'Sms', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });
const leaseMs = a.tuning.claimLeaseMs;

type Frame = Record<string, unknown>;
const framesOf = (c: TestClient, id: string): Frame[] =>
  c.received.filter((r) => r.event === 'notification_status_changed' && (r.payload as Frame).NotificationId === id).map((r) => r.payload as Frame);
/** The frames stored for a notification, in outbox order; `status` narrows to Pending (not pushed yet) or Done. */
const storedFrames = async (id: string, status?: 'Pending' | 'Done') =>
  (
    await a.pool.query<{ frame: Frame }>(
      `select payload as frame from push.realtime_outbox
        where kind = 'NotificationStatusChanged' and payload->>'NotificationId' = $1 and ($2::text is null or status = $2) order by id`,
      [id, status ?? null],
    )
  ).rows.map((r) => r.frame);
/** Past the realtime outbox's longest retry delay (MESSENGER_REALTIME_BACKOFF_CAP plus jitter): every refused row is due again. */
const PAST_BACKOFF_MS = 3 * MINUTE;

describe('durable notification_status_changed', () => {
  test('a worker SIGKILLed before its commit stores no frame (nothing happened); the recovery that commits Sent announces it once', async () => {
    const userId = newId();
    a.clock.set(new Date());
    const id = await seedFailed(a.pool, { channel: 'Sms', address: '+79990007788', dueAt: new Date(Date.now() - MINUTE), userId });
    await crashBetweenAcceptanceAndCommit(w, 'retry', id, w.http.hold());
    assert.equal((await stored(a.pool, id)).status, 'Failed');
    assert.deepEqual(await storedFrames(id), [], 'the change and its frame commit together or not at all');

    a.clock.set(new Date(Date.now() + leaseMs + 1000));
    // Connected after the clock jump (the hub's liveness checks run on the app's clock).
    const client = await connectClient(hubUrl, await a.userToken(userId), { events: ['notification_status_changed'] });
    await a.runRetry();
    assert.equal((await stored(a.pool, id)).status, 'Sent');
    assert.equal((await storedFrames(id)).length, 1, 'stored with the Sent it announces');
    await waitFor('the Sent frame', async () => {
      await a.runStatusEvents();
      return framesOf(client, id).length === 1;
    });
    assert.equal(framesOf(client, id)[0]!.Status, 'Sent');
    assert.equal(framesOf(client, id)[0]!.Version, (await stored(a.pool, id)).version);
  });
  // Last: a redis-server restarted inside a test is stopped when that test ends (test/support/redis.ts).
  test('a Redis outage: frames of a retriable Failed, a webhook reopen and a read are stored with their changes, kept while the hub refuses, delivered in order after recovery', async () => {
    const userId = newId();
    const client = await connectClient(hubUrl, await a.userToken(userId), { events: ['notification_status_changed'] });
    const smsId = await seedFailed(a.pool, { channel: 'Sms', address: '+79990005566', dueAt: new Date(a.clock.now().getTime() - MINUTE), userId });
    const { byChannel } = await notify(a, { recipientUserId: userId });
    const inApp = byChannel.get('InApp')!;

    await redis.kill();
    try {
      w.http.failNext(1, { status: 503 });
      assert.equal((await a.runRetry()).counts.retried, 1, 'Failed, to be retried');
      a.clock.advance(MINUTE + 1000);
      assert.equal((await a.runRetry()).counts.sent, 1, 'Failed → Sent');
      const reopened = await postReceipt(a, 'http-sms', { clientReference: `${smsId}:1`, status: 'failed' });
      assert.equal(reopened.json().result, 'reopened', 'Sent → Failed in cycle 2 by the webhook');
      const read = await a.app.inject({
        method: 'POST',
        url: `/api/notifications/${inApp.id}/read`,
        headers: { authorization: `Bearer ${await a.userToken(userId)}` },
        payload: { version: inApp.version },
      });
      assert.equal(read.statusCode, 200, read.body);

      // Each change stored its frame in its own transaction.
      const sms = await storedFrames(smsId);
      assert.deepEqual(
        sms.map((f) => [f.Status, f.Terminal, f.DeliveryCycle, f.ErrorCode]),
        [
          ['Failed', false, 1, 'NTF_PROVIDER_TRANSIENT'],
          ['Sent', false, 1, null],
          ['Failed', false, 2, 'NTF_PROVIDER_DELIVERY_FAILED'],
        ],
      );
      assert.equal(sms.at(-1)!.Version, (await stored(a.pool, smsId)).version);
      const readFrames = await storedFrames(inApp.id);
      assert.equal(readFrames.length, 1);
      assert.equal(readFrames[0]!.ReadAt, read.json().readAt);

      // The hub refuses: nothing is lost, nothing delivered.
      const during = await a.runStatusEvents();
      assert.equal(during.counts.dispatched, 0);
      assert.equal((await storedFrames(smsId, 'Pending')).length, 3, 'kept while the backplane is down');
      assert.equal(framesOf(client, smsId).length, 0);
    } finally {
      await redis.restart();
    }
    // Each poll below advances the app clock past the backoff, so a dispatch tried before the
    // backplane has reconnected spends an attempt: polled fast enough, that quarantines the rows.
    await waitFor('the backplane to reconnect', async () => (await a.app.platform.hub.health()) === 'ok', 15_000);

    let lastRun: unknown;
    await waitFor(
      'every frame after recovery',
      async () => {
        // The refused rows wait out their backoff on the app's (manual) clock.
        a.clock.advance(PAST_BACKOFF_MS);
        lastRun = (await a.runStatusEvents()).counts;
        return framesOf(client, smsId).length >= 3 && framesOf(client, inApp.id).length >= 1;
      },
      30_000,
    ).catch(async (err: unknown) => {
      // Failed once in a full run (not alone): say whether the client was still connected and where the rows stood.
      const rows = await a.pool.query(
        `select payload->>'NotificationId' as notification_id, status, attempts, next_attempt_at, last_error from push.realtime_outbox
          where kind = 'NotificationStatusChanged' and payload->>'NotificationId' = any($1) order by created_at, id`,
        [[smsId, inApp.id]],
      );
      const seen = { sms: framesOf(client, smsId).length, inApp: framesOf(client, inApp.id).length };
      const state = { connection: client.connection.state, closed: client.closed, closedWith: client.closedWith?.message, seen, lastRun, appClock: a.clock.now() };
      throw new Error(`${(err as Error).message}\n${JSON.stringify(state)}\n${JSON.stringify(rows.rows)}`, { cause: err });
    });
    assert.deepEqual(
      framesOf(client, smsId).map((f) => [f.Status, f.DeliveryCycle]),
      [
        ['Failed', 1],
        ['Sent', 1],
        ['Failed', 2],
      ],
      'in the order of the changes, each once',
    );
    assert.equal(framesOf(client, inApp.id).length, 1);
    assert.deepEqual(await storedFrames(smsId, 'Pending'), [], 'every delivered frame is Done: none is pushed again');
    // Each carries its place in the user's event stream.
    assert.ok(framesOf(client, smsId).every((f) => typeof f.Cursor === 'string'));
  });

});
