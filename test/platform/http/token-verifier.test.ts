import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { SignJWT } from 'jose';
import { AuthError, signToken } from '../../../src/platform/http/auth.ts';
import { HTTP_DEFAULTS } from '../../../src/platform/http/defaults.ts';
import { createTokenVerifier, verifyToken } from '../../../src/platform/http/token-verifier.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';

const SECRET = 'token-verifier-test-secret-0123456789';
const RULES = { secret: SECRET };
const T0 = Date.parse('2026-01-01T12:00:00.000Z');

/** A token valid from T0 for `seconds` (exp = T0/1000 + seconds). */
const tokenUntil = (seconds: number, claims: { sub?: string; admin?: boolean } = {}) =>
  new SignJWT({ admin: claims.admin ?? false })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.sub ?? newId())
    .setIssuedAt(T0 / 1000)
    .setExpirationTime(T0 / 1000 + seconds)
    .sign(new TextEncoder().encode(SECRET));

test('a remembered token answers the same principal as verifyToken, again and again', async () => {
  const userId = newId();
  const token = await signToken({ userId, admin: true }, SECRET);
  const tokens = createTokenVerifier(RULES);
  const expected = await verifyToken(token, RULES);
  assert.deepEqual(await tokens.verify(token), expected);
  assert.equal(tokens.size, 1);
  assert.deepEqual(await tokens.verify(token), { userId, admin: true, expiresAt: expected.expiresAt, opsRole: 'operator' });
  assert.equal(typeof expected.expiresAt, 'number', 'the principal carries the token expiry (the hub closes on it)');
  assert.equal(tokens.size, 1);
});

test('a remembered token is rejected once its exp has passed, exactly when verifyToken starts rejecting it', async () => {
  let now = T0;
  const tokens = createTokenVerifier(RULES, { now: () => now });
  const token = await tokenUntil(60);
  assert.ok(await tokens.verify(token));

  now = T0 + 59_999; // exp - 1 ms: still valid (jose judges whole seconds: expired once exp <= now)
  assert.ok(await tokens.verify(token));
  assert.ok(await verifyToken(token, RULES, { currentDate: new Date(now) }));

  now = T0 + 60_000; // exp itself
  await assert.rejects(verifyToken(token, RULES, { currentDate: new Date(now) }), AuthError);
  await assert.rejects(tokens.verify(token), (err: unknown) => err instanceof AuthError && /exp/.test(err.message));
  assert.equal(tokens.size, 0, 'the expired token is forgotten');
});

test('tokens that fail verification are never remembered', async () => {
  const tokens = createTokenVerifier(RULES);
  const forged = await signToken({ userId: newId(), admin: true }, 'another-secret-entirely-0123456789');
  const noSubject = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
  for (let i = 0; i < 2; i++) {
    await assert.rejects(tokens.verify(forged), AuthError);
    await assert.rejects(tokens.verify(noSubject), AuthError);
    await assert.rejects(tokens.verify('not.a.jwt'), AuthError);
  }
  assert.equal(tokens.size, 0);
});

test('the memory is bounded: past maxEntries the oldest token is forgotten (and verified again when it comes back)', async () => {
  let now = T0;
  const tokens = createTokenVerifier(RULES, { maxEntries: 2, now: () => now });
  const [a, b, c] = await Promise.all([tokenUntil(600), tokenUntil(600), tokenUntil(600)]);
  await tokens.verify(a!);
  await tokens.verify(b!);
  await tokens.verify(c!);
  assert.equal(tokens.size, 2);
  // `a` was forgotten: it is verified afresh, so an expired `a` is rejected by the signature path.
  now = T0 + 600_000;
  await assert.rejects(tokens.verify(a!), AuthError);
});

test('the principal handed out cannot be changed by one request for the next', async () => {
  const tokens = createTokenVerifier(RULES);
  const token = await signToken({ userId: newId(), admin: false }, SECRET);
  const first = await tokens.verify(token);
  assert.throws(() => {
    (first as { admin: boolean }).admin = true;
  }, TypeError);
  assert.equal((await tokens.verify(token)).admin, false);
});

/** An HS256 token built by hand, so its header and signature text can be anything. */
const handMade = (header: object, claims: object, sign: (body: string) => string = (body) => createHmac('sha256', SECRET).update(body).digest('base64url')) => {
  const body = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${body}.${sign(body)}`;
};

test('HS256 checked on the event loop judges as jose does: a critical header it does not know, or any other encoding of the signature, is refused', async () => {
  const claims = { sub: newId(), exp: Math.floor(Date.now() / 1000) + 600 };
  assert.equal((await verifyToken(handMade({ alg: 'HS256', typ: 'JWT' }, claims), RULES)).userId, claims.sub, 'a plain header passes');
  await assert.rejects(verifyToken(handMade({ alg: 'HS256', crit: ['x'], x: 1 }, claims), RULES), (err: unknown) => err instanceof AuthError && err.code === 'AUTH_INVALID_TOKEN');
  const good = handMade({ alg: 'HS256' }, claims);
  for (const bent of [`${good}=`, `${good}A`, good.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))]) {
    await assert.rejects(verifyToken(bent, RULES), (err: unknown) => err instanceof AuthError && err.code === 'AUTH_INVALID_TOKEN', bent);
  }
  const other = handMade({ alg: 'HS256' }, claims, (body) => createHmac('sha256', 'another-secret-0123456789-0123456789').update(body).digest('base64url'));
  await assert.rejects(verifyToken(other, RULES), (err: unknown) => err instanceof AuthError && /signature/.test(err.message));
  const expired = handMade({ alg: 'HS256' }, { sub: claims.sub, exp: Math.floor(Date.now() / 1000) - 1 });
  await assert.rejects(verifyToken(expired, RULES), (err: unknown) => err instanceof AuthError && err.code === 'AUTH_TOKEN_EXPIRED');
  const early = handMade({ alg: 'HS256' }, { ...claims, nbf: Math.floor(Date.now() / 1000) + 300 });
  await assert.rejects(verifyToken(early, RULES), (err: unknown) => err instanceof AuthError && err.code === 'AUTH_TOKEN_CLAIMS_INVALID');
  // A header naming another algorithm is refused even with a valid HS256 signature of the secret.
  for (const alg of ['none', 'HS512', 'RS256', 'hs256']) {
    await assert.rejects(verifyToken(handMade({ alg }, claims), RULES), (err: unknown) => err instanceof AuthError && err.code === 'AUTH_INVALID_TOKEN', alg);
  }
});

const issuedAt = (iat: number, exp: number, secret = SECRET) =>
  new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(newId()).setIssuedAt(iat).setExpirationTime(exp).sign(new TextEncoder().encode(secret));

test('an iat further ahead than the allowed clock skew is 401 AUTH_TOKEN_ISSUED_IN_FUTURE; within the skew the token passes', async () => {
  const now = T0 / 1000;
  const at = { currentDate: new Date(T0) };
  assert.ok(await verifyToken(await issuedAt(now + HTTP_DEFAULTS.iatClockSkewSeconds, now + 600), RULES, at), 'an issuer clock ahead by the skew is tolerated');
  await assert.rejects(
    verifyToken(await issuedAt(now + HTTP_DEFAULTS.iatClockSkewSeconds + 1, now + 600), RULES, at),
    (err: unknown) => err instanceof AuthError && err.code === 'AUTH_TOKEN_ISSUED_IN_FUTURE',
  );
});

test('REST and the hub answer a token issued in the future with 401 AUTH_TOKEN_ISSUED_IN_FUTURE', async () => {
  const { app, config } = await buildTestApp();
  // A day ahead of any clock this test could run on; the verifier reads the wall clock in the app.
  const now = Math.floor(Date.now() / 1000);
  const token = await issuedAt(now + 86_400, now + 86_400 + 600, config.JWT_SECRET);
  const rest = await app.inject({ url: '/api/messenger/chats', headers: { authorization: `Bearer ${token}` } });
  assert.deepEqual([rest.statusCode, rest.json().code], [401, 'AUTH_TOKEN_ISSUED_IN_FUTURE']);
  const hub = await app.inject({ method: 'POST', url: '/hubs/messenger/negotiate', headers: { authorization: `Bearer ${token}` } });
  assert.deepEqual([hub.statusCode, hub.json().code], [401, 'AUTH_TOKEN_ISSUED_IN_FUTURE']);
});
