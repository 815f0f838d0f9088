import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config.ts';
import { signToken } from '../../../src/platform/http/auth.ts';
import { newId } from '../../../src/platform/time.ts';
import { insertChat, insertOutbox, uid } from '../../modules/messenger/support/dispatch.ts';
import { createTestDatabase } from '../../support/db.ts';
import { SECURE_SECRETS } from '../../support/secure-env.ts';
import { freePort, startService, tunedService, type ServiceProcess } from '../../support/service-process.ts';
import { waitFor } from '../../support/wait.ts';

/**
 * A bulk action whose process is SIGKILLed mid-run stays `running` in its audit row, and the
 * console would poll it forever: the next replica to start (or any live one, on its heartbeat)
 * ends it as failed once it has given no sign of life for opsBulkStaleMs. A live replica's slow run
 * keeps beating and is not taken. The real service as a child process (test/support/service-entry.ts,
 * the bulk rate and the stale time shortened), on one database.
 */

const database = await createTestDatabase();
const pool = database.pool;
const config = loadConfig({ ...SECURE_SECRETS });
const operator = await signToken({ userId: newId(), admin: true }, SECURE_SECRETS.JWT_SECRET, { issuer: config.AUTH_ISSUER, audience: config.AUTH_AUDIENCE });
// One row a statement, 2.5 s apart, longer than the stale time: only the beats between statements
// keep a live run from looking dead; a run of four rows outlives the stale time several times over.
const ROWS = 4;
const OPS = { opsBulkChunk: 1, opsBulkPauseMs: 2500, opsBulkBeatMs: 200, opsBulkStaleMs: 2000, opsHeartbeatMs: 500 };

async function startReplica(): Promise<{ service: ServiceProcess; url: string }> {
  const port = await freePort();
  const service = startService(
    { DATABASE_URL: database.url, ALLOW_INSECURE_DEFAULTS: 'true', JOBS_ENABLED: 'false', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    tunedService({ ops: OPS }),
  );
  const url = `http://127.0.0.1:${port}`;
  const alive = () => service.child.exitCode === null && service.child.signalCode === null;
  await waitFor('the service to answer /health/live', async () => !alive() || (await fetch(`${url}/health/live`).then((r) => r.ok, () => false)), 90_000);
  if (!alive()) throw new Error(`the service exited at start: ${service.log.text.slice(-3000)}`);
  return { service, url };
}

async function startBulkRun(url: string): Promise<string> {
  const chatId = await insertChat(pool, [uid(), uid()]);
  for (let i = 0; i < ROWS; i++) await insertOutbox(pool, { kind: 'MessageReceived', chatId, messageId: newId(), status: 'Quarantined', attempts: 8 });
  const res = await fetch(`${url}/api/ops/failures/realtime-quarantined/actions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'requeue', filter: { field: 'chatId', value: chatId }, dryRun: false }),
  });
  assert.equal(res.status, 202, await res.clone().text());
  return ((await res.json()) as { auditId: string }).auditId;
}

const entry = async (id: string) =>
  (await pool.query<{ status: string; changed: number; error: string | null; holder: string | null }>(`select status, changed, error, holder from platform.ops_audit where id = $1`, [id])).rows[0]!;

test('a bulk run SIGKILLed mid-run is ended as failed with the reason when a replica starts; a live replica\'s slow run is not', { timeout: 240_000 }, async () => {
  const first = await startReplica();
  const killed = await startBulkRun(first.url);
  await waitFor('the run to change its first row', async () => (await entry(killed)).changed >= 1);
  first.service.child.kill('SIGKILL');
  await first.service.exited;
  const left = await entry(killed);
  assert.equal(left.status, 'running', 'nothing ends it at the kill');
  assert.ok(left.changed < ROWS);

  const second = await startReplica();
  await waitFor('the killed run to be ended as failed', async () => (await entry(killed)).status === 'failed', 30_000);
  const ended = await entry(killed);
  assert.match(ended.error ?? '', /gave no sign of life/);
  assert.equal(ended.changed, left.changed, 'its progress stays as it was');

  // A run of the live replica lasts ~8 s, with pauses longer than the stale time: its beats keep it running to done.
  const live = await startBulkRun(second.url);
  await waitFor('the live run to finish', async () => (await entry(live)).status !== 'running', 60_000);
  assert.deepEqual([(await entry(live)).status, (await entry(live)).changed], ['done', ROWS]);
  second.service.child.kill('SIGTERM');
  await second.service.exited;
});
