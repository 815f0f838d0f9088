import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { messengerApp } from './support/app.ts';
import { launchChromium, sdkPage } from './support/browser.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * Resuming across a page reload in a real headless Chromium, as the package README shows it: the
 * page keeps client.cursor in localStorage (onCursor) and the next page of the same origin starts
 * with it (resumeFrom), so what happened while no page was open arrives once — the message and the
 * rename — and nothing from before the cursor comes again.
 */

type PageState = { messages: { body: string | null; seq: number }[]; events: { name: string; payload: Record<string, unknown> }[] };
type HarnessWindow = { state: PageState; client: { state: string; settled(): Promise<void>; stop(): Promise<void> } } & {
  startClient(token: string, chatId: string, opts: { afterSeq?: number; persistCursor?: boolean }): Promise<void>;
};
const stateOf = (page: Page) => page.evaluate(() => (globalThis as unknown as HarnessWindow).state);
const storedCursor = (page: Page) => page.evaluate(() => localStorage.getItem('pin.messenger.cursor'));
const GENEROUS = 60_000; // two cores shared by every test: polling limits, never fixed sleeps

test('in Chromium: a reloaded page resumes from the cursor it kept in localStorage and gets what it missed, once', { timeout: 300_000 }, async () => {
  const m = await messengerApp();
  const origin = `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`;
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  await m.accept(bob.token, chat.id);
  await m.dispatch();

  const browser = await launchChromium();
  const first = await sdkPage(browser, origin);
  const context = first.browserContext();
  await first.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c, { persistCursor: true }), bob.token, chat.id);
  await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'seen' });
  await m.dispatch();
  await waitFor('the first page shows the message', async () => (await stateOf(first)).messages.length === 1, GENEROUS);
  await waitFor('its cursor is stored', async () => (await storedCursor(first)) !== null, GENEROUS);
  const cursorBefore = await storedCursor(first);
  await first.close(); // the reload: the page goes away without stopping its client

  await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'missed' });
  await m.call(alice.token, 'PATCH', `/api/messenger/chats/${chat.id}`, { title: 'Renamed' });
  await m.dispatch();

  const second = await sdkPage(browser, origin, { context });
  assert.equal(await storedCursor(second), cursorBefore, 'the same origin\'s localStorage');
  // The app shows Seq 1 already (its own store), and resumes the stream from the kept cursor.
  await second.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c, { afterSeq: 1, persistCursor: true }), bob.token, chat.id);
  await waitFor('what was missed', async () => {
    const s = await stateOf(second);
    return s.messages.length === 1 && s.events.some((e) => e.name === 'chat_updated');
  }, GENEROUS);
  await second.evaluate(() => (globalThis as unknown as HarnessWindow).client.settled());
  const s = await stateOf(second);
  assert.deepEqual(s.messages.map((x) => [x.seq, x.body]), [[2, 'missed']]);
  assert.deepEqual(s.events.map((e) => [e.name, e.payload.Change]), [['chat_updated', 'Renamed']], 'nothing from before the cursor again');
  assert.notEqual(await storedCursor(second), cursorBefore, 'the stored cursor moved on');
  await second.evaluate(() => (globalThis as unknown as HarnessWindow).client.stop());
});
