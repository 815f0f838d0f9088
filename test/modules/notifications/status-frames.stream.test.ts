import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { REALTIME_RETENTION_JOB } from '../../../src/platform/push/retention.job.ts';
import { connectClient, type TestClient } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';
import { insertReplicaUser } from '../messenger/support/app.ts';
import { MINUTE, notificationsWorld, notify, seedFailed, setChannel, stored, type NtfApp } from './support.ts';
import { PUSH_DEFAULTS } from '../../../src/platform/push/index.ts';

/**
 * notification_status_changed frames are part of the user's resumable event stream: each is pushed
 * with a Cursor by the messenger's realtime dispatcher (they share its outbox), and a client that
 * was away replays them with GET /api/events?after=<cursor>, in push order among the
 * messenger's own frames; a user only ever reads their own notifications' frames; retention trims
 * them as it trims the rest.
 */

const w = await notificationsWorld();
const a = w.main;
await a.app.listen({ host: '127.0.0.1', port: 0 });
const hubUrl = `http://127.0.0.1:${(a.app.server.address() as { port: number }).port}/hubs/messenger`;
await setChannel(a, 'Sms', { maxAttempts: 5, retryBackoff: { kind: 'Fixed', delaySeconds: 60 } });

/** The frames that are part of the stream (notification_created is a live-only push). */
const STREAMED = ['notification_status_changed', 'message_received', 'chat_updated'];

type Payload = Record<string, unknown>;
type Event = { cursor: string; name: string; payload: Payload };

async function user() {
  const u = await insertReplicaUser(a.pool);
  return { ...u, token: await a.userToken(u.id) };
}

async function api<T>(token: string, method: 'GET' | 'POST', url: string, payload?: object): Promise<{ status: number; body: T }> {
  const res = await a.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as T };
}

async function head(token: string): Promise<string> {
  const res = await api<{ next: string }>(token, 'GET', '/api/events');
  assert.equal(res.status, 200);
  return res.body.next;
}

/** Every event after the cursor, page by page. */
async function eventsAfter(token: string, after: string): Promise<Event[]> {
  const out: Event[] = [];
  for (let cursor = after; ; ) {
    const res = await api<{ events: Event[]; next: string }>(token, 'GET', `/api/events?after=${cursor}&limit=2`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    if (res.body.events.length === 0) return out;
    out.push(...res.body.events);
    cursor = res.body.next;
  }
}

const framesOf = (c: TestClient) => c.received.map((r) => ({ name: r.event, payload: r.payload as Payload }));

/** Marks an in-app notification read (a NotificationStatusChanged with ReadAt) and pushes it. */
async function readOne(app: NtfApp, userId: string, token: string): Promise<string> {
  const inApp = (await notify(app, { recipientUserId: userId })).byChannel.get('InApp')!;
  await app.runDispatch();
  // Delivered (Sent) since it was created: read at the version it has now.
  const read = await api(token, 'POST', `/api/notifications/${inApp.id}/read`, { version: (await stored(app.pool, inApp.id)).version });
  assert.equal(read.status, 200, JSON.stringify(read.body));
  await app.runStatusEvents();
  return inApp.id;
}

describe('notification_status_changed in the per-user event stream', () => {
  test('a status frame is pushed with its Cursor; after a disconnect the missed status frames replay in push order among the messenger’s frames, as the device that stayed online got them', async () => {
    const [alice, bob] = [await user(), await user()];
    const start = await head(alice.token);
    const phone = await connectClient(hubUrl, alice.token, { events: STREAMED });
    const laptop = await connectClient(hubUrl, alice.token, { events: STREAMED });

    const readId = await readOne(a, alice.id, alice.token);
    await waitFor('the read frame on the laptop', () => framesOf(laptop).some((f) => f.payload.NotificationId === readId));
    const live = framesOf(laptop).find((f) => f.payload.NotificationId === readId)!;
    assert.equal(live.name, 'notification_status_changed');
    assert.equal(typeof live.payload.Cursor, 'string', 'the hub’s frame carries Cursor like the messenger’s frames');
    const [streamed] = await eventsAfter(alice.token, start);
    assert.deepEqual(streamed, { cursor: live.payload.Cursor, name: live.name, payload: live.payload }, 'the stream holds the frame as pushed');

    // The laptop goes away; chat traffic and an SMS's Failed → Sent happen, pushed one by one.
    await laptop.connection.stop();
    const lastSeen = live.payload.Cursor as string;
    const chat = await api<{ id: string }>(bob.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Viewing', memberUserIds: [alice.id] });
    assert.equal(chat.status, 201, JSON.stringify(chat.body));
    await a.runStatusEvents();
    const sms = await seedFailed(a.pool, { channel: 'Sms', address: '+79990004455', dueAt: new Date(a.clock.now().getTime() - MINUTE), userId: alice.id });
    w.http.failNext(1, { status: 503 });
    assert.equal((await a.runRetry()).counts.retried, 1);
    await a.runStatusEvents();
    assert.equal((await api(bob.token, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, { kind: 'Text', body: 'tomorrow at 10?' })).status, 201);
    await a.runStatusEvents();
    a.clock.advance(MINUTE + 1000);
    assert.equal((await a.runRetry()).counts.sent, 1);
    await a.runStatusEvents();

    await waitFor('the phone got the SMS Sent', () => framesOf(phone).some((f) => f.payload.NotificationId === sms && f.payload.Status === 'Sent'));
    const missed = await eventsAfter(alice.token, lastSeen);
    const phoneFrames = framesOf(phone);
    const sinceLastSeen = phoneFrames.slice(phoneFrames.findIndex((f) => f.payload.Cursor === lastSeen) + 1);
    assert.deepEqual(
      missed.map((e) => ({ name: e.name, payload: e.payload })),
      sinceLastSeen,
      'the replay is what the online device received, in the same order',
    );
    assert.deepEqual(
      missed.filter((e) => e.name !== 'chat_updated').map((e) => [e.name, e.payload.Status ?? null]),
      [
        ['notification_status_changed', 'Failed'],
        ['message_received', null],
        ['notification_status_changed', 'Sent'],
      ],
      'status frames interleave with the messenger’s frames in push order',
    );
    assert.ok(missed.every((e) => e.cursor === e.payload.Cursor));
  });

  test('a user’s stream and hub hold only their own notifications’ status frames', async () => {
    const [alice, carol] = [await user(), await user()];
    const [aliceStart, carolStart] = [await head(alice.token), await head(carol.token)];
    const aliceClient = await connectClient(hubUrl, alice.token, { events: STREAMED });
    const alicesId = await readOne(a, alice.id, alice.token);
    const carolsId = await readOne(a, carol.id, carol.token);
    await waitFor('alice’s own frame', () => framesOf(aliceClient).some((f) => f.payload.NotificationId === alicesId));

    const ids = (events: Event[]) => events.filter((e) => e.name === 'notification_status_changed').map((e) => e.payload.NotificationId);
    assert.deepEqual(ids(await eventsAfter(alice.token, aliceStart)), [alicesId]);
    assert.deepEqual(ids(await eventsAfter(carol.token, carolStart)), [carolsId]);
    // Even from a cursor taken from someone else's frames, the reader gets only their own.
    assert.deepEqual(ids(await eventsAfter(carol.token, aliceStart)), [carolsId]);
    assert.ok(!framesOf(aliceClient).some((f) => f.payload.NotificationId === carolsId), 'carol’s frame never reaches alice');
  });

  // Last: it moves the app's clock past the stream's retention.
  test('retention trims status frames like the rest: a cursor before the trim answers 410, a newer one resumes', async () => {
    const alice = await user();
    const start = await head(alice.token);
    const oldId = await readOne(a, alice.id, alice.token);
    const [old] = await eventsAfter(alice.token, start);
    assert.equal(old?.payload.NotificationId, oldId);

    a.clock.advance(PUSH_DEFAULTS.eventsRetentionMs + 3_600_000);
    const newId = await readOne(a, alice.id, alice.token);
    const run = await a.app.platform.runner.runNow(REALTIME_RETENTION_JOB);
    assert.equal(run.outcome, 'success');
    assert.ok(run.counts.eventsDeleted! >= 1);

    const expired = await api<{ code: string }>(alice.token, 'GET', `/api/events?after=${start}`);
    assert.deepEqual([expired.status, expired.body.code], [410, 'MSG_EVENTS_CURSOR_EXPIRED']);
    assert.deepEqual((await eventsAfter(alice.token, old!.cursor)).map((e) => e.payload.NotificationId), [newId]);
  });
});
