import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTACT_SEARCH_REBUILD_JOB } from '../../../../src/modules/messenger/contact-search/rebuild.job.ts';
import { messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * The blocked are never told (blacklist.md): a user who blocked the caller is not found by phone, as
 * an unknown phone is not, and a contact request to them answers as to an unknown phone; the one who
 * blocks still finds the other and is told their own block.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
type Err = { code: string };
const search = (m: MessengerApp, viewer: User, phone: string) =>
  m.call<Err & { userId: string }>(viewer.token, 'GET', `/api/messenger/contacts/search?phone=${encodeURIComponent(phone)}`);

describe('phone lookups across a block', () => {
  test('search by phone does not show the blocker to the blocked (404 as for an unknown phone); the blocker still finds them', async () => {
    const m = await messengerApp();
    const [alice, mal] = [await m.user(), await m.user()];
    // The replica rows were written directly: the rebuild puts them into the search index.
    assert.equal((await m.app.platform.runner.runNow(CONTACT_SEARCH_REBUILD_JOB)).outcome, 'success');
    assert.deepEqual([(await search(m, mal, alice.phone)).status, (await search(m, mal, alice.phone)).body.userId], [200, alice.id]);
    assert.equal((await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${mal.id}`)).status, 200);
    const unknown = await search(m, mal, '+79990001122');
    const blocker = await search(m, mal, alice.phone);
    assert.deepEqual([blocker.status, blocker.body], [unknown.status, unknown.body], 'the same answer as an unknown phone');
    assert.deepEqual([blocker.status, blocker.body.code], [404, 'MSG_CONTACT_USER_NOT_FOUND']);
    assert.deepEqual([(await search(m, alice, mal.phone)).status, (await search(m, alice, mal.phone)).body.userId], [200, mal.id]);
  });

  test('a contact request from the blocked to the blocker answers as for an unknown phone, with nothing stored; the blocker is told 403 MSG_USER_BLOCKED', async () => {
    const m = await messengerApp();
    const [alice, mal] = [await m.user(), await m.user()];
    assert.equal((await m.call(alice.token, 'PUT', `/api/messenger/blacklist/${mal.id}`)).status, 200);
    const request = await m.call<Err>(mal.token, 'POST', '/api/messenger/contacts/requests', { phone: alice.phone });
    assert.deepEqual([request.status, request.body.code], [404, 'MSG_CONTACT_USER_NOT_FOUND']);
    const back = await m.call<Err>(alice.token, 'POST', '/api/messenger/contacts/requests', { phone: mal.phone });
    assert.deepEqual([back.status, back.body.code], [403, 'MSG_USER_BLOCKED']);
    const { rows } = await m.pool.query('select 1 from messenger.contacts where $1 in (requester_user_id, addressee_user_id)', [mal.id]);
    assert.equal(rows.length, 0);
  });
});
