import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig } from '../src/config.ts';
import { enforceStartupSafety, GUARDED_SECRETS, LOCAL_KAFKA_SASL_PASSWORD, shippedDefault, startupVerdict } from '../src/insecure-defaults.ts';
import { createTestDatabase } from './support/db.ts';
import { logCapture } from './support/logs.ts';
import { SECURE_SECRETS } from './support/secure-env.ts';
import { waitFor } from './support/wait.ts';

const REAL_DB = { DATABASE_URL: 'postgres://pin:pw@db.internal:5432/pin' };
const KAFKA = { KAFKA_BROKERS: 'kafka-1:9092' };
const verdictOf = (env: Record<string, string>) => startupVerdict(loadConfig(env));
/** The test driver's environment without its Kafka brokers (these tests choose the bus themselves). */
const { KAFKA_BROKERS: _brokers, ...driverEnv } = process.env;
const named = (v: ReturnType<typeof verdictOf>) => (v.action === 'refuse' ? v.problems : v.warnings).map((p) => p.setting);

describe('no public secrets on a real database', () => {
  test('embedded PostgreSQL (DATABASE_URL unset): the shipped defaults and the in-process bus start, silently', () => {
    assert.deepEqual(verdictOf({}), { action: 'start', warnings: [] });
  });

  test('a real database with every shipped default: refused, naming each secret, the event bus and the open /metrics', () => {
    const v = verdictOf(REAL_DB);
    assert.equal(v.action, 'refuse');
    assert.deepEqual(named(v), [...GUARDED_SECRETS, 'KAFKA_BROKERS', 'METRICS_SCRAPE_SECRET']);
    for (const p of v.action === 'refuse' ? v.problems.slice(0, 3) : []) assert.match(p.problem, /shipped default/);
  });

  test('each secret on its own: the shipped default is refused, and so is one shorter than 32 bytes', () => {
    for (const setting of GUARDED_SECRETS) {
      const asShipped = verdictOf({ ...REAL_DB, ...KAFKA, ...SECURE_SECRETS, [setting]: shippedDefault(setting) });
      assert.equal(asShipped.action, 'refuse', setting);
      assert.deepEqual(named(asShipped), [setting]);
    }
    // JWT and media secrets already need 32 characters in the schema; the TURN secret's schema allows 16.
    const short = verdictOf({ ...REAL_DB, ...KAFKA, ...SECURE_SECRETS, MESSENGER_TURN_SECRET: 'x'.repeat(31) });
    assert.equal(short.action, 'refuse');
    assert.deepEqual(short.action === 'refuse' && short.problems, [
      { setting: 'MESSENGER_TURN_SECRET', problem: 'is 31 bytes long; at least 32 are needed' },
    ]);
    // Bytes, not characters: 16 two-byte characters are 32 bytes.
    assert.equal(verdictOf({ ...REAL_DB, ...KAFKA, ...SECURE_SECRETS, MESSENGER_TURN_SECRET: 'é'.repeat(16) }).action, 'start');
  });

  test('a real database with secure secrets and Kafka: starts without warnings', () => {
    assert.deepEqual(verdictOf({ ...REAL_DB, ...KAFKA, ...SECURE_SECRETS }), { action: 'start', warnings: [] });
  });

  test('a real database without Kafka (KAFKA_BROKERS unset: the in-process bus): refused naming KAFKA_BROKERS, started with a warning when ALLOW_INSECURE_DEFAULTS allows it', () => {
    const inProcess = verdictOf({ ...REAL_DB, ...SECURE_SECRETS });
    assert.equal(inProcess.action, 'refuse');
    assert.deepEqual(named(inProcess), ['KAFKA_BROKERS']);
    assert.match(inProcess.action === 'refuse' ? inProcess.problems[0]!.problem : '', /in-process event bus/);
    const allowed = verdictOf({ ...REAL_DB, ...SECURE_SECRETS, ALLOW_INSECURE_DEFAULTS: 'true' });
    assert.deepEqual([allowed.action, named(allowed)], ['start', ['KAFKA_BROKERS']]);
    assert.deepEqual(verdictOf({ ...REAL_DB, ...SECURE_SECRETS, ...KAFKA }), { action: 'start', warnings: [] });
  });

  test('a real database serving /metrics on PORT: refused without METRICS_SCRAPE_SECRET; a scrape secret or METRICS_PORT starts', () => {
    const { METRICS_SCRAPE_SECRET: _secret, ...otherSecrets } = SECURE_SECRETS;
    const open = verdictOf({ ...REAL_DB, ...KAFKA, ...otherSecrets });
    assert.equal(open.action, 'refuse');
    assert.deepEqual(named(open), ['METRICS_SCRAPE_SECRET']);
    assert.match(open.action === 'refuse' ? open.problems[0]!.problem : '', /METRICS_PORT/, 'names both ways out');
    assert.deepEqual(verdictOf({ ...REAL_DB, ...KAFKA, ...otherSecrets, METRICS_SCRAPE_SECRET: 'x'.repeat(32) }), { action: 'start', warnings: [] });
    for (const port of ['9464', '0']) assert.deepEqual(verdictOf({ ...REAL_DB, ...KAFKA, ...otherSecrets, METRICS_PORT: port }), { action: 'start', warnings: [] }, port);
    // Local use (embedded PostgreSQL): /metrics stays open on PORT, as npm start has always served it.
    assert.deepEqual(verdictOf({ ...KAFKA }), { action: 'start', warnings: [] });
  });

  test('ALLOW_INSECURE_DEFAULTS=true: starts, with a warning for each insecure setting', () => {
    const v = verdictOf({ ...REAL_DB, ALLOW_INSECURE_DEFAULTS: 'true' });
    assert.equal(v.action, 'start');
    assert.deepEqual(named(v), [...GUARDED_SECRETS, 'KAFKA_BROKERS', 'METRICS_SCRAPE_SECRET']);
    assert.equal(verdictOf({ ...REAL_DB, ALLOW_INSECURE_DEFAULTS: 'false' }).action, 'refuse');
    const plainIdp = verdictOf({ ...REAL_DB, ...SECURE_SECRETS, ...KAFKA, ALLOW_INSECURE_DEFAULTS: 'true', AUTH_JWKS_URL: 'http://idp.local/jwks.json' });
    assert.deepEqual(named(plainIdp), ['AUTH_JWKS_URL', 'AUTH_ISSUER', 'AUTH_AUDIENCE'], 'an allowed plain-http identity provider is warned about');
  });

  test('enforceStartupSafety: a refusal writes one line per setting and exits 1; allowed ones are logged as warnings', () => {
    let written = '';
    let exitCode: number | undefined;
    const io = {
      stderr: { write: (s: string) => (written += s) },
      exit: ((code: number) => {
        exitCode = code;
      }) as (code: number) => never,
    };
    const logs = logCapture('warn');
    enforceStartupSafety(loadConfig({ ...REAL_DB, ...KAFKA, ...SECURE_SECRETS, JWT_SECRET: shippedDefault('JWT_SECRET') }), logs.log, io);
    assert.equal(exitCode, 1);
    assert.equal(written.split('\n').filter((l) => l.startsWith('  - ')).length, 1);
    assert.match(written, /^ {2}- JWT_SECRET: is the shipped default/m);

    exitCode = undefined;
    enforceStartupSafety(loadConfig({ ...REAL_DB, ALLOW_INSECURE_DEFAULTS: 'true' }), logs.log, io);
    assert.equal(exitCode, undefined);
    const warned = logs.lines().filter((l) => l.level === 40).map((l) => l.setting);
    assert.deepEqual(warned, [...GUARDED_SECRETS, 'KAFKA_BROKERS', 'METRICS_SCRAPE_SECRET']);
  });

  test('the bus follows KAFKA_BROKERS: the retired EVENT_BUS fails start-up naming it, whatever its value', () => {
    for (const value of ['kafka', 'in-process']) {
      assert.throws(
        () => loadConfig({ ...KAFKA, EVENT_BUS: value }),
        (e: unknown) => e instanceof ConfigError && e.problems.length === 1 && /^EVENT_BUS: replaced by KAFKA_BROKERS \(set = Kafka, unset = the in-process bus/.test(e.problems[0]!),
      );
    }
  });

  test('the shipped defaults are the values .env.example ships, so "shipped default" covers both', () => {
    const example = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
    for (const setting of GUARDED_SECRETS) {
      assert.equal(example.match(new RegExp(`^${setting}=(.*)$`, 'm'))?.[1], shippedDefault(setting), setting);
    }
    // The local broker's SASL password: commented out in .env.example, kafka.sh's default.
    assert.equal(example.match(/^# KAFKA_SASL_PASSWORD=(.*)$/m)?.[1], LOCAL_KAFKA_SASL_PASSWORD);
    const kafkaSh = readFileSync(new URL('../scripts/kafka.sh', import.meta.url), 'utf8');
    assert.ok(kafkaSh.includes(`KAFKA_SCRAM_PASSWORD:-${LOCAL_KAFKA_SASL_PASSWORD}}`), 'kafka.sh gives its SCRAM user that password');
  });

  test("the local broker's SASL password on a real database: refused, named; other passwords and none start", () => {
    const secure = { ...REAL_DB, ...KAFKA, ...SECURE_SECRETS, KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'pin' };
    const refused = verdictOf({ ...secure, KAFKA_SASL_PASSWORD: LOCAL_KAFKA_SASL_PASSWORD });
    assert.equal(refused.action, 'refuse');
    assert.deepEqual(named(refused), ['KAFKA_SASL_PASSWORD']);
    assert.equal(verdictOf({ ...secure, KAFKA_SASL_PASSWORD: 'the-brokers-own-password' }).action, 'start');
    assert.equal(verdictOf({ ...REAL_DB, ...KAFKA, ...SECURE_SECRETS }).action, 'start');
    // Local use (embedded PostgreSQL) against the local broker is what the password is for.
    assert.equal(verdictOf({ ...KAFKA, KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'pin', KAFKA_SASL_PASSWORD: LOCAL_KAFKA_SASL_PASSWORD }).action, 'start');
  });

  test('plain SMTP (NOTIFICATIONS_SMTP_TLS=none) on a real database: refused, named, unless ALLOW_INSECURE_DEFAULTS; STARTTLS and implicit TLS start', () => {
    const secure = { ...REAL_DB, ...KAFKA, ...SECURE_SECRETS, NOTIFICATIONS_SMTP_HOST: 'smtp.internal' };
    assert.equal(loadConfig({}).NOTIFICATIONS_SMTP_TLS, 'starttls', 'plain text is never the default');
    const plain = verdictOf({ ...secure, NOTIFICATIONS_SMTP_TLS: 'none' });
    assert.equal(plain.action, 'refuse');
    assert.deepEqual(named(plain), ['NOTIFICATIONS_SMTP_TLS']);
    const allowed = verdictOf({ ...secure, NOTIFICATIONS_SMTP_TLS: 'none', ALLOW_INSECURE_DEFAULTS: 'true' });
    assert.equal(allowed.action, 'start');
    assert.deepEqual(named(allowed), ['NOTIFICATIONS_SMTP_TLS'], 'allowed, it is warned about');
    for (const tls of ['starttls', 'implicit']) assert.deepEqual(verdictOf({ ...secure, NOTIFICATIONS_SMTP_TLS: tls }), { action: 'start', warnings: [] }, tls);
    // No SMTP server configured: nothing is sent, so the choice endangers nothing.
    assert.equal(verdictOf({ ...REAL_DB, ...KAFKA, ...SECURE_SECRETS, NOTIFICATIONS_SMTP_TLS: 'none' }).action, 'start');
    // Local use (embedded PostgreSQL) against a local mail catcher is what it is for.
    assert.equal(verdictOf({ NOTIFICATIONS_SMTP_HOST: '127.0.0.1', NOTIFICATIONS_SMTP_TLS: 'none' }).action, 'start');
  });
});

describe('the entry point applies the rule', () => {
  test('node src/main.ts on the test PostgreSQL with the shipped JWT_SECRET exits non-zero naming it, without a stack trace', async () => {
    const database = await createTestDatabase();
    const res = spawnSync(process.execPath, ['src/main.ts'], {
      env: { ...driverEnv, ...SECURE_SECRETS, ...KAFKA, DATABASE_URL: database.url, JWT_SECRET: shippedDefault('JWT_SECRET'), PORT: '0' },
      encoding: 'utf8',
      timeout: 90_000, // bounds a hung start only; importing the app takes ~20 s on a loaded box
    });
    const output = res.stdout + res.stderr;
    assert.notEqual(res.status, 0, output);
    assert.match(res.stderr, /^ {2}- JWT_SECRET: is the shipped default/m);
    assert.doesNotMatch(output, /MESSENGER_MEDIA_TOKEN_SECRET|MESSENGER_TURN_SECRET|KAFKA_BROKERS:/, 'only the insecure setting is named');
    assert.doesNotMatch(output, /^\s+at /m, 'no stack trace');
    assert.doesNotMatch(output, /listening/i);
  });

  test('ALLOW_INSECURE_DEFAULTS=true on the test PostgreSQL: starts and warns naming each insecure setting', async () => {
    const database = await createTestDatabase();
    const child = spawn(process.execPath, ['src/main.ts'], {
      env: { ...driverEnv, DATABASE_URL: database.url, ALLOW_INSECURE_DEFAULTS: 'true', PORT: '0', JOBS_ENABLED: 'false', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    const exited = once(child, 'exit');
    try {
      await waitFor('the service to listen', () => /Server listening/.test(output), 90_000);
      const warned = output
        .split('\n')
        .filter((l) => l.includes('ALLOW_INSECURE_DEFAULTS=true'))
        .map((l) => (JSON.parse(l) as { setting: string; level: number }))
        .map((l) => [l.setting, l.level]);
      assert.deepEqual(warned, [...GUARDED_SECRETS, 'KAFKA_BROKERS', 'METRICS_SCRAPE_SECRET'].map((s) => [s, 40]));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
