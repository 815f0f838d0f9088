import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessengerError, UnauthorizedError } from '../src/index.ts';
import { errorOfResponse } from '../src/errors.ts';
import { expiryOf, TokenKeeper, type TokenContext } from '../src/token.ts';

/** The token keeper's decisions and the error shape, without a server (the server-side behaviour: messenger-client.state.test.ts). */

const jwt = (claims: Record<string, unknown>) => `h.${btoa(JSON.stringify(claims)).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')}.s`;
const refusal = new MessengerError('AUTH_INVALID_TOKEN', 'bad signature', 401);

describe('token keeper', () => {
  test("a JWT's exp is read (base64url, no padding); an opaque token has none", () => {
    assert.equal(expiryOf(jwt({ sub: 'u', exp: 1_800_000_000 })), 1_800_000_000_000);
    assert.equal(expiryOf('opaque-token'), undefined);
  });

  test('concurrent callers share one getToken call', async () => {
    const asked: TokenContext[] = [];
    const keeper = new TokenKeeper({ getToken: async (ctx) => (asked.push(ctx), await Promise.resolve(), 'fresh') });
    assert.deepEqual(await Promise.all([keeper.current(), keeper.current(), keeper.current()]), ['fresh', 'fresh', 'fresh']);
    assert.deepEqual(asked, [{ reason: 'initial' }]);
  });

  test('getToken giving back the refused token is final, with the server\'s code', async () => {
    const keeper = new TokenKeeper({ token: 'same', getToken: () => 'same' });
    await keeper.current();
    await assert.rejects(keeper.renew(refusal), (e: MessengerError) => e.code === 'AUTH_INVALID_TOKEN' && e.status === 401 && !e.retryable);
  });

  test('getToken failing some other way is retryable; UnauthorizedError is final', async () => {
    const down = new TokenKeeper({ getToken: () => Promise.reject(new Error('auth backend down')) });
    await assert.rejects(down.current(), (e: MessengerError) => e.code === 'TOKEN_REFRESH_FAILED' && e.retryable);
    const out = new TokenKeeper({ token: 'old', getToken: () => Promise.reject(new UnauthorizedError('signed out')) });
    await out.current();
    await assert.rejects(out.renew(refusal), (e: MessengerError) => e.code === 'AUTH_INVALID_TOKEN' && /signed out/.test(e.message) && !e.retryable);
  });

  test('an answer\'s { code, message } and Retry-After become the error', async () => {
    const res = new Response(JSON.stringify({ code: 'HUB_BUSY', message: 'try again' }), { status: 503, headers: { 'retry-after': '2' } });
    const e = await errorOfResponse(res);
    assert.deepEqual([e.code, e.message, e.status, e.retryAfterMs, e.retryable, e.name], ['HUB_BUSY', 'try again', 503, 2000, true, 'MessengerError']);
    const bare = await errorOfResponse(new Response('<html>', { status: 502, statusText: 'Bad Gateway' }));
    assert.deepEqual([bare.code, bare.message], ['HTTP_502', 'Bad Gateway']);
  });
});
