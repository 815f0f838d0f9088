import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createTestDatabase } from './support/db.ts';
import { freePort, startService, tunedService } from './support/service-process.ts';
import { waitFor } from './support/wait.ts';

const NOT_YET = 'database not reachable yet; retrying';
const PASSWORD = 'pw-never-logged';

/** Settings for a service on the in-process bus whose database is `url`. */
const serviceEnv = (url: string, extra: Record<string, string> = {}) => ({
  DATABASE_URL: url,
  KAFKA_BROKERS: undefined,
  // On a real database the in-process bus (KAFKA_BROKERS unset) starts only when allowed (start-up refuses it otherwise).
  ALLOW_INSECURE_DEFAULTS: 'true',
  REDIS_URL: undefined,
  REALTIME_BACKPLANE_ENABLED: undefined,
  ELASTICSEARCH_URL: undefined,
  ...extra,
});

test('database unreachable at start: one warning per try, then exit 1 with one line naming the host, no stack trace', async () => {
  const closedPort = await freePort(); // nobody listens there
  const service = startService(
    serviceEnv(`postgres://pin:${PASSWORD}@127.0.0.1:${closedPort}/pin`),
    tunedService({ kernel: { databaseStartupWaitMs: 2500 } }),
  );
  const [code] = await service.exited;

  assert.notEqual(code, 0, service.log.text);
  const lines = service.lines();
  const tries = lines.filter((l) => l.msg === NOT_YET);
  assert.ok(tries.length >= 2, `several tries logged:\n${service.log.text}`);
  for (const t of tries) {
    assert.equal(t.level, 40);
    assert.deepEqual([t.host, t.port], ['127.0.0.1', closedPort]);
    assert.match(String(t.error), /ECONNREFUSED/);
  }
  const last = lines.at(-1)!;
  assert.equal(last.level, 60, 'the last line is the fatal one');
  assert.match(String(last.msg), new RegExp(`database at 127\\.0\\.0\\.1:${closedPort} unreachable`));
  // The wait handed in code through the test entry is the one the service kept to.
  assert.match(String(last.msg), /within the start-up wait of 2500 ms/);
  assert.equal(lines.filter((l) => Number(l.level) >= 50).length, 1, 'one error line, the last');
  assert.doesNotMatch(service.log.text, /\n\s+at /, 'no stack trace');
  assert.equal(service.log.stderr, '', 'nothing on stderr (no uncaught exception)');
  assert.ok(!service.log.text.includes(PASSWORD), 'the password is never logged');
});

test('the database comes up during the start-up wait: the service starts and serves', async () => {
  const database = await createTestDatabase();
  const real = new URL(database.url);
  // The service is pointed at a port that refuses until the test opens a TCP proxy to the real server there.
  const proxyPort = await freePort();
  const url = new URL(database.url);
  url.port = String(proxyPort);
  const port = await freePort();
  const service = startService(
    serviceEnv(url.toString(), { PORT: String(port), HOST: '127.0.0.1', JOBS_ENABLED: 'false' }),
    tunedService({ kernel: { databaseStartupWaitMs: 60_000 } }),
  );

  await waitFor('two failed tries', () => service.lines().filter((l) => l.msg === NOT_YET).length >= 2, 30_000);
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const upstream = net.connect(Number(real.port), real.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => (client.destroy(), upstream.destroy()));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(proxyPort, '127.0.0.1', resolve));
  after(() => {
    for (const s of sockets) s.destroy();
    proxy.close();
  });

  await waitFor(
    'the service to answer /health/ready',
    async () => (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.status === 200,
    60_000,
  );
  assert.ok(service.lines().some((l) => l.msg === 'database reachable'));
  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  assert.equal(code, 0, service.log.text.slice(-3000));
});

test('SIGTERM while start-up waits for the database: it stops waiting and exits 0', async () => {
  const closedPort = await freePort();
  const service = startService(
    serviceEnv(`postgres://pin:x@127.0.0.1:${closedPort}/pin`),
    tunedService({ kernel: { databaseStartupWaitMs: 600_000 } }),
  );
  await waitFor('a failed try', () => service.lines().some((l) => l.msg === NOT_YET), 30_000);
  service.child.kill('SIGTERM');
  const [code, signal] = await service.exited;
  assert.deepEqual([code, signal], [0, null], service.log.text);
  assert.match(service.log.text, /"msg":"stopped"/);
});
