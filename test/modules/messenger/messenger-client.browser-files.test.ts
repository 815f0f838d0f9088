import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { launchChromium, sdkPage } from './support/browser.ts';
import { chatWithMember, filesApp, PNG } from './files/support.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client library's browser bundle in a real headless Chromium against the real service and the
 * real object store (another origin: a CORS preflight for the signed PUT): a page uploads a Blob with
 * uploadFile and sends it by fileId, the other member's page receives the message and downloads the
 * same bytes through fileDownload; searchMessages finds a sent message with its highlight and pages
 * by cursor.
 */

type HarnessWindow = {
  client: Record<string, (...args: unknown[]) => Promise<unknown>>;
  state: { messages: { kind: string; body: string | null; fileMeta: { fileId: string; fileName: string; contentType: string; size: number } | null }[] };
  startClient(token: string, chatId: string): Promise<void>;
};

const GENEROUS = 60_000; // two cores shared by every test: polling limits, never fixed sleeps
const stateOf = (page: Page) => page.evaluate(() => (globalThis as unknown as HarnessWindow).state);

test('in Chromium: uploadFile and send by fileId; the other member receives it and downloads the same bytes; searchMessages pages by cursor with highlights', { timeout: 300_000 }, async () => {
  const m = await filesApp();
  const origin = new URL(m.url).origin;
  const { owner, member, chatId } = await chatWithMember(m);
  const browser = await launchChromium();
  const [mine, theirs] = [await sdkPage(browser, origin), await sdkPage(browser, origin)];
  await mine.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c), owner.token, chatId);
  await theirs.evaluate((t, c) => (globalThis as unknown as HarnessWindow).startClient(t, c), member.token, chatId);

  const file = await mine.evaluate(
    async (chatId, bytes) => {
      const { client } = globalThis as unknown as HarnessWindow;
      const data = new Blob([new Uint8Array(bytes)], { type: 'image/png' });
      const file = (await client.uploadFile!(chatId, { name: 'flat.png', type: data.type, data })) as { fileId: string; status: string; size: number };
      await client.send!(chatId, { kind: 'File', fileId: file.fileId });
      for (const body of ['Смотрели квартиру на Тверской', 'Две квартиры свободны', 'Квартира продана']) await client.send!(chatId, { kind: 'Text', body });
      await client.settled!(); // stored: send() only queues
      return file;
    },
    chatId,
    [...PNG],
  );
  assert.deepEqual([file.status, file.size], ['Ready', PNG.length]);
  await waitFor('the member receives all four', async () => (await m.dispatch(), (await stateOf(theirs)).messages.length === 4), GENEROUS);
  const received = (await stateOf(theirs)).messages[0]!;
  assert.deepEqual([received.kind, received.fileMeta], ['File', { fileId: file.fileId, fileName: 'flat.png', contentType: 'image/png', size: PNG.length }]);

  const got = await theirs.evaluate(async (chatId, fileId) => {
    const { client } = globalThis as unknown as HarnessWindow;
    const ticket = (await client.fileDownload!(chatId, fileId)) as { url: string; fileName: string };
    const res = await fetch(ticket.url);
    return { status: res.status, fileName: ticket.fileName, bytes: [...new Uint8Array(await res.arrayBuffer())] };
  }, chatId, file.fileId);
  assert.deepEqual([got.status, got.fileName], [200, 'flat.png']);
  assert.deepEqual(Buffer.from(got.bytes), PNG);

  const pages = await theirs.evaluate(async (chatId) => {
    const { client } = globalThis as unknown as HarnessWindow;
    type Page = { items: { message: { body: string; chatId: string }; highlight: { text: string; match: boolean }[] }[]; nextCursor: string | null };
    const first = (await client.searchMessages!('квартира', { chatId, limit: 2 })) as Page;
    const second = (await client.searchMessages!('квартира', { chatId, limit: 2, cursor: first.nextCursor })) as Page;
    return [first, second];
  }, chatId);
  assert.deepEqual(pages.map((p) => [p.items.length, p.nextCursor === null]), [[2, false], [1, true]]);
  const hits = pages.flatMap((p) => p.items);
  assert.deepEqual(hits.map((h) => h.message.body).sort(), ['Две квартиры свободны', 'Квартира продана', 'Смотрели квартиру на Тверской']);
  for (const hit of hits) {
    assert.ok(hit.highlight.some((p) => p.match && p.text.toLowerCase().startsWith('квартир')), JSON.stringify(hit.highlight));
    assert.equal(hit.highlight.map((p) => p.text).join(''), hit.message.body);
  }
  await mine.evaluate(() => (globalThis as unknown as HarnessWindow).client.stop!());
  await theirs.evaluate(() => (globalThis as unknown as HarnessWindow).client.stop!());
});
