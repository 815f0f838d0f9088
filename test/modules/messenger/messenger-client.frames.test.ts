import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The client library's payload types follow the server's frame schemas: support/client-frames.check.ts
 * compares them at the type level (the same events, the same fields, every frame the server may build
 * a value of the client's type), so this compiles it alone with the repository's compiler settings.
 * Only the check file's own diagnostics count: compiled alone, the server files it reaches miss the
 * Fastify plugins' type augmentations the whole program has (the set-up's `tsc` checks those).
 */

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const CHECK = fileURLToPath(new URL('./support/client-frames.check.ts', import.meta.url));

test("the client library's frame types match the server's frame schemas", { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'pin-sdk-frames-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(REPO, 'tsconfig.json'), compilerOptions: { typeRoots: [join(REPO, 'node_modules/@types')] }, include: [], files: [CHECK] }));
  const res = spawnSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json'), '--pretty', 'false'], { encoding: 'utf8' });
  assert.equal(res.stderr, '');
  // A diagnostic is its first line and the indented lines under it (which name the events).
  const diagnostics = res.stdout.split(/\n(?=\S)/);
  const own = diagnostics.filter((d) => d.startsWith('test/modules/messenger/support/client-frames.check.ts'));
  assert.deepEqual(own, [], `the client's frame types and the server's frame schemas differ (the named events):\n${own.join('\n')}`);
});
