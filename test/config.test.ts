import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ConfigError, ConfigSchema, listenHostOf, loadConfig } from '../src/config.ts';
import { configProblems } from './support/config.ts';

test('defaults apply when nothing is set, and values are converted from strings', () => {
  const config = loadConfig({ PORT: '8080', JOBS_ENABLED: 'false' });
  assert.equal(config.PORT, 8080);
  assert.equal(config.JOBS_ENABLED, false);
  assert.equal(config.HOST, undefined);
  assert.equal(config.IDENTITY_ACCESS_FANOUT_BATCH_SIZE, 500);
  assert.equal(config.DATABASE_URL, undefined);
});

// npm start's embedded default has public secrets and an open /metrics: on every interface anyone
// on the network could mint an admin token for it.
test('the server binds loopback on the embedded default (DATABASE_URL unset), every interface on a real database, and HOST overrides both', () => {
  assert.equal(listenHostOf(loadConfig({})), '127.0.0.1');
  assert.equal(listenHostOf(loadConfig({ DATABASE_URL: 'postgres://pin@db:5432/pin' })), '0.0.0.0');
  assert.equal(listenHostOf(loadConfig({ HOST: '0.0.0.0' })), '0.0.0.0');
  assert.equal(listenHostOf(loadConfig({ HOST: '10.0.0.7', DATABASE_URL: 'postgres://pin@db:5432/pin' })), '10.0.0.7');
});

test('every invalid setting is named in one error, and secret values are not echoed', () => {
  const err = (() => {
    try {
      loadConfig({ PORT: 'eighty', IDENTITY_ACCESS_FANOUT_BATCH_SIZE: '0', JWT_SECRET: 'short', KAFKA_BROKERS: 'a:1,,b' });
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  assert.ok(err instanceof ConfigError);
  const named = new Set(err.problems.map((p) => p.split(':')[0]));
  for (const key of ['PORT', 'IDENTITY_ACCESS_FANOUT_BATCH_SIZE', 'JWT_SECRET', 'KAFKA_BROKERS']) assert.ok(named.has(key), key);
  assert.doesNotMatch(err.message, /short/);
});

test('the backplane cannot be enabled without a Redis URL', () => {
  assert.throws(() => loadConfig({ REALTIME_BACKPLANE_ENABLED: 'true' }), /REALTIME_BACKPLANE_ENABLED: needs REDIS_URL/);
});

test('an identity provider (AUTH_JWKS_URL) needs https, AUTH_ISSUER and AUTH_AUDIENCE: each missing one is named', () => {
  const problemsOf = configProblems;
  const bare = problemsOf({ AUTH_JWKS_URL: 'http://idp.example/jwks.json' });
  assert.deepEqual(
    bare.map((p) => p.split(':')[0]),
    ['AUTH_JWKS_URL', 'AUTH_ISSUER', 'AUTH_AUDIENCE'],
  );
  assert.match(bare[0]!, /https/);
  assert.ok(bare.every((p) => /ALLOW_INSECURE_DEFAULTS=true allows it for local use/.test(p)), 'the way out is named');
  assert.deepEqual(problemsOf({ AUTH_JWKS_URL: 'https://idp.example/jwks.json', AUTH_ISSUER: 'https://idp.example' }).map((p) => p.split(':')[0]), ['AUTH_AUDIENCE']);
  assert.deepEqual(problemsOf({ AUTH_JWKS_URL: 'https://idp.example/jwks.json', AUTH_AUDIENCE: 'pin' }).map((p) => p.split(':')[0]), ['AUTH_ISSUER']);

  const complete = loadConfig({ AUTH_JWKS_URL: 'https://idp.example/jwks.json', AUTH_ISSUER: 'https://idp.example', AUTH_AUDIENCE: 'pin' });
  assert.equal(complete.AUTH_JWKS_URL, 'https://idp.example/jwks.json');
  // Local use: a plain-http provider without iss/aud, said explicitly.
  assert.equal(loadConfig({ AUTH_JWKS_URL: 'http://localhost:8080/jwks.json', ALLOW_INSECURE_DEFAULTS: 'true' }).AUTH_JWKS_URL, 'http://localhost:8080/jwks.json');
  assert.deepEqual(problemsOf({}), [], 'no JWKS, nothing required');
});

test('start-up with a plain-http JWKS URL fails, naming AUTH_JWKS_URL, AUTH_ISSUER and AUTH_AUDIENCE', () => {
  const res = spawnSync(process.execPath, ['src/main.ts'], {
    env: { ...process.env, AUTH_JWKS_URL: 'http://idp.example/jwks.json', AUTH_ISSUER: '', AUTH_AUDIENCE: '', ALLOW_INSECURE_DEFAULTS: '' },
    encoding: 'utf8',
    timeout: 90_000,
  });
  assert.notEqual(res.status, 0);
  assert.match(res.stderr, /AUTH_JWKS_URL: must be an https URL/);
  assert.match(res.stderr, /AUTH_ISSUER: required/);
  assert.match(res.stderr, /AUTH_AUDIENCE: required/);
});

test('the process exits non-zero naming every problem when a setting is invalid', () => {
  const res = spawnSync(process.execPath, ['src/main.ts'], {
    env: { ...process.env, PORT: '-1', LOG_LEVEL: 'loud' },
    encoding: 'utf8',
    timeout: 90_000, // a bound on a hung start only: importing the app takes ~20 s on a loaded 2-core box
  });
  assert.notEqual(res.status, 0);
  assert.match(res.stderr, /PORT/);
  assert.match(res.stderr, /LOG_LEVEL/);
});

test('.env.example lists every setting of the schema', () => {
  const example = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
  const listed = new Set([...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]));
  const missing = Object.keys(ConfigSchema.properties).filter((k) => !listed.has(k));
  assert.deepEqual(missing, []);
});

test('.env.example names at most 90 settings: what another setting implies or only a developer tunes is no setting', () => {
  const example = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
  const listed = [...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]);
  assert.equal(new Set(listed).size, listed.length, 'each setting once');
  assert.ok(listed.length <= 90, `${listed.length} settings: fold one into a defaults.ts or derive it`);
  assert.equal(listed.length, Object.keys(ConfigSchema.properties).length);
});
