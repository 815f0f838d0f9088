import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorCodes, perUserLimit } from '../../../platform/http/index.ts';
import { CALL_TRANSITIONS, getCall, inviteCall, transitionCall, type CallAction } from './calls.ts';
import { CallParams, CallReply, CallView, InviteCallBody } from './schemas.ts';
import type { CallsContext } from './media-join.ts';

const tags = ['messenger-calls'];
/** Each route's own refusals; the kernel's and the messenger guard's are added (messenger/routes.ts). */
const callNotFound = errorCodes('MSG_CALL_NOT_FOUND');

const SUMMARIES: Record<CallAction, string> = {
  answer: 'Answer a ringing call (callee); returns your MediaJoinModel; pushes call_answered to both parties',
  decline: 'Decline a ringing call (callee); pushes call_declined',
  cancel: 'Cancel your ringing call (caller); pushes call_cancelled',
  end: 'End an active call (either party); pushes call_ended',
};

/** 1:1 calls (UC-MSG-005). */
export function registerCallRoutes(app: FastifyInstance, ctx: CallsContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/api/messenger/calls',
    {
      preHandler: app.requireUser,
      config: perUserLimit(ctx.options.rateLimits.callInvites),
      schema: {
        operationId: 'startCall',
        tags,
        summary: 'Call a user (Direct): one who consented (an Accepted contact, or a Direct chat with you they accepted) is rung with call_invited and you get your MediaJoinModel, unanswered → call_missed after the ring timeout; anyone else gets a missed-call request (the call is Missed at once, call_missed, no join model)',
        body: InviteCallBody,
        response: { 201: CallReply, 400: errorCodes('MSG_CALL_SELF'), 403: errorCodes('MSG_USER_NOT_REPLICATED', 'MSG_USER_BLOCKED'), 404: errorCodes('MSG_USER_NOT_FOUND') },
      },
    },
    async (req, reply) => reply.code(201).send(await inviteCall(ctx, req.principal!, req.body)),
  );

  r.get(
    '/api/messenger/calls/:callId',
    { preHandler: app.requireUser, schema: { operationId: 'getCall', tags, summary: 'A call of yours (its current state)', params: CallParams, response: { 200: CallView, 404: callNotFound } } },
    async (req) => getCall(ctx.db, req.params.callId, req.principal!.userId),
  );

  for (const action of Object.keys(CALL_TRANSITIONS) as CallAction[]) {
    // Only the caller may cancel, only the callee answer or decline; either party may end.
    const onlyOne = CALL_TRANSITIONS[action].by === 'either' ? {} : { 403: errorCodes('MSG_CALL_FORBIDDEN') };
    const response = { 200: CallReply, ...onlyOne, 404: callNotFound, 409: errorCodes('MSG_CALL_INVALID_STATE') };
    r.post(
      `/api/messenger/calls/:callId/${action}`,
      { preHandler: app.requireUser, schema: { operationId: `${action}Call`, tags, summary: SUMMARIES[action], params: CallParams, response } },
      async (req) => transitionCall(ctx, req.principal!, req.params.callId, action),
    );
  }
}
