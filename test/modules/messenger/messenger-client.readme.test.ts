import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Every TypeScript example of the client library's README compiles under `tsc --strict` against
 * the built package (dist/, as `npm test`'s set-up builds it, resolved through its package.json
 * exports as an app resolves it), each example as a module of its own. What an example takes from
 * the app around it (its UI, its session, the ids it shows) is declared once below; the browser
 * example's module script is checked too, importing the package instead of the path a page serves
 * the bundle at.
 */

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGE = join(REPO, 'packages/messenger-client');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');

const APP_AROUND_THE_EXAMPLES = `
type Sdk = typeof import('@pin/messenger-client');
declare const client: InstanceType<Sdk['MessengerClient']>;
declare const session: { accessToken: string };
declare const auth: { refresh(): Promise<string> };
declare const ui: { [action: string]: (...args: unknown[]) => void };
declare const getToken: (ctx: import('@pin/messenger-client').TokenContext) => Promise<string>;
declare const baseUrl: string, token: string, chatId: string, peerId: string, groupId: string, messageId: string, fcmToken: string;
declare const lastSeqShown: number;
declare function render(message: import('@pin/messenger-client').ChatMessage): void;
declare function reloadChatList(): void;
`;

/** The README's ```ts blocks, and the <script type="module"> of its ```html blocks. */
function readmeExamples(readme: string): string[] {
  const ts = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const html = [...readme.matchAll(/```html\n([\s\S]*?)```/g)].flatMap((m) => [...m[1]!.matchAll(/<script type="module">([\s\S]*?)<\/script>/g)].map((s) => s[1]!));
  return [...ts, ...html.map((script) => script.replace(/from '\/assets\/messenger-client\.js'/g, "from '@pin/messenger-client'"))];
}

test('every TypeScript example in the client library README compiles under tsc --strict against the built package', { timeout: 120_000 }, () => {
  const examples = readmeExamples(readFileSync(join(PACKAGE, 'README.md'), 'utf8'));
  assert.ok(examples.length >= 4, `found ${examples.length} examples: the README's fences changed?`);
  const dir = mkdtempSync(join(tmpdir(), 'pin-sdk-readme-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'node_modules/@pin'), { recursive: true });
  symlinkSync(PACKAGE, join(dir, 'node_modules/@pin/messenger-client'));
  writeFileSync(join(dir, 'app.d.ts'), APP_AROUND_THE_EXAMPLES);
  const files = examples.map((code, i) => {
    const name = `example-${i + 1}.mts`;
    // `export {}`: a module of its own even when the example imports nothing, so top-level await works.
    writeFileSync(join(dir, name), `${code}\nexport {};\n`);
    return name;
  });
  const tsconfig = {
    compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], types: [], noEmit: true },
    files: ['app.d.ts', ...files],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  const res = spawnSync(process.execPath, [TSC, '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: dir, encoding: 'utf8' });
  const numbered = (out: string) => out.replace(/example-(\d+)\.mts/g, (_, n: string) => `README example ${n} (${examples[Number(n) - 1]!.trim().split('\n')[0]})`);
  assert.equal(res.status, 0, `the README examples do not compile:\n${numbered(res.stdout)}${res.stderr}`);
});
