import { errorCodes, type FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';

/**
 * JSON bodies with a `__proto__` key, or a `constructor` object holding `prototype`, are refused
 * with 400 BODY_FORBIDDEN_KEY although they are valid JSON: code that copies such a body into
 * another object (a spread into a prototype-keyed lookup, a merge, a library's defaults) could set
 * the prototype of objects it did not mean to, and no route of this service has a field of that
 * name. Fastify refuses them too (onProtoPoisoning / onConstructorPoisoning 'error'), but as "not
 * valid JSON", which they are not; this parser says what is refused and why.
 */

/** Only text that could hold one of the keys (possibly \u-escaped) is walked. */
const MAYBE_FORBIDDEN = /proto|constructor|\\u/;

export const forbiddenKeyError = () =>
  new AppError(
    'BODY_FORBIDDEN_KEY',
    'the body holds a __proto__ key or constructor.prototype: refused, since copying it could change the prototype of other objects',
    400,
  );

/** True when a value parsed from JSON holds `__proto__` or `constructor.prototype` at any depth. */
export function hasForbiddenKey(value: unknown): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (!Array.isArray(v)) {
      if (Object.hasOwn(v, '__proto__')) return true;
      const ctor = Object.hasOwn(v, 'constructor') ? (v as { constructor: unknown }).constructor : undefined;
      if (typeof ctor === 'object' && ctor !== null && Object.hasOwn(ctor, 'prototype')) return true;
    }
    for (const child of Object.values(v)) stack.push(child);
  }
  return false;
}

/** Parses a JSON body: Fastify's own error for text that is not JSON, BODY_FORBIDDEN_KEY for the keys above. */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY();
  }
  if (MAYBE_FORBIDDEN.test(text) && hasForbiddenKey(value)) throw forbiddenKeyError();
  return value;
}

/** The app's JSON parser (routes in scopes of their own, the hub's and the webhook's, bring theirs). */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
