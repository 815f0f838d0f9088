import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { changedTables, storedDigests } from '../../support/stored.ts';

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
  const m = await messengerApp();
  const me = await m.user();
  const chat = await m.call<{ id: string }>(me.token, 'POST', '/api/messenger/chats', { kind: 'Group', title: 'T', memberUserIds: [] });
  const res = await m.call<{ code: string; message: string }>(me.token, 'POST', `/api/messenger/chats/${chat.body.id}/messages`, {
    kind: 'File',
    fileMeta: { fileId: 'f1', fileName: 'a.pdf', contentType: 'application/pdf', size: 10, path: '/tmp' },
  });
  assert.deepEqual([res.status, res.body.code], [400, 'VALIDATION_FAILED']);
  assert.match(res.body.message, /unknown body field 'path' in fileMeta/);
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
