import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hasForbiddenKey } from '../../../src/platform/http/json-body.ts';
import { messengerApp } from '../../modules/messenger/support/app.ts';
import { changedTables, storedDigests } from '../../support/stored.ts';

/**
 * `__proto__` and `constructor.prototype` in a JSON body are valid JSON but refused with 400
 * BODY_FORBIDDEN_KEY saying so (docs/security.md); text that is not JSON keeps Fastify's own codes.
 */

test('a body holding __proto__ or constructor.prototype, at any depth or \\u-escaped, is 400 BODY_FORBIDDEN_KEY and stores nothing', async () => {
  const m = await messengerApp();
  const me = await m.user();
  const before = await storedDigests(m.pool);
  const base = '"kind":"Group","title":"T","memberUserIds":[]';
  for (const payload of [
    `{${base},"__proto__":{"admin":true}}`,
    `{${base},"constructor":{"prototype":{"admin":true}}}`,
    `{${base},"\\u005f\\u005fproto__":{}}`,
    `{"kind":"Group","title":"T","memberUserIds":[{"__proto__":null}]}`,
  ]) {
    const res = await m.app.inject({ method: 'POST', url: '/api/messenger/chats', headers: { authorization: `Bearer ${me.token}`, 'content-type': 'application/json' }, payload });
    assert.deepEqual([res.statusCode, res.json().code], [400, 'BODY_FORBIDDEN_KEY'], payload);
    assert.match(res.json().message, /__proto__/);
  }
  assert.deepEqual(changedTables(before, await storedDigests(m.pool)), []);
});

test('a body that is not JSON, or empty, keeps its own 400 codes', async () => {
  const m = await messengerApp();
  const me = await m.user();
  const post = (payload: string) =>
    m.app.inject({ method: 'POST', url: '/api/messenger/chats', headers: { authorization: `Bearer ${me.token}`, 'content-type': 'application/json' }, payload });
  assert.deepEqual([(await post('{"kind":')).statusCode, (await post('{"kind":')).json().code], [400, 'FST_ERR_CTP_INVALID_JSON_BODY']);
  assert.deepEqual([(await post('')).statusCode, (await post('')).json().code], [400, 'FST_ERR_CTP_EMPTY_JSON_BODY']);
  const fine = await post('{"kind":"Group","title":"prototype of __proto__ and constructor","memberUserIds":[]}');
  assert.equal(fine.statusCode, 201, 'the words in values are no keys');
});

test('hasForbiddenKey: a constructor that is not an object with prototype is no prototype key', () => {
  assert.equal(hasForbiddenKey(JSON.parse('{"constructor":"x","a":[{"constructor":{"name":1}}]}')), false);
  assert.equal(hasForbiddenKey(JSON.parse('[[{"b":{"__proto__":1}}]]')), true);
});
