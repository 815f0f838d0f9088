import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { NO_NUL_GUARD } from '../../../src/platform/types/index.ts';
import { signWebhook, SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../../../src/modules/notifications/webhooks/signature.ts';
import { buildTestApp } from '../../support/app.ts';
import { inlineRefs } from '../../support/openapi-document.ts';
import type { Operation, Schema } from '../../support/openapi-requests.ts';
import { changedTables, storedDigests } from '../../support/stored.ts';

/**
 * A body field is taken as the type it was sent with, on every operation of the API document:
 * Ajv's coercion turned `"dryRun": 0` (or null, or [false]) into false and ran a bulk action meant
 * as a dry run, stored `"body": 12345` as "12345", took `"size": "10"`. For each body field of type
 * boolean, number, integer or string (nested ones too), a body valid in every other field carries
 * each wrongly-typed value coercion used to accept: 400 VALIDATION_FAILED naming the field and its
 * type, and nothing stored.
 */

/** Values Ajv's `coerceTypes: 'array'` turned into the type, per type: each must now be refused. */
const WRONG: Record<string, unknown[]> = {
  boolean: [0, 1, null, 'false', [false]],
  integer: ['10', true, null, [10]],
  number: ['10', true, null, [10]],
  string: [12345, true, null, ['x']],
};

/** A value the schema accepts, as small as it allows (required properties only, first member, first enum). */
function minimal(schema: Schema | undefined): unknown {
  if (schema === undefined) return null;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const member = ((schema.anyOf ?? schema.oneOf) as Schema[] | undefined)?.[0];
  if (member) return minimal(member.type === undefined ? { ...schema, anyOf: undefined, oneOf: undefined, ...member } : member);
  if (Array.isArray(schema.allOf)) return minimal(Object.assign({}, ...(schema.allOf as Schema[])));
  switch (schema.type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = (schema.required ?? []) as string[];
      return Object.fromEntries(required.map((k) => [k, minimal(properties[k])]));
    }
    case 'array':
      return Array.from({ length: (schema.minItems as number | undefined) ?? 0 }, () => minimal(schema.items as Schema));
    case 'integer':
    case 'number':
      return (schema.minimum as number | undefined) ?? 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return minimalString(schema);
  }
}

function minimalString(schema: Schema): string {
  if (schema.format === 'uuid' || String(schema.pattern ?? '').includes('[0-9a-fA-F]{8}-')) return randomUUID();
  if (schema.format === 'date-time') return new Date().toISOString();
  if (schema.format === 'email') return 'a@example.com';
  const length = Math.max((schema.minLength as number | undefined) ?? 1, 1);
  if (typeof schema.pattern !== 'string') return 'a'.repeat(length);
  // A string the pattern takes, within the length bounds: drawn from the pattern with fixed seeds.
  const full = new RegExp(schema.pattern);
  const guarded = schema.pattern.startsWith(NO_NUL_GUARD) ? schema.pattern.slice(NO_NUL_GUARD.length) : schema.pattern;
  const inner = guarded.startsWith('(?:') && guarded.endsWith(')') ? guarded.slice(3, -1) : guarded;
  const fits = (v: string) => full.test(v) && v.length >= length && v.length <= ((schema.maxLength as number | undefined) ?? Infinity);
  const repeated = (v: string) => (v.length >= length ? v : v.repeat(Math.ceil(length / Math.max(v.length, 1))));
  let drawn: string[] = [];
  try {
    drawn = fc.sample(fc.stringMatching(new RegExp(inner)), { numRuns: 200, seed: 1 });
  } catch {
    // A pattern fast-check cannot draw from: the plain candidates below.
  }
  const found = [...drawn, 'a', 'a/a'].map(repeated).find(fits);
  if (found === undefined) throw new Error(`no string found for ${JSON.stringify(schema)}`);
  return found;
}

/** Every scalar field of an object schema, nested objects' too (not inside unions or arrays): its path and type. */
function scalarFields(schema: Schema | undefined, prefix: string[] = []): { path: string[]; type: string; wrong: unknown[] }[] {
  if (schema?.type !== 'object') return [];
  return Object.entries((schema.properties ?? {}) as Record<string, Schema>).flatMap(([name, field]) => {
    const path = [...prefix, name];
    // A nullable field (the document's `nullable: true`) takes null as itself.
    const wrong = WRONG[String(field.type)]?.filter((v) => v !== null || field.nullable !== true);
    if (wrong) return [{ path, type: String(field.type), wrong }];
    return field.type === 'object' ? scalarFields(field, path) : [];
  });
}

/** `body` with the field at `path` set to `value`, its parents filled minimally from `schema`. */
function withField(schema: Schema, path: string[], value: unknown): Record<string, unknown> {
  const body = minimal(schema) as Record<string, unknown>;
  let node = body;
  let nodeSchema = schema;
  for (const key of path.slice(0, -1)) {
    nodeSchema = (nodeSchema.properties as Record<string, Schema>)[key]!;
    node[key] ??= minimal(nodeSchema);
    node = node[key] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
  return body;
}

const pathParams = (path: string, op: Operation): string =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (name === 'providerKey') return WEBHOOK_PROVIDER;
    const schema = op.parameters?.find((p) => p.in === 'path' && p.name === name)?.schema;
    return encodeURIComponent(String(minimal(schema)));
  });

/** A provider's webhook validates its body once the signature holds: the test signs as that provider. */
const WEBHOOK_PROVIDER = 'smtp';
const WEBHOOK_SECRET = 'strict-body-types-webhook-secret-0123456789';

function credentialsFor(op: Operation, payload: string, bearer: string): Record<string, string> {
  const signed = (op as { security?: Record<string, unknown>[] }).security?.some((s) => 'providerSignature' in s);
  if (!signed) return { authorization: bearer };
  const timestamp = Math.floor(Date.now() / 1000);
  return { [SIGNATURE_HEADER]: signWebhook(WEBHOOK_SECRET, timestamp, payload), [TIMESTAMP_HEADER]: String(timestamp) };
}

test('every body field of the API document refuses a value of another type (no coercion): 400 VALIDATION_FAILED naming it, nothing stored', async () => {
  const { app, token, database } = await buildTestApp({ NOTIFICATIONS_SMTP_WEBHOOK_SECRET: WEBHOOK_SECRET });
  await app.ready();
  const authorization = `Bearer ${await token({ admin: true })}`;
  const doc = inlineRefs(app.swagger()) as { paths: Record<string, Record<string, Operation>> };
  const before = await storedDigests(database.pool);
  let checked = 0;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const schema = op.requestBody?.content['application/json']?.schema;
      for (const { path: field, type, wrong } of scalarFields(schema)) {
        for (const value of wrong) {
          const payload = JSON.stringify(withField(schema!, field, value));
          const headers = { 'content-type': 'application/json', ...credentialsFor(op, payload, authorization) };
          const res = await app.inject({ method: method.toUpperCase(), url: pathParams(path, op), headers, payload });
          const what = `${method.toUpperCase()} ${path} ${payload} → ${res.statusCode} ${res.body}`;
          assert.equal(res.statusCode, 400, what);
          assert.equal(res.json().code, 'VALIDATION_FAILED', what);
          assert.ok(res.json().message.includes(`body/${field.join('/')} must be ${type}`), what);
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 100, `${checked} wrongly-typed fields sent`);
  assert.deepEqual(changedTables(before, await storedDigests(database.pool)), []);
});
