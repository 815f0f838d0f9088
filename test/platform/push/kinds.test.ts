import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { defineModule } from '../../../src/platform/module.ts';
import { messengerModule } from '../../../src/modules/messenger/index.ts';
import { createPush } from '../../../src/platform/push/index.ts';
import { pino } from 'pino';
import { buildApp } from '../../../src/app.ts';
import { loadConfig } from '../../../src/config.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { createTestDatabase } from '../../support/db.ts';

/**
 * The push part checks the kinds, not the table: a kind is registered once, by one module, with a
 * well-formed name, before anything is written, and its one writer refuses a row of any kind no
 * module registered as referenced.
 */

const referenced = (kinds: string[]) => ({ kinds, load: async () => undefined, build: () => ({ ok: false as const, code: 'X' }) });

test('building the service with a second module that registers one of the messenger’s kinds fails at construction', async () => {
  const rogue = defineModule({}, (deps) => {
    deps.push.registerKinds({ owner: 'rogue', referenced: referenced(['MessageReceived']) });
    return { name: 'rogue' };
  });
  const { pool, url } = await createTestDatabase({ poolMax: 2 });
  const config = loadConfig({ LOG_LEVEL: 'error', JOBS_ENABLED: 'false', PORT: '0' });
  const log = createLogger('error', pino.destination({ fd: 2, sync: true }));
  await assert.rejects(
    buildApp(config, { pool, databaseUrl: url, log, modules: [messengerModule(), rogue] }),
    /push kind MessageReceived is registered by messenger and rogue/,
  );
});

test('a malformed kind, or claim reads ordering a kind the owner does not register, is refused at registration', () => {
  const push = createPush();
  assert.throws(() => push.registerKinds({ owner: 'm', referenced: referenced(["Bad'Kind"]) }), /is not a kind name/);
  assert.throws(() => push.registerKinds({ owner: 'm', referenced: referenced(['A'.repeat(33)]) }), /is not a kind name/);
  const reads = { columns: {}, joins: {}, groupVersionJoin: {}, seqOrdered: ['Elsewhere'], take: (r: never) => r } as never;
  assert.throws(() => push.registerKinds({ owner: 'n', referenced: { ...referenced(['Mine']), claimReads: reads } }), /orders push kind "Elsewhere" by Seq, a kind it does not register/);
});

test('the writer refuses a row of an unregistered kind, or of a carried one, and writes nothing', async () => {
  const { db, pool } = await createTestDatabase({ poolMax: 2 });
  const push = createPush();
  push.registerKinds({ owner: 'notifications', carried: ['NotificationStatusChanged'] });
  push.registerKinds({ owner: 'messenger', referenced: referenced(['BlacklistChanged']) });
  const now = new Date('2026-03-01T10:00:00Z');
  const row = (kind: string) => ({ kind, targetKind: 'User' as const, targetUserId: randomUUID(), refId: randomUUID() });

  for (const kind of ['Unheard', 'NotificationStatusChanged']) {
    await assert.rejects(
      db.transaction((tx) => push.enqueue(tx, [row('BlacklistChanged'), row(kind)], now)),
      new RegExp(`push kind "${kind}" is not registered as referenced by any module`),
    );
  }
  assert.equal((await pool.query('select count(*)::int as n from push.realtime_outbox')).rows[0].n, 0);

  await db.transaction((tx) => push.enqueue(tx, [row('BlacklistChanged')], now));
  assert.deepEqual((await pool.query('select kind, status from push.realtime_outbox')).rows, [{ kind: 'BlacklistChanged', status: 'Pending' }]);
});
