import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { buildTestApp } from '../../support/app.ts';
import { defineModule } from '../../../src/platform/module.ts';

const PHONE = '+79997654321';

/** A route whose handler fails on a unique violation carrying a phone, as a module's would. */
const failingModule = defineModule({}, ({ db }) => ({
  name: 'failing',
  routes: (app) => {
    app.post('/test/people', async () => {
      await db.execute(sql`create table if not exists http_people (phone text primary key)`);
      await db.execute(sql`insert into http_people (phone) values (${PHONE}) on conflict do nothing`);
      await db.execute(sql`insert into http_people (phone) values (${PHONE})`);
      return { ok: true };
    });
  },
}));

test('a 500 caused by a failed query is logged by the request path without the row values', async () => {
  const lines: string[] = [];
  const { app } = await buildTestApp(
    {},
    { logDestination: { write: (l: string) => void lines.push(l) }, logLevel: 'info', modules: [failingModule] },
  );
  const res = await app.inject({ method: 'POST', url: '/test/people' });
  assert.equal(res.statusCode, 500);
  assert.deepEqual(res.json(), { code: 'INTERNAL_ERROR', message: 'internal error' });

  const text = lines.join('');
  const failed = lines.map((l) => JSON.parse(l) as { msg?: string; err?: Record<string, unknown> }).find((l) => l.msg === 'request failed');
  assert.ok(failed?.err, `no "request failed" line in:\n${text}`);
  assert.equal(failed.err.type, 'DrizzleQueryError');
  assert.equal((failed.err.cause as { code?: string }).code, '23505');
  assert.equal((failed.err.cause as { constraint?: string }).constraint, 'http_people_pkey');
  assert.equal(text.includes(PHONE.slice(2)), false, `the phone reached the log:\n${text}`);
  assert.equal(text.includes('params:'), false, `drizzle's params reached the log:\n${text}`);
});
