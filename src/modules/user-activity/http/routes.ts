import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AppError, clientAddress, errorCodes, perClientLimit } from '../../../platform/http/index.ts';
import {
  DeviceSecretHeaders,
  FILTER_SNAPSHOT_MAX_BYTES,
  IdParams,
  LinkReply,
  OpenViewBody,
  SessionHeartbeatReply,
  StartSessionBody,
  StartSessionReply,
  StatsReply,
  View,
  ViewHeartbeatReply,
} from './api-schemas.ts';
import { deviceSecretRequired, ERROR } from '../errors.ts';
import { jsonValueProblem } from '../../../platform/types/index.ts';
import { heartbeatSession, linkSession, startSession, type ActivityDeps } from '../sessions/sessions.ts';
import type { SessionRow } from '../sessions/session-sql.ts';
import { heartbeatView, MAX_VIEWS_PER_SESSION, openView } from '../views/views.ts';
import type { ViewRow } from '../views/view-sql.ts';
import { getPropertyObjectStats } from '../stats/stats-sql.ts';
import { USER_ACTIVITY_DEFAULTS } from '../defaults.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

const sessionBody = (s: SessionRow) => ({
  id: s.id,
  anonymousId: s.anonymousId,
  userId: s.userId,
  status: s.status,
  endReason: s.endReason,
  createdAt: s.createdAt.toISOString(),
  lastActivityAt: s.lastActivityAt.toISOString(),
  endedAt: iso(s.endedAt),
  durationSeconds: s.durationSeconds,
});

const viewBody = (v: ViewRow) => ({
  id: v.id,
  sessionId: v.sessionId,
  propertyObjectId: v.propertyObjectId,
  viewSource: v.viewSource,
  filterSnapshot: (v.filterSnapshot ?? null) as Record<string, unknown> | null,
  status: v.status,
  createdAt: v.createdAt.toISOString(),
  lastActivityAt: v.lastActivityAt.toISOString(),
  endedAt: iso(v.endedAt),
  durationSeconds: v.durationSeconds,
});

const tags = ['user-activity'];


/** The X-Device-Secret header, or 401 before anything is read or written. */
function deviceSecretOf(req: FastifyRequest): string {
  const secret = (req.headers as DeviceSecretHeaders)['x-device-secret'];
  if (typeof secret !== 'string' || secret.length === 0) throw deviceSecretRequired();
  return secret;
}

/**
 * The device secret's refusals, and each route's own; the kernel adds the input, token (on link),
 * rate-limit and availability codes (openapi-components.ts).
 */
const DeviceSecretErrors = { 401: errorCodes(ERROR.deviceSecretRequired), 403: errorCodes(ERROR.deviceSecretInvalid) };
const sessionNotFound = errorCodes(ERROR.sessionNotFound);

/**
 * REST of session and view tracking (UC-ACT-001/002). Tracking needs no token, but every call that
 * changes a session or its views needs the device secret the start returned (X-Device-Secret);
 * linking needs the user's token as well.
 */
export function registerUserActivityRoutes(app: FastifyInstance, deps: ActivityDeps, limits: { trackingPerMinute: number }): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // No token on these routes: the client address is what a flood from one place is counted by.
  const tracking = perClientLimit(limits.trackingPerMinute);
  // A view open stores a row of up to 8 KiB, heartbeats only move a timestamp: opens get a share of the limit.
  const viewOpens = perClientLimit(Math.ceil(limits.trackingPerMinute / USER_ACTIVITY_DEFAULTS.trackingCallsPerViewOpen));

  r.post(
    '/api/user-activity/sessions',
    {
      config: tracking,
      schema: {
        operationId: 'startSession',
        tags,
        security: [{}, { deviceSecret: [] }],
        summary:
          "Start the caller's session (201, with a fresh device secret), or resume it (200) when X-Device-Secret proves the device's Active session",
        description:
          'An AnonymousId is not a credential: without the secret of its Active session a start always gets a new session of its own, ' +
          "never another device's session id or UserId.",
        headers: DeviceSecretHeaders,
        body: StartSessionBody,
        response: { 200: StartSessionReply, 201: StartSessionReply },
      },
    },
    async (req, reply) => {
      const presented = req.headers['x-device-secret'];
      const { session, created, deviceSecret } = await startSession(deps, {
        anonymousId: req.body.anonymousId,
        userAgent: req.body.device.userAgent ?? null,
        // The connection's address under TRUST_PROXY, never the body's: a client cannot know its public
        // address behind NAT, and one it chose would be a forged record (the field is accepted, unused).
        ipAddress: clientAddress(req),
        correlationId: req.id,
        deviceSecret: typeof presented === 'string' && presented.length > 0 ? presented : null,
      });
      return reply.status(created ? 201 : 200).send({ ...sessionBody(session), deviceSecret });
    },
  );

  r.put(
    '/api/user-activity/sessions/:id/heartbeat',
    {
      config: tracking,
      schema: {
        operationId: 'heartbeatSession',
        tags,
        security: [{ deviceSecret: [] }],
        summary: 'Session activity (X-Device-Secret); a session that is no longer Active is restarted for the same device (restarted: true)',
        headers: DeviceSecretHeaders,
        params: IdParams,
        response: { 200: SessionHeartbeatReply, ...DeviceSecretErrors, 404: sessionNotFound },
      },
    },
    async (req) => {
      const { session, restarted } = await heartbeatSession(deps, req.params.id, deviceSecretOf(req), req.id);
      return { restarted, session: sessionBody(session) };
    },
  );

  r.post(
    '/api/user-activity/sessions/:id/link',
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'linkSession',
        tags,
        summary: "Link the Active session (X-Device-Secret) to the caller's user; another user's session is switched",
        security: [{ bearer: [], deviceSecret: [] }],
        headers: DeviceSecretHeaders,
        params: IdParams,
        response: { 200: LinkReply, ...DeviceSecretErrors, 404: sessionNotFound },
      },
    },
    async (req) => {
      const { session, switched } = await linkSession(deps, req.params.id, req.principal!.userId, deviceSecretOf(req), req.id);
      return { switched, session: sessionBody(session) };
    },
  );

  r.post(
    '/api/user-activity/property-object-views',
    {
      config: viewOpens,
      schema: {
        operationId: 'startPropertyObjectView',
        tags,
        security: [{ deviceSecret: [] }],
        summary: 'Open a property-object view in an Active session (X-Device-Secret of that session)',
        description:
          `A session holds at most ${MAX_VIEWS_PER_SESSION} views (409 USER_ACTIVITY_SESSION_VIEW_LIMIT_REACHED: start a new session); ` +
          'view opens per client address are limited to a tenth of the tracking limit (429 RATE_LIMITED).',
        headers: DeviceSecretHeaders,
        body: OpenViewBody,
        response: { 201: View, 400: errorCodes(ERROR.filterSnapshotTooLarge), ...DeviceSecretErrors, 404: sessionNotFound, 409: errorCodes(ERROR.sessionViewLimitReached) },
      },
    },
    async (req, reply) => {
      const secret = deviceSecretOf(req);
      const { filterSnapshot } = req.body;
      const problem = filterSnapshot === undefined ? undefined : jsonValueProblem(filterSnapshot, FILTER_SNAPSHOT_MAX_BYTES);
      if (problem) throw new AppError(problem.tooLarge ? ERROR.filterSnapshotTooLarge : 'VALIDATION_FAILED', `filterSnapshot ${problem.message}`, 400);
      const view = await openView(deps, {
        sessionId: req.body.sessionId,
        propertyObjectId: req.body.propertyObjectId,
        viewSource: req.body.viewSource,
        filterSnapshot: filterSnapshot ?? null,
      }, secret);
      return reply.status(201).send(viewBody(view));
    },
  );

  r.put(
    '/api/user-activity/property-object-views/:id/heartbeat',
    {
      config: tracking,
      schema: {
        operationId: 'heartbeatPropertyObjectView',
        tags,
        security: [{ deviceSecret: [] }],
        summary: 'View activity (also activity of its session; X-Device-Secret of that session); accepted: false when the view is Inactive',
        headers: DeviceSecretHeaders,
        params: IdParams,
        response: { 200: ViewHeartbeatReply, ...DeviceSecretErrors, 404: errorCodes(ERROR.viewNotFound) },
      },
    },
    async (req) => heartbeatView(deps, req.params.id, deviceSecretOf(req)),
  );

  r.get(
    '/api/user-activity/property-objects/:id/stats',
    {
      schema: {
        operationId: 'getPropertyObjectStats',
        tags,
        summary: 'Ended views of a property object and their total duration',
        params: IdParams,
        response: { 200: StatsReply },
      },
    },
    async (req) => getPropertyObjectStats(deps.db, req.params.id),
  );
}
