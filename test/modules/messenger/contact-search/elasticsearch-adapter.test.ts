import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { buildTestApp } from '../../../support/app.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import { newId } from '../../../../src/platform/time.ts';
import { TOPICS } from '../../../../src/event-topics.ts';
import { messengerModule } from '../../../../src/modules/messenger/index.ts';
import { createElasticsearchContactSearch } from '../../../../src/modules/messenger/contact-search/elasticsearch-adapter.ts';
import { contactSearchContract } from './contract.ts';
import { inboxed, nextPhone, replicaRow, userUpserted } from '../support/user-sync.ts';
import { metricValue } from '../../../support/metrics.ts';
import { waitFor } from '../../../support/wait.ts';

/**
 * The contact search contract against a real Elasticsearch (scripts/elasticsearch.sh, started by
 * `npm test`), and the seed's index-failure row against a stopped one.
 */

const url = process.env.ELASTICSEARCH_URL;
if (!url) throw new Error('ELASTICSEARCH_URL is unset: run the tests with `npm test` (scripts/services.sh starts Elasticsearch)');
const es = new Client({ node: url });
const indices: string[] = [];
const indexName = (what: string) => {
  const name = `test-${what}-${randomBytes(4).toString('hex')}`;
  indices.push(name);
  return name;
};
after(async () => {
  await es.indices.delete({ index: indices, ignore_unavailable: true }).catch(() => undefined);
  await es.close();
});

contactSearchContract('Elasticsearch adapter', async () =>
  createElasticsearchContactSearch({ url, index: indexName('contract'), requestTimeoutMs: 5000 }),
);

/**
 * A TCP relay in front of the real node. Stopping it is, for the app, exactly a stopped
 * Elasticsearch (connection refused), without stopping the node other test files share.
 */
async function startRelay(target: URL) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });
  const start = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await start();
  return {
    url: `http://127.0.0.1:${port}`,
    start,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    },
  };
}

const k = await createTestKafka();
const relay = await startRelay(new URL(url));
const index = indexName('failure');
const { app, database, token } = await buildTestApp(
  {
    KAFKA_BROKERS: k.brokers.join(','),
    KAFKA_TOPIC_PREFIX: k.prefix,
    JOBS_ENABLED: 'true',
    ELASTICSEARCH_URL: relay.url,
    MESSENGER_CONTACT_SEARCH_INDEX: index,
    // The waits below poll the search route; its per-user limit is rate-limit.test.ts's subject, not this file's.
    MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE: '0',
  },
  { modules: [messengerModule({ contactSearchIndexIntervalMs: 200, contactSearchRetryCapMs: 1000, contactSearchRequestTimeoutMs: 1000 })] },
);
await app.platform.startBackground();
const pool = database.pool;
const topic = k.topic(TOPICS.identityUsers);
const viewer = await token();
const search = (phone: string) =>
  app.inject({ method: 'GET', url: `/api/messenger/contacts/search?phone=${encodeURIComponent(phone)}`, headers: { authorization: `Bearer ${viewer}` } });
const failures = () => metricValue(app.platform.registry, 'messenger_contact_search_index_failures_total');

describe('index failure against a stopped Elasticsearch (real Kafka)', () => {
  after(async () => {
    await app.close();
    await relay.stop();
  });

  test('the replica commits and the offset moves on while indexing fails; the failure is counted and retried until the index is back', async () => {
    const warm = newId();
    const warmPhone = nextPhone();
    await k.produce(topic, [userUpserted(warm, { version: 1, phone: warmPhone })]);
    await waitFor('indexed in Elasticsearch while it is up', async () => (await search(warmPhone)).statusCode === 200, 30_000);
    // A cold Elasticsearch may have timed the warm-up's first write out: count only failures after this.
    const failedBefore = await failures();

    await relay.stop();
    const userId = newId();
    const phone = nextPhone();
    const first = userUpserted(userId, { version: 1, phone });
    const second = userUpserted(userId, { version: 2, phone, firstName: 'Вторая' });
    await k.produce(topic, [first, second]);
    // Both applied and acknowledged: indexing is not in the consumer's way.
    await waitFor('replica at version 2 with the index down', async () => (await replicaRow(pool, userId))?.identity_user_version === '2', 30_000);
    assert.equal(await inboxed(pool, String(second.headers!['message-id'])), true);
    const attempts = async () =>
      (await pool.query<{ attempts: number }>(`select attempts from messenger.contact_search_pending where user_id = $1`, [userId])).rows[0]?.attempts ?? 0;
    await waitFor('the failed write kept for retry with a backoff', async () => (await attempts()) >= 1, 30_000);
    // Counted right after the retry is scheduled (the indexer counts once the reschedule committed).
    await waitFor('the failure counted', async () => (await failures()) > failedBefore, 5000);

    const down = await search(phone);
    assert.equal(down.statusCode, 503);
    assert.equal(down.json().code, 'MSG_CONTACT_SEARCH_UNAVAILABLE');

    await relay.start();
    await waitFor('indexed after Elasticsearch is back', async () => (await search(phone)).statusCode === 200, 20_000);
    assert.equal((await search(phone)).json().firstName, 'Вторая');
    assert.equal((await pool.query(`select 1 from messenger.contact_search_pending where user_id = $1`, [userId])).rowCount, 0);
  });

  test('the rebuild job reconciles an index that lost its documents', async () => {
    await es.indices.delete({ index });
    const res = await app.inject({
      method: 'POST',
      url: '/api/ops/jobs/messenger-contact-search-rebuild/run',
      headers: { authorization: `Bearer ${await token({ admin: true })}` },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().outcome, 'success');
    const replicaCount = Number((await pool.query(`select count(*) as n from messenger.users`)).rows[0].n);
    assert.equal(res.json().counts.indexed, replicaCount);
    const { count } = await es.count({ index });
    assert.equal(count, replicaCount);
  });
});
