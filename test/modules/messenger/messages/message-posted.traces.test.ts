import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestTracing } from '../../../support/tracing.ts';
import { buildTestApp } from '../../../support/app.ts';
import messenger from '../../../../src/modules/messenger/index.ts';
import { insertReplicaUser } from '../support/app.ts';

/**
 * A message send's MessagePosted outbox row carries the sending request's traceparent,
 * whether the send ran alone or in a batch statement with others: the publisher's send and the
 * consumers continue the request's trace, as for every other outbox event.
 */

const tracing = await startTestTracing();
// Eight sends at once by one user make a batch: the per-user bound on requests in progress is off.
const { app, token, database } = await buildTestApp({ HTTP_MAX_CONCURRENT_REQUESTS_PER_USER: '0' }, { modules: [messenger] });
const base = await app.listen({ host: '127.0.0.1', port: 0 });
after(() => app.close());

const post = async (path: string, userToken: string, body: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.ok(res.status < 300, `${path}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as { id: string };
};

test('each MessagePosted outbox row holds the traceparent of the request that sent it, alone or batched with concurrent sends', async () => {
  const alice = await insertReplicaUser(database.pool);
  const bob = await insertReplicaUser(database.pool);
  const asAlice = await token({ userId: alice.id });
  const chat = await post('/api/messenger/chats', asAlice, { kind: 'Group', title: 'traced', memberUserIds: [bob.id] });
  const path = `/api/messenger/chats/${chat.id}/messages`;

  const alone = await post(path, asAlice, { kind: 'Text', body: 'alone' });
  // Sent at once, the queue coalesces them into batch statements (send-batch.ts): each keeps its own trace.
  const together = await Promise.all(Array.from({ length: 8 }, (_, i) => post(path, asAlice, { kind: 'Text', body: `together ${i}` })));

  const { rows } = await database.pool.query<{ message_id: string; traceparent: string | null }>(
    `select payload->>'MessageId' as message_id, traceparent from platform.outbox where event_type = 'MessagePostedKafkaEvent'`,
  );
  const byMessage = new Map(rows.map((r) => [r.message_id, r.traceparent]));
  const servers = tracing.spans().filter((s) => s.kind === 1 /* SERVER */ && s.name === 'POST /api/messenger/chats/:chatId/messages');
  assert.equal(servers.length, 9, 'one server span per send');
  const requestTraces = new Set(servers.map((s) => s.spanContext().traceId));

  const stored = [alone, ...together].map((m) => byMessage.get(m.id));
  for (const traceparent of stored) {
    assert.ok(traceparent, 'every send stored a traceparent');
    assert.ok(requestTraces.has(traceparent.split('-')[1]!), `${traceparent} belongs to one of the send requests' traces`);
  }
  assert.equal(new Set(stored.map((t) => t!.split('-')[1])).size, 9, 'each send its own trace, none borrowed from another in its batch');
});
