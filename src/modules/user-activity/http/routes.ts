import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AppError, ErrorBody } from '../../../platform/http/index.ts';
import {
  FILTER_SNAPSHOT_MAX_BYTES,
  IdParams,
  LinkReply,
  OpenViewBody,
  Session,
  SessionHeartbeatReply,
  StartSessionBody,
  StatsReply,
  View,
  ViewHeartbeatReply,
} from './api-schemas.ts';
import { ERROR } from '../errors.ts';
import { heartbeatSession, linkSession, startSession, type ActivityDeps } from '../sessions/sessions.ts';
import type { SessionRow } from '../sessions/session-sql.ts';
import { heartbeatView, openView } from '../views/views.ts';
import type { ViewRow } from '../views/view-sql.ts';
import { getPropertyObjectStats } from '../stats/view-stats.ts';

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

/** REST of session and view tracking (UC-ACT-001/002). Tracking needs no token; linking needs the user's. */
export function registerUserActivityRoutes(app: FastifyInstance, deps: ActivityDeps): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/api/user-activity/sessions',
    {
      schema: {
        tags,
        summary: "Start (or resume) the device's session; one Active session per AnonymousId",
        body: StartSessionBody,
        response: { 200: Session, 201: Session, 400: ErrorBody },
      },
    },
    async (req, reply) => {
      const { session, created } = await startSession(deps, {
        anonymousId: req.body.anonymousId,
        userAgent: req.body.device.userAgent ?? null,
        ipAddress: req.body.device.ipAddress ?? req.ip ?? null,
        correlationId: req.id,
      });
      return reply.status(created ? 201 : 200).send(sessionBody(session));
    },
  );

  r.put(
    '/api/user-activity/sessions/:id/heartbeat',
    {
      schema: {
        tags,
        summary: 'Session activity; a session that is no longer Active is restarted (restarted: true)',
        params: IdParams,
        response: { 200: SessionHeartbeatReply, 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (req) => {
      const { session, restarted } = await heartbeatSession(deps, req.params.id, req.id);
      return { restarted, session: sessionBody(session) };
    },
  );

  r.post(
    '/api/user-activity/sessions/:id/link',
    {
      preHandler: app.requireUser,
      schema: {
        tags,
        summary: "Link the Active session to the caller's user; another user's session is switched",
        security: [{ bearer: [] }],
        params: IdParams,
        response: { 200: LinkReply, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (req) => {
      const { session, switched } = await linkSession(deps, req.params.id, req.principal!.userId, req.id);
      return { switched, session: sessionBody(session) };
    },
  );

  r.post(
    '/api/user-activity/property-object-views',
    {
      schema: {
        tags,
        summary: 'Open a property-object view in an Active session',
        body: OpenViewBody,
        response: { 201: View, 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (req, reply) => {
      const { filterSnapshot } = req.body;
      if (filterSnapshot !== undefined && Buffer.byteLength(JSON.stringify(filterSnapshot)) > FILTER_SNAPSHOT_MAX_BYTES) {
        throw new AppError(ERROR.filterSnapshotTooLarge, `filterSnapshot is larger than ${FILTER_SNAPSHOT_MAX_BYTES} bytes`, 400);
      }
      const view = await openView(deps, {
        sessionId: req.body.sessionId,
        propertyObjectId: req.body.propertyObjectId,
        viewSource: req.body.viewSource,
        filterSnapshot: filterSnapshot ?? null,
      });
      return reply.status(201).send(viewBody(view));
    },
  );

  r.put(
    '/api/user-activity/property-object-views/:id/heartbeat',
    {
      schema: {
        tags,
        summary: 'View activity (also activity of its session); accepted: false when the view is Inactive',
        params: IdParams,
        response: { 200: ViewHeartbeatReply, 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (req) => heartbeatView(deps, req.params.id),
  );

  r.get(
    '/api/user-activity/property-objects/:id/stats',
    {
      schema: {
        tags,
        summary: 'Ended views of a property object and their total duration',
        params: IdParams,
        response: { 200: StatsReply, 400: ErrorBody },
      },
    },
    async (req) => getPropertyObjectStats(deps.pool, req.params.id),
  );
}
