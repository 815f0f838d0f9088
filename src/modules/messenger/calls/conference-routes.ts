import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorCodes, perUserLimit } from '../../../platform/http/index.ts';
import { Uuid } from '../../../platform/types/index.ts';
import { ChatParams } from '../chats/schemas.ts';
import {
  ConferenceParams,
  ConferenceView,
  ConferenceWithJoin,
  InviteConferenceBody,
  RecordingOutcomeBody,
  RecordingParams,
  RecordingView,
  StartConferenceBody,
} from './schemas.ts';
import { endConference, getConference, inviteToConference, joinConference, leaveConference, startConference } from './conferences.ts';
import { recordRecordingOutcome, setScreenShare, startRecording, stopRecording } from './conference-media.ts';
import type { CallsContext } from './media-join.ts';
import { Type } from '@sinclair/typebox';

const tags = ['messenger-conferences'];
/**
 * Each route's own refusals; the kernel's and the messenger guard's are added (messenger/routes.ts).
 * A conference (or chat) the caller is not a member of is MSG_CALL_NOT_FOUND.
 */
const notFound = { 404: errorCodes('MSG_CALL_NOT_FOUND') };
const conflicts = (...codes: string[]) => ({ 409: errorCodes('MSG_CALL_INVALID_STATE', ...codes) });
const unknownCaller = { 403: errorCodes('MSG_USER_NOT_REPLICATED') };

/** Conferences in a chat (UC-MSG-006): visible to the chat's Active participants only. */
export function registerConferenceRoutes(app: FastifyInstance, ctx: CallsContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const one = '/api/messenger/conferences/:conferenceId';
  // Starting a conference rings every participant, so it counts as an invite too.
  const invites = perUserLimit(ctx.options.rateLimits.callInvites);
  const opts = (operationId: string, summary: string, response: object, extra: object = {}) => ({
    preHandler: app.requireUser,
    schema: { operationId, tags, summary, params: ConferenceParams, response: { ...response, ...notFound }, ...extra },
  });

  r.post(
    '/api/messenger/chats/:chatId/conferences',
    {
      preHandler: app.requireUser,
      config: invites,
      schema: {
        operationId: 'startConference',
        tags,
        summary: 'Start the chat’s conference: every participant gets conference_started with a personal MediaJoinModel (in a Direct chat the other member only when they consented to you, as a 1:1 call rings); returns yours',
        params: ChatParams,
        body: StartConferenceBody,
        response: { 201: ConferenceWithJoin, 403: errorCodes('MSG_USER_NOT_REPLICATED', 'MSG_USER_BLOCKED'), ...notFound, 409: errorCodes('MSG_CONFERENCE_ALREADY_ACTIVE') },
      },
    },
    async (req, reply) => reply.code(201).send(await startConference(ctx, req.principal!, req.params.chatId, req.body.media)),
  );

  r.get(one, opts('getConference', 'A conference of one of your chats, with its roster', { 200: ConferenceView }), async (req) =>
    getConference(ctx.db, (req.params as { conferenceId: string }).conferenceId, req.principal!.userId),
  );

  r.post(
    `${one}/invite`,
    { ...opts('inviteToConference', 'Ring chat participants (conference_invited with a personal MediaJoinModel each)', { 200: ConferenceView, ...unknownCaller, ...conflicts('MSG_CONFERENCE_NOT_JOINED') }, { body: InviteConferenceBody }), config: invites },
    async (req) => inviteToConference(ctx, req.principal!, (req.params as { conferenceId: string }).conferenceId, (req.body as { userIds: string[] }).userIds),
  );

  r.post(`${one}/join`, opts('joinConference', 'Join: returns your MediaJoinModel; pushes conference_participant_joined', { 200: ConferenceWithJoin, ...unknownCaller, ...conflicts() }), async (req) =>
    joinConference(ctx, req.principal!, (req.params as { conferenceId: string }).conferenceId),
  );
  r.post(`${one}/leave`, opts('leaveConference', 'Leave; pushes conference_participant_left', { 200: ConferenceView, 409: errorCodes('MSG_CONFERENCE_NOT_JOINED') }), async (req) =>
    leaveConference(ctx, req.principal!, (req.params as { conferenceId: string }).conferenceId),
  );
  r.post(`${one}/end`, opts('endConference', 'End (the starter, the chat owner or an admin); pushes conference_ended', { 200: ConferenceView, 403: errorCodes('MSG_CALL_FORBIDDEN'), ...conflicts() }), async (req) =>
    endConference(ctx, req.principal!, (req.params as { conferenceId: string }).conferenceId),
  );
  for (const [action, sharing] of [['start', true], ['stop', false]] as const) {
    r.post(`${one}/screen-share/${action}`, opts(`${action}ScreenShare`, `Screen sharing ${action} (one sharer at a time); pushes screen_share_${action === 'start' ? 'started' : 'stopped'}`, { 200: ConferenceView, ...conflicts('MSG_CONFERENCE_NOT_JOINED', ...(sharing ? (['MSG_SCREEN_SHARE_BUSY'] as const) : [])) }), async (req) =>
      setScreenShare(ctx, req.principal!, (req.params as { conferenceId: string }).conferenceId, sharing),
    );
  }

  r.post(
    `${one}/recordings`,
    { preHandler: app.requireUser, schema: { operationId: 'startRecording', tags, summary: 'Start recording; pushes recording_started', params: ConferenceParams,
      response: { 201: RecordingView, ...notFound, ...conflicts('MSG_CONFERENCE_NOT_JOINED', 'MSG_RECORDING_ALREADY_ACTIVE') } } },
    async (req, reply) => reply.code(201).send(await startRecording(ctx, req.principal!, req.params.conferenceId)),
  );
  r.post(
    `${one}/recordings/:recordingId/stop`,
    { preHandler: app.requireUser, schema: { operationId: 'stopRecording', tags, summary: 'Stop recording; pushes recording_stopped', params: RecordingParams,
      response: { 200: RecordingView, 404: errorCodes('MSG_CALL_NOT_FOUND', 'MSG_RECORDING_NOT_FOUND'), 409: errorCodes('MSG_CONFERENCE_NOT_JOINED', 'MSG_RECORDING_INVALID_STATE') } } },
    async (req) => stopRecording(ctx, req.principal!, req.params.conferenceId, req.params.recordingId),
  );
  r.post(
    '/api/messenger/admin/recordings/:recordingId/outcome',
    {
      // The media server's own credential (MESSENGER_MEDIA_CALLBACK_SECRET), not the admin token:
      // a leaked media-server config must not open the admin API, nor an admin token this callback.
      preHandler: app.requireMediaCallback,
      schema: {
        operationId: 'reportRecordingOutcome',
        tags: ['messenger-admin'],
        summary: 'The media side reports a recording’s outcome (bearer MESSENGER_MEDIA_CALLBACK_SECRET): recording_available or recording_failed to the chat',
        security: [{ mediaCallback: [] }],
        params: Type.Object({ recordingId: Uuid }),
        body: RecordingOutcomeBody,
        response: {
          200: RecordingView,
          401: errorCodes('AUTH_REQUIRED', 'AUTH_MEDIA_CALLBACK_DISABLED', 'AUTH_INVALID_CREDENTIAL'),
          404: errorCodes('MSG_RECORDING_NOT_FOUND'),
          409: errorCodes('MSG_RECORDING_INVALID_STATE'),
        },
      },
    },
    async (req) => recordRecordingOutcome(ctx, req.params.recordingId, req.body),
  );
}
