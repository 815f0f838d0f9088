import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { notificationsModule } from '../../../src/modules/notifications/index.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { messengerApp } from './support/app.ts';
import { launchChromium, sdkPage } from './support/browser.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client library's browser bundle in a real headless Chromium against the real service, for
 * what an app calls beyond chatting and for the 0.3 fixes: a message request answered, a group
 * request declined, group members, contacts, blocking, the device's push token, hasMore, typed hub
 * errors, a refused cursor reported as resyncNeeded, setToken without a state change, and sends
 * after stop() and start().
 */

type Sdk = Record<string, (...args: unknown[]) => Promise<unknown>> & { state: string; connection: unknown };
type PageState = { messages: { body: string }[]; sent: unknown[]; resyncs: { code: string; status: number }[]; states: string[]; renewals: string[] };
type HarnessWindow = { client: Sdk; state: PageState; startClient(token: string, chatId: string, opts?: object): Promise<void> };

const GENEROUS = 60_000; // two cores shared by every test: polling limits, never fixed sleeps
/** Calls client[method](...args) in the page; answers its result, or { error: { name, code, status } }. */
const call = (page: Page, method: string, ...args: unknown[]) =>
  page.evaluate(
    async (name, list) => {
      try {
        return await (globalThis as unknown as HarnessWindow).client[name]!(...list);
      } catch (e) {
        const err = e as { name: string; code: string; status: number };
        return { error: { name: err.name, code: err.code, status: err.status } };
      }
    },
    method,
    args,
  );
const stateOf = (page: Page) => page.evaluate(() => (globalThis as unknown as HarnessWindow).state);

test('in Chromium: message requests, groups, contacts, blocking, push tokens, hasMore and typed hub errors', { timeout: 300_000 }, async () => {
  const m = await messengerApp({}, {}, {}, [notificationsModule()]);
  const origin = `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`;
  const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
  const direct = (await m.call<{ id: string }>(bob.token, 'POST', '/api/messenger/chats', { kind: 'Direct', memberUserIds: [alice.id] })).body;
  const invite = (await m.call<{ id: string }>(bob.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Invite', memberUserIds: [alice.id] })).body;
  for (const body of ['1', '2', '3']) await m.call(bob.token, 'POST', `/api/messenger/chats/${direct.id}/messages`, { kind: 'Text', body });

  const browser = await launchChromium();
  const page = await sdkPage(browser, origin);
  await page.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c), alice.token, direct.id);

  assert.equal(((await call(page, 'getChat', direct.id)) as { isRequest: boolean }).isRequest, true);
  assert.equal(((await call(page, 'acceptChat', direct.id)) as { isRequest: boolean }).isRequest, false);
  assert.deepEqual(await call(page, 'declineChat', invite.id), { left: true });
  assert.deepEqual(await call(page, 'getChat', invite.id), { error: { name: 'MessengerError', code: 'MSG_CHAT_NOT_FOUND', status: 404 } });

  const page1 = (await call(page, 'history', direct.id, { beforeSeq: 4, limit: 2 })) as { items: { seq: number }[]; hasMore: boolean };
  assert.deepEqual([page1.items.map((x) => x.seq), page1.hasMore], [[2, 3], true]);

  const group = (await call(page, 'createChat', { kind: 'Group', title: 'Mine', memberUserIds: [bob.id] })) as { id: string };
  assert.equal(((await call(page, 'renameChat', group.id, 'Renamed')) as { title: string }).title, 'Renamed');
  assert.equal(((await call(page, 'addMembers', group.id, [carol.id])) as { participants: unknown[] }).participants.length, 3);
  await call(page, 'removeMember', group.id, carol.id);
  assert.equal(((await call(page, 'getChat', group.id)) as { participants: unknown[] }).participants.length, 2);

  const contact = (await call(page, 'requestContact', carol.phone)) as { id: string; status: string };
  assert.equal(contact.status, 'Pending');
  await call(page, 'removeContact', contact.id);
  assert.deepEqual(await call(page, 'contacts'), []);
  assert.equal(((await call(page, 'blockUser', carol.id)) as { status: string }).status, 'Blocked');
  assert.equal(((await call(page, 'unblockUser', carol.id)) as { status: string }).status, 'Unblocked');

  const device = `web-push-${crypto.randomUUID()}`;
  await call(page, 'registerPushToken', device, 'web');
  assert.equal((await m.pool.query('select 1 from notifications.push_tokens where token = $1 and user_id = $2', [device, alice.id])).rowCount, 1);
  await call(page, 'unregisterPushToken', device);
  assert.equal((await m.pool.query('select 1 from notifications.push_tokens where token = $1', [device])).rowCount, 0);

  assert.deepEqual(await call(page, 'typing', crypto.randomUUID()), { error: { name: 'MessengerError', code: 'MSG_CHAT_NOT_FOUND', status: 404 } });
  await call(page, 'stop');
});

test('in Chromium: a refused cursor is reported as resyncNeeded, setToken moves the connection without a state change, and sends go after stop() and start()', { timeout: 300_000 }, async () => {
  const m = await messengerApp();
  const origin = `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`;
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;

  const browser = await launchChromium();
  const page = await sdkPage(browser, origin);
  await page.evaluate(() => localStorage.setItem('pin.messenger.cursor', 'not-a-cursor-of-this-service'));
  await page.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c, { persistCursor: true, fixedToken: true }), alice.token, chat.id);
  await page.evaluate(() => (globalThis as unknown as HarnessWindow).client.settled!());
  const resyncs = (await stateOf(page)).resyncs;
  assert.deepEqual(resyncs.map((r) => r.status), [400], `told once: ${JSON.stringify(resyncs)}`);
  assert.notEqual(await page.evaluate(() => localStorage.getItem('pin.messenger.cursor')), 'not-a-cursor-of-this-service', 'went on from the head');

  // Another token of the same user (a later exp, so not the same string).
  const { JWT_SECRET, AUTH_ISSUER, AUTH_AUDIENCE } = m.config;
  const renewed = await signToken({ userId: alice.id, admin: false }, JWT_SECRET, { issuer: AUTH_ISSUER, audience: AUTH_AUDIENCE, expiresIn: Math.floor(Date.now() / 1000) + 7200 });
  const moved = await page.evaluate(async (token) => {
    const { client } = globalThis as unknown as HarnessWindow;
    const before = client.connection;
    (client as unknown as { setToken(t: string): void }).setToken(token);
    for (let i = 0; i < 600 && client.connection === before; i++) await new Promise((r) => setTimeout(r, 50));
    return client.connection !== before;
  }, renewed);
  assert.ok(moved, 'a new connection');
  assert.deepEqual((await stateOf(page)).states, ['connecting', 'connected'], 'no state change');

  await call(page, 'stop');
  await call(page, 'send', chat.id, { kind: 'Text', body: 'queued while stopped' });
  await call(page, 'start');
  await waitFor('sent after start()', async () => (await stateOf(page)).sent.length === 1, GENEROUS);
  const rows = await m.pool.query<{ body: string }>('select body from messenger.messages where chat_id = $1', [chat.id]);
  assert.deepEqual(rows.rows, [{ body: 'queued while stopped' }]);
  await call(page, 'stop');
});

test('in Chromium: a token about to expire is renewed on the live connection through getToken, with no state change, and a message sent meanwhile arrives once', { timeout: 300_000 }, async () => {
  const m = await messengerApp();
  const origin = `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`;
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(bob.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [alice.id] })).body;
  const { JWT_SECRET, AUTH_ISSUER, AUTH_AUDIENCE } = m.config;
  const exp = Math.floor(Date.now() / 1000) + 6;
  const short = await signToken({ userId: alice.id, admin: false }, JWT_SECRET, { issuer: AUTH_ISSUER, audience: AUTH_AUDIENCE, expiresIn: exp });

  const browser = await launchChromium();
  const page = await sdkPage(browser, origin);
  await page.evaluate(
    (t, c, renewal) => (globalThis as unknown as HarnessWindow).startClient(t, c, { renewal }),
    short,
    chat.id,
    { token: alice.token, refreshBeforeExpiryMs: 3000 },
  );
  await waitFor('renewed', async () => (await stateOf(page)).renewals.length === 1, GENEROUS);
  await m.call(bob.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'around the renewal' });
  await m.dispatch();
  // Past the first token's exp and the hub's next expiry check.
  await new Promise((r) => setTimeout(r, Math.max(0, exp * 1000 - Date.now() + 1500)));
  await page.evaluate(() => (globalThis as unknown as HarnessWindow).client.settled!());
  const s = await stateOf(page);
  assert.deepEqual([s.renewals, s.states], [['expiring'], ['connecting', 'connected']], 'asked once, never reconnecting');
  assert.deepEqual(s.messages.map((x) => x.body), ['around the renewal']);
  await call(page, 'stop');
});
