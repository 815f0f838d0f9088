import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cursorOf } from '../../../../src/platform/push/cursor.ts';
import { createHmac } from 'node:crypto';
import { jwtVerify } from 'jose';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { createRedisBackplane } from '../../../../src/platform/realtime/backplane-redis.ts';
import { createHub } from '../../../../src/platform/realtime/hub.ts';
import { Registry } from '../../../../src/platform/observability/metrics.ts';
import { newId } from '../../../../src/platform/time.ts';
import { MEDIA_TOKEN_AUDIENCE } from '../../../../src/modules/messenger/calls/media-join.ts';
import { connectClient, tokenFor, TEST_SECRET } from '../../../support/signalr.ts';
import { T0, MEDIA_SECRET, TURN_SECRET, dispatchEnv, insertChat, insertMessage, insertOutbox, outboxRow, uid } from '../support/dispatch.ts';
import { metricValue } from '../../../support/metrics.ts';
import { waitFor } from '../../../support/wait.ts';

/** A hub whose Redis backplane cannot be reached: every group send fails fast (the outage the seed retries through). */
async function unreachableHub() {
  const logger = createLogger('silent');
  const backplane = await createRedisBackplane({ redisUrl: 'redis://127.0.0.1:1', channel: `down:${newId()}`, logger, connectTimeoutMs: 100 });
  const hub = createHub({ secret: TEST_SECRET, registry: new Registry(), logger, backplane });
  after(() => hub.close()); // its Redis clients would keep reconnecting and hold the process open
  return hub;
}

describe('RealtimeDispatchJob (seed 000 test table)', () => {
  test('successful delivery: a Pending MessageReceived is pushed to chat:{ChatId}, becomes Done, and dispatched_total counts it', async () => {
    const env = await dispatchEnv();
    const [alice, bob, stranger] = [uid(), uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, alice, 'private words');
    const member = await connectClient(env.hubApp.url, await tokenFor(bob), { events: ['message_received'] });
    const outsider = await connectClient(env.hubApp.url, await tokenFor(stranger), { events: ['message_received'] });
    const rowId = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq: 1 });
    env.clock.advance(250);

    const counts = await env.run();
    assert.deepEqual(counts, { batches: 1, claimed: 1, failed: 0, dispatched: 1, retried: 0, quarantined: 0, released: 0, overtaken: 0 });
    await waitFor('the member to receive the message', () => member.received.length === 1);
    // The frame's Cursor is the row's position in the event stream.
    const { rows: [streamed] } = await env.pool.query<{ position: string }>(`select position from push.realtime_events where outbox_id = $1`, [rowId]);
    assert.deepEqual(member.received[0], {
      event: 'message_received',
      payload: {
        ChatId: chatId,
        MessageId: messageId,
        Seq: 1,
        SenderUserId: alice,
        Kind: 'Text',
        SentAt: T0.toISOString(),
        EditedAt: null,
        Deleted: false,
        ClientMessageId: null,
        MentionedUserIds: [],
        ReplyTo: null,
        Body: 'private words',
        Cursor: cursorOf(Number(streamed!.position)),
      },
    });
    const row = await outboxRow(env.pool, rowId);
    assert.equal(row.status, 'Done');
    assert.equal(row.attempts, 1);
    assert.equal(row.last_error, null);
    assert.equal(await metricValue(env.registry, 'messenger_realtime_dispatched_total', { kind: 'MessageReceived' }), 1);
    assert.equal(await metricValue(env.registry, 'messenger_realtime_lag_seconds', {}, 'messenger_realtime_lag_seconds_count'), 1, 'one lag observation');
    const lagValues = (await env.registry.getSingleMetric('messenger_realtime_lag_seconds')!.get()).values as { metricName?: string; value: number }[];
    const lagSum = lagValues.find((v) => v.metricName?.endsWith('_sum'));
    assert.equal(lagSum?.value, 0.25, 'lag = now − CreatedAt');
    // The seed's log lines, without the body.
    const msgs = env.logs.lines().map((l) => l.msg);
    for (const m of ['realtime batch claimed', 'realtime dispatched', 'job completed']) assert.ok(msgs.includes(m), m);
    const completed = env.logs.lines().find((l) => l.msg === 'job completed')!;
    for (const key of ['dispatched', 'retried', 'quarantined', 'durationMs']) assert.ok(key in completed, `job completed has ${key}`);
    assert.equal(completed.dispatched, 1);
    assert.doesNotMatch(env.logs.text(), /private words/);
    // A client never sees a chat it is not in.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(outsider.received.length, 0);
  });

  test('empty run: no Pending row due → no-op success, no hub call', async () => {
    const env = await dispatchEnv();
    const chatId = await insertChat(env.pool, [uid()]);
    const future = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), nextAttemptAt: new Date(T0.getTime() + 60_000) });
    await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Done' });
    await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined' });
    const before = await outboxRow(env.pool, future);
    const counts = await env.run();
    assert.deepEqual(counts, { batches: 0, claimed: 0, failed: 0, dispatched: 0, retried: 0, quarantined: 0, released: 0, overtaken: 0 });
    assert.equal(env.sends.length, 0);
    assert.deepEqual(await outboxRow(env.pool, future), before);
    assert.equal(env.logs.lines().filter((l) => (l.level as number) >= 30).length, 0, 'nothing at info or above');
  });

  test('hub unavailable → the row stays Pending, Attempts++, NextAttemptAt moved by the backoff; the next due run delivers it', async () => {
    const env = await dispatchEnv();
    const alice = uid();
    const chatId = await insertChat(env.pool, [alice], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, alice);
    const client = await connectClient(env.hubApp.url, await tokenFor(alice), { events: ['message_received'] });
    const rowId = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq: 1 });
    const working = env.hubRef.current;
    env.hubRef.current = await unreachableHub();

    assert.deepEqual(await env.run(), { batches: 1, claimed: 1, failed: 0, dispatched: 0, retried: 1, quarantined: 0, released: 0, overtaken: 0 });
    let row = await outboxRow(env.pool, rowId);
    assert.equal(row.status, 'Pending');
    assert.equal(row.attempts, 1);
    assert.equal(row.next_attempt_at.getTime(), T0.getTime() + 2000, 'base backoff (jitter 0 in this test)');
    assert.match(row.last_error ?? '', /^RTO_BACKPLANE_DOWN: \w*Error/, 'the cause first: the backplane was down');
    assert.equal(await metricValue(env.registry, 'messenger_realtime_retried_total'), 1);
    assert.ok(env.logs.lines().some((l) => l.msg === 'realtime dispatch retry' && l.entryId === rowId && l.attempts === 1));

    assert.equal((await env.run()).claimed, 0, 'not due before its backoff');
    env.hubRef.current = working;
    env.clock.advance(2000);
    assert.equal((await env.run()).dispatched, 1);
    row = await outboxRow(env.pool, rowId);
    assert.equal(row.status, 'Done');
    assert.equal(row.attempts, 2);
    assert.equal(row.last_error, null);
    await waitFor('the retried delivery', () => client.received.length === 1);
  });

  test('a retried row takes a new stream position, after the rows streamed meanwhile; its event stays one row and its frame carries the new Cursor', async () => {
    const env = await dispatchEnv();
    const alice = uid();
    const chatId = await insertChat(env.pool, [alice], { lastSeq: 2 });
    const [first, second] = [await insertMessage(env.pool, chatId, 1, alice), await insertMessage(env.pool, chatId, 2, alice)];
    const client = await connectClient(env.hubApp.url, await tokenFor(alice), { events: ['message_received'] });
    const events = async (rowId: string) =>
      (await env.pool.query<{ position: string }>(`select position from push.realtime_events where outbox_id = $1`, [rowId])).rows.map((r) => Number(r.position));
    const retried = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: first, seq: 1 });
    const working = env.hubRef.current;
    env.hubRef.current = await unreachableHub();
    assert.equal((await env.run()).retried, 1);
    const [failedAt] = await events(retried);

    env.hubRef.current = working;
    const meanwhile = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: second, seq: 2 });
    assert.equal((await env.run()).dispatched, 1, 'the newer row goes while the first waits for its backoff');
    const [meanwhileAt] = await events(meanwhile);
    env.clock.advance(2000);
    assert.equal((await env.run()).dispatched, 1);
    const retriedAt = await events(retried);
    assert.equal(retriedAt.length, 1, 'one event row per outbox row');
    assert.ok(failedAt! < meanwhileAt! && meanwhileAt! < retriedAt[0]!, `positions ${failedAt} < ${meanwhileAt} < ${retriedAt[0]}`);
    await waitFor('both deliveries', () => client.received.length === 2);
    const cursors = client.received.map((r) => (r.payload as { Seq: number; Cursor: string })).map((p) => [p.Seq, p.Cursor]);
    assert.deepEqual(cursors, [[2, cursorOf(meanwhileAt!)], [1, cursorOf(retriedAt[0]!)]]);
  });

  test('poison → quarantine: the failed attempt that reaches MaxAttempts quarantines the row and raises RealtimeDispatchQuarantinedEvent', async () => {
    const env = await dispatchEnv({ settings: { maxAttempts: 2 } });
    const chatId = await insertChat(env.pool, [uid()], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, uid());
    const rowId = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq: 1 });
    env.hubRef.current = await unreachableHub();
    await env.run();
    env.clock.advance(2000);
    assert.equal((await env.run()).quarantined, 1);
    const row = await outboxRow(env.pool, rowId);
    assert.equal(row.status, 'Quarantined');
    assert.equal(row.attempts, 2);
    assert.deepEqual(env.quarantined, [{ OutboxEntryId: rowId, Kind: 'MessageReceived', ChatId: chatId, Attempts: 2 }]);
    assert.equal(await metricValue(env.registry, 'messenger_realtime_quarantined_total', { reason: 'attempts_exhausted' }), 1);
    assert.ok(env.logs.lines().some((l) => l.msg === 'realtime outbox row quarantined' && l.entryId === rowId && l.kind === 'MessageReceived'));
    env.clock.advance(600_000);
    assert.equal((await env.run()).claimed, 0, 'a quarantined row is out of the claim');
  });

  test('a Pending row that already used MaxAttempts (its claims crashed) is quarantined at claim, never pushed again', async () => {
    const env = await dispatchEnv();
    const chatId = await insertChat(env.pool, [uid()], { lastSeq: 1 });
    const messageId = await insertMessage(env.pool, chatId, 1, uid());
    const rowId = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId, seq: 1, attempts: 8 });
    assert.equal((await env.run()).quarantined, 1);
    assert.equal(env.sends.length, 0);
    const row = await outboxRow(env.pool, rowId);
    assert.equal(row.status, 'Quarantined');
    assert.equal(row.last_error, 'RTO_ATTEMPTS_EXHAUSTED');
  });

  test('a row whose referenced entity no longer exists is quarantined at once with RTO_REF_NOT_FOUND', async () => {
    const env = await dispatchEnv();
    const chatId = await insertChat(env.pool, [uid()]);
    const rowId = await insertOutbox(env.pool, { kind: 'MessageReceived', chatId, messageId: newId(), seq: 1 });
    const counts = await env.run();
    assert.equal(counts.quarantined, 1);
    const row = await outboxRow(env.pool, rowId);
    assert.equal(row.status, 'Quarantined');
    assert.equal(row.attempts, 1);
    assert.equal(row.last_error, 'RTO_REF_NOT_FOUND');
    assert.equal(await metricValue(env.registry, 'messenger_realtime_quarantined_total', { reason: 'ref_not_found' }), 1);
  });

  test('media token at delivery: ConferenceInvited carries a freshly minted MediaJoinModel; realtime_outbox holds no secret', async () => {
    const env = await dispatchEnv();
    const [alice, carol] = [uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, carol]);
    const sessionId = newId();
    await env.pool.query(
      `insert into messenger.media_sessions (id, session_kind, chat_id, initiator_user_id, media, status, room_name, created_at, updated_at)
       values ($1, 'Conference', $2, $3, 'Video', 'Active', 'conf-room-1', $4, $4)`,
      [sessionId, chatId, alice, T0],
    );
    const invitee = await connectClient(env.hubApp.url, await tokenFor(carol), { events: ['conference_invited'] });
    await insertOutbox(env.pool, { kind: 'ConferenceInvited', targetKind: 'User', targetUserId: carol, chatId, refId: sessionId, sessionKind: 'Conference' });
    assert.equal((await env.run()).dispatched, 1);
    await waitFor('the invitation', () => invitee.received.length === 1);
    const payload = invitee.received[0]!.payload as Record<string, unknown> & { Join: { AccessToken: string; RoomName: string; IceServers: { Username: string; Credential: string }[] } };
    assert.equal(payload.ConferenceId, sessionId);
    assert.equal(payload.Join.RoomName, 'conf-room-1');
    const { payload: claims } = await jwtVerify(payload.Join.AccessToken, new TextEncoder().encode(MEDIA_SECRET), { audience: MEDIA_TOKEN_AUDIENCE, currentDate: T0 });
    assert.equal(claims.sub, carol);
    assert.equal(claims.room, 'conf-room-1');
    assert.equal(claims.exp, T0.getTime() / 1000 + 300, 'short-lived');
    const ice = payload.Join.IceServers[0]!;
    assert.equal(ice.Username, `${T0.getTime() / 1000 + 3600}:${carol}`, 'time-limited TURN username');
    assert.equal(ice.Credential, createHmac('sha1', TURN_SECRET).update(ice.Username).digest('base64'));

    const { rows } = await env.pool.query<{ row: string }>(`select row_to_json(o)::text as row from push.realtime_outbox o`);
    for (const { row } of rows) {
      assert.ok(!row.includes(payload.Join.AccessToken) && !row.includes(ice.Credential), 'no token or TURN credential stored');
      assert.doesNotMatch(row, /eyJ/, 'no JWT stored');
    }
  });

  test('SessionKind payload: CallInvited Direct → the 1:1 contract to user:{Target}; Conference → the conference contract to the chat', async () => {
    const env = await dispatchEnv();
    const [alice, bob, carol, stranger] = [uid(), uid(), uid(), uid()];
    const chatId = await insertChat(env.pool, [alice, bob, carol]);
    const [callId, confId] = [newId(), newId()];
    await env.pool.query(
      `insert into messenger.media_sessions (id, session_kind, chat_id, initiator_user_id, callee_user_id, media, status, room_name, created_at, updated_at)
       values ($1, 'Direct', null, $3, $4, 'Audio', 'Ringing', 'call-room', $5, $5),
              ($2, 'Conference', $6, $3, null, 'Video', 'Active', 'conf-room', $5, $5)`,
      [callId, confId, alice, bob, T0, chatId],
    );
    const events = ['call_invited'];
    const [a, b, c, s] = await Promise.all([alice, bob, carol, stranger].map(async (u) => connectClient(env.hubApp.url, await tokenFor(u), { events })));
    await insertOutbox(env.pool, { kind: 'CallInvited', targetKind: 'User', targetUserId: bob, refId: callId, sessionKind: 'Direct' });
    await env.run();
    await waitFor('the callee', () => b!.received.length === 1);
    const direct = b!.received[0]!.payload as Record<string, unknown> & { Join: { AccessToken: string } };
    assert.equal(direct.CallId, callId);
    assert.equal(direct.CallerUserId, alice);
    assert.ok(direct.Join.AccessToken);
    assert.equal(a!.received.length + c!.received.length, 0, 'a 1:1 invite goes to the callee only');

    await insertOutbox(env.pool, { kind: 'CallInvited', targetKind: 'ChatGroup', chatId, refId: confId, sessionKind: 'Conference' });
    await env.run();
    await waitFor('every chat member', () => a!.received.length === 1 && c!.received.length === 1 && b!.received.length === 2);
    const tokens = new Set<string>();
    for (const [client, user] of [[a!, alice], [b!, bob], [c!, carol]] as const) {
      const p = client.received.at(-1)!.payload as Record<string, unknown> & { Join: { AccessToken: string } };
      assert.equal(p.ConferenceId, confId);
      assert.equal(p.ChatId, chatId);
      const { payload: claims } = await jwtVerify(p.Join.AccessToken, new TextEncoder().encode(MEDIA_SECRET), { currentDate: T0 });
      assert.equal(claims.sub, user, 'each member gets its own join token');
      tokens.add(p.Join.AccessToken);
    }
    assert.equal(tokens.size, 3);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(s!.received.length, 0, 'a non-member sees nothing of the chat');
  });
});
