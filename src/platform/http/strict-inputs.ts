import AjvCompiler from '@fastify/ajv-compiler';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';

/**
 * Unknown input is refused, never dropped. Fastify's Ajv removes properties a schema does not list
 * (`removeAdditional: true`) and ignores them everywhere else, so `?beforeSeq=5` (a misspelt
 * `afterSeq`) answered the first page as if nothing had been asked. The app turns removal off
 * (`AJV_OPTIONS`), and this hook makes the path and query of every API route closed: a parameter
 * the route does not name is 400 `VALIDATION_FAILED` naming it, and a route without a body refuses
 * one (`BODY_NOT_ALLOWED`). Bodies declare it in their own
 * schemas (`additionalProperties: false`, or `true` where a provider's payload legitimately carries
 * more, said on the schema), which route-schemas.test.ts holds for every body.
 */
export const AJV_OPTIONS = { customOptions: { removeAdditional: false } } as const;

type ValidatorFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator'];
type AjvServerOptions = { customOptions?: Record<string, unknown> };

/**
 * A body is checked as it was sent: Ajv's type coercion (Fastify's default, `coerceTypes: 'array'`)
 * turned `"dryRun": null`, `0` or `[false]` into false, so a bulk action meant as a dry run ran for
 * real, stored `"body": 12345` as the text "12345" and took `"size": "10"`. JSON carries its types,
 * so a body field of the wrong type is 400 VALIDATION_FAILED. Path, query string and headers are
 * text on the wire and keep coercion (`?limit=50` is the number 50). Given as the server's
 * `schemaController.compilersFactory.buildValidator`: Fastify's own compiler, twice, chosen per part.
 */
export function strictBodyValidators(): ValidatorFactory {
  const fromPool = AjvCompiler();
  return (externalSchemas, options) => {
    const customOptions = { ...(options as AjvServerOptions | undefined)?.customOptions };
    const coercing = fromPool(externalSchemas, { ...options, customOptions } as AjvServerOptions);
    const exact = fromPool(externalSchemas, { ...options, customOptions: { ...customOptions, coerceTypes: false } } as AjvServerOptions);
    return (route) => (route.httpPart === 'body' ? exact(route) : coercing(route));
  };
}

/** The routes this applies to: the documented API. The hub's SignalR routes take what SignalR clients add. */
const API_PREFIX = '/api/';

type ObjectSchema = { type?: unknown; properties?: unknown; additionalProperties?: unknown };

const closed = (schema: ObjectSchema | undefined): ObjectSchema => {
  if (!schema) return { type: 'object', properties: {}, additionalProperties: false };
  if (schema.additionalProperties === undefined) schema.additionalProperties = false;
  return schema;
};

/** The code a body sent to a route that takes none is refused with (documented on those routes: openapi-components.ts). */
export const BODY_NOT_ALLOWED = 'BODY_NOT_ALLOWED';

/** A request carries body bytes: a length above zero, or a chunked body (whose length is unknown until read). */
const carriesBody = (req: FastifyRequest): boolean => {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
};

/**
 * A route that takes no body refuses one, before it is parsed: Fastify parsed and dropped it, so
 * `PUT /blacklist/{id}` with `{"status":"Unblocked"}` blocked, the caller's intent silently ignored.
 * 400 (not 415: any media type is refused alike, and an empty body of any type is fine).
 */
async function refuseBody<T>(req: FastifyRequest, reply: FastifyReply, payload: T): Promise<T | FastifyReply> {
  if (!carriesBody(req)) {
    // No bytes: nothing for a parser to read. Fastify parses by the content type when one is given,
    // and the JSON parser's refusal of an empty body is not one a route without a body documents.
    delete req.headers['content-type'];
    return payload;
  }
  return reply.status(400).send({ code: BODY_NOT_ALLOWED, message: `${req.method} ${req.routeOptions.url ?? ''} takes no body; send none` });
}

export function registerStrictInputs(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(API_PREFIX) || !route.schema) return;
    const schema = route.schema as { querystring?: ObjectSchema; params?: ObjectSchema; body?: unknown };
    schema.querystring = closed(schema.querystring);
    if (schema.params) closed(schema.params);
    // preParsing: after the token checks that run on request, before any parser reads the body.
    if (schema.body === undefined) route.preParsing = [...asList(route.preParsing), refuseBody];
  });
}

const asList = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);

const WHERE: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/**
 * The 400's message for a schema refusal: an unknown field is named (Ajv's own text says only "must
 * NOT have additional properties"); anything else keeps Ajv's message, which names the field.
 */
export function validationMessage(err: Pick<FastifyError, 'message' | 'validation' | 'validationContext'>): string {
  const first = err.validation?.[0];
  const extra = (first?.params as { additionalProperty?: unknown } | undefined)?.additionalProperty;
  if (first?.keyword !== 'additionalProperties' || typeof extra !== 'string') return err.message;
  const where = WHERE[err.validationContext ?? 'body'] ?? 'body';
  const parent = first.instancePath ? ` in ${first.instancePath.slice(1).replaceAll('/', '.')}` : '';
  const kind = where === 'body' ? 'body field' : `${where} parameter`;
  return `unknown ${kind} '${extra}'${parent}: this route does not take it`;
}
