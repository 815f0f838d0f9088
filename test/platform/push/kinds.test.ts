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

test('a malformed kind, or claim reads ordering a kind the owner does not register or naming anything but names, is refused at registration', () => {
  const push = createPush();
  assert.throws(() => push.registerKinds({ owner: 'm', referenced: referenced(["Bad'Kind"]) }), /is not a kind name/);
  assert.throws(() => push.registerKinds({ owner: 'm', referenced: referenced(['A'.repeat(33)]) }), /is not a kind name/);
  assert.throws(
    () => push.registerKinds({ owner: 'n', referenced: { ...referenced(['Mine']), claimReads: { seqOrdered: ['Elsewhere'] } } }),
    /orders push kind "Elsewhere" by Seq, a kind it does not register/,
  );
  // The claim reads are declared as names; push writes the SQL, so anything else is refused.
  const beside = { as: 'thing', table: 'n.things', by: 'refId' as const, columns: { id: 'id' } };
  const refused: [object, RegExp][] = [
    [{ beside: { ...beside, table: 'n.things; drop table x' } }, /is not schema\.table/],
    [{ beside: { ...beside, columns: { id: 'id', name: 'name) --' } } }, /claim read column "name"/],
    [{ beside: { ...beside, columns: { name: 'name' } } }, /reads no id/],
    [{ groupVersion: { table: 'n.groups', column: 'version or true' } }, /is not schema\.table and a column/],
  ];
  for (const [claimReads, why] of refused) {
    assert.throws(() => createPush().registerKinds({ owner: 'n', referenced: { ...referenced(['Mine']), claimReads } }), why);
  }
});

test('two owners may each declare claim reads: each owner\'s joins apply to its own kinds\' rows only', () => {
  const push = createPush();
  push.registerKinds({ owner: 'a', referenced: { ...referenced(['AKind']), claimReads: { beside: { as: 'thing', table: 'a.things', by: 'refId', columns: { id: 'id' } }, seqOrdered: ['AKind'] } } });
  push.registerKinds({ owner: 'b', referenced: { ...referenced(['BKind']), claimReads: { groupVersion: { table: 'b.groups', column: 'version' } } } });
  const reads = push.kinds.claimReads();
  const text = (q: { queryChunks: unknown[] }) => JSON.stringify(q.queryChunks);
  assert.match(text(reads.joins as never), /left join a\.things b0 on b0\.id = c\.\\"refId\\" and c\.kind in \('AKind'\)/);
  assert.match(text(reads.groupJoins as never), /left join b\.groups g1 on g1\.id = c\.\\"chatId\\" and c\.\\"targetKind\\" = 'ChatGroup' and c\.kind in \('BKind'\)/);
  const row = { id: 'r', kind: 'AKind', refId: 'x', 'thing.id': 'x' };
  assert.deepEqual(reads.take(row), { id: 'r', kind: 'AKind', refId: 'x', thing: { id: 'x' } });
  assert.deepEqual(reads.take({ id: 'r', kind: 'BKind', refId: 'x', 'thing.id': null }), { id: 'r', kind: 'BKind', refId: 'x' }, 'another owner\'s row carries no read of a');
  assert.deepEqual(reads.take({ ...row, 'thing.id': null }), { id: 'r', kind: 'AKind', refId: 'x', thing: null }, 'the referenced row is gone');
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
