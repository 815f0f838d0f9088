import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { after } from 'node:test';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'puppeteer-core';
import { buildTestApp } from '../../support/app.ts';
import { launchChromium } from '../../modules/messenger/support/browser.ts';

/**
 * A web app on another origin than the API, in headless Chromium: the page is served by a server of
 * its own on another port (another origin), and calls the API and the hub's negotiate with the official
 * @microsoft/signalr browser bundle. The browser enforces CORS, so what the page can read is what
 * the service's answers allow: an origin in CORS_ALLOWED_ORIGINS works, another is blocked.
 */

const SIGNALR_BUNDLE = new URL('../../../node_modules/@microsoft/signalr/dist/browser/signalr.min.js', import.meta.url).pathname;

const PAGE = `<!doctype html><meta charset="utf-8"><title>web app</title>
<script src="/signalr.min.js"></script>
<script>
window.callApi = async (api, token) => {
  try {
    const res = await fetch(api + '/api/messenger/chats', { headers: { authorization: 'Bearer ' + token } });
    return { status: res.status, body: await res.json() };
  } catch (e) {
    return { error: String(e) };
  }
};
window.connectHub = async (api, token) => {
  const connection = new signalR.HubConnectionBuilder()
    .withUrl(api + '/hubs/messenger', { accessTokenFactory: () => token })
    .configureLogging(signalR.LogLevel.None)
    .build();
  try {
    await connection.start();
    const state = connection.state;
    await connection.stop();
    return { state };
  } catch (e) {
    return { error: String(e) };
  }
};
window.ready = true;
</script>`;

/** A second origin: a plain HTTP server on a port of its own serving the page and the SignalR bundle. */
async function webAppServer(): Promise<{ origin: string; server: Server }> {
  const bundle = await readFile(SIGNALR_BUNDLE, 'utf8');
  const server = createServer((req, res) => {
    if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    else if (req.url === '/signalr.min.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    else res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  after(() => server.close());
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function openApp(browser: Browser, origin: string): Promise<Page> {
  const page = await (await browser.createBrowserContext()).newPage();
  page.setDefaultTimeout(60_000);
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true);
  return page;
}

type CallResult = { status?: number; body?: unknown; error?: string };
type HubResult = { state?: string; error?: string };
type PageWindow = { callApi(api: string, token: string): Promise<CallResult>; connectHub(api: string, token: string): Promise<HubResult> };

test('in Chromium: a web app on an allowed origin calls the API and connects to the hub; one on another origin is blocked by the browser', { timeout: 180_000 }, async () => {
  const [allowed, refused] = [await webAppServer(), await webAppServer()];
  const t = await buildTestApp({ CORS_ALLOWED_ORIGINS: allowed.origin });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const api = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const token = await t.token();
  // What reached the service from each origin: a refusal must be the browser's, after the preflight.
  const seen: { origin: string | undefined; method: string; url: string }[] = [];
  t.app.server.on('request', (req: { headers: { origin?: string }; method?: string; url?: string }) => {
    seen.push({ origin: req.headers.origin, method: req.method ?? '', url: (req.url ?? '').split('?')[0]! });
  });

  const browser = await launchChromium();
  const [good, bad] = [await openApp(browser, allowed.origin), await openApp(browser, refused.origin)];

  const fromAllowed = await good.evaluate((a, tok) => (globalThis as unknown as PageWindow).callApi(a, tok), api, token);
  assert.equal(fromAllowed.error, undefined, fromAllowed.error);
  assert.equal(fromAllowed.status, 200);
  assert.deepEqual((fromAllowed.body as { items: unknown[] }).items, [], 'the page read the answer: a new user has no chats');
  const hubFromAllowed = await good.evaluate((a, tok) => (globalThis as unknown as PageWindow).connectHub(a, tok), api, token);
  assert.deepEqual(hubFromAllowed, { state: 'Connected' });

  const fromRefused = await bad.evaluate((a, tok) => (globalThis as unknown as PageWindow).callApi(a, tok), api, token);
  assert.match(fromRefused.error ?? '', /TypeError: Failed to fetch/, JSON.stringify(fromRefused));
  const hubFromRefused = await bad.evaluate((a, tok) => (globalThis as unknown as PageWindow).connectHub(a, tok), api, token);
  assert.match(hubFromRefused.error ?? '', /Failed to fetch|Failed to complete negotiation/, JSON.stringify(hubFromRefused));

  // The refused origin got only as far as its preflights (answered 404): the browser sent nothing else.
  const refusedRequests = seen.filter((r) => r.origin === refused.origin);
  assert.ok(refusedRequests.length >= 2, JSON.stringify(seen));
  assert.deepEqual([...new Set(refusedRequests.map((r) => r.method))], ['OPTIONS']);
  assert.ok(seen.some((r) => r.origin === allowed.origin && r.method === 'POST' && r.url === '/hubs/messenger/negotiate'), 'the allowed negotiate ran');
});
