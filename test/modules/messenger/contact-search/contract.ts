import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import type { Db } from '../../../../src/platform/db/index.ts';
import { createTestDatabase } from '../../../support/db.ts';
import { createLogger } from '../../../../src/platform/observability/logger.ts';
import { createRegistry } from '../../../../src/platform/observability/metrics.ts';
import { newId } from '../../../../src/platform/time.ts';
import type { ContactSearchIndex, MessengerContactSearchDocument } from '../../../../src/modules/messenger/contact-search/port.ts';
import { createContactSearchMetrics } from '../../../../src/modules/messenger/contact-search/metrics.ts';
import { contactSearchRebuildJob } from '../../../../src/modules/messenger/contact-search/rebuild.job.ts';
import { contactSearchIndexerJob } from '../../../../src/modules/messenger/contact-search/indexer.job.ts';
import { nextPhone } from '../support/user-sync.ts';
import { logCapture } from '../../../support/logs.ts';
import { metricValue } from '../../../support/metrics.ts';

/**
 * ONE contract for every contact search adapter (PostgreSQL and Elasticsearch): each adapter's
 * test file calls this with a factory, so both are held to the same behaviour — including the
 * indexer and the rebuild job, which only talk to the port.
 */

const doc = (over: Partial<MessengerContactSearchDocument> = {}): MessengerContactSearchDocument => ({
  userId: newId(),
  firstName: 'Ольга',
  middleName: null,
  lastName: 'Орлова',
  phoneNumber: nextPhone(),
  isActive: true,
  revision: 1,
  ...over,
});

const ctx = (log = createLogger('silent')) => ({ jobRunId: newId(), now: () => new Date(), signal: new AbortController().signal, log });

async function insertReplica(pool: pg.Pool, d: MessengerContactSearchDocument): Promise<void> {
  await pool.query(
    `insert into messenger.users (id, first_name, middle_name, last_name, phone_number, is_active, identity_user_version, revision, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $7, now(), now())`,
    [d.userId, d.firstName, d.middleName, d.lastName, d.phoneNumber, d.isActive, d.revision],
  );
}

export function contactSearchContract(name: string, makeIndex: (db: Db) => Promise<ContactSearchIndex>): void {
  describe(`contact search contract: ${name}`, () => {
    let pool: pg.Pool;
    let db: Db;
    let index: ContactSearchIndex;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    before(async () => {
      database = await createTestDatabase({ dropAtEnd: false });
      ({ pool, db } = database);
      index = await makeIndex(db);
      await index.prepare();
      await index.prepare(); // idempotent
    });
    after(async () => {
      await index.close();
      await database.drop();
    });

    test('an indexed active user is found by the E.164 phone; unknown phones are not', async () => {
      const d = doc({ middleName: 'Олеговна' });
      assert.deepEqual(await index.index([d]), { failed: [] });
      await index.refresh();
      assert.deepEqual(await index.findActiveByPhone(d.phoneNumber!), d);
      assert.equal(await index.findActiveByPhone(nextPhone()), null);
    });

    test('an inactive user is not found', async () => {
      const d = doc({ isActive: false });
      await index.index([d]);
      await index.refresh();
      assert.equal(await index.findActiveByPhone(d.phoneNumber!), null);
    });

    test('a lower revision never replaces a newer document; the same revision may be rewritten', async () => {
      const newer = doc({ revision: 5, firstName: 'Новая' });
      await index.index([newer]);
      const older = { ...newer, revision: 4, firstName: 'Старая', phoneNumber: nextPhone() };
      assert.deepEqual(await index.index([older]), { failed: [] }, 'an outdated write is not a failure');
      await index.refresh();
      assert.equal((await index.findActiveByPhone(newer.phoneNumber!))?.firstName, 'Новая');
      assert.equal(await index.findActiveByPhone(older.phoneNumber!), null);
      await index.index([{ ...newer, lastName: 'Исправленная' }]);
      await index.refresh();
      assert.equal((await index.findActiveByPhone(newer.phoneNumber!))?.lastName, 'Исправленная');
    });

    test('a phone move: the user is found by the new phone only', async () => {
      const d = doc();
      await index.index([d]);
      const moved = { ...d, revision: 2, phoneNumber: nextPhone() };
      await index.index([moved]);
      await index.refresh();
      assert.equal(await index.findActiveByPhone(d.phoneNumber!), null);
      assert.equal((await index.findActiveByPhone(moved.phoneNumber!))?.userId, d.userId);
    });

    test('a user without a phone (INV-MU-2 conflict) is indexed and never matches a phone', async () => {
      const d = doc({ phoneNumber: null });
      assert.deepEqual(await index.index([d]), { failed: [] });
    });

    test('remove deletes documents and ignores unknown ids', async () => {
      const d = doc();
      await index.index([d]);
      await index.remove([d.userId, newId()]);
      await index.refresh();
      assert.equal(await index.findActiveByPhone(d.phoneNumber!), null);
    });

    test('listUserIds pages through the documents in id order', async () => {
      await index.refresh();
      const all: string[] = [];
      for (let after: string | null = null; ; ) {
        const page: string[] = await index.listUserIds(after, 2);
        if (page.length === 0) break;
        all.push(...page);
        after = page[page.length - 1]!;
      }
      assert.ok(all.length >= 5);
      assert.deepEqual(all, [...all].sort());
      assert.equal(new Set(all).size, all.length);
    });

    test('health is ok', async () => assert.equal(await index.health(), 'ok'));

    test('the indexer writes queued replica rows and clears the queue', async () => {
      const d = doc({ revision: 3 });
      await insertReplica(pool, d);
      await pool.query(`insert into messenger.contact_search_pending (user_id, revision, enqueued_at, next_attempt_at) values ($1, 3, now(), now())`, [d.userId]);
      const metrics = createContactSearchMetrics(createRegistry(), db);
      const indexer = contactSearchIndexerJob({ db, index, metrics, settings: { intervalMs: 1000, batchSize: 100, maxRunMs: 5000, retryMaxMs: 60_000 } });
      const counts = await indexer.runOnce(ctx());
      assert.deepEqual(counts, { indexed: 1, failed: 0, batches: 1, claimed: 1, released: 0 });
      await index.refresh();
      assert.equal((await index.findActiveByPhone(d.phoneNumber!))?.revision, 3);
      assert.equal((await pool.query(`select 1 from messenger.contact_search_pending`)).rowCount, 0);
    });

    test('MessengerContactSearchRebuildJob reconciles the index with the replica in batches, logging its progress', async () => {
      const missing = [doc(), doc(), doc({ isActive: false })];
      const outdated = doc({ revision: 2, firstName: 'Актуальная' });
      for (const d of [...missing, outdated]) await insertReplica(pool, d);
      await index.index([{ ...outdated, revision: 1, firstName: 'Устаревшая' }]);
      const orphan = doc();
      await index.index([orphan]);

      const logs = logCapture();
      const registry = createRegistry();
      const rebuild = contactSearchRebuildJob({ db, index, metrics: createContactSearchMetrics(registry, db), batchSize: 2, cron: '30 3 * * *', maxRunMs: 3_600_000 });
      const counts = await rebuild.runOnce(ctx(createLogger('info', logs.stream)));
      const replicaCount = Number((await pool.query(`select count(*) as n from messenger.users`)).rows[0].n);
      assert.equal(counts.indexed, replicaCount);
      assert.equal(counts.failed, 0);
      assert.equal(counts.replicaBatches, Math.ceil(replicaCount / 2));
      assert.ok((counts.removed ?? 0) >= 1);
      assert.equal(await metricValue(registry, 'messenger_contact_search_index_failures_total'), 0);

      assert.equal(await index.findActiveByPhone(orphan.phoneNumber!), null, 'orphan removed');
      assert.equal((await index.findActiveByPhone(outdated.phoneNumber!))?.firstName, 'Актуальная');
      for (const d of missing.filter((m) => m.isActive)) assert.equal((await index.findActiveByPhone(d.phoneNumber!))?.userId, d.userId);
      const progress = logs.lines().filter((l) => l.msg === 'contact search rebuild progress');
      assert.equal(progress.length, counts.replicaBatches);
      assert.equal(progress.at(-1)?.percent, 100);
    });
  });
}
