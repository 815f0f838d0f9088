import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { messengerApp } from './support/app.ts';
import { launchChromium, pageStep, sdkPage } from './support/browser.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client library's browser bundle in a real headless Chromium against the real service: two
 * pages as two users; one goes offline (Chromium's network emulation), sends twice while the other
 * marks the chat read and renames it; back online, the queued sends land exactly once, the other page
 * gets each once, and the first page gets the read receipt and the rename through the events cursor.
 */

interface PageState {
  messages: { body: string | null; clientMessageId: string | null; seq: number }[];
  events: { name: string; payload: Record<string, unknown> }[];
  pending: string[];
  sent: { clientMessageId: string; id: string }[];
}
type Harness = { state: PageState; client: { state: string; stop(): Promise<void>; send(chatId: string, c: unknown): Promise<{ clientMessageId: string }>; markRead(chatId: string, seq: number): Promise<number>; settled(): Promise<void> } };
type HarnessWindow = Harness & { startClient(token: string, chatId: string): Promise<void> };

const stateOf = (page: Page) => pageStep(page, 'read its state', () => page.evaluate(() => (globalThis as unknown as HarnessWindow).state));
const connection = (page: Page) => pageStep(page, 'read its connection state', () => page.evaluate(() => (globalThis as unknown as HarnessWindow).client.state));
const GENEROUS = 60_000; // two cores shared by every test: polling limits, never fixed sleeps

// Losing the network is noticed the way a real drop is: the SignalR client's 30 s server timeout
// (Chromium's offline emulation stops traffic without closing the socket), so the test takes about
// 40 s alone and longer on a loaded machine.
test('in Chromium: sends made offline land exactly once, and the missed read receipt and rename arrive through the cursor', { timeout: 300_000 }, async () => {
  const m = await messengerApp();
  const origin = `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`;
  const [alice, bob] = [await m.user(), await m.user()];
  // bob owns the chat (an owner may rename it); alice is a member.
  const chat = (await m.call<{ id: string }>(bob.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [alice.id] })).body;
  await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'before' });
  await m.dispatch(); // the chat's creation and first message are pushed before the pages start

  const browser = await launchChromium();
  const [a, b] = [await sdkPage(browser, origin), await sdkPage(browser, origin)];
  await pageStep(a, 'alice start', () => a.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c), alice.token, chat.id));
  await pageStep(b, 'bob start', () => b.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c), bob.token, chat.id));
  await waitFor('both pages refilled the first message', async () => (await stateOf(a)).messages.length === 1 && (await stateOf(b)).messages.length === 1, GENEROUS);

  // Every events-stream page alice's client reads after a reconnect, as the network delivered it.
  const resumed: { name: string }[] = [];
  a.on('response', (res) => {
    if (res.url().includes('/api/events?after=') && res.ok()) void res.json().then((page: { events: { name: string }[] }) => resumed.push(...page.events), () => undefined);
  });

  await pageStep(a, 'go offline', () => a.setOfflineMode(true));
  await waitFor('alice offline', async () => (await connection(a)) !== 'connected', GENEROUS);
  const queued = await pageStep(a, 'send twice offline', () => a.evaluate(async (c) => {
    const { client } = globalThis as unknown as HarnessWindow;
    return [(await client.send(c, { kind: 'Text', body: 'one' })).clientMessageId, (await client.send(c, { kind: 'Text', body: 'two' })).clientMessageId];
  }, chat.id));
  assert.deepEqual((await stateOf(a)).pending, queued, 'both shown as pending at once');

  assert.equal(await pageStep(b, 'bob markRead', () => b.evaluate((c) => (globalThis as unknown as HarnessWindow).client.markRead(c, 1), chat.id)), 1);
  const renamed = await pageStep(b, 'bob renames', () => b.evaluate(
    async (c, token) => (await fetch(`/api/messenger/chats/${c}`, { method: 'PATCH', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'Renamed' }) })).status,
    chat.id,
    bob.token,
  ));
  assert.equal(renamed, 200);
  await m.dispatch(); // pushed while alice is offline: she can only get these through the cursor
  const stored = await m.pool.query(`select count(*)::int as n from messenger.messages where chat_id = $1`, [chat.id]);
  assert.equal(stored.rows[0].n, 1, 'nothing of the queued sends reached the service while offline');

  await pageStep(a, 'go online', () => a.setOfflineMode(false));
  await waitFor('alice reconnected and resumed', async () => {
    const s = await stateOf(a);
    return s.sent.length === 2 && s.events.some((e) => e.name === 'chat_updated' && e.payload.Change === 'Renamed') && s.events.some((e) => e.name === 'read_receipt_updated');
  }, GENEROUS);
  assert.deepEqual((await stateOf(a)).sent.map((s) => s.clientMessageId), queued, 'acknowledged in send order');
  assert.ok(resumed.some((e) => e.name === 'read_receipt_updated') && resumed.some((e) => e.name === 'chat_updated'), 'read from the events stream after the reconnect');

  const rows = await m.pool.query<{ body: string; client_message_id: string }>(
    `select body, client_message_id from messenger.messages where chat_id = $1 and client_message_id is not null order by seq`,
    [chat.id],
  );
  assert.deepEqual(rows.rows, [
    { body: 'one', client_message_id: queued[0] },
    { body: 'two', client_message_id: queued[1] },
  ], 'each queued send stored exactly once');

  await m.dispatch();
  await waitFor('bob got both', async () => (await stateOf(b)).messages.length === 3, GENEROUS);
  await pageStep(a, 'alice settled()', () => a.evaluate(() => (globalThis as unknown as HarnessWindow).client.settled()));
  await pageStep(b, 'bob settled()', () => b.evaluate(() => (globalThis as unknown as HarnessWindow).client.settled()));
  const bob_ = await stateOf(b);
  assert.deepEqual(bob_.messages.map((x) => [x.body, x.clientMessageId]), [['before', null], ['one', queued[0]], ['two', queued[1]]], 'bob gets each once, in order');
  const alice_ = await stateOf(a);
  assert.deepEqual(
    alice_.events.map((e) => [e.name, e.payload.Change ?? e.payload.LastReadSeq]),
    [['read_receipt_updated', 1], ['chat_updated', 'Renamed']],
    'alice gets the receipt and the rename once each',
  );
  // Closed before the service stops, so the pages do not keep reconnecting to it.
  await Promise.all([a, b].map((p) => pageStep(p, 'stop()', () => p.evaluate(() => (globalThis as unknown as HarnessWindow).client.stop()))));
});
