/**
 * `npm test`: provisions everything the tests need on a fresh machine, then runs them all.
 *   1. type check (tsc --noEmit), module boundaries (dependency-cruiser), and .env.example generated
 *      from the settings schema (`npm run env-example` regenerates it)
 *   2. promtool and chromium (Debian's prometheus and chromium packages, installed with apt-get when
 *      missing), the Python SignalR client the hub's tests drive (a gitignored .venv with the pins of
 *      test/support/python/requirements.txt), then Kafka, Redis, Elasticsearch and the S3-compatible
 *      object store through scripts/services.sh (fetched/installed/built on first use, cached)
 *   3. the client library's package (packages/messenger-client/dist: ES module, CommonJS, browser bundle
 *      and types; the real-browser and packed-package tests use it)
 *   4. a throwaway embedded PostgreSQL with a migrated template database
 *   5. node:test over test/ and each packages/<name>/test/ — each test file clones its own database from the template
 * Extra arguments are passed to node --test (e.g. a file path to run one file).
 * Settings: TEST_PG_PORT (15432, below the ephemeral port range so no outgoing connection can hold it), TEST_CONCURRENCY (2), KEEP_SERVICES=1 (leave Kafka/Redis running),
 * SKIP_CHECKS=1 (skip tsc and dependency-cruiser while iterating on one file).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/platform/db/embedded.ts';
import { createPool, migrateDatabase } from '../src/platform/db/index.ts';
import { createLogger } from '../src/platform/observability/logger.ts';

const root = new URL('..', import.meta.url).pathname;
const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
const step = (msg: string) => process.stderr.write(`[test] ${msg}\n`);

function run(cmd: string, args: string[], env = process.env): void {
  const res = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env });
  if (res.status !== 0) {
    step(`${cmd} ${args.join(' ')} failed (exit ${res.status})`);
    process.exit(res.status ?? 1);
  }
}

function servicesUp(): Record<string, string> {
  const res = spawnSync('bash', ['scripts/services.sh', 'up'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  if (res.status !== 0) {
    step('services.sh up failed');
    process.exit(1);
  }
  const env: Record<string, string> = {};
  for (const line of res.stdout.toString().split('\n')) {
    const m = /^export ([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}

if (process.env.SKIP_CHECKS !== '1') {
  step('type check');
  run('npx', ['tsc', '--noEmit']);
  step('module boundaries');
  run('npx', ['depcruise', 'src', '--config', '.dependency-cruiser.cjs']);
  step('.env.example is what the settings schema generates');
  run(process.execPath, ['scripts/env-example.ts', '--check']);
}

/**
 * A command some tests run, from a Debian package: installed with apt-get when `<bin> --version`
 * cannot run (needs root, as on the CI machine), else the run stops naming the package.
 */
function ensureDebianPackage(bin: string, pkg: string): void {
  const has = () => !spawnSync(bin, ['--version'], { stdio: 'ignore' }).error;
  if (has()) return;
  step(`installing ${bin}: apt-get install -y ${pkg} (once)`);
  const apt = spawnSync('bash', ['-c', `apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${pkg}`], { stdio: 'inherit' });
  if (apt.status !== 0 || !has()) {
    step(`${bin} is missing and \`apt-get install -y ${pkg}\` failed: install Debian's ${pkg} package (as root), then run the tests again`);
    process.exit(1);
  }
}

// The alert-rule tests (test/deploy/) run promtool (with systemd, the prometheus package also starts
// a Prometheus server on 9090; the tests do not use it); the /docs test loads the page in headless Chromium.
ensureDebianPackage('promtool', 'prometheus');
ensureDebianPackage('chromium', 'chromium');

/**
 * The hub's tests drive Python's signalrcore, an independent SignalR client, from a virtual
 * environment in .venv: created (python3 -m venv; Debian's python3-venv when that is missing) and
 * filled with the pinned packages when they are not installed at exactly those versions.
 */
function ensurePythonClient(): void {
  const requirements = 'test/support/python/requirements.txt';
  const python = `${root}.venv/bin/python`;
  const pins = readFileSync(`${root}${requirements}`, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const check = "import importlib.metadata as m, sys; sys.exit(0 if all(m.version(n) == v for n, v in (p.split('==') for p in sys.argv[1:])) else 1)";
  const installed = () => existsSync(python) && spawnSync(python, ['-c', check, ...pins], { stdio: 'ignore' }).status === 0;
  if (installed()) return;
  step(`installing the Python test client into .venv: ${pins.join(' ')} (once)`);
  const createVenv = () => {
    rmSync(`${root}.venv`, { recursive: true, force: true }); // a failed try leaves a venv without pip
    return spawnSync('python3', ['-m', 'venv', '.venv'], { cwd: root, stdio: 'inherit' }).status === 0;
  };
  if (!existsSync(python) && !createVenv()) {
    ensureDebianPackage('python3', 'python3-venv');
    spawnSync('bash', ['-c', 'apt-get install -y -q python3-venv'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (!createVenv()) {
      step('`python3 -m venv .venv` failed: install Python 3 with its venv module (Debian: python3-venv), then run the tests again');
      process.exit(1);
    }
  }
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', requirements]);
  if (!installed()) {
    step(`.venv does not hold ${pins.join(' ')} after pip install: remove .venv and run the tests again`);
    process.exit(1);
  }
}
ensurePythonClient();

step('building the client library (packages/messenger-client/dist: its ES module, CommonJS, browser bundle and types)');
run(process.execPath, ['packages/messenger-client/scripts/build.ts']);

step('starting Kafka, Redis, Elasticsearch and the object store (scripts/services.sh)');
const servicesEnv = servicesUp();

step('starting PostgreSQL');
const pgPort = Number(process.env.TEST_PG_PORT ?? 15432);
const dataDir = `/tmp/pin-test-pg-${pgPort}`;
rmSync(dataDir, { recursive: true, force: true });
const server = await startEmbeddedPostgres({
  dataDir,
  port: pgPort,
  log,
  flags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
});
const adminUrl = server.url;
const template = 'pin_template';
{
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${template}`);
  await admin.end();
  const pool = createPool(adminUrl.replace(/\/postgres$/, `/${template}`), 2);
  await migrateDatabase(pool);
  await pool.end();
}

step('running tests');
const args = process.argv.slice(2);
// A directory argument means every test file under it.
const files = args
  .filter((a) => !a.startsWith('-'))
  .map((a) => (existsSync(a) && statSync(a).isDirectory() ? `${a.replace(/\/$/, '')}/**/*.test.ts` : a));
const child = spawn(
  process.execPath,
  [
    '--test',
    `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`,
    '--test-timeout=120000',
    // A test file whose tests have all ended exits even if something it opened is still running
    // (a Kafka consumer left by a failed check kept one file, and with it the whole run, alive past CI's limit).
    '--test-force-exit',
    // ...whose report could then be cut short: each test process writes it with a blocking stdout.
    '--import',
    './test/support/blocking-stdout.ts',
    ...args.filter((a) => a.startsWith('-')),
    ...(files.length > 0 ? files : ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts']),
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...servicesEnv, TEST_PG_ADMIN_URL: adminUrl, TEST_PG_TEMPLATE: template },
  },
);
const code: number = await new Promise((resolve) => child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));

await server.stop();
rmSync(dataDir, { recursive: true, force: true });
if (process.env.KEEP_SERVICES !== '1') spawnSync('bash', ['scripts/services.sh', 'down'], { cwd: root, stdio: 'inherit' });
process.exit(code);
