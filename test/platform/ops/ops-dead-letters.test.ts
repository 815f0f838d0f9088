import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVENT_TOPICS, TOPICS } from '../../../src/event-topics.ts';
import { deadLetterSource } from '../../../src/platform/events/dead-letter-source.ts';
import { dlqTopicOf } from '../../../src/platform/events/topics.ts';
import { createLogger } from '../../../src/platform/observability/logger.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { newId, systemClock } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';
import { createTestKafka } from '../../support/kafka.ts';

/**
 * Dead-lettered consumer records on the ops console (kind consumer-dead-letters), on the real
 * broker: every DLQ topic read to its end by the whole-topic reader, the last records of each kept
 * (bounded), listed oldest first with their dlq-* headers and filtered like every kind; the one
 * action is replay (ops-dead-letter-replay.test.ts), any other is 400 OPS_ACTION_NOT_SUPPORTED; a
 * broker that cannot be read answers 503.
 */

const k = await createTestKafka();
await k.createTopics(EVENT_TOPICS.filter((t) => t.consumed).flatMap((t) => [{ name: t.name, partitions: 1 }, { name: dlqTopicOf(t.name), partitions: 1 }]));
const t = await buildTestApp(
  { KAFKA_BROKERS: k.brokers.join(','), KAFKA_TOPIC_PREFIX: k.prefix, OPS_TRACE_URL: 'https://traces.example.org/trace/{traceId}' },
  { tuning: { opsDlqKeepPerTopic: 2, opsDlqFreshMs: 0 } },
);
const operator = await t.token({ admin: true });
const viewer = await signToken({ userId: newId(), admin: false, opsRole: 'viewer' }, t.config.JWT_SECRET, { issuer: t.config.AUTH_ISSUER, audience: t.config.AUTH_AUDIENCE });

async function call<T>(token: string, method: 'GET' | 'POST', url: string, payload?: object): Promise<{ status: number; body: T }> {
  const res = await t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload }) });
  return { status: res.statusCode, body: res.json() as T };
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

/** A dead letter as the consumer runner writes it (dead-letter.ts): the original key and headers plus the dlq-* ones. */
function deadLetter(origin: string, o: { offset: number; code: string; eventType: string; key: string; at: Date; traced?: boolean }) {
  const physical = k.topic(origin);
  return {
    key: o.key,
    value: '{"UserId":"x"}',
    timestamp: String(o.at.getTime()),
    headers: {
      'message-id': newId(),
      'event-type': o.eventType,
      ...(o.traced ? { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` } : {}),
      'dlq-code': o.code,
      'dlq-reason': 'value does not match the contract',
      'dlq-origin-topic': physical,
      'dlq-origin-partition': '0',
      'dlq-origin-offset': String(o.offset),
    },
  };
}

type Row = { id: string; at: string; errorCode: string; traceUrl: string | null; fields: Record<string, string | null> };
type Listed = { total: number; items: Row[]; kind: { actions: string[]; runbook: string } };
const kind = 'consumer-dead-letters';
const T = (minutes: number) => new Date(Date.UTC(2026, 10, 2, 10, minutes));

test('the DLQ topics are listed: the last records of each, oldest first, filtered by time, code and origin fields', { timeout: 120_000 }, async () => {
  const users = TOPICS.identityUsers;
  const posted = TOPICS.messagePosted;
  await k.produce(k.topic(dlqTopicOf(users)), [
    deadLetter(users, { offset: 7, code: 'CONSUMER_DATA_ERROR', eventType: 'UserUpsertedKafkaEvent', key: 'u-1', at: T(1) }),
    deadLetter(users, { offset: 8, code: 'CONSUMER_DATA_ERROR', eventType: 'UserUpsertedKafkaEvent', key: 'u-2', at: T(2), traced: true }),
    deadLetter(users, { offset: 9, code: 'CONSUMER_RETRIES_EXHAUSTED', eventType: 'UserUpsertedKafkaEvent', key: 'u-3', at: T(4) }),
  ]);
  await k.produce(k.topic(dlqTopicOf(posted)), [deadLetter(posted, { offset: 3, code: 'ENVELOPE_INVALID_JSON', eventType: 'MessagePostedKafkaEvent', key: 'c-1', at: T(3) })]);

  const kinds = (await call<{ kinds: { kind: string; count: number; actions: string[] }[] }>(viewer, 'GET', '/api/ops/failures')).body.kinds;
  assert.deepEqual(kinds.find((x) => x.kind === kind) && [kinds.find((x) => x.kind === kind)!.count, kinds.find((x) => x.kind === kind)!.actions], [3, ['replay']]);

  const all = (await call<Listed>(viewer, 'GET', `/api/ops/failures/${kind}`)).body;
  assert.equal(all.kind.runbook, '/ops/runbooks/ConsumerDeadLettered');
  // Only the last two of the users topic's three (opsDlqKeepPerTopic: 2), merged with the other topic by time.
  assert.deepEqual(all.items.map((r) => [r.fields.key, r.errorCode, r.at]), [
    ['u-2', 'CONSUMER_DATA_ERROR', T(2).toISOString()],
    ['c-1', 'ENVELOPE_INVALID_JSON', T(3).toISOString()],
    ['u-3', 'CONSUMER_RETRIES_EXHAUSTED', T(4).toISOString()],
  ]);
  const u2 = all.items[0]!;
  assert.deepEqual([u2.id, u2.fields.originTopic, u2.fields.originOffset, u2.fields.eventType], [`${k.topic(dlqTopicOf(users))}/0/1`, k.topic(users), '8', 'UserUpsertedKafkaEvent']);
  assert.equal(u2.traceUrl, `https://traces.example.org/trace/${TRACE}`);

  for (const [q, keys] of [
    ['errorCode=CONSUMER_DATA_ERROR', ['u-2']],
    [`field=originTopic&value=${k.topic(posted)}`, ['c-1']],
    ['field=eventType&value=UserUpsertedKafkaEvent', ['u-2', 'u-3']],
    ['field=key&value=u-3', ['u-3']],
    [`from=${T(3).toISOString()}&to=${T(4).toISOString()}`, ['c-1']],
  ] as const) {
    const list = (await call<Listed>(viewer, 'GET', `/api/ops/failures/${kind}?${q}`)).body;
    assert.deepEqual([list.total, list.items.map((r) => r.fields.key)], [keys.length, keys], q);
  }

  for (const action of ['retry', 'requeue', 'discard']) {
    const res = await call<{ code: string }>(operator, 'POST', `/api/ops/failures/${kind}/actions`, { action });
    assert.deepEqual([res.status, res.body.code], [400, 'OPS_ACTION_NOT_SUPPORTED'], action);
  }
});

test('a broker that cannot be read: the list is 503 SERVICE_UNAVAILABLE with Retry-After, not a 500', async () => {
  const source = deadLetterSource({
    topics: () => ['pin.identity.users.v1.dlq'],
    openReader: () => Promise.reject(new Error('connect ECONNREFUSED')),
    groupPrefix: 'test',
    keepPerTopic: 10,
    freshMs: 0,
    log: createLogger('silent'),
    db: t.database.db,
    clock: systemClock,
    consumers: [],
    publish: () => Promise.reject(new Error('not called')),
  });
  await assert.rejects(source.list({}, 10), (err: { code?: string; statusCode?: number; retryAfterSeconds?: number }) => {
    assert.deepEqual([err.code, err.statusCode, err.retryAfterSeconds], ['SERVICE_UNAVAILABLE', 503, 5]);
    return true;
  });
});
