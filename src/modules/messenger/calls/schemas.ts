import { Type } from '@sinclair/typebox';
import { Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { MEDIA_KINDS_AV, RECORDING_STATUSES, ROSTER_STATUSES, SESSION_STATUSES } from '../model/call-kinds.ts';
import { named } from '../../../platform/http/index.ts';

/** TypeBox schemas of the calls and conferences REST surface (camelCase bodies). */

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));
export const Media = literals(MEDIA_KINDS_AV);

export const JoinView = named('MediaJoin', Type.Object(
  {
    roomName: Type.String(),
    accessToken: Type.String({ description: 'Short-lived HS256 room token for this user (minted now, never stored)' }),
    expiresAt: Timestamp,
    iceServers: Type.Array(Type.Object({ urls: Type.Array(Type.String()), username: Type.String(), credential: Type.String() })),
  },
  { description: 'MediaJoinModel' },
));

export const CallView = named('CallView', Type.Object({
  id: Uuid,
  callerUserId: Uuid,
  calleeUserId: Uuid,
  media: Media,
  status: literals(SESSION_STATUSES),
  roomName: Type.String(),
  createdAt: Timestamp,
  ringExpiresAt: Nullable(Timestamp),
  answeredAt: Nullable(Timestamp),
  endedAt: Nullable(Timestamp),
  endedByUserId: Nullable(Uuid),
}));
export const CallReply = Type.Object({ call: CallView, join: Type.Optional(JoinView) });
export const InviteCallBody = Type.Object({ calleeUserId: Uuid, media: Media }, { additionalProperties: false });
export const CallParams = Type.Object({ callId: Uuid });

export const ConferenceView = named('ConferenceView', Type.Object({
  id: Uuid,
  chatId: Uuid,
  startedByUserId: Uuid,
  media: Media,
  status: Type.Union([Type.Literal('Active'), Type.Literal('Ended')]),
  roomName: Type.String(),
  createdAt: Timestamp,
  endedAt: Nullable(Timestamp),
  participants: Type.Array(Type.Object({ userId: Uuid, status: literals(ROSTER_STATUSES), screenSharing: Type.Boolean() })),
}));
export const ConferenceWithJoin = Type.Object({ conference: ConferenceView, join: JoinView });
export const StartConferenceBody = Type.Object({ media: Media }, { additionalProperties: false });
export const InviteConferenceBody = Type.Object({ userIds: Type.Array(Uuid, { minItems: 1, maxItems: 500 }) }, { additionalProperties: false });
export const ConferenceParams = Type.Object({ conferenceId: Uuid });
export const RecordingParams = Type.Object({ conferenceId: Uuid, recordingId: Uuid });

export const RecordingView = named('RecordingView', Type.Object({
  id: Uuid,
  conferenceId: Uuid,
  startedByUserId: Uuid,
  status: literals(RECORDING_STATUSES),
  errorCode: Nullable(Type.String()),
  startedAt: Timestamp,
  stoppedAt: Nullable(Timestamp),
  completedAt: Nullable(Timestamp),
}));
export const RecordingOutcomeBody = Type.Object(
  {
    status: Type.Union([Type.Literal('Available'), Type.Literal('Failed')]),
    errorCode: Type.Optional(Text({ minLength: 1, maxLength: 64, pattern: '^[A-Z0-9_]+$' })),
  },
  { additionalProperties: false },
);
