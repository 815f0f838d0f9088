import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { enqueue, OUTBOX_CHANNEL } from '../../../src/platform/outbox/enqueue.ts';

// At the top level: the drop hook createTestDatabase registers then runs when the file ends.
const t: TestDatabase = await createTestDatabase();

const event = (n: number) => ({
  topic: 'pin.messenger.message-posted.v1',
  eventType: 'MessagePostedKafkaEvent',
  aggregateType: 'Chat',
  aggregateId: `chat-${n}`,
  occurredAt: '2026-01-02T03:04:05Z',
  correlationId: 'corr',
  payload: { ChatId: `chat-${n}`, Seq: n },
});

/** A LISTEN connection collecting notifications of the outbox channel. */
async function listen(): Promise<{ count(): number; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: t.url });
  await client.connect();
  let n = 0;
  client.on('notification', (msg) => {
    if (msg.channel === OUTBOX_CHANNEL) n += 1;
  });
  await client.query(`listen ${OUTBOX_CHANNEL}`);
  return { count: () => n, close: () => client.end() };
}

/** A round trip on the listening side's server makes pending notifications arrive. */
const settle = () => new Promise((r) => setTimeout(r, 100));

describe('enqueue', () => {
  test('writes one row per event with the envelope fields, UUIDv7 ids in order, key = aggregate id', async () => {
    const ids = await t.db.transaction((tx) => enqueue(tx, [event(1), event(2)]));
    assert.equal(ids.length, 2);
    assert.match(ids[0]!, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    assert.ok(ids[0]! < ids[1]!);
    const { rows } = await t.pool.query(
      `select id, topic, key, event_type, contract_version, aggregate_type, aggregate_id, occurred_at, correlation_id,
              payload, published_at, attempts from platform.outbox where id = any($1) order by id`,
      [ids],
    );
    assert.deepEqual(rows[0], {
      id: ids[0],
      topic: 'pin.messenger.message-posted.v1',
      key: 'chat-1',
      event_type: 'MessagePostedKafkaEvent',
      contract_version: 1,
      aggregate_type: 'Chat',
      aggregate_id: 'chat-1',
      occurred_at: new Date('2026-01-02T03:04:05Z'),
      correlation_id: 'corr',
      payload: { ChatId: 'chat-1', Seq: 1 },
      published_at: null,
      attempts: 0,
    });
  });

  test('a rolled-back transaction leaves no row and wakes nobody; a commit notifies the publisher', async () => {
    const listener = await listen();
    try {
      const marker = 'rollback-marker';
      await assert.rejects(
        t.db.transaction(async (tx) => {
          await enqueue(tx, { ...event(3), aggregateId: marker });
          throw new Error('domain change failed');
        }),
        /domain change failed/,
      );
      await settle();
      const { rows } = await t.pool.query(`select count(*)::int as n from platform.outbox where aggregate_id = $1`, [marker]);
      assert.equal(rows[0].n, 0);
      assert.equal(listener.count(), 0, 'no NOTIFY from a rolled-back transaction');

      await t.db.transaction((tx) => enqueue(tx, event(4)));
      const deadline = Date.now() + 5000;
      while (listener.count() === 0 && Date.now() < deadline) await settle();
      assert.equal(listener.count(), 1);
    } finally {
      await listener.close();
    }
  });

  test('payloads with quotes, backslashes, braces, commas and non-ASCII text are stored exactly', async () => {
    const payload = { Text: 'He said "hi", {ok} \\ back\nnext', Name: 'Иван', Nested: { A: [1, null, true, 'x,y'] }, Empty: '' };
    const [id] = await t.db.transaction((tx) =>
      enqueue(tx, [{ ...event(6), correlationId: null, payload }, { ...event(7), payload: 'NULL' }]),
    );
    const { rows } = await t.pool.query(`select payload, correlation_id from platform.outbox where id = $1`, [id]);
    assert.deepEqual(rows[0], { payload, correlation_id: null });
  });

  test('an explicit message id and key are kept', async () => {
    const messageId = '0190a0b1-0000-7000-8000-00000000abcd';
    await t.db.transaction((tx) => enqueue(tx, { ...event(5), messageId, key: 'custom-key' }));
    const { rows } = await t.pool.query(`select key from platform.outbox where id = $1`, [messageId]);
    assert.equal(rows[0].key, 'custom-key');
  });
});
