import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase } from '../../support/db.ts';
import { startPrivateRedis } from '../../support/redis.ts';
import { connectClient } from '../../support/signalr.ts';
import { waitFor } from '../../support/wait.ts';
import { sampleOf, seeded, startFaultService } from './support.ts';

test('Redis stopped mid-run: readiness reports the backplane, presence answers 503 with Retry-After, pushes wait in the realtime outbox and all reach the client after the restart', async (t) => {
  const rng = seeded('redis-outage', t);
  const redis = await startPrivateRedis();
  const database = await createTestDatabase();
  const service = await startFaultService({
    DATABASE_URL: database.url,
    ALLOW_INSECURE_DEFAULTS: 'true', // the in-process bus on a real database
    KAFKA_BROKERS: undefined, // the one npm test exports: this scenario needs no broker
    REDIS_URL: redis.url,
    REALTIME_BACKPLANE_ENABLED: 'true',
    // Retries close together, so the backlog goes out soon after Redis is back; 8 attempts
    // (the default) still span longer than the outage, so nothing is quarantined by it.
    MESSENGER_REALTIME_BACKOFF_BASE: '200ms',
    MESSENGER_REALTIME_BACKOFF_CAP: '2s',
  });
  const [alice, bob] = [randomUUID(), randomUUID()];
  for (const [i, id] of [alice, bob].entries()) {
    await database.pool.query(
      `insert into messenger.users (id, first_name, last_name, phone_number, is_active, identity_user_version, created_at, updated_at)
       values ($1, 'Fault', 'User', $2, true, 1, now(), now())`,
      [id, `+7991000000${i}`],
    );
  }
  const call = async (userId: string, url: string, body: object) =>
    fetch(`${service.base}${url}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await service.token({ userId })}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });
  const chat = (await (await call(alice, '/api/messenger/chats', { kind: 'Group', title: 'Faults', memberUserIds: [bob] })).json()) as { id: string };
  const client = await connectClient(`${service.base}/hubs/messenger`, await service.token({ userId: bob }), { events: ['message_received'] });

  let sent = 0;
  const refused: string[] = [];
  let sending = true;
  after(() => (sending = false)); // a failed scenario must not leave the loop running
  const load = (async () => {
    while (sending) {
      const res = await call(alice, `/api/messenger/chats/${chat.id}/messages`, { kind: 'Text', body: `m${sent}` }).catch((err: Error) => err);
      if (res instanceof Error || res.status !== 201) refused.push(res instanceof Error ? res.message : String(res.status));
      else sent += 1;
      await sleep(100);
    }
  })();
  const before = rng.int(5, 20);
  await waitFor(`${before} messages sent before the fault`, () => sent >= before);

  await redis.kill();
  const sentAtKill = sent;
  await waitFor('/health/ready to report the backplane down (503: it is required)', async () => {
    const ready = await service.ready();
    return ready.status === 503 && ready.dependencies.backplane === 'down';
  });
  // Presence lives in Redis: asked while it is away, the route tells the client to come back later.
  const presence = await fetch(`${service.base}/api/messenger/presence?userIds=${alice}`, {
    headers: { authorization: `Bearer ${await service.token({ userId: alice })}` },
    signal: AbortSignal.timeout(5000),
  });
  assert.equal(presence.status, 503, 'presence while Redis is away');
  assert.equal(((await presence.json()) as { code: string }).code, 'SERVICE_UNAVAILABLE');
  assert.equal(presence.headers.get('retry-after'), '5');
  const outageEnds = Date.now() + rng.int(3000, 6000);
  while (Date.now() < outageEnds) {
    service.assertAlive();
    const metrics = await service.metrics();
    assert.equal(metrics.status, 200);
    sampleOf(metrics.text, 'hub_connections_active');
    await sleep(500);
  }
  assert.ok(sent > sentAtKill, 'messages were sent during the outage');

  await redis.restart();
  await sleep(rng.int(500, 2000)); // sends go on across the recovery
  sending = false;
  await load;
  rng.report({ expected: sent });
  assert.deepEqual(refused, [], 'a send persists whether or not Redis is up');
  await waitFor('the backplane ok again', async () => (await service.ready()).status === 200, 30_000);

  const seqOf = (payload: unknown) => (payload as { Seq: number }).Seq;
  await waitFor('every message pushed to the client', () => new Set(client.received.map((r) => seqOf(r.payload))).size === sent, 60_000);
  // A frame can reach the client before its row's Done commits (the dispatcher marks after the
  // push), and a push whose Redis reply was lost at the restart is retried after its backoff though
  // delivered: the rows settle shortly after the client has everything.
  const notDone = async () =>
    (
      await database.pool.query<{ status: string; n: number }>(
        `select status, count(*)::int as n from push.realtime_outbox where status <> 'Done' group by status order by status`,
      )
    ).rows;
  await waitFor('every row Done or Quarantined', async () => (await notDone()).every((r) => r.status === 'Quarantined'), 30_000);
  assert.deepEqual(await notDone(), [], 'no row left Pending or Quarantined');
  const retried = await database.pool.query<{ n: number }>('select count(*)::int as n from push.realtime_outbox where attempts > 1');
  assert.ok(retried.rows[0]!.n > 0, 'pushes failed during the outage and were retried');
  assert.equal(client.closed, false, 'the client stayed connected through the outage');
  service.assertAlive();
  const seen = new Set(client.received.map((r) => seqOf(r.payload))).size;
  rng.report({ expected: sent, seen, duplicated: client.received.length - seen });
});
