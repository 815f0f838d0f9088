import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { newId } from '../../../src/platform/time.ts';
import { launchChromium } from '../../modules/messenger/support/browser.ts';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { click, disabled, openConsole, text } from './console-page.ts';

/**
 * Signing in on a real deployment: the identity provider's RS256/ES256 access tokens, verified
 * against its JWKS (served here by a local HTTP server, as the provider's /.well-known/jwks.json),
 * carrying the ops role claim. In headless Chromium as on-call signs in: `ops_role: "operator"`
 * acts, `"viewer"` reads, a token without the claim is refused.
 */

const ISSUER = 'https://idp.test/realms/pin';
const AUDIENCE = 'pin-platform-jobs';
const JOB = 'messenger-realtime-dispatch';

interface Key { kid: string; alg: 'RS256' | 'ES256'; privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']; jwk: JWK }
async function signingKey(alg: Key['alg']): Promise<Key> {
  const { publicKey, privateKey } = await generateKeyPair(alg);
  const kid = newId();
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

const keys = await Promise.all([signingKey('RS256'), signingKey('ES256')]);
const jwks = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: keys.map((k) => k.jwk) })));
await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
after(() => new Promise((resolve) => jwks.close(resolve)));
const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;

// A plain-http JWKS is allowed for local use only (ALLOW_INSECURE_DEFAULTS); a deployment's is https.
const m = await messengerApp({ AUTH_JWKS_URL: jwksUrl, AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: AUDIENCE, ALLOW_INSECURE_DEFAULTS: 'true' }, {}, { opsOverviewFloorMs: 300 });
const origin = new URL(m.url).origin;

/** The identity provider's access token: its issuer, this service as audience, 5 minutes. */
function idpToken(key: Key, sub: string, claims: Record<string, unknown>): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ ...claims }).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setSubject(sub).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt(now).setExpirationTime(now + 300).sign(key.privateKey);
}

test('in Chromium: an identity provider\'s RS256 token with ops_role operator signs in and acts; an ES256 viewer token reads only; a token without the claim is refused', { timeout: 120_000 }, async () => {
  const browser = await launchChromium();
  const problems: string[] = [];
  const [rsa, ec] = keys as [Key, Key];

  const operatorId = newId();
  const operator = await openConsole(browser, origin, await idpToken(rsa, operatorId, { ops_role: 'operator' }), problems);
  assert.equal(await text(operator, '#who'), `${operatorId} (operator)`);
  await click(operator, `tr[data-job="${JOB}"] button[data-act="run"]`);
  await operator.waitForFunction(`document.querySelector('#job-answer').textContent.startsWith('${JOB}: ')`);
  assert.match(await text(operator, '#job-answer'), /^messenger-realtime-dispatch: (success|skipped)/);
  const audited = await m.pool.query<{ actor: string; role: string }>(`select actor, role from platform.ops_audit where action = 'run' order by at desc limit 1`);
  assert.deepEqual(audited.rows[0], { actor: operatorId, role: 'operator' }, 'the action is audited under the provider\'s subject');

  const viewer = await openConsole(browser, origin, await idpToken(ec, newId(), { ops_role: 'viewer' }), problems);
  assert.match(await text(viewer, '#who'), /\(read-only\)$/);
  assert.equal(await disabled(viewer, `tr[data-job="${JOB}"] button[data-act="run"]`), true);
  const refused = await viewer.evaluate(async (job) => {
    const token = (globalThis as unknown as { sessionStorage: { getItem(k: string): string } }).sessionStorage.getItem('pin.ops.token');
    const res = await fetch(`/api/ops/jobs/${job}/run`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    return [res.status, ((await res.json()) as { code: string }).code];
  }, JOB);
  assert.deepEqual(refused, [403, 'OPS_READ_ONLY']);

  // Signed by the provider but without the claim: nothing shows but why.
  const none = await openConsole(browser, origin, await idpToken(rsa, newId(), {}), problems, { waitFor: null });
  await none.waitForFunction(`!document.querySelector('#error').hidden`);
  assert.match(await text(none, '#error'), /^AUTH_FORBIDDEN: an ops role/);
  assert.match(await text(none, '#who'), /\(no ops role\)$/);
  assert.equal(await none.$('tr[data-job]'), null);
  // Another issuer's token (a key the JWKS does not hold) is a 401: the console signs out.
  const stranger = await signingKey('ES256');
  const foreign = await openConsole(browser, origin, await idpToken(stranger, newId(), { ops_role: 'operator' }), problems, { waitFor: '#sign-in:not([hidden])' });
  assert.equal(await foreign.$('tr[data-job]'), null);
  assert.deepEqual(problems.filter((p) => !/40[13]/.test(p)), []);
});
