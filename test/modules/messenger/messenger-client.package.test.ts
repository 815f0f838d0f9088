import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { messengerApp } from './support/app.ts';
import { launchChromium, sdkPage } from './support/browser.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * The client library as an app installs it: `npm pack` of packages/messenger-client (dist/ as
 * `npm test`'s set-up built it), installed into a throwaway project outside the repository with its
 * public dependencies from the registry, then used against the real service from the machine's
 * Node (20+: no global WebSocket, so the SignalR client's own ws), from the repository's Node 24
 * (the built-in WebSocket), as an ES module and through require(), type-checked by tsc --strict in
 * both module kinds, and loaded through its `browser` export in headless Chromium.
 */

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGE = join(REPO, 'packages/messenger-client');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');

function run(cmd: string, args: string[], cwd: string): string {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 300_000 });
  assert.equal(res.status, 0, `${cmd} ${args.join(' ')} failed:\n${res.stdout}\n${res.stderr}`);
  return res.stdout;
}

/** The same, without blocking this process's event loop: the service the child talks to runs in it. */
async function runAsync(cmd: string, args: string[], cwd: string): Promise<string> {
  const res = await promisify(execFile)(cmd, args, { cwd, encoding: 'utf8', timeout: 120_000 }).catch((e: { stdout?: string; stderr?: string }) => {
    assert.fail(`${cmd} ${args.join(' ')} failed:\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  });
  return res.stdout;
}

/** The machine's own node (the first on PATH outside any node_modules/.bin): the Node an app's server may run. */
function systemNode(): string {
  const dir = (process.env.PATH ?? '').split(delimiter).find((d) => !d.includes('node_modules') && existsSync(join(d, 'node')));
  assert.ok(dir, 'no node on PATH besides the repository\'s');
  return join(dir, 'node');
}

// The app's code, the same through import and require(): connect, receive the chat's history
// through the Seq refill, send, and see a forged token refused with a typed error.
const APP = (load: string) => `${load}
async function main() {
  const [baseUrl, token, chatId] = process.argv.slice(2);
  const received = [];
  let sent;
  const client = new MessengerClient({ baseUrl, token, onMessage: (m) => received.push(m.body), onSent: (_p, m) => (sent = m) });
  client.trackChat(chatId, 0);
  await client.start();
  await client.send(chatId, { kind: 'Text', body: 'from ' + process.version });
  while (!sent) await new Promise((r) => setTimeout(r, 20));
  await client.settled();
  const forged = new MessengerClient({ baseUrl, token: token.slice(0, -6) + 'AAAAAA' });
  const refusal = await forged.start().then(() => null, (e) => ({ typed: e instanceof MessengerError, code: e.code, status: e.status }));
  console.log(JSON.stringify({ state: client.state, received, sent: sent.body, refusal, globalWebSocket: typeof WebSocket !== 'undefined' }));
  await client.stop();
}
main().catch((e) => { console.error(e); process.exit(1); });
`;

const CHECK_MTS = `import { MessengerClient, MessengerError, UnauthorizedError, type ChatMessage, type ConnectionState, type ListedChat } from '@pin/messenger-client';
const client = new MessengerClient({
  baseUrl: 'https://api.example.org',
  getToken: async ({ reason }) => {
    if (reason === 'rejected') throw new UnauthorizedError('signed out');
    return 'token';
  },
  onMessage: (m: ChatMessage) => console.log(m.messageId, m.seq, m.body?.length),
  onStateChanged: ({ state, error }) => {
    const s: ConnectionState = state;
    console.log(s, error?.code, error?.retryAfterMs);
  },
});
export async function demo(chatId: string): Promise<number> {
  const page = await client.history(chatId, { beforeSeq: 10, limit: 20 });
  const first: ListedChat | undefined = (await client.chatList()).items[0];
  try {
    await client.markRead(chatId, page.lastSeq);
  } catch (e) {
    if (e instanceof MessengerError) return e.status;
  }
  return page.items.length + (first?.lastMessage?.seq ?? 0) + (client.cursor?.length ?? 0);
}
// @ts-expect-error afterSeq and beforeSeq exclude each other
void client.history('c', { afterSeq: 1, beforeSeq: 2 });
`;
const CHECK_CTS = `import sdk = require('@pin/messenger-client');
const client: sdk.MessengerClient = new sdk.MessengerClient({ baseUrl: 'https://api.example.org', token: 't' });
const state: sdk.ConnectionState = client.state;
export = state;
`;
const TSCONFIG = {
  compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], types: [], noEmit: true },
  files: ['check.mts', 'check.cts'],
};

test('the packed package installs outside the repository and works from Node 20+ (import and require), tsc --strict and Chromium', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pin-sdk-app-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  // --ignore-scripts: dist/ is the set-up's build; prepack's rebuild would replace it under the browser test running alongside.
  const [packed] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], PACKAGE)) as { filename: string; files: { path: string }[] }[];
  const files = packed!.files.map((f) => f.path);
  for (const f of ['dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json', 'dist/browser/messenger-client.js', 'package.json', 'README.md']) {
    assert.ok(files.includes(f), `the package ships ${f}`);
  }
  assert.deepEqual(files.filter((f) => f.startsWith('src/') || f.startsWith('test/')), [], 'no sources or tests');
  // The browser module is minified (a page downloads it): esbuild's output is a line or two, with its source map beside it.
  const bundle = readFileSync(join(PACKAGE, 'dist/browser/messenger-client.js'), 'utf8');
  assert.ok(bundle.split('\n').length <= 3, `dist/browser/messenger-client.js is not minified (${bundle.split('\n').length} lines)`);
  assert.ok(files.includes('dist/browser/messenger-client.js.map'), 'with its source map');

  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'pin-sdk-app', private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', join(dir, packed!.filename)], dir);
  writeFileSync(join(dir, 'app.mjs'), APP(`import { MessengerClient, MessengerError } from '@pin/messenger-client';`));
  writeFileSync(join(dir, 'app.cjs'), APP(`const { MessengerClient, MessengerError } = require('@pin/messenger-client');`));
  writeFileSync(join(dir, 'check.mts'), CHECK_MTS);
  writeFileSync(join(dir, 'check.cts'), CHECK_CTS);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  run(process.execPath, [TSC, '-p', 'tsconfig.json'], dir);

  const m = await messengerApp();
  const origin = `http://127.0.0.1:${(m.app.server.address() as { port: number }).port}`;
  const [alice, bob] = [await m.user(), await m.user()];
  const chat = (await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [bob.id] })).body;
  await m.call(alice.token, 'POST', `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: 'hello' });

  const node20 = systemNode();
  const major = Number(run(node20, ['-p', 'process.versions.node'], dir).trim().split('.')[0]);
  assert.ok(major >= 20, `the machine's node is ${major}; the package supports 20+`);
  const runs: [string, string, boolean][] = [
    [node20, 'app.mjs', major >= 22],
    [node20, 'app.cjs', major >= 22],
    [process.execPath, 'app.mjs', true],
    [process.execPath, 'app.cjs', true],
  ];
  const inChat = ['hello']; // what each run's refill finds: the first message and the earlier runs' sends
  for (const [node, script, builtIn] of runs) {
    const out = JSON.parse((await runAsync(node, [script, origin, bob.token, chat.id], dir)).trim().split('\n').at(-1)!);
    const version = run(node, ['-p', 'process.version'], dir).trim();
    assert.deepEqual(out, {
      state: 'connected',
      received: [...inChat],
      sent: `from ${version}`,
      refusal: { typed: true, code: 'AUTH_INVALID_TOKEN', status: 401 },
      globalWebSocket: builtIn,
    }, `${script} on Node ${version}`);
    inChat.push(out.sent);
  }

  // The bundler-facing `browser` condition names the self-contained browser module; Chromium runs it.
  const resolved = run(process.execPath, ['--conditions=browser', '--input-type=module', '-e', "console.log(import.meta.resolve('@pin/messenger-client'))"], dir).trim();
  assert.match(resolved, /\/node_modules\/@pin\/messenger-client\/dist\/browser\/messenger-client\.js$/);
  const browser = await launchChromium();
  const page = await sdkPage(browser, origin, { bundlePath: fileURLToPath(resolved) });
  await page.evaluate((t, c) => (globalThis as unknown as { startClient(t: string, c: string): Promise<void> }).startClient(t, c), bob.token, chat.id);
  await waitFor('the page refilled the chat', async () => (await page.evaluate(() => (globalThis as unknown as { state: { messages: unknown[] } }).state.messages.length)) >= 1, 60_000);
  assert.equal(await page.evaluate(() => (globalThis as unknown as { client: { state: string } }).client.state), 'connected');
  await page.evaluate(() => (globalThis as unknown as { client: { stop(): Promise<void> } }).client.stop());
});
