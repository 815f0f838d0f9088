import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Timestamp, Uuid } from '../../../platform/types/index.ts';

/** TypeBox schemas of the user-activity REST API (requests camelCase; published in the OpenAPI). */

const Status = Type.Union([Type.Literal('Active'), Type.Literal('Inactive')]);

export const IdParams = Type.Object({ id: Uuid });

export const StartSessionBody = Type.Object(
  {
    anonymousId: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: '^[A-Za-z0-9._:-]+$',
      description: 'Device/guest id kept by the client (AnonymousId)',
    }),
    device: Type.Object(
      {
        userAgent: Type.Optional(Type.String({ maxLength: 1024 })),
        ipAddress: Type.Optional(
          Type.String({ anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }], description: 'Client IP; default: the request address' }),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type StartSessionBody = Static<typeof StartSessionBody>;

export const Session = Type.Object({
  id: Uuid,
  anonymousId: Type.String(),
  userId: Nullable(Uuid),
  status: Status,
  endReason: Nullable(Type.String()),
  createdAt: Timestamp,
  lastActivityAt: Timestamp,
  endedAt: Nullable(Timestamp),
  durationSeconds: Nullable(Type.Integer()),
});

export const SessionHeartbeatReply = Type.Object({
  restarted: Type.Boolean({ description: 'The session was no longer Active; `session` is the new one (INV-SES-003)' }),
  session: Session,
});

export const LinkReply = Type.Object({
  switched: Type.Boolean({ description: 'The session belonged to another user: it was closed (Switched) and `session` is new' }),
  session: Session,
});

/** Longest FilterSnapshot accepted, as JSON text. */
export const FILTER_SNAPSHOT_MAX_BYTES = 8192;

export const OpenViewBody = Type.Object(
  {
    sessionId: Uuid,
    propertyObjectId: Uuid,
    viewSource: Type.String({ minLength: 1, maxLength: 50, pattern: '^[A-Za-z][A-Za-z0-9_-]*$', description: 'Where the view came from (ViewSource)' }),
    filterSnapshot: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100, description: `Search filters at the time of the view (≤ ${FILTER_SNAPSHOT_MAX_BYTES} bytes as JSON)` }),
    ),
  },
  { additionalProperties: false },
);
export type OpenViewBody = Static<typeof OpenViewBody>;

export const View = Type.Object({
  id: Uuid,
  sessionId: Uuid,
  propertyObjectId: Uuid,
  viewSource: Type.String(),
  filterSnapshot: Nullable(Type.Record(Type.String(), Type.Unknown())),
  status: Status,
  createdAt: Timestamp,
  lastActivityAt: Timestamp,
  endedAt: Nullable(Timestamp),
  durationSeconds: Nullable(Type.Integer()),
});

export const ViewHeartbeatReply = Type.Object({
  accepted: Type.Boolean({ description: 'false: the view is already Inactive; open a new view (INV-LV-003)' }),
});

export const StatsReply = Type.Object({
  propertyObjectId: Uuid,
  viewsCount: Type.Integer(),
  totalDurationSeconds: Type.Integer(),
});
