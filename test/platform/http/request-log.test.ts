import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { buildTestApp } from '../../support/app.ts';

/** Collects every log line the app writes. */
function captureLog(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

test('the request log carries neither the access_token query nor the client IP', async () => {
  const log = captureLog();
  const { app } = await buildTestApp({}, { logDestination: log.stream, logLevel: 'info' });
  const secret = 'eyJhbGciOiJIUzI1NiJ9.SECRET-TOKEN-VALUE.sig';
  const res = await app.inject({
    method: 'POST',
    url: `/hubs/messenger/negotiate?negotiateVersion=1&access_token=${secret}`,
    remoteAddress: '203.0.113.77',
    headers: { 'x-forwarded-for': '198.51.100.23' },
  });
  assert.equal(res.statusCode, 401); // the token is not a valid JWT: refused, and logged as a request
  const text = log.text();
  assert.match(text, /\/hubs\/messenger\/negotiate\?negotiateVersion=1&access_token=\[REDACTED\]/);
  assert.doesNotMatch(text, /SECRET-TOKEN-VALUE/);
  assert.doesNotMatch(text, /203\.0\.113\.77/);
  assert.doesNotMatch(text, /198\.51\.100\.23/);
});

test('an Authorization header never reaches the log', async () => {
  const log = captureLog();
  const { app, token } = await buildTestApp({}, { logDestination: log.stream, logLevel: 'trace' });
  const bearer = await token({ admin: true });
  await app.inject({ method: 'GET', url: '/api/ops/jobs', headers: { authorization: `Bearer ${bearer}` } });
  assert.match(log.text(), /\/api\/ops\/jobs/);
  assert.equal(log.text().includes(bearer), false);
});
