import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_NUL_GUARD } from '../../../src/platform/types/index.ts';
import { buildTestApp } from '../../support/app.ts';
import { inlineRefs } from '../../support/openapi-document.ts';
import { insertReplicaUser } from '../../modules/messenger/support/app.ts';

/**
 * Every input a route accepts — path, query and header parameters and request bodies, as the
 * published OpenAPI document has them — is bounded: each integer and number has a maximum, each
 * string a maxLength and a pattern that starts with the U+0000 guard (the `Text` helper), unless it
 * is a literal. Schemas that accept anything (`{}`) count as unbounded too.
 */

type Schema = Record<string, unknown>;

/** Free-form JSON values (jsonb): their routes check size and U+0000 with jsonValueProblem before storing. */
const FREE_FORM_JSON = [
  'POST /api/user-activity/property-object-views body (application/json).filterSnapshot[*]',
  'POST /api/notifications body (application/json).data[*]',
];

function problemsOf(schema: Schema | undefined, at: string, out: string[]): void {
  if (schema === undefined || FREE_FORM_JSON.includes(at)) return;
  if ('const' in schema || 'enum' in schema) return;
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    for (const [i, s] of ((schema[key] as Schema[] | undefined) ?? []).entries()) {
      // A member without a type only narrows its parent's (`anyOf: [{ format: 'ipv4' }, …]` on a string).
      if (schema.type !== undefined && s.type === undefined) continue;
      problemsOf(s, `${at}.${key}[${i}]`, out);
    }
  }
  const type = schema.type;
  if (type === undefined && !schema.anyOf && !schema.oneOf && !schema.allOf) out.push(`${at}: accepts anything`);
  if (type === 'string') {
    if (typeof schema.maxLength !== 'number') out.push(`${at}: string without maxLength`);
    if (typeof schema.pattern !== 'string' || !schema.pattern.startsWith(NO_NUL_GUARD)) out.push(`${at}: string without the U+0000 guard`);
  }
  if ((type === 'integer' || type === 'number') && typeof schema.maximum !== 'number' && typeof schema.exclusiveMaximum !== 'number') {
    out.push(`${at}: ${type} without maximum`);
  }
  if (type === 'array') problemsOf(schema.items as Schema | undefined, `${at}[]`, out);
  if (type === 'object') {
    for (const [name, s] of Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {})) problemsOf(s, `${at}.${name}`, out);
    for (const [p, s] of Object.entries((schema.patternProperties as Record<string, Schema> | undefined) ?? {})) problemsOf(s, `${at}[${p}]`, out);
    const extra = schema.additionalProperties;
    if (typeof extra === 'object' && extra !== null) problemsOf(extra as Schema, `${at}[*]`, out);
  }
}

interface Operation {
  parameters?: { in: string; name: string; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
}

test("every integer in the routes' inputs has a maximum and every string is bounded and refuses U+0000", async () => {
  const { app } = await buildTestApp();
  await app.ready();
  const doc = inlineRefs(app.swagger()) as { paths: Record<string, Record<string, Operation>> };
  const problems: string[] = [];
  let inputs = 0;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const p of op.parameters ?? []) {
        inputs++;
        problemsOf(p.schema, `${where} ${p.in} ${p.name}`, problems);
      }
      for (const [type, c] of Object.entries(op.requestBody?.content ?? {})) {
        inputs++;
        problemsOf(c.schema, `${where} body (${type})`, problems);
      }
    }
  }
  assert.ok(inputs > 50, `walked ${inputs} inputs`);
  assert.deepEqual(problems, []);
});

/** Every object in a body says whether it takes fields it does not list; `true` only for these (a provider's payload). */
const OPEN_OBJECTS = ['POST /api/notifications/providers/{providerKey}/webhook body (application/json)'];

function undeclaredObjectsOf(schema: Schema | undefined, at: string, out: string[]): void {
  if (schema === undefined || FREE_FORM_JSON.includes(at)) return;
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    for (const [i, s] of ((schema[key] as Schema[] | undefined) ?? []).entries()) undeclaredObjectsOf(s, `${at}.${key}[${i}]`, out);
  }
  if (schema.type === 'array') undeclaredObjectsOf(schema.items as Schema | undefined, `${at}[]`, out);
  if (schema.type !== 'object') return;
  for (const [name, s] of Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {})) undeclaredObjectsOf(s, `${at}.${name}`, out);
  const extra = schema.additionalProperties;
  if (extra === true && OPEN_OBJECTS.includes(at)) return;
  if (extra !== false && !(typeof extra === 'object' && extra !== null)) out.push(`${at}: additionalProperties is ${String(extra)}`);
}

test('every object in a request body refuses fields it does not list (additionalProperties: false), unless it is a provider payload', async () => {
  const { app } = await buildTestApp();
  await app.ready();
  const doc = inlineRefs(app.swagger()) as { paths: Record<string, Record<string, Operation>> };
  const problems: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const [type, c] of Object.entries(op.requestBody?.content ?? {})) {
        undeclaredObjectsOf(c.schema, `${method.toUpperCase()} ${path} body (${type})`, problems);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('every /api operation documents a 400: each refuses unknown query parameters (strict-inputs.ts)', async () => {
  const { app } = await buildTestApp();
  await app.ready();
  const doc = inlineRefs(app.swagger()) as { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
  const missing = Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/api/'))
    .flatMap(([path, methods]) => Object.entries(methods).filter(([, op]) => !op.responses?.['400']).map(([method]) => `${method.toUpperCase()} ${path}`));
  assert.deepEqual(missing, []);
});

test('U+0000 and oversized integers in route inputs are 400 VALIDATION_FAILED, not 500s', async () => {
  const { app, token, database } = await buildTestApp();
  // An active user in the messenger's replica: only such a user may create a chat (MSG_USER_INACTIVE otherwise).
  const { id: userId } = await insertReplicaUser(database.pool);
  const headers = { authorization: `Bearer ${await token({ userId })}`, 'content-type': 'application/json' };
  const chat = await app.inject({ method: 'POST', url: '/api/messenger/chats', headers, payload: { kind: 'Group', title: 'T', memberUserIds: [] } });
  assert.equal(chat.statusCode, 201, chat.body);
  const refused = [
    await app.inject({ method: 'PATCH', url: `/api/messenger/chats/${chat.json().id}`, headers, payload: JSON.stringify({ title: 'a\u0000b' }) }),
    await app.inject({ method: 'GET', url: `/api/messenger/chats/${chat.json().id}/messages?afterSeq=1${'0'.repeat(20)}`, headers }),
    await app.inject({ method: 'POST', url: `/api/messenger/chats/${chat.json().id}/read`, headers, payload: { seq: 1e20 } }),
  ];
  assert.deepEqual(refused.map((r) => [r.statusCode, r.json().code]), Array(3).fill([400, 'VALIDATION_FAILED']));
});
