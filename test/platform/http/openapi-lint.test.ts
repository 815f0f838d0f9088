import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual, promisify } from 'node:util';
import { MESSAGE_MAX_CHARS } from '../../../src/modules/messenger/messages/rules.ts';
import { MESSENGER_FRAME_SCHEMAS } from '../../../src/modules/messenger/realtime-dispatch/frames.ts';
import { eventNameOf } from '../../../src/platform/push/types.ts';
import { buildTestApp } from '../../support/app.ts';
import { inlineRefs } from '../../support/openapi-document.ts';

/**
 * The published OpenAPI document is one clients can be generated from: Redocly's CLI with its
 * recommended rules (redocly.yaml at the repository root; each rule turned down there says why)
 * finds no error. Problems are printed, so a failure names every one.
 */

const run = promisify(execFile);
const root = new URL('../../../', import.meta.url).pathname;

test('the OpenAPI document passes `redocly lint` (recommended rules) with no error or warning', async () => {
  const { app } = await buildTestApp();
  const res = await app.inject({ method: 'GET', url: '/docs/json' });
  assert.equal(res.statusCode, 200);
  const dir = await mkdtemp(join(tmpdir(), 'pin-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeFile(file, res.body);
    const out = await run(join(root, 'node_modules/.bin/redocly'), ['lint', file, '--config', join(root, 'redocly.yaml'), '--format', 'json'], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
      // Redocly asks its registry for telemetry and updates: there is no network to ask.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    }).catch((err: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '', failed: err.code }));
    const report = JSON.parse(out.stdout) as { problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
    const errors = report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
    assert.deepEqual(errors, [], 'redocly lint errors');
    const warnings = report.problems.filter((p) => p.severity !== 'error').map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
    assert.deepEqual(warnings, [], 'redocly lint warnings (a rule the document cannot follow is turned off in redocly.yaml, with the reason)');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('every operation has a unique operationId and says how it is authenticated', async () => {
  const { app } = await buildTestApp();
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as {
    servers?: unknown[];
    paths: Record<string, Record<string, { operationId?: string; security?: Record<string, string[]>[]; responses?: Record<string, unknown> }>>;
  };
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ at: `${method} ${path}`, ...op })));
  assert.ok(ops.length > 60, `every route is documented (${ops.length})`);
  assert.deepEqual(ops.filter((o) => !o.operationId).map((o) => o.at), [], 'operations without an operationId');
  const ids = ops.map((o) => o.operationId);
  assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  assert.deepEqual(ops.filter((o) => !Array.isArray(o.security)).map((o) => o.at), [], 'operations without a security requirement');
  const schemes = (at: string) => ops.find((o) => o.at === at)!.security!.flatMap((s) => Object.keys(s));
  assert.deepEqual(schemes('post /api/messenger/chats/{chatId}/messages'), ['bearer']);
  assert.deepEqual(schemes('get /api/ops/jobs'), ['bearer']);
  assert.deepEqual(schemes('get /health/live'), []);
  assert.ok((doc.servers ?? []).length > 0, 'the document names its servers');
  // redocly.yaml turns operation-4xx-response off for the health probes' sake; every other operation keeps it.
  const without4xx = ops.filter((o) => !Object.keys(o.responses ?? {}).some((code) => code.startsWith('4'))).map((o) => o.at);
  assert.deepEqual(without4xx, ['get /health/live', 'get /health/ready'], 'only the health probes declare no 4XX answer');
});

test('every body is a named component, every response is described, every 503 and 429 says Retry-After', async () => {
  type Op = { operationId: string; requestBody?: { content: Record<string, { schema: { $ref?: string } }> }; responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: { $ref?: string } }> }> };
  const documentOf = async () => ((await (await buildTestApp()).app.inject({ method: 'GET', url: '/docs/json' })).json()) as { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, unknown> } };
  const doc = await documentOf();
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ at: `${method} ${path}`, ...op })));
  const problems: string[] = [];
  for (const op of ops) {
    for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) if (!media.schema.$ref) problems.push(`${op.at} body (${type}) is not a component`);
    for (const [status, response] of Object.entries(op.responses)) {
      if (!response.description || response.description === 'Default Response') problems.push(`${op.at} ${status}: no description`);
      for (const media of Object.values(response.content ?? {})) if (!media.schema.$ref) problems.push(`${op.at} ${status}: not a component`);
      if ((status === '503' || status === '429') && op.at.includes(' /api/') && !response.headers?.['Retry-After']) problems.push(`${op.at} ${status}: no Retry-After`);
    }
    if (op.at.includes(' /api/') && !op.responses['503']) problems.push(`${op.at}: no 503 (an unreachable database answers one on every route)`);
  }
  assert.deepEqual(problems, []);
  const names = Object.keys(doc.components.schemas);
  // Names come from the schemas (`named`) and the operationIds, never from the order routes were added in.
  assert.deepEqual(names.filter((n) => /^def-\d+$/.test(n)), [], 'no generated def-N names');
  for (const name of ['MessageView', 'ChatView', 'FileMeta', 'SendMessageRequest', 'TokenRefusedError', 'RateLimitedError', 'AdminRefusedError', 'BodyTooLargeError', 'UnsupportedMediaTypeError', 'NotificationView', 'IdentityUser', 'TrackingSession']) {
    assert.ok(names.includes(name), `component ${name}`);
  }
  const send = doc.paths['/api/messenger/chats/{chatId}/messages']!.post!;
  assert.equal(send.responses['201']!.content!['application/json']!.schema.$ref, '#/components/schemas/MessageView');
  assert.equal(send.responses['200']!.content!['application/json']!.schema.$ref, '#/components/schemas/MessageView');
  const body = doc.components.schemas.SendMessageRequest as { properties: Record<string, { maxLength?: number }> };
  assert.equal(body.properties.body!.maxLength, MESSAGE_MAX_CHARS, 'the body limit the server applies');
  // A second app builds the same document: the names are stable.
  assert.deepEqual(Object.keys((await documentOf()).components.schemas).sort(), [...names].sort());
});

test("every error answer of every operation lists its codes (an enum on code), and every operation with a body its 413 and 415", async () => {
  const { app } = await buildTestApp();
  await app.ready();
  type Response = { content?: Record<string, { schema: { properties?: { code?: { enum?: string[] } } } }> };
  const doc = inlineRefs(app.swagger() as unknown) as { paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, Response> }>> };
  const problems: string[] = [];
  const codesOf = (response: Response | undefined) => response?.content?.['application/json']?.schema.properties?.code?.enum;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const at = `${method} ${path}`;
      for (const [status, response] of Object.entries(op.responses)) {
        // The readiness probe's 503 is its report ({ status, dependencies }), not a refusal.
        if (status.startsWith('2') || at === 'get /health/ready') continue;
        if (!codesOf(response)?.length) problems.push(`${at} ${status}: no code enum`);
      }
      if (op.requestBody === undefined) continue;
      // As the kernel answers a body over the limit or of a type no parser takes (errors.ts).
      if (!isDeepStrictEqual(codesOf(op.responses['413']), ['FST_ERR_CTP_BODY_TOO_LARGE'])) problems.push(`${at}: no 413 FST_ERR_CTP_BODY_TOO_LARGE`);
      if (!isDeepStrictEqual(codesOf(op.responses['415']), ['FST_ERR_CTP_INVALID_MEDIA_TYPE'])) problems.push(`${at}: no 415 FST_ERR_CTP_INVALID_MEDIA_TYPE`);
    }
  }
  assert.deepEqual(problems, []);
});

test("the event stream's events are one named variant per event the push kinds register, told apart by name, each with its frame", async () => {
  const { app } = await buildTestApp();
  await app.ready();
  type Variant = { properties: { name: { enum: string[] }; payload: { $ref: string } } };
  const doc = app.swagger() as unknown as { components: { schemas: Record<string, unknown> } };
  const page = doc.components.schemas.EventsPage as { properties: { events: { items: { oneOf: { $ref: string }[]; discriminator: { propertyName: string; mapping: Record<string, string> } } } } };
  const { oneOf, discriminator } = page.properties.events.items;
  assert.equal(discriminator.propertyName, 'name');
  const expected = [...Object.keys(MESSENGER_FRAME_SCHEMAS).map(eventNameOf), 'notification_status_changed'].sort();
  assert.deepEqual(Object.keys(discriminator.mapping).sort(), expected);
  assert.deepEqual(oneOf.map((o) => o.$ref).sort(), Object.values(discriminator.mapping).sort());
  for (const [event, ref] of Object.entries(discriminator.mapping)) {
    const variant = doc.components.schemas[ref.slice('#/components/schemas/'.length)] as Variant;
    assert.deepEqual(variant.properties.name.enum, [event]);
    assert.match(variant.properties.payload.$ref, /Frame$/, `${event}: its payload is a named frame`);
  }
});
