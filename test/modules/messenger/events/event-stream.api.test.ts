import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { REALTIME_RETENTION_JOB } from '../../../../src/platform/push/retention.job.ts';
import { newId } from '../../../../src/platform/time.ts';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { ALL_EVENTS, messengerApp, type MessengerApp } from '../support/app.ts';
import { PUSH_DEFAULTS } from '../../../../src/platform/push/index.ts';

/**
 * The resumable per-user event stream: every frame pushed to a user through the realtime outbox
 * carries Cursor, and GET /api/events?after=<cursor> answers every event pushed to them
 * after it, of every kind, in order — positions in commit order, entitlement as at delivery, the
 * payload rebuilt as the dispatcher builds it (never a media join token), 410 past retention.
 */

type Event = { cursor: string; name: string; payload: Record<string, unknown> };
type Page = { events: Event[]; next: string };
type Err = { code: string };

const framesOf = (c: TestClient) => c.received.map((r) => ({ name: r.event, payload: r.payload as Record<string, unknown> }));

async function eventsAfter(m: MessengerApp, token: string, after: string | undefined, limit = 500): Promise<Page> {
  const res = await m.call<Page>(token, 'GET', `/api/events?limit=${limit}${after === undefined ? '' : `&after=${after}`}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** Every event after the cursor, following `next` page by page. */
async function allAfter(m: MessengerApp, token: string, after: string, limit = 500): Promise<Event[]> {
  const out: Event[] = [];
  for (let cursor = after; ; ) {
    const page = await eventsAfter(m, token, cursor, limit);
    if (page.events.length === 0) return out;
    out.push(...page.events);
    cursor = page.next;
  }
}

async function groupOf(m: MessengerApp, n: number) {
  const users = [];
  for (let i = 0; i < n; i++) users.push(await m.user());
  const chat = (await m.call<{ id: string }>(users[0]!.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: users.slice(1).map((u) => u.id) })).body;
  return { users, chatId: chat.id, base: `/api/messenger/chats/${chat.id}` };
}

describe('the per-user event stream (GET /api/events)', () => {
  test('every kind pushed to the user is in the stream with the same payload, and each frame’s Cursor resumes right after it', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const [alice, bob] = users as [(typeof users)[0], (typeof users)[0]];
    await m.dispatch();
    const start = (await eventsAfter(m, bob.token, undefined)).next;
    assert.deepEqual((await eventsAfter(m, bob.token, start)).events, [], 'a new client starts at the head: nothing before it');
    const client = await m.connect(bob.token, ALL_EVENTS);
    await m.call(alice.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hello' });
    assert.equal((await m.call(bob.token, 'POST', `${base}/read`, { seq: 1 })).status, 200);
    assert.equal((await m.call(alice.token, 'PATCH', base, { title: 'Renamed' })).status, 200);
    const carol = await m.user();
    assert.equal((await m.call(carol.token, 'POST', '/api/messenger/contacts/requests', { phone: bob.phone })).status, 201);
    await m.dispatch();
    const kinds = ['message_received', 'read_receipt_updated', 'chat_updated', 'contact_request_received'];
    await waitFor('every frame', () => kinds.every((k) => client.received.some((r) => r.event === k)));
    const frames = framesOf(client);
    const stream = await allAfter(m, bob.token, start);
    assert.deepEqual(
      stream.map((e) => ({ name: e.name, payload: e.payload })),
      frames,
      'the stream holds what was pushed, in the order it was pushed',
    );
    assert.ok(frames.every((f) => typeof f.payload.Cursor === 'string'), 'every frame carries Cursor');
    frames.forEach((f, i) => {
      assert.equal(f.payload.Cursor, stream[i]!.cursor);
    });
    for (let i = 0; i < frames.length; i++) {
      const rest = await allAfter(m, bob.token, frames[i]!.payload.Cursor as string);
      assert.deepEqual(rest.map((e) => e.cursor), stream.slice(i + 1).map((e) => e.cursor), `resuming after frame ${i}`);
    }
    // Small pages walk the same stream.
    assert.deepEqual((await allAfter(m, bob.token, start, 1)).map((e) => e.cursor), stream.map((e) => e.cursor));
    await client.connection.stop();
  });

  test('positions follow commit order, not outbox id order: the row with the later id commits and is pushed first, and resuming from every cursor seen returns both', async () => {
    const m = await messengerApp();
    const { users, chatId } = await groupOf(m, 2);
    const bob = users[1]!;
    await m.dispatch();
    const start = (await eventsAfter(m, bob.token, undefined)).next;
    const client = await m.connect(bob.token, ALL_EVENTS);
    const rename = async (tx: pg.Client, id: string) => {
      const eventId = newId();
      const at = m.clock.now();
      await tx.query(`insert into messenger.chat_events (id, chat_id, kind, actor_user_id, created_at) values ($1, $2, 'Renamed', $3, $4)`, [eventId, chatId, users[0]!.id, at]);
      await tx.query(
        `insert into push.realtime_outbox (id, kind, target_kind, chat_id, ref_id, next_attempt_at, created_at, updated_at)
         values ($1, 'ChatUpdated', 'ChatGroup', $2, $3, $4, $4, $4)`,
        [id, chatId, eventId, at],
      );
      return eventId;
    };
    const early = new pg.Client({ connectionString: m.database.url });
    const late = new pg.Client({ connectionString: m.database.url });
    await Promise.all([early.connect(), late.connect()]);
    try {
      const [earlyId, lateId] = [newId(), newId()];
      assert.ok(earlyId < lateId);
      await early.query('begin');
      const earlyEvent = await rename(early, earlyId);
      await late.query('begin');
      const lateEvent = await rename(late, lateId);
      await late.query('commit');
      await m.dispatch();
      await waitFor('the later id pushed', () => client.received.length === 1);
      await early.query('commit');
      await m.dispatch();
      await waitFor('the earlier id pushed', () => client.received.length === 2);
      const frames = framesOf(client);
      assert.deepEqual(frames.map((f) => f.payload.EventId), [lateEvent, earlyEvent], 'pushed in commit order');
      for (const after of [start, ...frames.map((f) => f.payload.Cursor as string)]) {
        const seen = frames.filter((f) => (f.payload.Cursor as string) !== after);
        const expected = after === start ? seen : seen.slice(frames.findIndex((f) => f.payload.Cursor === after));
        const got = (await allAfter(m, bob.token, after)).map((e) => e.payload.EventId);
        assert.deepEqual(got, expected.map((f) => f.payload.EventId), `after ${after}`);
      }
      assert.deepEqual((await allAfter(m, bob.token, frames[0]!.payload.Cursor as string)).map((e) => e.payload.EventId), [earlyEvent]);
    } finally {
      await Promise.all([early.end(), late.end()]);
    }
    await client.connection.stop();
  });

  test('a chat’s events reach a participant only while a member: nothing before the join, nothing after the removal, again after a re-add', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const owner = users[0]!;
    const carol = await m.user();
    const start = (await eventsAfter(m, carol.token, undefined)).next;
    const send = async (body: string) => {
      await m.call(owner.token, 'POST', `${base}/messages`, { kind: 'Text', body });
      await m.dispatch();
    };
    await send('before the join');
    await m.call(owner.token, 'POST', `${base}/participants`, { userIds: [carol.id] });
    await m.dispatch();
    await send('while a member');
    await m.call(owner.token, 'DELETE', `${base}/participants/${carol.id}`);
    await m.dispatch();
    await send('after the removal');
    await m.call(owner.token, 'POST', `${base}/participants`, { userIds: [carol.id] });
    await m.dispatch();
    await send('after the re-add');
    const stream = await allAfter(m, carol.token, start);
    assert.deepEqual(
      stream.filter((e) => e.name === 'message_received').map((e) => e.payload.Body),
      ['while a member', 'after the re-add'],
    );
    // Told of the removal through user:{UserId}, as live.
    assert.deepEqual(
      stream.filter((e) => e.name === 'chat_updated').map((e) => e.payload.Change),
      ['ParticipantAdded', 'ParticipantRemoved', 'ParticipantAdded'],
    );
    // A member throughout gets every message and every chat event once, none of carol's user:{UserId} ones.
    const bobs = await allAfter(m, users[1]!.token, 'e0');
    assert.equal(bobs.filter((e) => e.name === 'message_received').length, 4);
    assert.deepEqual(
      bobs.filter((e) => e.name === 'chat_updated').map((e) => e.payload.Change),
      ['Created', 'ParticipantAdded', 'ParticipantRemoved', 'ParticipantAdded'],
    );
  });

  test('a call invite is replayed without a media join token (one is minted only for the live push)', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await m.contacts(alice, bob);
    const start = (await eventsAfter(m, bob.token, undefined)).next;
    const client = await m.connect(bob.token, ALL_EVENTS);
    const invited = await m.call<{ call: { id: string } }>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Audio' });
    assert.equal(invited.status, 201);
    await m.dispatch();
    await waitFor('the ring', () => client.received.some((r) => r.event === 'call_invited'));
    const live = client.received.find((r) => r.event === 'call_invited')!.payload as Record<string, unknown>;
    assert.ok(live.Join, 'the live invite carries its join token');
    const [replayed] = (await allAfter(m, bob.token, start)).filter((e) => e.name === 'call_invited');
    assert.ok(replayed);
    assert.equal(replayed.payload.CallId, invited.body.call.id);
    assert.equal(replayed.payload.Join, undefined);
    assert.doesNotMatch(JSON.stringify(replayed.payload), /eyJ[\w-]+\./, 'no JWT-looking value');
    const { Join: _join, ...withoutJoin } = live;
    assert.deepEqual(replayed.payload, withoutJoin);
    await client.connection.stop();
  });

  test('a cursor past retention answers 410 MSG_EVENTS_CURSOR_EXPIRED; a newer one still works; a malformed one or a bad limit is 400', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const bob = users[1]!;
    await m.dispatch();
    const start = (await eventsAfter(m, bob.token, undefined)).next;
    await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'old' });
    await m.dispatch();
    const old = await eventsAfter(m, bob.token, start);
    assert.equal(old.events.length, 1);
    m.clock.advance(PUSH_DEFAULTS.eventsRetentionMs + 3_600_000);
    await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'new' });
    await m.dispatch();
    const run = await m.app.platform.runner.runNow(REALTIME_RETENTION_JOB);
    assert.equal(run.outcome, 'success');
    assert.ok(run.counts.eventsDeleted! >= 1);
    const expired = await m.call<Err>(bob.token, 'GET', `/api/events?after=${start}`);
    assert.deepEqual([expired.status, expired.body.code], [410, 'MSG_EVENTS_CURSOR_EXPIRED']);
    const fresh = await eventsAfter(m, bob.token, old.next);
    assert.deepEqual(fresh.events.map((e) => e.payload.Body), ['new']);
    for (const query of ['after=x1', 'after=e', 'after=e-1', 'after=E1', 'after=e1&limit=0', 'after=e1&limit=501']) {
      const res = await m.call<Err>(bob.token, 'GET', `/api/events?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(typeof res.body.code, 'string');
    }
  });

  test('a cursor past the stream’s head (never handed out) answers 400 MSG_EVENTS_CURSOR_AHEAD, not an empty page; the head itself answers 200', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const bob = users[1]!;
    await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi' });
    await m.dispatch();
    const head = (await eventsAfter(m, bob.token, undefined)).next;
    const atHead = await eventsAfter(m, bob.token, head);
    assert.deepEqual([atHead.events, atHead.next], [[], head]);
    for (const ahead of ['ezz', `e${(Number.parseInt(head.slice(1), 36) + 1).toString(36)}`]) {
      const res = await m.call<Err & { message: string }>(bob.token, 'GET', `/api/events?after=${ahead}`);
      assert.deepEqual([res.status, res.body.code], [400, 'MSG_EVENTS_CURSOR_AHEAD'], ahead);
      assert.match(res.body.message, /refetch/);
    }
  });

  test('the messenger’s old path answers as GET /api/events, the same page for the same cursor, and the document marks it deprecated', async () => {
    const m = await messengerApp();
    const { users, base } = await groupOf(m, 2);
    const bob = users[1]!;
    await m.dispatch();
    const start = (await eventsAfter(m, bob.token, undefined)).next;
    await m.call(users[0]!.token, 'POST', `${base}/messages`, { kind: 'Text', body: 'hi' });
    await m.dispatch();
    const now = await m.call<Page>(bob.token, 'GET', `/api/events?after=${start}`);
    const old = await m.call<Page>(bob.token, 'GET', `/api/messenger/events?after=${start}`);
    assert.equal(old.status, 200);
    assert.deepEqual(old.body, now.body);
    assert.deepEqual(now.body.events.map((e) => e.payload.Body), ['hi']);
    const doc = (await m.app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, { get: { deprecated?: boolean; operationId: string } }> };
    assert.deepEqual(
      [doc.paths['/api/events']!.get.deprecated, doc.paths['/api/messenger/events']!.get.deprecated],
      [undefined, true],
    );
  });
});
