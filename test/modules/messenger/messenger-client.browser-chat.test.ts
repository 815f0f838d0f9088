import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { messengerApp } from './support/app.ts';
import { launchChromium, pageStep, sdkPage } from './support/browser.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client library's browser bundle in a real headless Chromium against the real service, for
 * what a property chat adds to text: a reply whose parent's preview arrives with it, a mention, a
 * reaction (its frame at the other page, its count and `mine` in history), a chat's notification
 * level, and message search with highlights — each called through the library as an app would.
 */

interface PageMessage { messageId: string; body: string | null; replyTo: { messageId: string; excerpt: string | null } | null; mentionedUserIds: string[] }
type PageState = { messages: PageMessage[]; events: { name: string; payload: Record<string, unknown> }[]; sent: { clientMessageId: string; id: string }[] };
type HarnessWindow = { client: Record<string, (...args: unknown[]) => Promise<unknown>>; state: PageState; startClient(token: string, chatId: string): Promise<void> };

const GENEROUS = 60_000; // two cores shared by every test: polling limits, never fixed sleeps
/** Calls client[method](...args) in the page; answers its result, or { error: { code, status } }. */
const call = (page: Page, method: string, ...args: unknown[]) =>
  pageStep(page, method, () =>
    page.evaluate(
      async (name, list) => {
        try {
          return await (globalThis as unknown as HarnessWindow).client[name]!(...list);
        } catch (e) {
          const err = e as { code: string; status: number };
          return { error: { code: err.code, status: err.status } };
        }
      },
      method,
      args,
    ),
  );
const stateOf = (page: Page) => pageStep(page, 'read its state', () => page.evaluate(() => (globalThis as unknown as HarnessWindow).state));

test('in Chromium: a reply with its parent preview, a mention, a reaction with counts, a notification level and message search, through the library', { timeout: 300_000 }, async () => {
  const m = await messengerApp();
  const origin = `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`;
  const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(bob.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'Flat 12', memberUserIds: [alice.id, carol.id] })).body;

  const browser = await launchChromium();
  const [a, b] = [await sdkPage(browser, origin), await sdkPage(browser, origin)];
  await pageStep(a, 'alice start', () => a.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c), alice.token, chat.id));
  await pageStep(b, 'bob start', () => b.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c), bob.token, chat.id));
  // alice answers the group's request, so what she shares (her reactions) counts for the others.
  assert.equal(((await call(a, 'acceptChat', chat.id)) as { isRequest: boolean }).isRequest, false);

  await call(b, 'send', chat.id, { kind: 'Text', body: 'The lease draft is ready for signing' });
  // send() resolves once queued: the dispatch must come after the service has the message.
  await waitFor("bob's send acknowledged", async () => (await stateOf(b)).sent.length === 1, GENEROUS);
  await m.dispatch();
  await waitFor("bob's message at alice's page", async () => (await stateOf(a)).messages.length === 1, GENEROUS);
  const parent = (await stateOf(a)).messages[0]!;

  await call(a, 'send', chat.id, { kind: 'Text', body: 'Looks good, signing tonight', replyToMessageId: parent.messageId, mentionedUserIds: [bob.id] });
  await waitFor("alice's reply acknowledged", async () => (await stateOf(a)).sent.length === 1, GENEROUS);
  await m.dispatch();
  await waitFor("alice's reply at bob's page", async () => (await stateOf(b)).messages.length === 2, GENEROUS);
  const reply = (await stateOf(b)).messages[1]!;
  assert.deepEqual(
    [reply.replyTo?.messageId, reply.replyTo?.excerpt, reply.mentionedUserIds],
    [parent.messageId, 'The lease draft is ready for signing', [bob.id]],
    'the pushed reply carries its parent preview and the mention',
  );

  assert.deepEqual(await call(b, 'react', chat.id, reply.messageId, '👍'), [{ emoji: '👍', count: 1, mine: true }]);
  await m.dispatch();
  await waitFor("bob's reaction at alice's page", async () => (await stateOf(a)).events.some((e) => e.name === 'reaction_changed' && e.payload.UserId === bob.id), GENEROUS);
  const history = (await call(a, 'history', chat.id)) as { items: { messageId: string; reactions: unknown[]; replyTo: { excerpt: string } | null }[] };
  assert.deepEqual(
    history.items.map((x) => [x.messageId, x.reactions, x.replyTo?.excerpt ?? null]),
    [
      [parent.messageId, [], null],
      [reply.messageId, [{ emoji: '👍', count: 1, mine: false }], 'The lease draft is ready for signing'],
    ],
    "alice's history: the reaction counted, not hers; the reply's preview",
  );

  assert.equal(((await call(a, 'setChatNotifications', chat.id, 'mentions')) as { notificationLevel: string }).notificationLevel, 'mentions');
  assert.equal(((await call(a, 'getChat', chat.id)) as { notificationLevel: string }).notificationLevel, 'mentions');
  assert.equal(((await call(b, 'getChat', chat.id)) as { notificationLevel: string }).notificationLevel, 'all', "bob's own level is his");

  const found = (await call(a, 'searchMessages', 'lease')) as { items: { message: { messageId?: string; id?: string }; highlight: { text: string; match: boolean }[] }[] };
  assert.equal(found.items.length, 1, 'one hit: the parent');
  assert.ok(found.items[0]!.highlight.some((p) => p.match && /lease/i.test(p.text)), `the word highlighted: ${JSON.stringify(found.items[0]!.highlight)}`);
  const carolFinds = await m.call<{ items: unknown[] }>(carol.token, 'GET', '/api/messenger/messages/search?q=lease');
  assert.equal(carolFinds.body.items.length, 1, 'a member who joined before it finds it too');
  const stranger = await m.user();
  assert.deepEqual((await m.call<{ items: unknown[] }>(stranger.token, 'GET', '/api/messenger/messages/search?q=lease')).body.items, [], 'a stranger finds nothing');

  await Promise.all([a, b].map((p) => call(p, 'stop')));
});
