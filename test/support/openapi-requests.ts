import fc from 'fast-check';
import { NO_NUL_GUARD } from '../../src/platform/types/index.ts';

/**
 * fast-check arbitraries for HTTP requests drawn from the published OpenAPI document: for each
 * operation, its path, query and header parameters and its JSON body. Half the requests are valid
 * throughout, with ids, secrets and phones the run has seen in earlier responses, so they reach the
 * handlers and real records; half are hostile (wrong types, out of range, U+0000, too long, missing
 * or extra properties, a body that is no JSON, of another media type or over the size limit, bad tokens).
 */

export type Schema = Record<string, unknown>;

export interface Operation {
  parameters?: { in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema?: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
}

export interface GeneratedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

/**
 * Ids the run has seen in responses, by what they name: a response's `id` under the path's last
 * segment (`chats`), a field `chatId` (or an item of `memberUserIds`) under `chatId` (`userId`). A
 * uuid input draws mostly from the ids its name or the segment before it points to (`chats/{chatId}`,
 * `roles/{id}`), so generated requests reach real records.
 */
export class IdPool {
  readonly all: string[] = [];
  private readonly byName = new Map<string, string[]>();

  add(name: string, id: string): void {
    const key = normalName(name);
    const list = this.byName.get(key) ?? [];
    if (!list.includes(id)) list.push(id);
    if (list.length > 50) list.shift();
    this.byName.set(key, list);
    if (!this.all.includes(id) && this.all.length < 500) this.all.push(id);
  }

  /** Ids for an input named `hint` (`<segment>/<param>` for a path parameter, the property name in a body). */
  candidates(hint: string | undefined): string[] {
    if (!hint) return [];
    return hint.split('/').flatMap((part) => (part === 'id' ? [] : (this.byName.get(normalName(part)) ?? [])));
  }

  /** Records the ids of a 2xx response to a request for `path` (an OpenAPI path template). */
  learn(path: string, body: unknown): void {
    const lastSegment = path.split('/').filter((p) => p && !p.startsWith('{')).at(-1) ?? '';
    const walk = (v: unknown, key: string | undefined): void => {
      if (typeof v === 'string' && key && (UUID.test(v) || REMEMBERED.test(key))) this.add(key === 'id' ? lastSegment : key, v);
      else if (Array.isArray(v)) for (const x of v) walk(x, key?.endsWith('Ids') ? key.slice(0, -1) : key === 'items' ? undefined : key);
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
    };
    walk(body, undefined);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Non-id values worth handing back: a session's device secret, phone numbers, anonymous ids. */
const REMEMBERED = /secret|phone|anonymousid/i;
/**
 * One key per kind of value: `memberUserIds` and `senderUserId` → `userid`, `x-device-secret` and
 * `deviceSecret` → `devicesecret`, `phoneNumber` → `phone`, `chats` → `chats`.
 */
const normalName = (name: string): string => {
  const n = name.toLowerCase().replace(/^x-/, '').replace(/[-_]/g, '').replace(/ids$/, 'id');
  return n.endsWith('userid') ? 'userid' : n.startsWith('phone') ? 'phone' : n;
};

const MAX_GENERATED_LENGTH = 64;

/** Values that no schema of ours accepts where it expects a string, number or object. */
const hostileScalars = fc.constantFrom<unknown>(null, true, -1, 0, 1.5, 1e20, -1e20, '', 'a\u0000b', '\u0000', '{}', 'null', '../../etc/passwd', "' or 1=1 --", '%00', '😀'.repeat(3), [], {});

/** The pattern without the U+0000 guard `Text` puts in front, as fast-check's stringMatching takes it. */
function innerPattern(pattern: string): string | undefined {
  if (!pattern.startsWith(NO_NUL_GUARD)) return pattern;
  const inner = pattern.slice(NO_NUL_GUARD.length);
  const unwrapped = inner.startsWith('(?:') && inner.endsWith(')') ? inner.slice(3, -1) : inner;
  return unwrapped === '' ? undefined : unwrapped;
}

function validString(schema: Schema, pool: IdPool, hint: string | undefined): fc.Arbitrary<string> {
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = Math.min((schema.maxLength as number | undefined) ?? MAX_GENERATED_LENGTH, Math.max(minLength, MAX_GENERATED_LENGTH));
  if (schema.format === 'uuid' || (typeof schema.pattern === 'string' && schema.pattern.includes('[0-9a-fA-F]{8}-'))) {
    // Mostly an id of the kind the input names (the latest ones most often).
    return fc.oneof(
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 1, arbitrary: drawFrom(() => pool.all, fc.uuid()) },
      { weight: 4, arbitrary: drawFrom(() => pool.candidates(hint), fc.uuid()) },
      { weight: 4, arbitrary: drawFrom(() => pool.candidates(hint).slice(-3), fc.uuid()) },
    );
  }
  if (hint && REMEMBERED.test(hint)) {
    const known = () => pool.candidates(hint).filter((v) => !UUID.test(v)).slice(-3);
    return fc.oneof({ weight: 1, arbitrary: plainString(minLength, maxLength) }, { weight: 4, arbitrary: drawFrom(known, plainString(minLength, maxLength)) });
  }
  if (schema.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.format === 'email') return fc.emailAddress();
  if (schema.format === 'ipv4') return fc.ipV4();
  if (schema.format === 'ipv6') return fc.ipV6();
  const pattern = typeof schema.pattern === 'string' ? innerPattern(schema.pattern) : undefined;
  if (pattern !== undefined) {
    const max = (schema.maxLength as number | undefined) ?? Infinity;
    try {
      // Fitted to the length bounds by repeating or cutting (a filter could reject for ever):
      // still a match for the usual `^[…]+$`, an invalid value for fixed shapes, which is fine too.
      return fc.stringMatching(new RegExp(pattern)).map((s) => (s.length < minLength ? (s || 'a').repeat(Math.ceil(minLength / (s.length || 1))) : s).slice(0, max));
    } catch {
      // A pattern stringMatching cannot build from: plain strings, refused by the schema mostly.
    }
  }
  return plainString(minLength, maxLength);
}

/** One of the values `list` holds when generated (the pool grows during the run), `fallback` while it holds none. */
const drawFrom = (list: () => string[], fallback: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.constant(undefined).chain(() => (list().length > 0 ? fc.constantFrom(...list()) : fallback));

/** Printable text (names, titles, bodies) or any code points, without U+0000. */
const plainString = (minLength: number, maxLength: number): fc.Arbitrary<string> =>
  fc.oneof(fc.string({ minLength: Math.max(1, minLength), maxLength }), fc.string({ minLength, maxLength, unit: 'binary' })).map((s) => s.replaceAll('\u0000', ''));

function validNumber(schema: Schema): fc.Arbitrary<number> {
  const min = (schema.minimum as number | undefined) ?? (schema.exclusiveMinimum as number | undefined) ?? -1e6;
  const max = (schema.maximum as number | undefined) ?? (schema.exclusiveMaximum as number | undefined) ?? 1e6;
  if (schema.type === 'integer') {
    const lo = Math.max(min, Number.MIN_SAFE_INTEGER);
    const hi = Math.min(max, Number.MAX_SAFE_INTEGER);
    // Both ends and their neighbourhood as often as the rest: limits are where handlers break.
    return fc.oneof(fc.constantFrom(lo, hi), fc.integer({ min: Math.max(lo, -1e9), max: Math.min(hi, 1e9) }), fc.maxSafeInteger().filter((n) => n >= lo && n <= hi));
  }
  return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/**
 * A value of `schema`. `hostile`: valid most of the time, anywhere inside it sometimes not; otherwise
 * valid throughout (so a whole request can pass validation). `depth` keeps nested objects finite.
 */
export function valueFor(schema: Schema | undefined, pool: IdPool, hostile: boolean, depth = 0, hint?: string): fc.Arbitrary<unknown> {
  if (!hostile) return validFor(schema, pool, false, depth, hint);
  return fc.oneof({ weight: 4, arbitrary: validFor(schema, pool, true, depth, hint) }, { weight: 1, arbitrary: invalidFor(schema) });
}

function validFor(schema: Schema | undefined, pool: IdPool, hostile: boolean, depth: number, hint?: string): fc.Arbitrary<unknown> {
  if (schema === undefined) return fc.jsonValue({ maxDepth: 2 });
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = schema[key] as Schema[] | undefined;
    if (members) {
      // A member without a type narrows its parent's type (`anyOf: [{ format: 'ipv4' }, …]`).
      return fc.oneof(...members.map((m) => validFor(m.type === undefined && schema.type !== undefined ? { ...schema, [key]: undefined, ...m } : m, pool, hostile, depth + 1, hint)));
    }
  }
  if (Array.isArray(schema.allOf)) return validFor(Object.assign({}, ...(schema.allOf as Schema[])), pool, hostile, depth);
  switch (schema.type) {
    case 'string':
      return validString(schema, pool, hint);
    case 'integer':
    case 'number':
      return validNumber(schema);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const maxLength = Math.min((schema.maxItems as number | undefined) ?? 5, 5);
      const minLength = Math.min((schema.minItems as number | undefined) ?? 0, maxLength);
      return fc.array(depth > 4 ? fc.constant(null) : valueFor(schema.items as Schema | undefined, pool, hostile, depth + 1, hint), { minLength, maxLength });
    }
    case 'object': {
      const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
      const required = (schema.required as string[] | undefined) ?? [];
      const model = Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, depth > 4 ? fc.constant(null) : valueFor(s, pool, hostile, depth + 1, k)]));
      if (hostile) return fc.record(model, { requiredKeys: required.filter((k) => k in model) });
      // Valid requests take few optional properties (one kind of message carries one of body, fileId, cardText).
      const optional = Object.keys(model).filter((k) => !required.includes(k));
      const chosen = fc.oneof(fc.constant<string[]>([]), fc.subarray(optional, { maxLength: Math.min(1, optional.length) }), fc.subarray(optional));
      return chosen.chain((keys) => fc.record(Object.fromEntries([...required.filter((k) => k in model), ...keys].map((k) => [k, model[k]!]))));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function invalidFor(schema: Schema | undefined): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [hostileScalars];
  if (schema?.type === 'string') {
    const maxLength = (schema.maxLength as number | undefined) ?? 1000;
    options.push(fc.constant('x'.repeat(maxLength + 1)), fc.string({ maxLength: 8 }).map((s) => `${s}\u0000${s}`));
  }
  if (schema?.type === 'integer' || schema?.type === 'number') {
    if (typeof schema.maximum === 'number') options.push(fc.constant(schema.maximum + 1), fc.constant(`${schema.maximum}0`));
    if (typeof schema.minimum === 'number') options.push(fc.constant(schema.minimum - 1));
    options.push(fc.constant('12abc'));
  }
  return fc.oneof(...options);
}

/** A parameter value as it appears in a URL or header: JSON text for non-strings. */
const asText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v) ?? '');

/** JSON over the server's body limit (Fastify's default, 1 MiB): a 413. */
const OVERSIZED_BODY = JSON.stringify({ x: 'x'.repeat(1024 * 1024) });

/** The bodies a JSON route may be sent, mostly from its schema, sometimes none or no JSON at all. */
function bodyFor(op: Operation, pool: IdPool, hostile: boolean): fc.Arbitrary<{ payload?: string; contentType?: string }> {
  const schema = op.requestBody?.content['application/json']?.schema;
  const asJson = (v: unknown) => ({ payload: JSON.stringify(v) ?? 'null', contentType: 'application/json' });
  if (!hostile) return op.requestBody === undefined ? fc.constant({}) : validFor(schema, pool, false, 0).map(asJson);
  if (op.requestBody === undefined) return fc.oneof({ weight: 9, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.constant({ payload: '{"x":1}', contentType: 'application/json' }) });
  return fc.oneof(
    { weight: 12, arbitrary: valueFor(schema, pool, true).map(asJson) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: fc.constantFrom('{', 'not json', '{"a":', '[1,2', '\u0000', '"x"').map((payload) => ({ payload, contentType: 'application/json' })) },
    { weight: 1, arbitrary: fc.constant({ payload: 'a=1', contentType: 'application/x-www-form-urlencoded' }) },
    { weight: 1, arbitrary: fc.constant({ payload: OVERSIZED_BODY, contentType: 'application/json' }) },
  );
}

/**
 * Requests for one operation, half of them valid throughout (every parameter and the body from its
 * schema, a token from `validAuth`) so they reach the handlers with real records, half hostile
 * (invalid values anywhere, no body or no JSON, any of `anyAuth`, undefined meaning none).
 */
export function requestFor(
  method: string,
  path: string,
  op: Operation,
  pool: IdPool,
  auth: { valid: fc.Arbitrary<string>; any: fc.Arbitrary<string | undefined> },
): fc.Arbitrary<GeneratedRequest> {
  return fc.boolean().chain((hostile) => requestOf(method, path, op, pool, hostile ? auth.any : auth.valid, hostile));
}

/** Requests for one operation that are valid throughout (parameters and body from its schemas), with a token from `auth`. */
export function validRequestFor(method: string, path: string, op: Operation, pool: IdPool, auth: fc.Arbitrary<string>): fc.Arbitrary<GeneratedRequest> {
  return requestOf(method, path, op, pool, auth, false);
}

function requestOf(method: string, path: string, op: Operation, pool: IdPool, auth: fc.Arbitrary<string | undefined>, hostile: boolean): fc.Arbitrary<GeneratedRequest> {
  const params = op.parameters ?? [];
  const paramArbs = params.map((p) => {
    // A path parameter's ids are named by it and the segment before it: `chats/{chatId}` → chatId, chats.
    const segment = p.in === 'path' ? path.split('/').at(path.split('/').indexOf(`{${p.name}}`) - 1) : undefined;
    const text = valueFor(p.schema, pool, hostile, 0, segment ? `${segment}/${p.name}` : p.name).map(asText);
    // A path segment `.` or `..` (encoded or not) is removed by every URL parser before a request is
    // sent (RFC 3986 dot segments): no client can give a path parameter that value.
    const value = p.in === 'path' ? text.filter((v) => v !== '.' && v !== '..') : text;
    if (p.required || p.in === 'path') return hostile ? fc.oneof({ weight: 50, arbitrary: value }, { weight: 1, arbitrary: fc.constant(undefined) }) : value;
    return fc.option(value, { nil: undefined, freq: 3 });
  });
  return fc.tuple(fc.tuple(...paramArbs), bodyFor(op, pool, hostile), auth).map(([values, body, authorization]) => {
    let url = path;
    const query = new URLSearchParams();
    const headers: Record<string, string> = {};
    params.forEach((p, i) => {
      const v = values[i];
      if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(v ?? ''));
      else if (v === undefined) return;
      else if (p.in === 'query') query.append(p.name, v);
      // Header values cannot carry control characters or non-Latin-1 text over HTTP: only what a client could send.
      else if (p.in === 'header' && /^[\t\x20-\x7e\x80-\xff]*$/.test(v)) headers[p.name] = v;
    });
    if (authorization !== undefined) headers.authorization = authorization;
    if (body.contentType !== undefined) headers['content-type'] = body.contentType;
    const qs = query.toString();
    return { method: method.toUpperCase(), url: qs ? `${url}?${qs}` : url, headers, ...(body.payload !== undefined ? { payload: body.payload } : {}) };
  });
}
