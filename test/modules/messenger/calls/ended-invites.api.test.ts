import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type TestClient } from '../../../support/signalr.ts';
import { ALL_EVENTS, ofEvent, messengerApp, type MessengerApp } from '../support/app.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * An invite is written to the realtime outbox with the session's start; the dispatcher builds its
 * payload at delivery. When the session ends in between, the invite is still delivered (the
 * client shows the missed call or conference) but carries no MediaJoinModel: no token is minted
 * for a session that is over. The token the REST answers give while the session is open is
 * another path and is not at stake here.
 */

type Payload = Record<string, unknown> & { Join?: unknown };

async function outboxKinds(m: MessengerApp, refId: string): Promise<string[]> {
  const { rows } = await m.pool.query<{ kind: string; status: string }>(`select kind, status from push.realtime_outbox where ref_id = $1 order by id`, [refId]);
  return rows.map((r) => `${r.kind}:${r.status}`);
}

describe('invites of a session that ended before delivery', () => {
  test('a call cancelled between the invite and its delivery: the callee gets call_invited (Status Cancelled) without a join token, then call_cancelled', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await m.contacts(alice, bob);
    const cb = await m.connect(bob.token, ALL_EVENTS);
    const call = (await m.call<{ call: { id: string } }>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Video' })).body.call;
    assert.equal((await m.call<{ call: { status: string } }>(alice.token, 'POST', `/api/messenger/calls/${call.id}/cancel`)).body.call.status, 'Cancelled');
    assert.deepEqual(await outboxKinds(m, call.id), ['CallInvited:Pending', 'CallCancelled:Pending', 'CallCancelled:Pending'], 'nothing delivered yet');
    await m.dispatch();
    await waitFor('the invite and the cancel', () => ofEvent(cb, 'call_invited').length === 1 && ofEvent(cb, 'call_cancelled').length === 1);
    const invite = ofEvent(cb, 'call_invited')[0]!;
    assert.deepEqual([invite.CallId, invite.Status], [call.id, 'Cancelled']);
    assert.equal('Join' in invite, false, 'no token for a call that is over');
    assert.doesNotMatch(JSON.stringify(cb.received), /eyJ[\w-]+\./, 'no JWT anywhere in what the callee received');
  });

  test('a conference ended between its start and delivery: every member gets conference_started (Status Ended) without a join token', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Deal', memberUserIds: [bob.id, carol.id] })).body;
    const clients = await Promise.all([alice, bob, carol].map((u) => m.connect(u.token, ALL_EVENTS)));
    await m.dispatch();
    const conf = (await m.call<{ conference: { id: string } }>(alice.token, 'POST', `/api/messenger/chats/${chat.id}/conferences`, { media: 'Video' })).body.conference;
    // Carol is invited while it runs (her own ConferenceInvited row), then the starter ends it.
    assert.equal((await m.call(alice.token, 'POST', `/api/messenger/conferences/${conf.id}/invite`, { userIds: [carol.id] })).status, 200);
    assert.equal((await m.call<{ status: string }>(alice.token, 'POST', `/api/messenger/conferences/${conf.id}/end`)).body.status, 'Ended');
    await m.dispatch();
    for (const [i, c] of clients.entries()) {
      await waitFor(`conference_started and conference_ended to member ${i}`, () => ofEvent(c, 'conference_started').length === 1 && ofEvent(c, 'conference_ended').length === 1);
      const started = ofEvent(c, 'conference_started')[0]!;
      assert.deepEqual([started.ConferenceId, started.Status], [conf.id, 'Ended']);
      assert.equal('Join' in started, false, `member ${i}: no token for a conference that is over`);
    }
    await waitFor('the invite to carol', () => ofEvent(clients[2]!, 'conference_invited').length === 1);
    const invite = ofEvent(clients[2]!, 'conference_invited')[0]!;
    assert.deepEqual([invite.ConferenceId, invite.Status, 'Join' in invite], [conf.id, 'Ended', false]);
    for (const c of clients) assert.doesNotMatch(JSON.stringify(c.received), /eyJ[\w-]+\./, 'no JWT anywhere in what a member received');
  });

  test('an invite delivered while the session is open still carries the recipient’s join token', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await m.contacts(alice, bob);
    const cb = await m.connect(bob.token, ALL_EVENTS);
    const call = (await m.call<{ call: { id: string } }>(alice.token, 'POST', '/api/messenger/calls', { calleeUserId: bob.id, media: 'Audio' })).body.call;
    await m.dispatch();
    await waitFor('the invite', () => ofEvent(cb, 'call_invited').length === 1);
    const invite = ofEvent(cb, 'call_invited')[0]! as Payload & { Join?: { AccessToken: string } };
    assert.deepEqual([invite.CallId, invite.Status], [call.id, 'Ringing']);
    assert.match(invite.Join?.AccessToken ?? '', /^eyJ/);
  });
});
