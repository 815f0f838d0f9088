import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { ConfigSchema, loadConfig } from '../src/config.ts';
import { Duration, defaultsOf, formatDuration, parseDuration, settingsProblems } from '../src/platform/types/index.ts';
import { RETIRED_SETTINGS, retiredSettingProblems, type RetiredSetting } from '../src/retired-settings.ts';
import { envExampleStaleness, ENV_EXAMPLE_PATH, renderEnvExample } from '../scripts/env-example.ts';
import { configProblems } from './support/config.ts';

const problemsOf = configProblems;

test('duration strings parse to milliseconds in every unit, sums included; anything else is refused', () => {
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('30s'), 30_000);
  assert.equal(parseDuration('5m'), 300_000);
  assert.equal(parseDuration('24h'), 86_400_000);
  assert.equal(parseDuration('7d'), 604_800_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration(' 2s '), 2000);
  assert.equal(parseDuration('0'), 0);
  // A bare number is refused: an old millisecond value must not be read as some other unit.
  for (const bad of ['', '30', '30000', '1.5s', '-1s', '5 m', '5min', 's', '5ms5', 'ten seconds']) {
    assert.equal(parseDuration(bad), undefined, bad);
  }
});

test('durations are shown in the largest unit that keeps them exact', () => {
  assert.deepEqual([0, 500, 1500, 30_000, 90_000, 300_000, 86_400_000, 5_400_000].map(formatDuration), [
    '0s', '500ms', '1500ms', '30s', '90s', '5m', '1d', '90m',
  ]);
  for (const ms of [1, 999, 61_000, 7_200_000]) assert.equal(parseDuration(formatDuration(ms)), ms);
});

const fields = {
  A_INTERVAL: Duration({ default: '30s', minimum: '1s', maximum: '1h', description: 'how often' }),
  A_RETENTION: Duration({ default: '7d', minimum: '1h', description: 'kept this long' }),
};

test('a Duration field reaches code as milliseconds, defaults included, and its bounds read as durations', () => {
  assert.deepEqual(defaultsOf(fields), { A_INTERVAL: 30_000, A_RETENTION: 604_800_000 });
  assert.deepEqual(settingsProblems(fields, { A_INTERVAL: 1000, A_RETENTION: 3_600_000 }), []);
  assert.deepEqual(settingsProblems(fields, { A_INTERVAL: 500, A_RETENTION: 60_000 }), [
    'A_INTERVAL: must be between 1s and 1h (got 500ms) — how often',
    'A_RETENTION: must be at least 1h (got 1m) — kept this long',
  ]);
  assert.equal(settingsProblems(fields, { A_INTERVAL: 7_200_000 }).length, 1);
});

test('loadConfig reads duration settings as duration strings and names every bad one at once', () => {
  assert.equal(loadConfig({}).SHUTDOWN_TIMEOUT, 10_000);
  assert.equal(loadConfig({ SHUTDOWN_TIMEOUT: '1m' }).SHUTDOWN_TIMEOUT, 60_000);
  const problems = problemsOf({ SHUTDOWN_TIMEOUT: '500ms', PORT: 'eighty', IDENTITY_ACCESS_FANOUT_BATCH_SIZE: '0' });
  assert.deepEqual(problems.map((p) => p.split(':')[0]).sort(), ['IDENTITY_ACCESS_FANOUT_BATCH_SIZE', 'PORT', 'SHUTDOWN_TIMEOUT']);
  assert.ok(problems.includes('SHUTDOWN_TIMEOUT: must be between 1s and 10m (got 500ms)'), problems.join('\n'));
  for (const bad of ['10000', '10 s', 'soon']) {
    assert.deepEqual(problemsOf({ SHUTDOWN_TIMEOUT: bad }), [
      `SHUTDOWN_TIMEOUT: not a duration string such as 500ms, 30s, 5m, 24h or 7d (got ${JSON.stringify(bad)})`,
    ]);
  }
});

test('an integer setting takes only a whole number: a fraction or an exponent is refused, not truncated', () => {
  assert.equal(loadConfig({ IDENTITY_ACCESS_FANOUT_BATCH_SIZE: ' 250 ' }).IDENTITY_ACCESS_FANOUT_BATCH_SIZE, 250);
  for (const bad of ['1.5', '1e3', '0x10', 'ten']) {
    assert.deepEqual(problemsOf({ IDENTITY_ACCESS_FANOUT_BATCH_SIZE: bad }), [`IDENTITY_ACCESS_FANOUT_BATCH_SIZE: not a whole number (got ${JSON.stringify(bad)})`]);
  }
});

test('a renamed or removed setting fails start-up naming its replacement, or the constant it became', () => {
  const retired: Record<string, RetiredSetting> = {
    OLD_PLAIN: { renamed: 'NEW_PLAIN' },
    OLD_WAIT_SECONDS: { renamed: 'NEW_WAIT', unit: 's' },
    OLD_KNOB: { constant: 'OLD_KNOB_VALUE = 5s in src/x.ts', why: 'nobody tunes it' },
    OLD_FLAG: { replacedBy: 'NEW_CHOICE', how: 'true = a, false = b' },
  };
  assert.deepEqual(retiredSettingProblems({ OLD_PLAIN: '', OTHER: '1' }, retired), [], 'unset (or empty) old names pass');
  assert.deepEqual(retiredSettingProblems({ OLD_PLAIN: 'x', OLD_WAIT_SECONDS: '90', OLD_KNOB: '7' }, retired), [
    'OLD_PLAIN: renamed NEW_PLAIN; set that instead and unset OLD_PLAIN',
    'OLD_WAIT_SECONDS: renamed NEW_WAIT, a duration string: set NEW_WAIT=90s and unset OLD_WAIT_SECONDS',
    'OLD_KNOB: removed — it is now a fixed constant (OLD_KNOB_VALUE = 5s in src/x.ts; nobody tunes it); unset it',
  ]);
  assert.deepEqual(retiredSettingProblems({ OLD_FLAG: 'true' }, retired), ['OLD_FLAG: replaced by NEW_CHOICE (true = a, false = b); unset OLD_FLAG']);
  assert.match(retiredSettingProblems({ OLD_WAIT_SECONDS: 'lots' }, retired)[0]!, /NEW_WAIT as a duration such as 30s/);

  // Through loadConfig, with every other problem, even when the new name is set as well.
  const problems = problemsOf({ SHUTDOWN_TIMEOUT_MS: '15000', SHUTDOWN_TIMEOUT: '15s', PORT: 'x' });
  assert.ok(problems.includes('SHUTDOWN_TIMEOUT_MS: renamed SHUTDOWN_TIMEOUT, a duration string: set SHUTDOWN_TIMEOUT=15s and unset SHUTDOWN_TIMEOUT_MS'), problems.join('\n'));
  assert.ok(problems.some((p) => p.startsWith('PORT:')));

  // A setting that became a constant names it and its value.
  assert.deepEqual(problemsOf({ MESSENGER_REALTIME_CALL_RING_TIMEOUT_SECONDS: '30' }), [
    'MESSENGER_REALTIME_CALL_RING_TIMEOUT_SECONDS: removed — it is now a fixed constant (CALL_RING_TIMEOUT_MS = 45s in src/modules/messenger/calls/calls.ts; a product rule); unset it',
  ]);
});

test('every retired name is free and every replacement it names is a current setting', () => {
  const schema = new Set(Object.keys(ConfigSchema.properties));
  for (const [old, entry] of Object.entries(RETIRED_SETTINGS)) {
    assert.ok(!schema.has(old), `${old} is retired but still a setting`);
    if ('renamed' in entry) assert.ok(schema.has(entry.renamed), `${old} → ${entry.renamed}, which is no setting`);
    if ('replacedBy' in entry) assert.ok(schema.has(entry.replacedBy), `${old} → ${entry.replacedBy}, which is no setting`);
  }
});

test('each constant a retired setting names is where it says: the file exists and declares it', () => {
  const stale: string[] = [];
  for (const [name, entry] of Object.entries(RETIRED_SETTINGS)) {
    if (!('constant' in entry)) continue;
    const m = /^([A-Z][A-Z0-9_]*)(?:\.(\w+))? = .+ in (src\/\S+\.ts)$/.exec(entry.constant);
    if (!m) continue; // not a named constant (e.g. "a free port picked at each start")
    const [, holder, field, path] = m;
    const file = existsSync(path!) ? readFileSync(path!, 'utf8') : '';
    const declared = new RegExp(`\\b${holder}\\b\\s*(:[^=]+)?=`).test(file) && (field === undefined || new RegExp(`\\b${field}\\s*:`).test(file));
    if (!declared) stale.push(`${name}: ${entry.constant}`);
  }
  assert.deepEqual(stale, []);
});

test('the settings that became fixed values or were folded into another fail start-up naming what replaced them', () => {
  const replaced: Record<string, RegExp> = {
    KAFKA_CONSUMER_SESSION_TIMEOUT: /EVENTS_DEFAULTS\.kafkaConsumerSessionTimeoutMs = 30s/,
    KAFKA_TOPIC_PARTITIONS: /EVENTS_DEFAULTS\.kafkaTopicPartitions = 6/,
    KAFKA_LAG_POLLING_INTERVAL: /EVENTS_DEFAULTS\.kafkaLagPollingIntervalMs = 15s/,
    KAFKA_CONSUMER_MAX_ATTEMPTS: /EVENTS_DEFAULTS\.kafkaConsumerMaxAttempts = 10/,
    DATABASE_CONNECT_TIMEOUT: /DB_DEFAULTS\.databaseConnectTimeoutMs = 5s/,
    DATABASE_STARTUP_WAIT: /DB_DEFAULTS\.databaseStartupWaitMs = 30s/,
    NOTIFICATIONS_DISPATCH_POLLING_INTERVAL: /NOTIFICATIONS_DEFAULTS\.dispatchPollingIntervalMs = 5s/,
    NOTIFICATIONS_DISPATCH_BATCH_SIZE: /NOTIFICATIONS_DEFAULTS\.dispatchBatchSize = 200/,
    NOTIFICATIONS_RETRY_POLLING_INTERVAL: /NOTIFICATIONS_DEFAULTS\.retryPollingIntervalMs = 1m/,
    NOTIFICATIONS_RETRY_BATCH_SIZE: /NOTIFICATIONS_DEFAULTS\.retryBatchSize = 200/,
    NOTIFICATIONS_SEND_CONCURRENCY: /NOTIFICATIONS_DEFAULTS\.sendConcurrency = 32/,
    NOTIFICATIONS_CLAIM_LEASE: /NOTIFICATIONS_DEFAULTS\.claimLeaseMs = 5m/,
    NOTIFICATIONS_PROVIDER_TIMEOUT: /NOTIFICATIONS_DEFAULTS\.providerTimeoutMs = 10s/,
    NOTIFICATIONS_SMTP_SECURE: /replaced by NOTIFICATIONS_SMTP_TLS \(true = implicit, false = starttls\)/,
    NOTIFICATIONS_SMTP_ALLOW_PLAIN: /replaced by NOTIFICATIONS_SMTP_TLS \(true = none/,
    NOTIFICATIONS_SMTP_MESSAGE_ID_DOMAIN: /replaced by NOTIFICATIONS_SMTP_FROM/,
    OUTBOX_RETENTION: /OUTBOX_DEFAULTS\.outboxRetentionMs = 1d/,
    INBOX_RETENTION: /OUTBOX_DEFAULTS\.inboxRetentionMs = 7d/,
    MESSENGER_EVENTS_RETENTION: /PUSH_DEFAULTS\.eventsRetentionMs = 7d/,
    EVENT_BUS: /replaced by KAFKA_BROKERS \(set = Kafka, unset = the in-process bus/,
    MESSENGER_REALTIME_LOCK_TTL: /replaced by MESSENGER_REALTIME_MAX_RUN_DURATION \(the LockTtl follows it/,
    MESSENGER_REALTIME_BACKOFF_FACTOR: /PUSH_DEFAULTS\.dispatchBackoffFactor = 2 in src\/platform\/push\/defaults\.ts/,
    MESSENGER_REALTIME_BACKOFF_JITTER: /PUSH_DEFAULTS\.dispatchBackoffJitter = 0\.2/,
    HUB_HANDSHAKE_TIMEOUT: /REALTIME_DEFAULTS\.hubHandshakeTimeoutMs = 15s/,
    HUB_INVOCATION_BURST: /replaced by HUB_INVOCATIONS_PER_SECOND \(the burst is two seconds of it/,
    HUB_MAX_CONNECTS_PER_USER_PER_SECOND: /REALTIME_DEFAULTS\.hubUserConnectsPerSecond = 2/,
    OUTBOX_BATCH_SIZE: /OUTBOX_DEFAULTS\.outboxBatchSize = 1000/,
    OUTBOX_MAX_RUN_DURATION: /OUTBOX_DEFAULTS\.outboxMaxRunMs = 5s/,
    MESSENGER_RATE_LIMIT_CONTACT_REQUESTS_PER_MINUTE: /MESSENGER_DEFAULTS\.rateLimitContactRequestsPerMinute = 20/,
    MESSENGER_RATE_LIMIT_CALL_INVITES_PER_MINUTE: /MESSENGER_DEFAULTS\.rateLimitCallInvitesPerMinute = 20/,
    MESSENGER_RATE_LIMIT_CHAT_CHANGES_PER_MINUTE: /MESSENGER_DEFAULTS\.rateLimitChatChangesPerMinute = 30/,
    NOTIFICATIONS_RATE_LIMIT_PUSH_TOKEN_REGISTRATIONS_PER_MINUTE: /NOTIFICATIONS_DEFAULTS\.rateLimitPushTokenRegistrationsPerMinute = 10/,
    USER_ACTIVITY_RATE_LIMIT_TRACKING_PER_MINUTE: /USER_ACTIVITY_DEFAULTS\.rateLimitTrackingPerMinute = 1200/,
    HUB_MAX_BUFFERED_BYTES: /REALTIME_DEFAULTS\.hubMaxBufferedBytes = 1048576/,
    FILES_UPLOAD_URL_TTL: /MESSENGER_DEFAULTS\.fileUploadUrlTtlMs = 15m/,
    FILES_S3_REGION: /removed — set AWS_REGION instead \(the AWS SDK's default chain/,
    FILES_S3_ACCESS_KEY_ID: /removed — set AWS_ACCESS_KEY_ID instead/,
    FILES_S3_SECRET_ACCESS_KEY: /removed — set AWS_SECRET_ACCESS_KEY instead/,
  };
  for (const [name, what] of Object.entries(replaced)) {
    const problems = problemsOf({ [name]: '1' });
    assert.equal(problems.length, 1, `${name}: ${problems.join('; ')}`);
    assert.ok(problems[0]!.startsWith(`${name}: `), problems[0]);
    assert.match(problems[0]!, what, name);
  }
  // A name that pointed at one of them (an older rename) now names the constant too.
  assert.match(problemsOf({ KAFKA_CONSUMER_SESSION_TIMEOUT_MS: '30000' })[0]!, /EVENTS_DEFAULTS\.kafkaConsumerSessionTimeoutMs/);
});

test('the start-up of the service fails naming a retired setting and its replacement', () => {
  const res = spawnSync(process.execPath, ['src/main.ts'], {
    env: { ...process.env, SHUTDOWN_TIMEOUT_MS: '10000' },
    encoding: 'utf8',
    timeout: 90_000, // a bound on a hung start only: importing the app is slow on a loaded machine
  });
  assert.notEqual(res.status, 0);
  assert.match(res.stderr, /SHUTDOWN_TIMEOUT_MS: renamed SHUTDOWN_TIMEOUT, a duration string: set SHUTDOWN_TIMEOUT=10s/);
});

test('.env.example is what the settings schema generates; a stale one is refused naming the command', () => {
  const file = readFileSync(ENV_EXAMPLE_PATH, 'utf8');
  assert.equal(envExampleStaleness(file), undefined, 'run `npm run env-example`');
  assert.equal(envExampleStaleness(renderEnvExample()), undefined);
  const stale = file.replace('PORT=3000', 'PORT=3001');
  assert.notEqual(stale, file);
  assert.match(envExampleStaleness(stale) ?? '', /\.env\.example is stale.*npm run env-example/);
  assert.match(file, /^SHUTDOWN_TIMEOUT=10s$/m, 'durations are written as duration strings');
  assert.match(file, /^# \(duration; 1s to 10m\)\nSHUTDOWN_TIMEOUT=10s$/m, 'with their bounds');

  const check = spawnSync(process.execPath, ['scripts/env-example.ts', '--check'], { encoding: 'utf8' });
  assert.equal(check.status, 0, check.stderr);
});
