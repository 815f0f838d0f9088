import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, sdkPage } from '../support/browser.ts';
import { chatWithMember, filesApp, PNG, type Download, type Ticket } from './support.ts';

/**
 * A web app moves the bytes itself, in headless Chromium: the page (at the service's origin) asks
 * for an upload, PUTs the file to the object store on another origin through the presigned URL
 * (a CORS preflight for the signed Content-Type), confirms, sends, and a member's page downloads it.
 */
test('in Chromium a page uploads a file to the object store through its presigned URL, sends it, and a member downloads the same bytes', { timeout: 180_000 }, async () => {
  const m = await filesApp();
  const origin = new URL(m.url).origin;
  const { owner, member, base } = await chatWithMember(m);
  const browser = await launchChromium();
  const page = await sdkPage(browser, origin);
  const sent = await page.evaluate(
    async (base, token, bytes) => {
      const api = (path: string, init: RequestInit = {}) =>
        fetch(path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.body ? { 'content-type': 'application/json' } : {}) } });
      const file = new Blob([new Uint8Array(bytes)], { type: 'image/png' });
      const ticket = (await (await api(`${base}/files`, { method: 'POST', body: JSON.stringify({ fileName: 'flat.png', contentType: file.type, size: file.size }) })).json()) as Ticket;
      const put = await fetch(ticket.uploadUrl, { method: ticket.method, headers: ticket.headers, body: file });
      const done = await api(`${base}/files/${ticket.fileId}/complete`, { method: 'POST' });
      const message = await api(`${base}/messages`, { method: 'POST', body: JSON.stringify({ kind: 'File', fileId: ticket.fileId }) });
      return { put: put.status, done: done.status, message: message.status, fileId: ticket.fileId };
    },
    base,
    owner.token,
    [...PNG],
  );
  assert.deepEqual([sent.put, sent.done, sent.message], [200, 200, 201], JSON.stringify(sent));

  const other = await sdkPage(browser, origin);
  const got = await other.evaluate(
    async (base, token, fileId) => {
      const ticket = (await (await fetch(`${base}/files/${fileId}/download`, { headers: { authorization: `Bearer ${token}` } })).json()) as Download;
      const res = await fetch(ticket.url);
      return { status: res.status, type: res.headers.get('content-type'), bytes: [...new Uint8Array(await res.arrayBuffer())] };
    },
    base,
    member.token,
    sent.fileId,
  );
  assert.deepEqual([got.status, got.type], [200, 'image/png']);
  assert.deepEqual(Buffer.from(got.bytes), PNG);
});
