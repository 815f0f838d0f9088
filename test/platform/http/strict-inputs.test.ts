import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { changedTables, storedDigests } from '../../support/stored.ts';
import { buildTestApp } from '../../support/app.ts';

/**
 * Unknown input is refused with 400 VALIDATION_FAILED naming it, never dropped: a misspelt query
 * parameter (`beforeSequence` for `beforeSeq`) was answered as if unasked, and an unknown body field was
 * stripped without a word.
 */

test('an unknown query parameter is 400 VALIDATION_FAILED naming it, not the first page as if unasked', async () => {
  const m = await messengerApp();
  const me = await m.user();
  const chat = await m.call<{ id: string }>(me.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [] });
  assert.equal(chat.status, 201);
  const res = await m.call<{ code: string; message: string }>(me.token, 'GET', `/api/messenger/chats/${chat.body.id}/messages?beforeSequence=5`);
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'VALIDATION_FAILED');
  assert.match(res.body.message, /unknown query parameter 'beforeSequence'/);
});

test('an unknown query parameter on a route without query parameters is refused too', async () => {
  const m = await messengerApp();
  const me = await m.user();
  const chat = await m.call<{ id: string }>(me.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [] });
  const res = await m.call<{ code: string; message: string }>(me.token, 'GET', `/api/messenger/chats/${chat.body.id}?verbose=1`);
  assert.deepEqual([res.status, res.body.code], [400, 'VALIDATION_FAILED']);
  assert.match(res.body.message, /'verbose'/);
});

test('an unknown body field is 400 VALIDATION_FAILED naming it, and nothing is stored', async () => {
  const m = await messengerApp();
  const me = await m.user();
  const before = await storedDigests(m.pool);
  const res = await m.call<{ code: string; message: string }>(me.token, 'POST', '/api/messenger/chats', {
    kind: 'Group',
    title: 'T',
    memberUserIds: [],
    ownerUserId: me.id,
  });
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'VALIDATION_FAILED');
  assert.match(res.body.message, /unknown body field 'ownerUserId'/);
  assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
});

test('an unknown field inside a nested body object is named with where it is', async () => {
  const t = await buildTestApp();
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/identity/users',
    headers: { authorization: `Bearer ${await t.token({ admin: true })}` },
    payload: { name: { firstName: 'Иван', lastName: 'Петров', nickname: 'x' }, phoneNumber: '+79260000001' },
  });
  assert.deepEqual([res.statusCode, res.json().code], [400, 'VALIDATION_FAILED']);
  assert.match(res.json().message, /unknown body field 'nickname' in name/);
});

// Fastify's router answers these two before any hook or error handler, in its own shape
// ({ error, code, message, statusCode }) unless the server's frameworkErrors option answers them.
test("a path that is not valid percent-encoding is 400 VALIDATION_FAILED in the API's one format, and nothing is stored", async () => {
  const m = await messengerApp();
  const me = await m.user();
  const before = await storedDigests(m.pool);
  const res = await m.call<Record<string, unknown>>(me.token, 'POST', '/api/messenger/chats/%E0%A4%A/messages', { kind: 'Text', body: 'hi' });
  assert.equal(res.status, 400);
  assert.deepEqual(Object.keys(res.body).sort(), ['code', 'message']);
  assert.equal(res.body.code, 'VALIDATION_FAILED');
  assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
});

test("a path parameter past 100 characters is 414 FST_ERR_MAX_PARAM_LENGTH in the API's one format", async () => {
  const m = await messengerApp();
  const me = await m.user();
  const res = await m.call<Record<string, unknown>>(me.token, 'GET', `/api/messenger/chats/${'a'.repeat(101)}`);
  assert.equal(res.status, 414);
  assert.deepEqual(res.body, { code: 'FST_ERR_MAX_PARAM_LENGTH', message: 'a path parameter is longer than 100 characters' });
});

// Fastify parsed a body on a route without a body schema and dropped it: the caller's intent was ignored.
test('a body sent to a route that takes none is 400 BODY_NOT_ALLOWED before it is read, and nothing is stored (PUT /blacklist/{id} with {"status":"Unblocked"} blocked)', async () => {
  const m = await messengerApp();
  const alice = await m.user();
  const bob = await m.user();
  const before = await storedDigests(m.pool);
  const res = await m.call<{ code: string; message: string }>(alice.token, 'PUT', `/api/messenger/blacklist/${bob.id}`, { status: 'Unblocked' });
  assert.deepEqual([res.status, res.body.code], [400, 'BODY_NOT_ALLOWED']);
  assert.match(res.body.message, /takes no body/);
  // Any media type alike: the body is refused unread, not as an unsupported type.
  const text = await m.app.inject({ method: 'PUT', url: `/api/messenger/blacklist/${bob.id}`, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'text/plain' }, payload: 'x' });
  assert.deepEqual([text.statusCode, text.json().code], [400, 'BODY_NOT_ALLOWED']);
  assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
  // Without a body the same request blocks, and an empty body of any type is no body.
  const empty = await m.app.inject({ method: 'PUT', url: `/api/messenger/blacklist/${bob.id}`, headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' }, payload: '' });
  assert.equal(empty.statusCode, 200, empty.body);
});

test("the hub's negotiate refuses a query parameter it does not take, like every API route: 400 VALIDATION_FAILED naming it", async () => {
  const m = await messengerApp();
  const me = await m.user();
  const negotiate = (query: string) => m.app.inject({ method: 'POST', url: `/hubs/messenger/negotiate?${query}`, headers: { authorization: `Bearer ${me.token}` } });
  const res = await negotiate('negotiateVersion=1&clientProtocol=1.5');
  assert.deepEqual([res.statusCode, res.json().code], [400, 'VALIDATION_FAILED']);
  assert.match(res.json().message, /unknown query parameter 'clientProtocol'/);
  // What SignalR clients send is still taken.
  assert.equal((await negotiate(`negotiateVersion=1&access_token=${me.token}`)).statusCode, 200);
});
