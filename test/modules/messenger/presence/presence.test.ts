import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp, type MessengerApp } from '../support/app.ts';
import type { TestClient } from '../../../support/signalr.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * Presence through the whole app with the official SignalR client: presence_changed frames
 * { UserId, Online, LastSeenAt } reach Accepted contacts and the members of Direct chats both accepted, never anyone on
 * either side of a block nor strangers; GET /api/messenger/presence answers those same peers and
 * leaves everyone else unknown.
 */

type User = Awaited<ReturnType<MessengerApp['user']>>;
const flips = (c: TestClient) => c.received.filter((r) => r.event === 'presence_changed').map((r) => r.payload as { UserId: string; Online: boolean; LastSeenAt: string | null });

async function contacts(m: MessengerApp, a: User, b: User) {
  const req = await m.call<{ id: string }>(a.token, 'POST', '/api/messenger/contacts/requests', { phone: b.phone });
  assert.equal(req.status, 201);
  assert.equal((await m.call(b.token, 'POST', `/api/messenger/contacts/${req.body.id}/accept`)).status, 200);
}
/** A Direct chat both accepted: a opens it, b answers its request (docs/security.md, "Consent"). */
async function direct(m: MessengerApp, a: User, b: User) {
  const chat = await m.call<{ id: string }>(a.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [b.id] });
  assert.equal(chat.status, 201);
  await m.accept(b.token, chat.body.id);
}
async function block(m: MessengerApp, owner: User, blocked: User) {
  assert.equal((await m.call(owner.token, 'PUT', `/api/messenger/blacklist/${blocked.id}`)).status, 200);
}

/** alice; bob her contact; carol in a Direct chat with her; dave in one but blocked by her; erin her contact who blocked her; eve a stranger. */
async function circle(m: MessengerApp) {
  const [alice, bob, carol, dave, erin, eve] = await Promise.all(Array.from({ length: 6 }, () => m.user()));
  await contacts(m, alice!, bob!);
  await direct(m, alice!, carol!);
  await direct(m, dave!, alice!);
  await block(m, alice!, dave!);
  await contacts(m, erin!, alice!);
  await block(m, erin!, alice!);
  return { alice: alice!, bob: bob!, carol: carol!, dave: dave!, erin: erin!, eve: eve! };
}

describe('presence', () => {
  test('presence_changed goes to contacts and Direct-chat members, never across a block nor to strangers', async () => {
    const m = await messengerApp();
    const { alice, bob, carol, dave, erin, eve } = await circle(m);
    const [b, c, d, e, s] = await Promise.all([bob, carol, dave, erin, eve].map((u) => m.connect(u.token, ['presence_changed'])));

    const a = await m.connect(alice.token, []);
    const online = { UserId: alice.id, Online: true, LastSeenAt: null };
    await waitFor('bob and carol see alice come online', () => flips(b!).length === 1 && flips(c!).length === 1);
    assert.deepEqual(flips(b!), [online]);
    assert.deepEqual(flips(c!), [online]);

    await a.connection.stop();
    const offline = { UserId: alice.id, Online: false, LastSeenAt: m.clock.now().toISOString() };
    await waitFor('bob and carol see alice go offline', () => flips(b!).length === 2 && flips(c!).length === 2);
    assert.deepEqual(flips(b!), [online, offline]);
    assert.deepEqual(flips(c!), [online, offline]);

    // A flip pushed after alice's reaches dave, erin and eve: anything of alice's would be before it.
    const zed = await m.user();
    await Promise.all([dave, erin, eve].map((u) => contacts(m, zed, u)));
    await m.connect(zed.token, []);
    await waitFor("zed's flip reached dave, erin and eve", () => [d!, e!, s!].every((x) => flips(x).length >= 1));
    for (const x of [d!, e!, s!]) assert.deepEqual(flips(x), [{ UserId: zed.id, Online: true, LastSeenAt: null }]);
  });

  test('GET /api/messenger/presence answers peers (online, last seen) and leaves blocked and strangers unknown', async () => {
    const m = await messengerApp();
    const { alice, bob, carol, dave, erin, eve } = await circle(m);
    const ask = (ids: string[]) => m.call<{ users: unknown[] }>(alice.token, 'GET', `/api/messenger/presence?userIds=${ids.join(',')}`);
    const bobs = await m.connect(bob.token, []);
    const unknown = (userId: string) => ({ userId, online: null, lastSeenAt: null });

    const first = await ask([bob.id, carol.id, dave.id, erin.id, eve.id, alice.id, bob.id.toUpperCase()]);
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.users, [
      { userId: bob.id, online: true, lastSeenAt: null },
      { userId: carol.id, online: false, lastSeenAt: null },
      unknown(dave.id),
      unknown(erin.id),
      unknown(eve.id),
      { userId: alice.id, online: false, lastSeenAt: null },
    ]);

    await bobs.connection.stop();
    const seen = m.clock.now().toISOString();
    await waitFor('bob offline', async () => ((await ask([bob.id])).body.users[0] as { online: boolean }).online === false);
    assert.deepEqual((await ask([bob.id])).body.users, [{ userId: bob.id, online: false, lastSeenAt: seen }]);
  });

  test('bad presence queries are 400 {code, message}; no token is 401', async () => {
    const m = await messengerApp();
    const alice = await m.user();
    const ids = Array.from({ length: 101 }, () => crypto.randomUUID());
    for (const q of ['', '?userIds=', '?userIds=x', `?userIds=${ids.join(',')}`, `?userIds=${ids[0]},`, `?userIds=${ids[0]}%00`]) {
      const res = await m.call<{ code: string; message: string }>(alice.token, 'GET', `/api/messenger/presence${q}`);
      assert.equal(res.status, 400, q);
      assert.equal(res.body.code, 'VALIDATION_FAILED', q);
      assert.equal(typeof res.body.message, 'string');
    }
    const exactly100 = await m.call(alice.token, 'GET', `/api/messenger/presence?userIds=${ids.slice(0, 100).join(',')}`);
    assert.equal(exactly100.status, 200);
    const anonymous = await m.app.inject({ method: 'GET', url: `/api/messenger/presence?userIds=${ids[0]}` });
    assert.equal(anonymous.statusCode, 401);
  });
});
