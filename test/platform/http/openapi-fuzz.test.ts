import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import type pg from 'pg';
import { signToken } from '../../../src/platform/http/auth.ts';
import { newId } from '../../../src/platform/time.ts';
import { tunedModules } from '../../../src/modules/index.ts';
import { buildTestApp } from '../../support/app.ts';
import { inlineRefs } from '../../support/openapi-document.ts';
import { IdPool, requestFor, type Operation } from '../../support/openapi-requests.ts';
import { insertReplicaUser } from '../../modules/messenger/support/app.ts';
import { storedDigests } from '../../support/stored.ts';
import { objectStoreEnv } from '../../support/objectstore.ts';

/**
 * Hostile input finds no 5xx: requests generated from the published OpenAPI
 * document — every operation, random valid and invalid path, query and header parameters and
 * bodies, with and without tokens — never get a 5xx, every 4xx body is `{ code, message }` with a
 * code the document lists for that operation and status, and a refused request changes nothing stored. FUZZ_SEED=<n> replays a run; FUZZ_RUNS sets the requests
 * per operation; FUZZ_DEBUG=1 prints each request and its answer.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

/** The next transaction id: unchanged means no transaction wrote anything (read-only ones take none). */
async function nextXid(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ xid: string }>('select pg_snapshot_xmax(pg_current_snapshot())::text as xid');
  return rows[0]!.xid;
}

/** Waits until no transaction started for a while: work a 2xx left running in the background is done. */
async function settle(pool: pg.Pool): Promise<void> {
  let last = await nextXid(pool);
  for (let i = 0; i < 100; i++) {
    await sleep(25);
    const now = await nextXid(pool);
    if (now === last) return;
    last = now;
  }
}

/** The codes the document lists for this status of the operation (an enum on `code`), if it lists them. */
function codesListed(op: Operation, status: number): string[] | undefined {
  type Listed = { responses?: Record<string, { content?: Record<string, { schema?: { properties?: { code?: { enum?: string[] } } } }> }> };
  return (op as Listed).responses?.[String(status)]?.content?.['application/json']?.schema?.properties?.code?.enum;
}

test('requests generated from the OpenAPI document: no 5xx, every 4xx is { code, message } with a documented code, a refused request changes nothing stored', { timeout: 900_000 }, async (t) => {
  process.stdout.write(`openapi-fuzz seed=${SEED} runs=${RUNS} (replay with FUZZ_SEED=${SEED})\n`);
  const { app, token, database, config } = await buildTestApp({
    // The files routes on the real object store, so their answers past the input checks are fuzzed too.
    ...objectStoreEnv(),
    MESSENGER_RATE_LIMIT_CONTACT_SEARCHES_PER_MINUTE: '0',
    MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE: '0',
  }, {
    // No limits: the fixed ones (each module's defaults.ts) are lifted in code.
    modules: tunedModules({
      messenger: { rateLimitContactRequestsPerMinute: 0, rateLimitCallInvitesPerMinute: 0, rateLimitChatChangesPerMinute: 0 },
      notifications: { rateLimitPushTokenRegistrationsPerMinute: 0 },
      userActivity: { rateLimitTrackingPerMinute: 0 },
    }),
  });
  await app.ready();
  const db = database.pool;

  // Two active replica users with a chat and a message between them, so valid requests find records.
  const alice = await insertReplicaUser(db);
  const bob = await insertReplicaUser(db);
  const pool = new IdPool();
  pool.add('userId', alice.id);
  pool.add('userId', bob.id);
  pool.add('phone', alice.phone);
  pool.add('phone', bob.phone);
  const asAlice = `Bearer ${await token({ userId: alice.id })}`;
  const chat = await app.inject({
    method: 'POST',
    url: '/api/messenger/chats',
    headers: { authorization: asAlice, 'content-type': 'application/json' },
    payload: { kind: 'Group', title: 'fuzz', memberUserIds: [bob.id] },
  });
  assert.equal(chat.statusCode, 201, chat.body);
  pool.learn('/api/messenger/chats', chat.json());

  const users = { alice: asAlice, bob: `Bearer ${await token({ userId: bob.id })}`, admin: `Bearer ${await token({ userId: alice.id, admin: true })}` };
  const auth = {
    valid: fc.constantFrom(users.alice, users.alice, users.admin, users.bob),
    any: fc.constantFrom<string | undefined>(
      undefined,
      users.alice,
      users.bob,
      users.admin,
      `Bearer ${await token({ userId: newId() })}`, // a user the replica does not know
      `Bearer ${await signToken({ userId: alice.id, admin: true }, 'x'.repeat(40), { issuer: config.AUTH_ISSUER, audience: config.AUTH_AUDIENCE })}`,
      `Bearer ${await signToken({ userId: alice.id, admin: false }, config.JWT_SECRET, { expiresIn: -60, issuer: config.AUTH_ISSUER, audience: config.AUTH_AUDIENCE })}`,
      'Bearer not.a.token',
      'Basic YTpi',
    ),
  };

  const doc = inlineRefs(app.swagger()) as { paths: Record<string, Record<string, Operation>> };
  const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([method, op]) => ({ method, path, op })),
  );
  assert.ok(operations.length > 40, `${operations.length} operations in the document`);

  let stored = await storedDigests(db);
  let xid = await nextXid(db);
  const reachedHandler = new Set<string>();
  const accepted = new Map<string, number>();

  for (const { method, path, op } of operations) {
    const name = `${method.toUpperCase()} ${path}`;
    if (process.env.FUZZ_DEBUG) process.stderr.write(`== ${name}\n`);
    await t.test(name, async () => {
      await fc.assert(
        fc.asyncProperty(requestFor(method, path, op, pool, auth), async (req) => {
          const res = await app.inject(req);
          if (process.env.FUZZ_DEBUG) process.stderr.write(`${req.method} ${req.url} ${req.payload?.slice(0, 200) ?? ''} → ${res.statusCode} ${res.body.slice(0, 160)}\n`);
          const what = `${req.method} ${req.url} ${JSON.stringify(req.headers)} ${req.payload?.slice(0, 300) ?? ''} → ${res.statusCode} ${res.body.slice(0, 300)}`;
          assert.ok(res.statusCode < 500, what);
          if (res.statusCode >= 400) {
            let body: { code?: unknown; message?: unknown } = {};
            try {
              body = res.json();
            } catch {
              assert.fail(`a 4xx body that is no JSON: ${what}`);
            }
            assert.ok(typeof body.code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(body.code), `no stable code: ${what}`);
            assert.ok(typeof body.message === 'string' && body.message.length > 0, `no message: ${what}`);
            // The document lists the operation's codes for every status it answers, and the answer is one of them.
            const listed = codesListed(op, res.statusCode);
            assert.ok(listed, `the document lists no ${res.statusCode} codes for ${name}: ${what}`);
            assert.ok(listed.includes(body.code), `${body.code} is not among the documented ${res.statusCode} codes ${JSON.stringify(listed)}: ${what}`);
            if (body.code !== 'VALIDATION_FAILED' && res.statusCode !== 401) reachedHandler.add(name);
            const now = await nextXid(db);
            if (now !== xid) {
              // Some transaction ran (it may have rolled back): compare what is stored.
              const after = await storedDigests(db);
              const changed = [...after].filter(([table, digest]) => stored.get(table) !== digest).map(([table]) => table);
              // The new state is the baseline either way: one bad route must not fail the ones after it.
              stored = after;
              xid = now;
              assert.deepEqual(changed, [], `a refused request changed stored rows: ${what}`);
            }
          } else {
            reachedHandler.add(name);
            accepted.set(name, (accepted.get(name) ?? 0) + 1);
            if (res.headers['content-type']?.toString().startsWith('application/json')) pool.learn(path, res.json());
            await settle(db);
            stored = await storedDigests(db);
            xid = await nextXid(db);
          }
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    });
  }
  const neverAccepted = operations.map((o) => `${o.method.toUpperCase()} ${o.path}`).filter((n) => !accepted.has(n));
  process.stdout.write(`openapi-fuzz operations=${operations.length} reached-a-handler=${reachedHandler.size} accepted-at-least-once=${accepted.size} never-accepted=${JSON.stringify(neverAccepted)}\n`);
  // The generator must get past validation and authentication, and often enough all the way to a
  // 2xx on real records, or this proves only the schemas.
  assert.ok(reachedHandler.size >= operations.length * 0.6, `${reachedHandler.size} of ${operations.length} operations reached a handler`);
  assert.ok(accepted.size >= operations.length * 0.5, `${accepted.size} of ${operations.length} operations accepted a request at least once`);
});
