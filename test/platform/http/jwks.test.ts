import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { AuthError, signToken } from '../../../src/platform/http/auth.ts';
import { createTokenVerifier, type TokenRules } from '../../../src/platform/http/token-verifier.ts';
import { newId } from '../../../src/platform/time.ts';
import { buildTestApp } from '../../support/app.ts';

const SECRET = 'jwks-test-secret-0123456789-0123456789';

interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  jwk: JWK;
}

async function signingKey(alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg);
  const kid = newId();
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** An identity provider's JWKS endpoint: serves `keys` (changeable), counts fetches, can fail. */
async function startJwksServer(keys: SigningKey[]) {
  const state = { keys, fetches: 0, down: false };
  const server = http.createServer((_req, res) => {
    state.fetches++;
    if (state.down) return res.writeHead(500).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: state.keys.map((k) => k.jwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => new Promise((resolve) => server.close(resolve)));
  return Object.assign(state, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json` });
}

/** An identity provider's token: iat now, exp in `ttl` seconds unless the claims say otherwise. */
function idpToken(key: SigningKey, claims: Record<string, unknown> = {}, ttl = 300) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iat: now, exp: now + ttl, sub: newId(), ...claims }).setProtectedHeader({ alg: key.alg, kid: key.kid }).sign(key.privateKey);
}

const refusedWith = (code: string) => (err: unknown) => err instanceof AuthError && err.code === code;

test('RS256 and ES256 tokens verify against the JWKS, with sub lower-cased; the key set is fetched once for many tokens', async () => {
  const [rsa, ec] = await Promise.all([signingKey('RS256'), signingKey('ES256')]);
  const idp = await startJwksServer([rsa, ec]);
  const tokens = createTokenVerifier({ secret: SECRET, jwksUrl: idp.url });
  const sub = newId().toUpperCase();
  assert.equal((await tokens.verify(await idpToken(rsa, { sub }))).userId, sub.toLowerCase());
  assert.equal((await tokens.verify(await idpToken(ec, { admin: true }))).admin, true);
  await tokens.verify(await idpToken(rsa));
  assert.equal(idp.fetches, 1);
  // HS256 with JWT_SECRET is still accepted beside them.
  assert.ok(await tokens.verify(await signToken({ userId: newId(), admin: false }, SECRET)));
});

test('key rotation: a new kid is fetched, and a token of the removed key is refused even though it was verified before', async () => {
  const [oldKey, newKey] = await Promise.all([signingKey('RS256'), signingKey('RS256')]);
  const idp = await startJwksServer([oldKey]);
  const tokens = createTokenVerifier({ secret: SECRET, jwksUrl: idp.url, jwks: { cooldownMs: 0 } });
  const oldToken = await idpToken(oldKey);
  assert.ok(await tokens.verify(oldToken));

  idp.keys = [newKey];
  assert.ok(await tokens.verify(await idpToken(newKey)), 'the unknown kid made the key set be fetched again');
  assert.equal(idp.fetches, 2);
  await assert.rejects(tokens.verify(oldToken), refusedWith('AUTH_TOKEN_KEY_UNKNOWN'));
});

test('tokens naming unknown kids fetch the key set at most once per cooldown', async () => {
  const [known, stranger] = await Promise.all([signingKey('ES256'), signingKey('ES256')]);
  const idp = await startJwksServer([known]);
  const tokens = createTokenVerifier({ secret: SECRET, jwksUrl: idp.url, jwks: { cooldownMs: 60_000 } });
  await tokens.verify(await idpToken(known));
  for (let i = 0; i < 5; i++) await assert.rejects(tokens.verify(await idpToken(stranger)), refusedWith('AUTH_TOKEN_KEY_UNKNOWN'));
  assert.equal(idp.fetches, 1);
});

test('issuer, audience, exp and lifetime are enforced with stable codes', async () => {
  const key = await signingKey('RS256');
  const idp = await startJwksServer([key]);
  const rules: TokenRules = { secret: SECRET, jwksUrl: idp.url, issuer: 'https://idp.example', audience: 'pin', maxLifetimeSeconds: 3600 };
  const tokens = createTokenVerifier(rules);
  const good = { iss: 'https://idp.example', aud: 'pin' };
  const now = Math.floor(Date.now() / 1000);
  assert.ok(await tokens.verify(await idpToken(key, good)));
  await assert.rejects(tokens.verify(await idpToken(key, { ...good, iss: 'https://evil.example' })), refusedWith('AUTH_TOKEN_CLAIMS_INVALID'));
  await assert.rejects(tokens.verify(await idpToken(key, { ...good, aud: 'other' })), refusedWith('AUTH_TOKEN_CLAIMS_INVALID'));
  await assert.rejects(tokens.verify(await idpToken(key, { ...good, exp: undefined })), refusedWith('AUTH_TOKEN_CLAIMS_INVALID'));
  await assert.rejects(tokens.verify(await idpToken(key, { ...good, exp: now - 10 })), refusedWith('AUTH_TOKEN_EXPIRED'));
  await assert.rejects(tokens.verify(await idpToken(key, good, 3601)), refusedWith('AUTH_TOKEN_LIFETIME_TOO_LONG'));
  // Without iat the lifetime is judged from now; an iat ahead within the clock skew cannot hide a long exp.
  await assert.rejects(tokens.verify(await idpToken(key, { ...good, iat: undefined }, 7200)), refusedWith('AUTH_TOKEN_LIFETIME_TOO_LONG'));
  await assert.rejects(tokens.verify(await idpToken(key, { ...good, iat: now + 30 }, 7200)), refusedWith('AUTH_TOKEN_LIFETIME_TOO_LONG'));
  // Further ahead the token was not issued yet: said so, not "lifetime too long".
  await assert.rejects(tokens.verify(await idpToken(key, { ...good, iat: now + 7190 }, 7200)), refusedWith('AUTH_TOKEN_ISSUED_IN_FUTURE'));
  // The same rules hold for HS256 tokens: one without the issuer is refused.
  await assert.rejects(tokens.verify(await signToken({ userId: newId(), admin: false }, SECRET)), refusedWith('AUTH_TOKEN_CLAIMS_INVALID'));
  assert.ok(await tokens.verify(await signToken({ userId: newId(), admin: false }, SECRET, { issuer: 'https://idp.example', audience: 'pin', expiresIn: '10m' })));
});

test('an RS256 token is refused when no JWKS is configured, and so is alg none', async () => {
  const key = await signingKey('RS256');
  const tokens = createTokenVerifier({ secret: SECRET });
  await assert.rejects(tokens.verify(await idpToken(key)), refusedWith('AUTH_INVALID_TOKEN'));
  const header = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
  const body = Buffer.from(JSON.stringify({ sub: newId(), exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url');
  await assert.rejects(tokens.verify(`${header}.${body}.`), refusedWith('AUTH_INVALID_TOKEN'));
});

test('REST answers each refusal with its code: 401 for the token, 503 AUTH_KEYS_UNAVAILABLE while the JWKS cannot be fetched', async () => {
  const key = await signingKey('ES256');
  const idp = await startJwksServer([key]);
  idp.down = true;
  // The test's key server speaks plain http and its tokens carry no iss/aud: local use, said explicitly.
  const { app } = await buildTestApp({ JWT_SECRET: SECRET, AUTH_JWKS_URL: idp.url, AUTH_MAX_TOKEN_LIFETIME: '10m', ALLOW_INSECURE_DEFAULTS: 'true' });
  const call = async (token: string) => {
    const res = await app.inject({ url: '/api/messenger/contacts', headers: { authorization: `Bearer ${token}` } });
    return { status: res.statusCode, code: res.json().code as string | undefined };
  };
  assert.deepEqual(await call(await idpToken(key)), { status: 503, code: 'AUTH_KEYS_UNAVAILABLE' });
  idp.down = false;
  assert.equal((await call(await idpToken(key))).status, 200);
  assert.deepEqual(await call(await idpToken(key, {}, 601)), { status: 401, code: 'AUTH_TOKEN_LIFETIME_TOO_LONG' });
  assert.deepEqual(await call(await idpToken(key, { exp: Math.floor(Date.now() / 1000) - 5 })), { status: 401, code: 'AUTH_TOKEN_EXPIRED' });
  assert.deepEqual(await call('not.a.jwt'), { status: 401, code: 'AUTH_INVALID_TOKEN' });
  // The hub takes the same verifier.
  const negotiate = await app.inject({ method: 'POST', url: '/hubs/messenger/negotiate', headers: { authorization: `Bearer ${await idpToken(key, {}, 601)}` } });
  assert.deepEqual([negotiate.statusCode, negotiate.json().code], [401, 'AUTH_TOKEN_LIFETIME_TOO_LONG']);
});
