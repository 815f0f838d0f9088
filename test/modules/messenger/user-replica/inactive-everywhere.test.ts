import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import WebSocket from 'ws';
import { IdPool, validRequestFor, type Operation } from '../../../support/openapi-requests.ts';
import { inlineRefs } from '../../../support/openapi-document.ts';
import { changedTables, storedDigests } from '../../../support/stored.ts';
import { waitFor } from '../../../support/wait.ts';
import { messengerApp, type MessengerApp } from '../support/app.ts';

/**
 * Product decision: a user whose replica row exists and is inactive (Blocked, Archived) is refused
 * on every authenticated messenger route, reads included, on the event stream that carries its frames,
 * and at the hub's negotiate and connect:
 * 403 MSG_USER_INACTIVE, nothing stored. A user the replica has not seen yet is not refused there.
 */

type Err = { code: string; message: string };
const SAMPLES = 8;

/** Alice, Bob and Carol in a group chat with a message, a contact request and a conference: real ids for the walk. */
async function world(m: MessengerApp) {
  const [alice, bob, carol] = [await m.user(), await m.user(), await m.user()];
  const pool = new IdPool();
  for (const u of [alice, carol]) {
    pool.add('userId', u.id);
    pool.add('phone', u.phone);
  }
  const chat = await m.call<{ id: string }>(alice.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'G', memberUserIds: [bob.id, carol.id] });
  assert.equal(chat.status, 201);
  pool.learn('/api/messenger/chats', chat.body);
  const sent = await m.call(bob.token, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, { kind: 'Text', body: 'hi' });
  assert.equal(sent.status, 201);
  pool.learn('/api/messenger/chats/{chatId}/messages', sent.body);
  const request = await m.call(alice.token, 'POST', '/api/messenger/contacts/requests', { phone: bob.phone });
  assert.equal(request.status, 201);
  pool.learn('/api/messenger/contacts', request.body);
  const conference = await m.call(bob.token, 'POST', `/api/messenger/chats/${chat.body.id}/conferences`, { media: 'Audio' });
  assert.equal(conference.status, 201);
  pool.learn('/api/messenger/conferences', (conference.body as { conference: unknown }).conference);
  return { alice, bob, carol, chat: chat.body, pool };
}

const deactivate = (m: MessengerApp, userId: string) => m.pool.query('update messenger.users set is_active = false where id = $1', [userId]);

describe('an inactive user is refused on every messenger route and at the hub (403 MSG_USER_INACTIVE)', () => {
  test('every authenticated messenger operation of the published OpenAPI document, reads too: 403 MSG_USER_INACTIVE, nothing stored', { timeout: 300_000 }, async (t) => {
    const m = await messengerApp();
    const { bob, pool } = await world(m);
    await deactivate(m, bob.id);
    const asBob = `Bearer ${bob.token}`;
    // Admin routes answer AUTH_FORBIDDEN to a plain token before anything else: walk them with an admin token of the same user.
    const asBobAdmin = `Bearer ${await m.token({ userId: bob.id, admin: true })}`;

    const doc = inlineRefs((await m.app.inject({ method: 'GET', url: '/docs/json' })).json()) as {
      paths: Record<string, Record<string, Operation & { responses?: Record<string, unknown>; security?: Record<string, unknown>[] }>>;
    };
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api/messenger/') || path === '/api/events')
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ method, path, op })))
      // Authenticated by a user or admin token: they answer 401 without one. The media server's callback has its own secret.
      .filter(({ op }) => op.responses?.['401'] !== undefined && !op.security?.some((s) => 'mediaCallback' in s));
    assert.ok(operations.length >= 30, `${operations.length} authenticated messenger operations`);

    for (const { method, path, op } of operations) {
      await t.test(`${method.toUpperCase()} ${path}`, async () => {
        const token = path.startsWith('/api/messenger/admin/') ? asBobAdmin : asBob;
        const requests = fc.sample(validRequestFor(method, path, op, pool, fc.constant(token)), { numRuns: SAMPLES, seed: 42 });
        let refused = 0;
        for (const req of requests) {
          const before = await storedDigests(m.pool);
          const res = await m.app.inject(req);
          const what = `${req.method} ${req.url} ${req.payload ?? ''} → ${res.statusCode} ${res.body}`;
          const body = res.json() as Err;
          // A generated request the schema still refuses never reaches the check; it must be a rare exception.
          // Nor does one the content rules refuse (a Text with a fileId): like the schema, they judge the
          // input alone, before any query, so bad input is 400 whoever sends it.
          if (body.code === 'VALIDATION_FAILED' || (res.statusCode === 400 && body.code === 'MSG_MESSAGE_INVALID')) continue;
          assert.deepEqual([res.statusCode, body.code], [403, 'MSG_USER_INACTIVE'], what);
          assert.deepEqual(changedTables(before, await storedDigests(m.pool)), [], `stored rows changed: ${what}`);
          refused++;
        }
        assert.ok(refused >= 1, `no generated request for ${method} ${path} passed validation`);
      });
    }
  });

  test('a deactivation racing a write: the write\'s own transaction sees it, refuses with MSG_USER_INACTIVE and stores nothing', async () => {
    const m = await messengerApp();
    const { bob, chat } = await world(m);
    const writes: [string, string, object?][] = [
      ['PATCH', `/api/messenger/chats/${chat.id}`, { title: 'renamed' }],
      ['DELETE', `/api/messenger/chats/${chat.id}/participants/${bob.id}`],
      ['PUT', `/api/messenger/blacklist/${chat.id}`],
    ];
    for (const [method, url, payload] of writes) {
      const before = await storedDigests(m.pool);
      // The replica consumer's update, not committed yet: the route's early check still reads Bob as active.
      const consumer = await m.pool.connect();
      await consumer.query('begin');
      await consumer.query('update messenger.users set is_active = false where id = $1', [bob.id]);
      const write = m.call<Err>(bob.token, method as 'PATCH', url, payload);
      await waitFor('the write to wait on the replica row', async () => {
        const { rows } = await m.pool.query(`select 1 from pg_locks where not granted and locktype in ('tuple', 'transactionid')`);
        return rows.length > 0;
      });
      await consumer.query('commit');
      consumer.release();
      const res = await write;
      assert.deepEqual([res.status, res.body.code], [403, 'MSG_USER_INACTIVE'], `${method} ${url}`);
      const changed = changedTables(before, await storedDigests(m.pool)).filter((t) => t !== 'messenger.users');
      assert.deepEqual(changed, [], `${method} ${url} stored something`);
      await m.pool.query('update messenger.users set is_active = true where id = $1', [bob.id]);
    }
  });

  test('a user the replica has not seen yet keeps its reads; an active user is unaffected', async () => {
    const m = await messengerApp();
    const stranger = await m.token();
    assert.equal((await m.call(stranger, 'GET', '/api/messenger/chats')).status, 200);
    assert.equal((await m.call(stranger, 'GET', '/api/messenger/contacts')).status, 200);
    const alice = await m.user();
    assert.equal((await m.call(alice.token, 'GET', '/api/messenger/chats')).status, 200);
  });

  test('hub negotiate and connect refuse an inactive user with 403 MSG_USER_INACTIVE; an unseen user connects', async () => {
    const m = await messengerApp();
    const bob = await m.user();
    await deactivate(m, bob.id);
    const negotiate = await m.app.inject({ method: 'POST', url: '/hubs/messenger/negotiate?negotiateVersion=1', headers: { authorization: `Bearer ${bob.token}` } });
    assert.equal(negotiate.statusCode, 403);
    assert.equal((negotiate.json() as Err).code, 'MSG_USER_INACTIVE');

    // Connecting without negotiate (skipNegotiation): refused before the upgrade, as plain HTTP.
    const refusal = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(m.url.replace('http', 'ws'), { headers: { authorization: `Bearer ${bob.token}` } });
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.on('open', () => {
        ws.close();
        reject(new Error('the WebSocket of an inactive user opened'));
      });
      ws.on('error', () => {});
    });
    assert.equal(refusal.status, 403);
    assert.equal((JSON.parse(refusal.body) as Err).code, 'MSG_USER_INACTIVE');

    const unseen = await m.token();
    const client = await m.connect(unseen, []);
    assert.equal(client.closed, false, 'a user the replica has not seen yet still connects');
  });
});
