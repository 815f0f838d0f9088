import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { named } from '../../../platform/http/index.ts';

/** TypeBox schemas of the user-activity REST API (requests camelCase; published in the OpenAPI). */

const Status = Type.Union([Type.Literal('Active'), Type.Literal('Inactive')]);

export const IdParams = Type.Object({ id: Uuid });

/** Shortest AnonymousId accepted: long enough to be a random device id (a UUID is 36). */
export const ANONYMOUS_ID_MIN_LENGTH = 16;

/**
 * `X-Device-Secret`: the secret a session start returned. Optional in the schema so that a call
 * without it is answered 401 USER_ACTIVITY_DEVICE_SECRET_REQUIRED, not a generic validation error.
 */
export const DeviceSecretHeaders = Type.Object({
  'x-device-secret': Type.Optional(
    Text({ maxLength: 256, description: "The device secret the session start returned (required on every call that changes a session or its views)" }),
  ),
});
export type DeviceSecretHeaders = Static<typeof DeviceSecretHeaders>;

export const StartSessionBody = Type.Object(
  {
    anonymousId: Text({
      minLength: ANONYMOUS_ID_MIN_LENGTH,
      maxLength: 100,
      pattern: '^[A-Za-z0-9._:-]+$',
      description: `Device/guest id kept by the client (AnonymousId), ${ANONYMOUS_ID_MIN_LENGTH}..100 characters (e.g. a UUID); an identifier, not a credential`,
    }),
    device: Type.Object(
      {
        userAgent: Type.Optional(Text({ maxLength: 1024 })),
        ipAddress: Type.Optional(
          Text({
            maxLength: 45,
            anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }],
            description: "Ignored, accepted for compatibility: the stored address is the connection's (the load balancer's X-Forwarded-For when TRUST_PROXY names it)",
            deprecated: true,
          }),
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type StartSessionBody = Static<typeof StartSessionBody>;

export const Session = named('TrackingSession', Type.Object({
  id: Uuid,
  anonymousId: Type.String(),
  userId: Nullable(Uuid),
  status: Status,
  endReason: Nullable(Type.String()),
  createdAt: Timestamp,
  lastActivityAt: Timestamp,
  endedAt: Nullable(Timestamp),
  durationSeconds: Nullable(Type.Integer()),
}));

export const StartSessionReply = Type.Composite([
  Session,
  Type.Object({
    deviceSecret: Type.String({
      description:
        'The device secret (base64url): send it as X-Device-Secret on every later call for this session, and to the next start to resume it. ' +
        'A new session carries a fresh one; a resumed session keeps the one presented.',
    }),
  }),
]);

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
    viewSource: Text({ minLength: 1, maxLength: 50, pattern: '^[A-Za-z][A-Za-z0-9_-]*$', description: 'Where the view came from (ViewSource)' }),
    filterSnapshot: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100, description: `Search filters at the time of the view (≤ ${FILTER_SNAPSHOT_MAX_BYTES} bytes as JSON)` }),
    ),
  },
  { additionalProperties: false },
);
export type OpenViewBody = Static<typeof OpenViewBody>;

export const View = named('PropertyObjectView', Type.Object({
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
}));

export const ViewHeartbeatReply = Type.Object({
  accepted: Type.Boolean({ description: 'false: the view is already Inactive; open a new view (INV-LV-003)' }),
});

export const StatsReply = Type.Object({
  propertyObjectId: Uuid,
  viewsCount: Type.Integer(),
  totalDurationSeconds: Type.Integer(),
});
