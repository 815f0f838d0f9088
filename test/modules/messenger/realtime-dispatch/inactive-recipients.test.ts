import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { jwtVerify } from 'jose';
import { newId } from '../../../../src/platform/time.ts';
import { connectClient, tokenFor } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';
import { insertReplicaUser } from '../support/app.ts';
import { MEDIA_SECRET, T0, dispatchEnv, insertChat, insertOutbox, outboxRow } from '../support/dispatch.ts';

/**
 * Join tokens are minted per recipient at delivery (seed 000, ADR-0062). A recipient whom the
 * replica holds as inactive (seed 002: Blocked, Archived) is refused everything in the messenger,
 * so the dispatcher neither mints a MediaJoinModel for them nor sends them the invite. The hub of
 * this harness does not refuse inactive users itself, so their socket shows what the dispatcher sent.
 */

type Payload = Record<string, unknown> & { Join?: { AccessToken: string } };
const EVENTS = ['conference_started', 'conference_invited', 'call_invited'];

describe('media invites to inactive users', () => {
  test('conference_started goes with a join token to each active member only; an inactive member gets no frame and no token', async () => {
    const env = await dispatchEnv();
    const [alice, bob, carol] = [(await insertReplicaUser(env.pool)).id, (await insertReplicaUser(env.pool, { active: false })).id, (await insertReplicaUser(env.pool)).id];
    const chatId = await insertChat(env.pool, [alice, bob, carol]);
    const confId = newId();
    await env.pool.query(
      `insert into messenger.media_sessions (id, session_kind, chat_id, initiator_user_id, media, status, room_name, created_at, updated_at)
       values ($1, 'Conference', $2, $3, 'Video', 'Active', 'conf-room', $4, $4)`,
      [confId, chatId, alice, T0],
    );
    const [ca, cb, cc] = await Promise.all([alice, bob, carol].map(async (u) => connectClient(env.hubApp.url, await tokenFor(u), { events: EVENTS })));
    const row = await insertOutbox(env.pool, { kind: 'ConferenceStarted', targetKind: 'ChatGroup', chatId, refId: confId, sessionKind: 'Conference' });
    assert.equal((await env.run()).dispatched, 1);
    assert.equal((await outboxRow(env.pool, row)).status, 'Done');

    for (const [client, user] of [[ca!, alice], [cc!, carol]] as const) {
      await waitFor('conference_started to an active member', () => client.received.length === 1);
      const p = client.received[0]!.payload as Payload;
      const { payload: claims } = await jwtVerify(p.Join!.AccessToken, new TextEncoder().encode(MEDIA_SECRET), { currentDate: T0 });
      assert.equal(claims.sub, user);
    }
    assert.deepEqual(env.sends.map((s) => s.group).sort(), [`user:${alice}`, `user:${carol}`].sort(), 'nothing was sent to the inactive member');
    assert.equal(cb!.received.length, 0);
  });

  test('a personal invite (conference_invited, call_invited) to an inactive user is not sent and mints nothing; the row is Done', async () => {
    const env = await dispatchEnv();
    const [alice, bob] = [(await insertReplicaUser(env.pool)).id, (await insertReplicaUser(env.pool, { active: false })).id];
    const chatId = await insertChat(env.pool, [alice, bob]);
    const [confId, callId] = [newId(), newId()];
    await env.pool.query(
      `insert into messenger.media_sessions (id, session_kind, chat_id, initiator_user_id, callee_user_id, media, status, room_name, created_at, updated_at)
       values ($1, 'Conference', $3, $4, null, 'Video', 'Active', 'conf-room', $6, $6),
              ($2, 'Direct', null, $4, $5, 'Audio', 'Ringing', 'call-room', $6, $6)`,
      [confId, callId, chatId, alice, bob, T0],
    );
    const cb = await connectClient(env.hubApp.url, await tokenFor(bob), { events: EVENTS });
    const rows = [
      await insertOutbox(env.pool, { kind: 'ConferenceInvited', targetKind: 'User', targetUserId: bob, chatId, refId: confId, sessionKind: 'Conference' }),
      await insertOutbox(env.pool, { kind: 'CallInvited', targetKind: 'User', targetUserId: bob, refId: callId, sessionKind: 'Direct' }),
    ];
    const counts = await env.run();
    assert.deepEqual([counts.dispatched, counts.quarantined], [2, 0]);
    for (const id of rows) assert.equal((await outboxRow(env.pool, id)).status, 'Done');
    assert.deepEqual(env.sends, []);

    // Active again (identity unblocked them): the next invite reaches them with their token.
    await env.pool.query('update messenger.users set is_active = true where id = $1', [bob]);
    await insertOutbox(env.pool, { kind: 'ConferenceInvited', targetKind: 'User', targetUserId: bob, chatId, refId: confId, sessionKind: 'Conference' });
    await env.run();
    await waitFor('the invite to the reactivated user', () => cb.received.length === 1);
    assert.match((cb.received[0]!.payload as Payload).Join?.AccessToken ?? '', /^eyJ/);
  });
});
