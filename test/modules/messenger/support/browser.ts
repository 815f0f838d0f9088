import { readFile } from 'node:fs/promises';
import { after } from 'node:test';
import puppeteer, { type Browser, type BrowserContext, type HTTPRequest, type Page } from 'puppeteer-core';

/**
 * Headless Chromium (Debian's chromium, which `npm test` installs when missing; puppeteer-core
 * downloads nothing) with pages that load the client library's browser bundle, built by `npm test`'s
 * set-up (or `npm run build -w packages/messenger-client`).
 *
 * The page is served at the app's own origin (`<app>/__sdk/…`, answered by request interception
 * before any request reaches the app), so the SDK calls the service same-origin, as a web app
 * deployed behind the same host would; the service's CORS stays as configured (closed).
 */

const BUNDLE = new URL('../../../../packages/messenger-client/dist/browser/messenger-client.js', import.meta.url).pathname;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * The page's harness: window.startClient(token, chatId, { afterSeq, persistCursor, fixedToken, renewal })
 * starts a MessengerClient recording what its listeners are handed (client.on(), as the package
 * README shows); with persistCursor it resumes from, and keeps, its cursor in localStorage; with
 * fixedToken it holds `token` itself (setToken replaces it) instead of asking a factory for it, and
 * with renewal `{ token, refreshBeforeExpiryMs }` its getToken answers that token (counting the asks).
 */
const PAGE = `<!doctype html><meta charset="utf-8"><title>sdk</title>
<script type="module">
import { MessengerClient } from '/__sdk/messenger-client.js';
window.startClient = async (token, chatId, { afterSeq = 0, persistCursor = false, fixedToken = false, renewal } = {}) => {
  const state = (window.state = { messages: [], events: [], pending: [], sent: [], resyncs: [], states: [], renewals: [] });
  const stored = persistCursor ? localStorage.getItem('pin.messenger.cursor') : null;
  const client = (window.client = new MessengerClient({
    baseUrl: location.origin,
    ...(fixedToken || renewal ? { token } : { accessTokenFactory: () => token }),
    ...(renewal ? { getToken: async ({ reason }) => (state.renewals.push(reason), renewal.token), refreshBeforeExpiryMs: renewal.refreshBeforeExpiryMs } : {}),
    ...(stored === null ? {} : { resumeFrom: stored }),
    backoff: { minMs: 50, baseMs: 200, capMs: 1000 },
  }));
  if (persistCursor) client.on('cursor', (cursor) => localStorage.setItem('pin.messenger.cursor', cursor));
  client.on('message', (m) => state.messages.push(m));
  client.on('event', ({ name, payload }) => state.events.push({ name, payload }));
  client.on('pending', (p) => state.pending.push(p.clientMessageId));
  client.on('sent', (p, stored) => state.sent.push({ clientMessageId: p.clientMessageId, id: stored.messageId }));
  client.on('resyncNeeded', (r) => state.resyncs.push(r));
  client.on('state', (c) => state.states.push(c.state));
  client.trackChat(chatId, afterSeq);
  await client.start();
};
window.sdkReady = true;
</script>`;

export async function launchChromium(): Promise<Browser> {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // A page answered by interception has no network address, so Chromium's local-network-access
    // checks would treat it as public and block its WebSocket to 127.0.0.1; a deployed page is
    // served from the service's own host and is not subject to them.
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-features=LocalNetworkAccessChecks'],
    protocolTimeout: 120_000,
  });
  after(() => browser.close());
  return browser;
}

/**
 * A page in a browser context of its own (its own storage and network state), or in `context` (a
 * page opened again after another was closed: a reload keeping localStorage), with the harness loaded
 * from `origin`; `bundlePath` another build of the browser bundle (the one a packed package installed).
 */
export async function sdkPage(browser: Browser, origin: string, opts: { bundlePath?: string; context?: BrowserContext } = {}): Promise<Page> {
  const bundlePath = opts.bundlePath ?? BUNDLE;
  const bundle = await readFile(bundlePath, 'utf8').catch(() => {
    throw new Error(`${bundlePath} is missing: run \`npm run build -w packages/messenger-client\` (npm test builds it)`);
  });
  const context = opts.context ?? (await browser.createBrowserContext());
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  // What goes wrong inside the page shows in the test's output, without the tokens in hub URLs.
  const report = (text: string) => process.stderr.write(`[chromium] ${text.replace(/(access_token|id)=[^&\s']+/g, '$1=…')}\n`);
  page.on('pageerror', (e) => report(String(e)));
  page.on('console', (msg) => {
    if (msg.type() === 'error') report(msg.text());
  });
  await page.setRequestInterception(true);
  const serve = (req: HTTPRequest): void => {
    const path = req.url().startsWith(origin) ? new URL(req.url()).pathname : '';
    if (path === '/__sdk/index.html') void req.respond({ status: 200, contentType: 'text/html', body: PAGE });
    else if (path === '/__sdk/messenger-client.js') void req.respond({ status: 200, contentType: 'text/javascript', body: bundle });
    else if (path === '/favicon.ico') void req.respond({ status: 204, body: '' });
    else void req.continue();
  };
  page.on('request', serve);
  await page.goto(`${origin}/__sdk/index.html`);
  await page.waitForFunction(() => (globalThis as unknown as { sdkReady?: boolean }).sdkReady === true);
  // From here on the page talks to the service directly (offline emulation then applies as on any network).
  page.off('request', serve);
  await page.setRequestInterception(false);
  return page;
}

/**
 * Runs one step against a page, naming it when the page does not answer within `ms` (below the
 * browser's 120 s protocol timeout, whose own error names no step): the failure then says which
 * step hung and what the page's client reported — or that the page's main thread no longer answers
 * at all. A rare hang in a full run is otherwise unattributable.
 */
export async function pageStep<T>(page: Page, label: string, step: () => Promise<T>, ms = 90_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const probe = page.evaluate(() => {
        const w = globalThis as unknown as { client?: { state?: string }; state?: Record<string, unknown[]> };
        return JSON.stringify({ client: w.client?.state, ...Object.fromEntries(Object.entries(w.state ?? {}).map(([k, v]) => [k, Array.isArray(v) ? v.length : v])) });
      });
      const quiet = new Promise<string>((resolve) => setTimeout(() => resolve('no answer: its main thread is blocked'), 5_000));
      void Promise.race([probe, quiet]).then(
        (seen) => reject(new Error(`page step "${label}" hung ${ms / 1000} s; the page: ${seen}`)),
        (err: unknown) => reject(new Error(`page step "${label}" hung ${ms / 1000} s; the page could not be read: ${String(err)}`)),
      );
    }, ms);
  });
  try {
    return await Promise.race([step(), hung]);
  } finally {
    clearTimeout(timer);
  }
}
