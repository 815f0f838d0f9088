import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { answer, errorCodes, perUserLimit } from '../../../platform/http/index.ts';
import { ReactionParams, ReactionReply } from './schemas.ts';
import { setReaction } from './reactions.ts';
import { REACTIONS_PER_USER_MAX } from './reaction-rules.ts';
import type { MessengerContext } from '../context.ts';

const tags = ['messenger-messages'];

/**
 * Reactions: PUT adds, DELETE takes back, both idempotent. They count against the caller's
 * per-minute budget of chat writes as sends do (MESSENGER_RATE_LIMIT_MESSAGE_SENDS_PER_MINUTE, each route its own window).
 */
export function registerReactionRoutes(app: FastifyInstance, ctx: MessengerContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const path = '/api/messenger/chats/:chatId/messages/:messageId/reactions/:emoji';
  const limit = perUserLimit(ctx.options.rateLimits.messageSends);
  const refusals = {
    // The kernel adds the input refusals to the 400, and the 401 and 429 (openapi-components.ts).
    400: errorCodes('MSG_REACTION_INVALID'),
    404: errorCodes('MSG_CHAT_NOT_FOUND', 'MSG_MESSAGE_NOT_FOUND'),
  };

  r.put(
    path,
    {
      preHandler: app.requireUser,
      config: limit,
      schema: {
        operationId: 'addReaction',
        tags,
        summary: `React to a message with one emoji (URL-encoded). Idempotent: a reaction you already have changes nothing. At most ${REACTIONS_PER_USER_MAX} different ones of yours per message (→ 409 MSG_REACTION_LIMIT_REACHED). A change is pushed as reaction_changed — only to your own devices while the chat is a message request to you or a block stands in a Direct chat`,
        params: ReactionParams,
        response: {
          200: answer("The message's reactions as you now see them", ReactionReply),
          ...refusals,
          409: errorCodes('MSG_MESSAGE_DELETED', 'MSG_REACTION_LIMIT_REACHED'),
        },
      },
    },
    async (req) => setReaction(ctx, req.principal!, req.params, true),
  );

  r.delete(
    path,
    {
      preHandler: app.requireUser,
      config: limit,
      schema: {
        operationId: 'removeReaction',
        tags,
        summary: 'Take back your reaction with this emoji. Idempotent: none to take back changes nothing. A change is pushed as reaction_changed (Added: false)',
        params: ReactionParams,
        response: {
          200: answer("The message's reactions as you now see them", ReactionReply),
          ...refusals,
          409: errorCodes('MSG_MESSAGE_DELETED'),
        },
      },
    },
    async (req) => setReaction(ctx, req.principal!, req.params, false),
  );
}
