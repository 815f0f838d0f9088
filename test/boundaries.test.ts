import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const depcruise = join(root, 'node_modules/.bin/depcruise');

/** Runs the project's dependency-cruiser rules over a small tree laid out like src/. */
function cruise(files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'boundaries-'));
  try {
    cpSync(join(root, 'tsconfig.json'), join(dir, 'tsconfig.json'));
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const res = spawnSync(depcruise, ['src', '--config', join(root, '.dependency-cruiser.cjs')], { cwd: dir, encoding: 'utf8' });
    return { status: res.status, output: res.stdout + res.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const base = {
  'src/modules/identity/index.ts': `export { grant } from './roles.ts';\n`,
  'src/modules/identity/roles.ts': `export const grant = () => 1;\n`,
  'src/platform/db/index.ts': `export const db = 1;\n`,
};

test('a module may use another module through its index.ts and the platform freely', () => {
  const res = cruise({
    ...base,
    'src/modules/messenger/index.ts': `import { grant } from '../identity/index.ts';\nimport { db } from '../../platform/db/index.ts';\nexport const x = grant() + db;\n`,
  });
  assert.equal(res.status, 0, res.output);
});

test("a module importing another module's internals fails the check", () => {
  const res = cruise({
    ...base,
    'src/modules/messenger/index.ts': `import { grant } from '../identity/roles.ts';\nexport const x = grant();\n`,
  });
  assert.notEqual(res.status, 0);
  assert.match(res.output, /module-internals/);
});

test("the platform importing the app's config fails the check", () => {
  const res = cruise({
    ...base,
    'src/config.ts': `export type Config = { A: number };\n`,
    'src/platform/db/settings.ts': `import type { Config } from '../../config.ts';\nexport const a = (c: Config) => c.A;\n`,
  });
  assert.notEqual(res.status, 0);
  assert.match(res.output, /platform-knows-no-app/);
});

test("a module reaching past a kernel part's index.ts fails the check; the index and module.ts/time.ts pass", () => {
  const kernel = {
    ...base,
    'src/platform/jobs/index.ts': `export { defineJob } from './types.ts';\n`,
    'src/platform/jobs/types.ts': `export const defineJob = () => 1;\n`,
    'src/platform/time.ts': `export const now = () => 1;\n`,
  };
  const past = cruise({ ...kernel, 'src/modules/messenger/index.ts': `import { defineJob } from '../../platform/jobs/types.ts';\nexport const x = defineJob();\n` });
  assert.notEqual(past.status, 0);
  assert.match(past.output, /kernel-through-its-index/);
  const through = cruise({
    ...kernel,
    'src/modules/messenger/index.ts': `import { defineJob } from '../../platform/jobs/index.ts';\nimport { now } from '../../platform/time.ts';\nexport const x = defineJob() + now();\n`,
  });
  assert.equal(through.status, 0, through.output);
});

test('the platform importing a module fails the check', () => {
  const res = cruise({
    ...base,
    'src/platform/db/uses-module.ts': `import { grant } from '../../modules/identity/index.ts';\nexport const y = grant();\n`,
  });
  assert.notEqual(res.status, 0);
  assert.match(res.output, /platform-knows-no-module/);
});

test('the push part importing a module fails the check, and a module reaching past its index.ts does too', () => {
  const push = cruise({
    ...base,
    'src/platform/push/index.ts': `import { grant } from '../../modules/identity/index.ts';\nexport const x = grant();\n`,
  });
  assert.notEqual(push.status, 0);
  assert.match(push.output, /push-knows-no-module/);
  const module = cruise({
    ...base,
    'src/platform/push/index.ts': `export { enqueue } from './outbox-sql.ts';\n`,
    'src/platform/push/outbox-sql.ts': `export const enqueue = () => 1;\n`,
    'src/modules/messenger/index.ts': `import { enqueue } from '../../platform/push/outbox-sql.ts';\nexport const x = enqueue();\n`,
  });
  assert.notEqual(module.status, 0);
  assert.match(module.output, /push-through-its-index/);
});

test("the messenger and notifications never import each other's frames, not even through an index.ts", () => {
  const res = cruise({
    ...base,
    'src/modules/messenger/index.ts': `export const frame = 1;\n`,
    'src/modules/notifications/index.ts': `import { frame } from '../messenger/index.ts';\nexport const x = frame;\n`,
  });
  assert.notEqual(res.status, 0);
  assert.match(res.output, /no-foreign-frames/);
});

test('the app wiring a module function past src/modules/index.ts fails the check', () => {
  const res = cruise({
    ...base,
    'src/modules/index.ts': `export { grant } from './identity/index.ts';\n`,
    'src/app.ts': `import { grant } from './modules/identity/index.ts';\nexport const x = grant();\n`,
  });
  assert.notEqual(res.status, 0);
  assert.match(res.output, /app-wires-no-module-function/);
});

const messenger = (files: Record<string, string>) => cruise(Object.fromEntries(Object.entries(files).map(([path, text]) => [`src/modules/messenger/${path}`, text])));

test("the messenger's bottom floor (model/) importing one of its parts fails the check; the parts importing model/ pass", () => {
  const up = messenger({
    'model/push-rows.ts': `import { x } from '../calls/signals.ts';\nexport const y = x;\n`,
    'calls/signals.ts': `export const x = 1;\n`,
  });
  assert.notEqual(up.status, 0, up.output);
  assert.match(up.output, /messenger-model-is-the-ground/);
  const down = messenger({
    'model/push-rows.ts': `export const x = 1;\n`,
    'calls/signals.ts': `import { x } from '../model/push-rows.ts';\nexport const y = x;\n`,
  });
  assert.equal(down.status, 0, down.output);
});

test('a lower floor of the messenger importing a higher one fails the check (the user replica calling into calls)', () => {
  const res = messenger({
    'user-replica/apply.ts': `import { removeFromMediaSessions } from '../calls/deactivation.ts';\nexport const y = removeFromMediaSessions;\n`,
    'calls/deactivation.ts': `export const removeFromMediaSessions = 1;\n`,
  });
  assert.notEqual(res.status, 0, res.output);
  assert.match(res.output, /messenger-floor-2/);
});

test("no file of the messenger imports a higher floor, not even for a type: context.ts naming the calls' join minter fails the check", () => {
  const files = { 'calls/media-join.ts': `export type MediaJoinMinter = () => void;\nexport const mint = 1;\n` };
  const typeOnly = messenger({ ...files, 'context.ts': `import type { MediaJoinMinter } from './calls/media-join.ts';\nexport interface C { m: MediaJoinMinter }\n` });
  assert.notEqual(typeOnly.status, 0, typeOnly.output);
  assert.match(typeOnly.output, /messenger-floor-3/);
  // The other way round passes: a part's own extension of the shared context.
  const extension = messenger({ 'context.ts': `export interface C { n: number }\n`, 'calls/media-join.ts': `import type { C } from '../context.ts';\nexport interface CallsC extends C { m: () => void }\n` });
  assert.equal(extension.status, 0, extension.output);
});

test('parts on one floor of the messenger importing each other fail the check (chats reading the blacklist from contacts)', () => {
  const res = messenger({
    'chats/chats.ts': `import { blockedWith } from '../contacts/blacklist.ts';\nexport const y = blockedWith;\n`,
    'contacts/blacklist.ts': `export const blockedWith = 1;\n`,
  });
  assert.notEqual(res.status, 0, res.output);
  assert.match(res.output, /messenger-parts-on-one-floor-apart/);
});
