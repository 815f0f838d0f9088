import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { bearerGuardOf } from './route-guard.ts';
import { HTTP_DEFAULTS } from './defaults.ts';

/**
 * The admin audit: one hook, so no route can forget it. Every route whose token check is an admin or
 * ops one (`requireAdmin`, `requireOpsViewer`, `requireOpsOperator`) is found when it is added, and
 * its answer goes to the sink (platform.ops_audit, given by the app) before it is sent:
 * - a state-changing call (not GET/HEAD) that succeeded: `done`; one that failed (4xx, 5xx): `failed`;
 * - a 403 of an authenticated caller on any of these routes, reads included (a viewer acting, a
 *   blocked admin, a user's token on an admin route): `refused`.
 * A 401 names no one and is not written; a token with no admin or ops role (any user's) has its
 * refusals written at most once a minute per replica (HTTP_DEFAULTS.auditUserRefusalEveryMs), as admin routes carry
 * no rate limit and a user must not be able to fill the table. A route names its action with `config.audit` (default:
 * its operationId); `audit: 'own'` is for a handler that writes a fuller row itself (the ops jobs
 * and bulk actions: counts, progress): the hook then writes only its refusals and failures.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The admin audit's name for this route's action, or 'own' (see admin-audit.ts). */
    audit?: string;
    /** Set by the hook on every admin route: what to write for its answers. */
    adminAudit?: AdminAuditPlan;
  }
}

interface AdminAuditPlan {
  action: string;
  writes: boolean;
  own: boolean;
}

export interface AdminActionRecord {
  actor: string;
  role: string;
  action: string;
  /** The request's path (ids included), without its query. */
  target: string;
  /** Path parameters, query and body, secrets redacted and long values cut. */
  params: Record<string, unknown>;
  dryRun: boolean;
  outcome: 'done' | 'failed' | 'refused';
  httpStatus: number;
  /** `CODE: message` of a refusal or failure. */
  error?: string;
}

export type AdminAuditSink = (record: AdminActionRecord) => Promise<void>;

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function registerAdminAudit(app: FastifyInstance, sink: AdminAuditSink): void {
  const userRefusals = new Map<string, number>();
  // The first refusal of a user a minute; an admin's or a viewer's always.
  const worthWriting = (r: AdminActionRecord): boolean => {
    if (r.outcome !== 'refused' || r.role !== 'none') return true;
    const now = Date.now();
    if (now - (userRefusals.get(r.actor) ?? -Infinity) < HTTP_DEFAULTS.auditUserRefusalEveryMs) return false;
    if (userRefusals.size >= HTTP_DEFAULTS.auditUserRefusalsKept) userRefusals.clear();
    userRefusals.set(r.actor, now);
    return true;
  };
  app.addHook('onRoute', (route) => {
    const plan = planOf(app, route);
    if (plan) route.config = { ...route.config, adminAudit: plan };
  });
  app.addHook('onSend', async (req, reply, payload) => {
    const plan = req.routeOptions.config?.adminAudit;
    const record = plan && recordOf(plan, req, reply, payload);
    if (record && worthWriting(record)) {
      // The action already happened (or was refused): a lost audit row is logged, the answer stands.
      await sink(record).catch((err: unknown) => req.log.error({ err, action: record.action }, 'admin audit row could not be written'));
    }
    return payload;
  });
}

function planOf(app: FastifyInstance, route: RouteOptions): AdminAuditPlan | undefined {
  const guard = bearerGuardOf(app, route);
  const check = guard?.handlers[guard.index];
  if (check !== app.requireAdmin && check !== app.requireOpsViewer && check !== app.requireOpsOperator) return undefined;
  const methods = [route.method].flat();
  const named = route.config?.audit;
  const operationId = (route.schema as { operationId?: string } | undefined)?.operationId;
  return {
    action: named && named !== 'own' ? named : (operationId ?? `${methods.join(',')} ${route.url}`),
    writes: methods.some((m) => !READS.has(m)),
    own: named === 'own',
  };
}

function recordOf(plan: AdminAuditPlan, req: FastifyRequest, reply: FastifyReply, payload: unknown): AdminActionRecord | undefined {
  const principal = req.principal;
  if (!principal) return undefined;
  const status = reply.statusCode;
  const outcome = status === 403 ? 'refused' : status >= 400 ? 'failed' : 'done';
  if (outcome !== 'refused' && !plan.writes) return undefined;
  if (outcome === 'done' && plan.own) return undefined;
  const body = req.body as { dryRun?: unknown } | undefined;
  return {
    actor: principal.userId,
    role: principal.opsRole ?? 'none',
    action: plan.action,
    target: req.url.split('?')[0]!,
    params: paramsOf(req),
    dryRun: typeof body === 'object' && body !== null && body.dryRun === true,
    outcome,
    httpStatus: status,
    ...(status >= 400 ? { error: errorOf(payload) } : {}),
  };
}

const SECRET_KEY = /secret|token|password|passwd|credential|authorization|api[-_]?key|private/i;

/** A value as the audit keeps it: secret-named fields redacted, strings and lists cut, three levels deep. */
export function summaryOf(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length > HTTP_DEFAULTS.auditMaxText ? `${value.slice(0, HTTP_DEFAULTS.auditMaxText)}…` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 3) return Array.isArray(value) ? `[${value.length} items]` : '{…}';
  if (Array.isArray(value)) {
    const items = value.slice(0, HTTP_DEFAULTS.auditMaxItems).map((v) => summaryOf(v, depth + 1));
    return value.length > HTTP_DEFAULTS.auditMaxItems ? [...items, `…${value.length - HTTP_DEFAULTS.auditMaxItems} more`] : items;
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? '[redacted]' : summaryOf(v, depth + 1)]));
}

function paramsOf(req: FastifyRequest): Record<string, unknown> {
  const parts: Record<string, unknown> = {};
  for (const [name, value] of [['params', req.params], ['query', req.query], ['body', req.body]] as const) {
    if (value !== undefined && value !== null && !(typeof value === 'object' && Object.keys(value).length === 0)) parts[name] = summaryOf(value);
  }
  const size = JSON.stringify(parts).length;
  // A huge body (a bulk list) is named by its size, not kept.
  return size > HTTP_DEFAULTS.auditMaxJson ? { ...(parts.params ? { params: parts.params } : {}), truncated: `${size} characters` } : parts;
}

/** `CODE: message` of the API's error body (the kernel's error handler wrote it); the status when it is not one. */
function errorOf(payload: unknown): string {
  try {
    const body = JSON.parse(String(payload)) as { code?: unknown; message?: unknown };
    if (typeof body.code === 'string') return `${body.code}: ${String(body.message ?? '')}`;
  } catch {
    // not JSON: fall through
  }
  return 'no error body';
}
