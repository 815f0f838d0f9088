import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cursorOf } from '../../../../src/platform/push/cursor.ts';
import { ALL_EVENTS, ofEvent, insertReplicaUser, messengerApp, type MessengerApp } from '../support/app.ts';
import { T0 } from '../support/dispatch.ts';
import { waitFor } from '../../../support/wait.ts';

type Contact = { id: string; userId: string; status: string; direction: string };
type Err = { code: string };
type Payload = Record<string, unknown>;


/** The event-stream Cursor of the push of `kind` about `refId` (what its frame carries). */
async function cursorOfRef(m: MessengerApp, refId: string, kind: string): Promise<string> {
  const { rows } = await m.pool.query<{ position: string }>(`select position from push.realtime_events where ref_id = $1 and kind = $2`, [refId, kind]);
  assert.equal(rows.length, 1);
  return cursorOf(Number(rows[0]!.position));
}

describe('contacts (request by phone, accept, remove) and blacklist', () => {
  test('request → contact_request_received to the addressee; accept → contact_request_accepted to the requester; remove → contact_removed to the other', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
    // Any usual notation of bob's +7926… number.
    const local = `8 (${bob.phone.slice(2, 5)}) ${bob.phone.slice(5, 8)}-${bob.phone.slice(8, 10)}-${bob.phone.slice(10)}`;
    const req = await m.call<Contact>(alice.token, 'POST', '/api/messenger/contacts/requests', { phone: local });
    assert.equal(req.status, 201);
    assert.deepEqual([req.body.userId, req.body.status, req.body.direction], [bob.id, 'Pending', 'Outgoing']);
    const incoming = (await m.call<{ items: Contact[] }>(bob.token, 'GET', '/api/messenger/contacts')).body.items;
    assert.deepEqual(incoming.map((c) => [c.userId, c.direction]), [[alice.id, 'Incoming']]);
    assert.equal((await m.call<Err>(alice.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`)).body.code, 'MSG_CONTACT_NOT_ADDRESSEE');
    await m.dispatch();
    await waitFor('the request', () => ofEvent(cb, 'contact_request_received').length === 1);
    assert.deepEqual(ofEvent(cb, 'contact_request_received')[0], { ContactId: req.body.id, UserId: alice.id, Status: 'Pending', Cursor: await cursorOfRef(m, req.body.id, 'ContactRequestReceived') });

    const accepted = await m.call<Contact>(bob.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`);
    assert.equal(accepted.body.status, 'Accepted');
    assert.equal((await m.call<Err>(bob.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`)).body.code, 'MSG_CONTACT_NOT_PENDING');
    await m.dispatch();
    await waitFor('the acceptance', () => ofEvent(ca, 'contact_request_accepted').length === 1);
    assert.deepEqual(ofEvent(ca, 'contact_request_accepted')[0], { ContactId: req.body.id, UserId: bob.id, Status: 'Accepted', Cursor: await cursorOfRef(m, req.body.id, 'ContactRequestAccepted') });

    assert.equal((await m.call(bob.token, 'DELETE', `/api/messenger/contacts/${req.body.id}`)).status, 204);
    await m.dispatch();
    await waitFor('the removal', () => ofEvent(ca, 'contact_removed').length === 1);
    assert.equal(ofEvent(ca, 'contact_removed')[0]!.UserId, bob.id);
    assert.equal((await m.call<{ items: Contact[] }>(alice.token, 'GET', '/api/messenger/contacts')).body.items.length, 0);
    // A removed pair can ask again, in either direction.
    assert.equal((await m.call(bob.token, 'POST', '/api/messenger/contacts/requests', { phone: alice.phone })).status, 201);
  });

  test('requests are checked: invalid phone 400, unknown or inactive user 404, yourself 400, a live pair 409', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    const inactive = await insertReplicaUser(m.pool, { active: false });
    const ask = (phone: string) => m.call<Err>(alice.token, 'POST', '/api/messenger/contacts/requests', { phone });
    const bad = await ask('12');
    assert.deepEqual([bad.status, bad.body.code], [400, 'MSG_CONTACT_SEARCH_INVALID_PHONE']);
    assert.equal((await ask('+79990001122')).body.code, 'MSG_CONTACT_USER_NOT_FOUND');
    assert.equal((await ask(inactive.phone)).body.code, 'MSG_CONTACT_USER_NOT_FOUND');
    assert.equal((await ask(alice.phone)).body.code, 'MSG_CONTACT_SELF');
    assert.equal((await ask(bob.phone)).status, 201);
    assert.deepEqual([(await ask(bob.phone)).status, (await ask(bob.phone)).body.code], [409, 'MSG_CONTACT_ALREADY_EXISTS']);
    const reverse = await m.call<Err>(bob.token, 'POST', '/api/messenger/contacts/requests', { phone: alice.phone });
    assert.equal(reverse.body.code, 'MSG_CONTACT_ALREADY_EXISTS');
  });

  test('INV-MU-3: contact search shows the last name only once the contact is Accepted', async () => {
    const m = await messengerApp();
    const [alice, bob] = [await m.user(), await m.user()];
    await m.pool.query(
      `insert into messenger.contact_search_documents (user_id, first_name, last_name, phone_number, is_active, revision, indexed_at)
       values ($1, 'Иван', 'Петров', $2, true, 1, $3)`,
      [bob.id, bob.phone, T0],
    );
    const search = async () => (await m.call<{ lastName: string }>(alice.token, 'GET', `/api/messenger/contacts/search?phone=${encodeURIComponent(bob.phone)}`)).body.lastName;
    assert.equal(await search(), 'П***');
    const req = (await m.call<Contact>(alice.token, 'POST', '/api/messenger/contacts/requests', { phone: bob.phone })).body;
    assert.equal(await search(), 'П***', 'a pending request does not unmask');
    await m.call(bob.token, 'POST', `/api/messenger/contacts/${req.id}/accept`);
    assert.equal(await search(), 'Петров');
  });

  test('UC-MSG-004: you cannot message a user you block in a direct chat (their messages to you are withheld); blacklist_changed reaches only your own devices', async () => {
    const m = await messengerApp();
    const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
    const [ca, cb] = [await m.connect(alice.token, ALL_EVENTS), await m.connect(bob.token, ALL_EVENTS)];
    const direct = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [bob.id] })).body;
    const group = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds: [bob.id, carol.id] })).body;
    const send = (token: string, chatId: string) => m.call<Err>(token, 'POST', `/api/messenger/chats/${chatId}/messages`, { kind: 'Text', body: 'hey' });
    assert.equal((await send(bob.token, direct.id)).status, 201);

    const blocked = await m.call<{ status: string; blockedUserId: string }>(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`);
    assert.deepEqual([blocked.status, blocked.body.status], [200, 'Blocked']);
    assert.equal((await send(bob.token, direct.id)).status, 201, 'the blocked are never told: withheld from alice (consent/withheld-messages.test.ts)');
    assert.equal((await send(alice.token, direct.id)).body.code, 'MSG_USER_BLOCKED', 'the one who blocks is told their own block');
    assert.equal((await send(bob.token, group.id)).status, 201, 'group chats are not personal');
    assert.equal((await m.call<Err>(alice.token, 'POST', '/api/messenger/contacts/requests', { phone: bob.phone })).body.code, 'MSG_USER_BLOCKED');
    assert.equal((await m.call<Err>(alice.token, 'PUT', `/api/messenger/blacklist/${alice.id}`)).body.code, 'MSG_BLACKLIST_SELF');
    const list = (await m.call<{ items: { blockedUserId: string }[] }>(alice.token, 'GET', '/api/messenger/blacklist')).body.items;
    assert.deepEqual(list.map((e) => e.blockedUserId), [bob.id]);

    assert.equal((await m.call<{ status: string }>(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`)).body.status, 'Unblocked');
    assert.equal((await m.call<{ status: string }>(alice.token, 'DELETE', `/api/messenger/blacklist/${bob.id}`)).status, 200, 'idempotent');
    assert.equal((await send(bob.token, direct.id)).status, 201);
    await m.dispatch();
    await waitFor('block and unblock on alice’s devices', () => ofEvent(ca, 'blacklist_changed').length === 2);
    assert.ok(ofEvent(ca, 'blacklist_changed').every((p) => p.BlockedUserId === bob.id));
    assert.equal(ofEvent(cb, 'blacklist_changed').length, 0, 'the blocked user is never told');
  });
});
