import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { AUTH_CODES } from './auth.ts';
import { ErrorBody } from './errors.ts';
import type { AdminCheck } from './auth-plugin.ts';
import { bearerGuardOf } from './route-guard.ts';
import { BODY_NOT_ALLOWED } from './strict-inputs.ts';
import { USER_CONCURRENCY_LIMIT } from './user-concurrency.ts';

/**
 * The published document names its schemas, so a generated client gets types such as `MessageView`
 * instead of one anonymous shape per operation: a schema with a `title` (set with `named`) is
 * published once under `components.schemas[title]` and referred to wherever it is used. The route
 * schemas themselves stay plain inline TypeBox (a `title` is an annotation: Ajv and the serializer
 * ignore it), so validation does not depend on the document. A request or response body that is
 * not named gets its operation's name (`SendMessageRequest`, `ListChatsResponse`,
 * `SendMessage404Error`), so every body is a component. Two different schemas under one name fail
 * the document's build: a name means one shape.
 */

/** Publishes `schema` as the component `name`. */
export function named<T extends object>(name: string, schema: T): T & { title: string } {
  return { ...schema, title: name };
}

/** A response with its own description (the document says "Created: MessageView" otherwise). */
export function answer<T extends object>(description: string, schema: T): T {
  return { ...schema, 'x-response-description': description };
}

/** The error body of one status of an operation, listing every code it answers with that status. */
export function errorCodes(...codes: [string, ...string[]]) {
  return { type: 'object', required: ErrorBody.required, properties: { code: { type: 'string', enum: codes }, message: ErrorBody.properties.message } } as const;
}

/** Retry-After as the service sends it: whole seconds (errors.ts, rate-limit.ts). */
const RETRY_AFTER = {
  description: 'Seconds to wait before sending the request again',
  schema: { type: 'integer', minimum: 0 },
} as const;

const STATUS_TEXT: Record<string, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized',
  403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 410: 'Gone', 413: 'Payload Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type',
  422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable',
};

/** What a 429 or 503 means, after its codes, in the document. */
const RETRY_NOTES: Record<string, string> = {
  429: 'RATE_LIMITED means this caller has used up its requests for the window, USER_CONCURRENCY_LIMIT that this user already has as many requests in progress as allowed; retry after Retry-After seconds',
  503: 'SERVICE_UNAVAILABLE means a database or Redis this request needs is unreachable (a write may have committed: retry with the same idempotency key); retry after Retry-After seconds',
};

/** The routes every answer of which may be a 503 for an unreachable dependency (errors.ts): the API and the hub's negotiate. */
const DEPENDENT_PREFIXES = ['/api/', '/hubs/'];

/** A bearer token's refusals (auth-plugin.ts): AUTH_KEYS_UNAVAILABLE is a 503, the identity provider's fault. */
const BEARER_401 = ['AUTH_REQUIRED', ...AUTH_CODES.filter((c) => c !== 'AUTH_KEYS_UNAVAILABLE')] as [string, ...string[]];

/** A JSON body the parser refuses (json-body.ts), and any input the schema refuses. */
const BODY_400 = ['VALIDATION_FAILED', 'BODY_FORBIDDEN_KEY', 'FST_ERR_CTP_EMPTY_JSON_BODY', 'FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_INVALID_CONTENT_LENGTH'];

/** Fastify's own refusals of a body (errors.ts passes their codes on): over the body limit, a media type no parser takes. */
const BODY_TOO_LARGE = 'FST_ERR_CTP_BODY_TOO_LARGE';
const UNSUPPORTED_MEDIA_TYPE = 'FST_ERR_CTP_INVALID_MEDIA_TYPE';
/** Fastify's router refuses a path parameter longer than its maxParamLength (100) before any schema sees it. */
const PARAMETER_TOO_LONG = 'FST_ERR_MAX_PARAM_LENGTH';

/** The 429's component by the codes it lists: one name means one shape. */
const LIMITED_NAMES: Record<string, string> = {
  RATE_LIMITED: 'RateLimitedError',
  [USER_CONCURRENCY_LIMIT]: 'UserConcurrencyLimitError',
  [`RATE_LIMITED ${USER_CONCURRENCY_LIMIT}`]: 'UserLimitedError',
};

type ErrorSchema = { properties?: { code?: { enum?: readonly string[] } } };

/** `declared` with `codes` added when it lists its codes; unchanged when it does not (a plain ErrorBody: codes not listed). */
const withCodes = (declared: unknown, codes: string[], name: string): unknown => {
  if (declared === undefined) return name ? named(name, errorCodes(...(codes as [string, ...string[]]))) : errorCodes(...(codes as [string, ...string[]]));
  const listed = (declared as ErrorSchema).properties?.code?.enum;
  if (!listed) return declared;
  return errorCodes(...([...new Set([...listed, ...codes])] as [string, ...string[]]));
};

type RouteSchema = { hide?: boolean; response?: Record<string, unknown>; security?: unknown; body?: unknown };

/**
 * Adds `codes` to what a route's schema documents for `status`: for a check that runs outside the
 * route's handler and refuses with them (a module's guard on every route of its scope).
 */
export function addErrorCodes(schema: unknown, status: number, codes: [string, ...string[]]): void {
  if (schema === undefined) return;
  const response = ((schema as RouteSchema).response ??= {});
  response[status] = withCodes(response[status], codes, '');
}

/**
 * Adds what the kernel answers on a route's behalf to its documented responses, with the codes: on
 * every API route a 400 VALIDATION_FAILED (its path and query are checked, strict-inputs.ts; on one
 * without a body also BODY_NOT_ALLOWED, for a body sent anyway) and a
 * 503 SERVICE_UNAVAILABLE for an unreachable database or Redis; on a route with a path parameter
 * 414 FST_ERR_MAX_PARAM_LENGTH (one over 100 characters); on a route with a body the JSON
 * parser's 400 refusals, 413 FST_ERR_CTP_BODY_TOO_LARGE and 415 FST_ERR_CTP_INVALID_MEDIA_TYPE; on
 * a bearer-token route the token's 401 codes and 503 AUTH_KEYS_UNAVAILABLE, on an admin route 403
 * AUTH_FORBIDDEN and the codes of the modules' admin checks; on a rate-limited route a 429
 * RATE_LIMITED, and on a user-token route (requireUser) a 429 USER_CONCURRENCY_LIMIT while the per-user
 * bound on requests in progress is on (user-concurrency.ts). A route's own codes for a status (`errorCodes`) are kept and these added; a route
 * that declares a status as a plain ErrorBody says nothing of its codes, and keeps it.
 */
export function documentKernelResponses(app: FastifyInstance, adminChecks: readonly AdminCheck[], opts: { userSlots: boolean }): void {
  // A GET's HEAD twin arrives with the same schema object: once is enough.
  const done = new WeakSet<object>();
  // Modules register their admin checks while routes are being added: their codes are added once all are in.
  const adminRoutes: { response: Record<string, unknown>; own: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const schema = route.schema as RouteSchema | undefined;
    if (!schema || schema.hide || done.has(schema) || !DEPENDENT_PREFIXES.some((p) => route.url.startsWith(p))) return;
    done.add(schema);
    const response = (schema.response ??= {});
    const guard = bearerGuardOf(app, route);
    const bearer = guard !== undefined;
    // Only the token is checked for a 401 (no device secret, no other credential besides it).
    const bearerOnly = bearer && isDeepStrictEqual(schema.security, [{ bearer: [] }]);
    if (route.url.startsWith('/api/')) {
      response['400'] = schema.body
        ? withCodes(response['400'], BODY_400, 'BodyValidationError')
        : withCodes(response['400'], ['VALIDATION_FAILED', BODY_NOT_ALLOWED], 'ValidationError');
    }
    if (route.url.includes(':')) response['414'] = withCodes(response['414'], [PARAMETER_TOO_LONG], 'ParameterTooLongError');
    if (schema.body) {
      response['413'] = withCodes(response['413'], [BODY_TOO_LARGE], 'BodyTooLargeError');
      response['415'] = withCodes(response['415'], [UNSUPPORTED_MEDIA_TYPE], 'UnsupportedMediaTypeError');
    }
    response['503'] = bearer
      ? withCodes(response['503'], ['SERVICE_UNAVAILABLE', 'AUTH_KEYS_UNAVAILABLE'], 'TokenRouteUnavailableError')
      : withCodes(response['503'], ['SERVICE_UNAVAILABLE'], 'ServiceUnavailableError');
    const generic = (declared: unknown) => (declared === ErrorBody ? undefined : declared);
    // Beside another credential (a device secret), the route's own 401 codes come first.
    if (bearerOnly) response['401'] = withCodes(generic(response['401']), BEARER_401, 'TokenRefusedError');
    else if (bearer) response['401'] = withCodes(response['401'], BEARER_401, '');
    // Admin and ops routes refuse a token without the right (AUTH_FORBIDDEN) and, for an admin, its checks;
    // an operator's route also the read-only ops role.
    const check = guard?.handlers[guard.index];
    if (check === app.requireAdmin || check === app.requireOpsViewer) adminRoutes.push({ response, own: [] });
    if (check === app.requireOpsOperator) adminRoutes.push({ response, own: ['OPS_READ_ONLY'] });
    const limits = [
      ...((route.config as { rateLimit?: unknown } | undefined)?.rateLimit ? ['RATE_LIMITED'] : []),
      ...(opts.userSlots && check === app.requireUser ? [USER_CONCURRENCY_LIMIT] : []),
    ];
    if (limits.length > 0) response['429'] = withCodes(generic(response['429']), limits, LIMITED_NAMES[limits.join(' ')] ?? '');
  });
  app.addHook('onReady', async () => {
    const codes = ['AUTH_FORBIDDEN', ...adminChecks.flatMap((c) => c.codes)] as [string, ...string[]];
    for (const { response, own } of adminRoutes) {
      response['403'] = own.length === 0 ? withCodes(response['403'], codes, 'AdminRefusedError') : withCodes(response['403'], [...codes, ...own], '');
    }
  });
}

type Json = Record<string, unknown>;
type Operation = { operationId?: string; requestBody?: { content?: Record<string, { schema?: Json }> }; responses?: Record<string, Json> };

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** `transformObject` of @fastify/swagger: names the schemas and describes the responses (see the header). */
export function nameComponents(input: { openapiObject: object } | { swaggerObject: object }): Json {
  if (!('openapiObject' in input)) throw new Error('the service publishes OpenAPI 3, not Swagger 2');
  const doc = input.openapiObject as Json & { paths: Record<string, Record<string, Operation>>; components: { schemas?: Record<string, Json> } };
  const components = (doc.components.schemas ??= {});
  const register = (name: string, schema: Json): Json => {
    const existing = components[name];
    if (existing !== undefined && !isDeepStrictEqual(existing, schema)) {
      throw new Error(`OpenAPI: two different schemas are named ${name}; a component name must mean one schema`);
    }
    components[name] = schema;
    return { $ref: `#/components/schemas/${encodeURIComponent(name)}` };
  };
  // Named subschemas first (depth-first), so a named schema's own parts are references too.
  const hoist = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(hoist);
    if (typeof node !== 'object' || node === null) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) out[k] = k === 'enum' || k === 'default' || k === 'example' ? v : hoist(v);
    if (typeof out.title !== 'string') return out;
    // Swagger folds a Nullable(named) into the named schema as `nullable: true`: the name stays the non-null shape.
    const { nullable, ...shape } = out;
    const ref = register(out.title, shape);
    // OpenAPI 3.0 takes `nullable` only beside a `type`.
    return nullable === true ? { type: shape.type, nullable: true, allOf: [ref] } : ref;
  };
  const body = (schema: Json | undefined, fallback: string): Json | undefined => {
    if (schema === undefined) return undefined;
    const hoisted = hoist(schema) as Json;
    return '$ref' in hoisted ? hoisted : register(fallback, hoisted);
  };

  for (const [name, schema] of Object.entries(components)) components[name] = hoist(schema) as Json;
  for (const methods of Object.values(doc.paths)) {
    for (const op of Object.values(methods)) {
      const opName = pascal(op.operationId ?? 'anonymous');
      for (const media of Object.values(op.requestBody?.content ?? {})) media.schema = body(media.schema, `${opName}Request`);
      const statuses = Object.keys(op.responses ?? {});
      const successes = statuses.filter((s) => s.startsWith('2'));
      for (const status of statuses) {
        const response = op.responses![status] as Json & { content?: Record<string, { schema?: Json }>; headers?: Json };
        const error = !status.startsWith('2');
        const fallback = error ? `${opName}${status}Error` : successes.length > 1 ? `${opName}${status}Response` : `${opName}Response`;
        for (const media of Object.values(response.content ?? {})) media.schema = body(media.schema, fallback);
        if (status === '429' || status === '503') response.headers = { 'Retry-After': RETRY_AFTER, ...response.headers };
        if (response.description === 'Default Response') response.description = describe(status, response, components);
      }
    }
  }
  return doc;
}

/** "Created: MessageView", "Not Found: MSG_CHAT_NOT_FOUND": what the status means and what comes with it. */
function describe(status: string, response: { content?: Record<string, { schema?: Json }> }, components: Record<string, Json>): string {
  const text = STATUS_TEXT[status] ?? status;
  const ref = Object.values(response.content ?? {})[0]?.schema?.$ref;
  const name = typeof ref === 'string' ? decodeURIComponent(ref.slice('#/components/schemas/'.length)) : undefined;
  const codes = name && ((components[name]?.properties as Json | undefined)?.code as { enum?: string[] } | undefined)?.enum;
  if (codes) return `${text}: ${codes.join(', ')}${RETRY_NOTES[status] ? `. ${RETRY_NOTES[status]}` : ''}`;
  if (name === undefined) return text;
  if (!status.startsWith('2')) return `${text}: { code, message } with a stable code`;
  return `${text}: ${name}`;
}
