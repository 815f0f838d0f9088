import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { newId } from '../../../../src/platform/time.ts';
import { createTestKafka } from '../../../support/kafka.ts';
import { freePort, startService, tunedService, type ServiceProcess } from '../../../support/service-process.ts';
import { waitFor } from '../../../support/wait.ts';
import type { Gate } from '../providers-support.ts';
import { within } from './fixtures/crash.ts';
import { dispatchedEvents, metric, notificationsWorld, notify, setChannel, stored } from '../support.ts';

/**
 * Seed 004 AC6 with the real service (its start-up as `node src/main.ts`, with the world's provider
 * timeout: test/support/service-entry.ts) with its background jobs sends an email,
 * the provider accepts it, and the process is SIGKILLed while its outcome waits to commit (the test
 * holds the row's lock). Through the HTTP email provider the resend after the lease is deduped and
 * the row ends Sent; through SMTP the mail is never sent again and the row is unconfirmed.
 */
const w = await notificationsWorld();
const a = w.main;
const leaseMs = a.tuning.claimLeaseMs;
const kafka = await createTestKafka();

// The world's local SMTP server offers no STARTTLS: plain SMTP on a real database needs ALLOW_INSECURE_DEFAULTS.
async function startWorkingService(): Promise<ServiceProcess> {
  const port = await freePort();
  const service = startService({ ...w.env, DATABASE_URL: w.database.url, KAFKA_BROKERS: kafka.brokers.join(','), KAFKA_TOPIC_PREFIX: kafka.prefix, JOBS_ENABLED: 'true', PORT: String(port), LOG_LEVEL: 'info', ALLOW_INSECURE_DEFAULTS: 'true' }, tunedService({ notifications: w.tuning }));
  const alive = () => service.child.exitCode === null && service.child.signalCode === null;
  await waitFor('the service to answer /health/live', async () => !alive() || (await fetch(`http://127.0.0.1:${port}/health/live`).then((r) => r.ok, () => false)), 90_000);
  if (!alive()) throw new Error(`the service exited at start: ${service.log.text.slice(-3000)}`);
  return service;
}

/**
 * Creates an email notification, lets the running service's dispatcher send it, holds the row's
 * lock while `gate` lets the provider's acceptance through, and SIGKILLs the service once it waits
 * to commit that outcome. Returns the notification's id and user.
 */
async function killServiceAfterAcceptance<T>(gate: Gate<T>): Promise<{ id: string; userId: string; accepted: T }> {
  const service = await startWorkingService();
  const locker = new pg.Client({ connectionString: w.database.url });
  await locker.connect();
  try {
    const { userId, byChannel } = await notify(a, { channels: ['Email'], email: `buyer-${newId()}@example.org` });
    const id = byChannel.get('Email')!.id;
    const accepted = await within(gate.arrived, 'the service to send the email');
    const arrivedAt = Date.now();
    await locker.query('begin');
    await locker.query('select id from notifications.notifications where id = $1 for update', [id]);
    const { rows } = await locker.query<{ pid: number }>('select pg_backend_pid() as pid');
    const lockedAt = Date.now();
    gate.release();
    let blocked: number[] = [];
    const alive = () => service.child.exitCode === null && service.child.signalCode === null;
    try {
      // Sessions are read through the pool, outside the locker's transaction: within a transaction
      // PostgreSQL keeps the list of pg_stat_activity's sessions from its first read, so a connection
      // the service opens later (its pool growing under load) would never show as blocked.
      await waitFor('the service to block on committing the outcome', async () => {
        if (!alive()) return true; // reported below, with its log
        const r = await a.pool.query<{ pid: number }>('select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [rows[0]!.pid]);
        blocked = r.rows.map((x) => x.pid);
        return blocked.length > 0;
      }, 30_000);
      if (!alive()) throw new Error(`the service exited (${service.child.exitCode ?? service.child.signalCode}) before committing the outcome`);
    } catch (err) {
      // What the service and the database were doing, so a failure here says why, not only where.
      const activity = await a.pool.query('select pid, application_name, state, wait_event_type, wait_event, left(query, 120) as query from pg_stat_activity where datname = current_database()');
      const row = await stored(a.pool, id);
      const facts = { lockedAfterArrivalMs: lockedAt - arrivedAt, accepted, row, requests: w.http.requests.map((r) => r.idempotencyKey) };
      throw new Error(`${(err as Error).message}\n${JSON.stringify(facts)}\nservice log (kafkajs lines left out):\n${service.log.text.split('\n').filter((l) => !l.includes('kafkajs')).join('\n').slice(-4000)}\nsessions:\n${JSON.stringify(activity.rows)}`, { cause: err });
    }
    service.child.kill('SIGKILL');
    await service.exited;
    // The server notices the dead client on its next read; end its sessions now so nothing lingers.
    for (const pid of blocked) await a.pool.query('select pg_terminate_backend($1)', [pid]);
    await locker.query('rollback');
    return { id, userId, accepted };
  } finally {
    if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
    await locker.end();
  }
}

describe('SIGKILL of the service between the email provider accepting and the commit', () => {
  test('http-email: the resend after the lease is deduped by the provider (Idempotency-Key) and the row ends Sent', async () => {
    await setChannel(a, 'Email', { providerKey: 'http-email' });
    const { id, accepted } = await killServiceAfterAcceptance(w.http.hold());
    assert.equal(accepted.idempotencyKey, `${id}:1`);
    assert.equal((await stored(a.pool, id)).status, 'Pending', 'the acceptance never committed');

    a.clock.set(new Date(Date.now() + leaseMs + 1000));
    await a.runDispatch();
    assert.equal(w.http.requestsFor(id).length, 2, 'sent again');
    assert.equal([...w.http.delivered.keys()].filter((k) => k.startsWith(id)).length, 1, 'one message at the recipient');
    const row = await stored(a.pool, id);
    assert.equal(row.status, 'Sent');
    assert.equal(row.provider_message_id, w.http.delivered.get(`${id}:1`));
    assert.deepEqual((await dispatchedEvents(a.pool, id)).map((e) => e.payload.Status), ['Sent']);
  });

  test('smtp: never sent again, however late; the row is unconfirmed', async () => {
    a.clock.set(new Date());
    await setChannel(a, 'Email', { providerKey: 'smtp' });
    const { id, userId } = await killServiceAfterAcceptance(w.smtp.hold());
    assert.equal(w.smtp.messagesFor(id).length, 1);

    for (const later of [leaseMs + 1000, 7 * 24 * 3600_000]) {
      a.clock.set(new Date(Date.now() + later));
      await a.runDispatch();
      await a.runRetry();
    }
    assert.equal(w.smtp.messagesFor(id).length, 1, 'no second mail');
    const res = await a.app.inject({ method: 'GET', url: `/api/notifications/${id}`, headers: { authorization: `Bearer ${await a.userToken(userId)}` } });
    assert.equal(res.json().outcomeUnknown, true);
    assert.equal(await metric(a, 'notifications_unconfirmed', { channel: 'Email' }), 1);
  });
});
