import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

/**
 * Every refusal a test sees through `app.inject` is one the API document lists: an answer of 4xx or
 * 503 to a documented operation whose `code` is not in the enum the document gives for that
 * operation and status fails the request (and so the test) with the operation, status and code.
 * buildTestApp applies it, so every API test checks the document against what the routes answer.
 */

type Enumerated = { content?: Record<string, { schema?: { properties?: { code?: { enum?: string[] } } } }> };
type Document = { paths: Record<string, Record<string, { responses?: Record<string, Enumerated> }>>; components?: { schemas?: Record<string, unknown> } };

interface Operation {
  method: string;
  path: string;
  pattern: RegExp;
  params: number;
  responses: Record<string, Enumerated>;
}

/** The documented operations, static paths before parameterised ones (as the router matches). */
function operationsOf(doc: Document): Operation[] {
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      params: (path.match(/\{/g) ?? []).length,
      responses: op.responses ?? {},
    })),
  );
  return ops.sort((a, b) => a.params - b.params);
}

function codesOf(doc: Document, response: Enumerated | undefined): string[] | undefined {
  const schema = response?.content?.['application/json']?.schema as { $ref?: string; properties?: { code?: { enum?: string[] } } } | undefined;
  const ref = schema?.$ref;
  const resolved = ref ? (doc.components?.schemas?.[decodeURIComponent(ref.split('/').pop()!)] as typeof schema) : schema;
  return resolved?.properties?.code?.enum;
}

export function checkAnswersAgainstDocument(app: FastifyInstance): void {
  let operations: Operation[] | undefined;
  let doc: Document;
  const inject = app.inject.bind(app) as (opts: InjectOptions | string) => Promise<LightMyRequestResponse>;
  const checked = async (opts: InjectOptions | string): Promise<LightMyRequestResponse> => {
    const res = await inject(opts);
    const status = res.statusCode;
    if (!((status >= 400 && status < 500) || status === 503)) return res;
    const method = (typeof opts === 'string' ? 'GET' : (opts.method ?? 'GET')).toUpperCase();
    const url = typeof opts === 'string' ? opts : String(opts.url ?? opts.path ?? '/');
    const path = url.split('?')[0]!;
    if (!path.startsWith('/api/') && !path.startsWith('/hubs/')) return res;
    if (!operations) {
      doc = app.swagger() as unknown as Document;
      operations = operationsOf(doc);
    }
    const op = operations.find((o) => o.method === method && o.pattern.test(path));
    if (!op) return res;
    let code: unknown;
    try {
      code = (res.json() as { code?: unknown }).code;
    } catch {
      code = undefined;
    }
    const listed = codesOf(doc, op.responses[String(status)]);
    if (!listed || typeof code !== 'string' || !listed.includes(code)) {
      throw new Error(`${method} ${op.path} answered ${status} ${String(code)}, which the API document does not list (${listed ? listed.join(', ') : `no ${status}`}): ${res.body.slice(0, 300)}`);
    }
    return res;
  };
  // Only the call form (`app.inject(opts)`); the chained form without arguments is left as it is.
  app.inject = ((opts?: InjectOptions | string, cb?: unknown) => (opts === undefined || cb !== undefined ? (inject as (...a: unknown[]) => unknown)(opts, cb) : checked(opts))) as typeof app.inject;
}
