import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { answer, errorCodes, perUserLimit } from '../../../platform/http/index.ts';
import { ChatParams } from '../chats/schemas.ts';
import {
  EditMessageBody, ListMessagesQuery, MessageList, MessageParams, MessageSearchPage, MessageView, ReadBody, ReadReply, SearchMessagesQuery, SendMessageBody,
} from './schemas.ts';
import { searchMessages } from './search.ts';
import { deleteMessage, editMessage, listMessages, markRead } from './messages.ts';
import { sendMessage } from './send.ts';
import { registerReactionRoutes } from './reaction-routes.ts';
import { withFileMeta } from './file-content.ts';
import type { MessagesContext } from './context.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

const tags = ['messenger-messages'];
/**
 * Every messenger route but sendMessage refuses an inactive caller first, and the kernel adds its
 * own refusals: both are added to the codes listed here (messenger/routes.ts, openapi-components.ts).
 */

export function registerMessageRoutes(app: FastifyInstance, ctx: MessagesContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/messenger/chats/:chatId/messages';

  r.post(
    base,
    {
      preHandler: app.requireUser,
      config: perUserLimit(ctx.options.rateLimits.messageSends),
      schema: {
        operationId: 'sendMessage',
        tags,
        summary:
          'Send a message (text body, a confirmed file by its fileId, or card), optionally replying to one of the chat (replyToMessageId) and mentioning members (mentionedUserIds); gets the next Seq of the chat and is pushed as message_received. With clientMessageId a retry is safe: a repeat answers the stored message with 200 and writes nothing',
        params: ChatParams,
        body: SendMessageBody,
        response: {
          201: answer('The message, stored with its Seq; pushed as message_received', MessageView),
          200: answer('A repeat of a clientMessageId already sent with the same content: the stored message; nothing written', MessageView),
          400: errorCodes('MSG_MESSAGE_INVALID'),
          403: errorCodes('MSG_USER_INACTIVE', 'MSG_USER_NOT_REPLICATED', 'MSG_USER_BLOCKED'),
          404: errorCodes('MSG_CHAT_NOT_FOUND', 'MSG_FILE_NOT_FOUND', 'MSG_REPLY_PARENT_NOT_FOUND'),
          409: errorCodes('MSG_CLIENT_MESSAGE_ID_REUSED', 'MSG_RECIPIENT_INACTIVE', 'MSG_FILE_NOT_READY', 'MSG_FILE_QUARANTINED', 'MSG_FILE_REJECTED', 'MSG_FILE_EXPIRED'),
          422: errorCodes('MSG_MENTION_NOT_MEMBER', 'MSG_MENTIONS_GROUP_ONLY'),
          // The kernel adds the input refusals to the 400, SERVICE_UNAVAILABLE and AUTH_KEYS_UNAVAILABLE
          // to the 503, the 401 and the 429 (openapi-components.ts).
          503: errorCodes('MSG_SEND_QUEUE_FULL', 'FILES_NOT_CONFIGURED'),
        },
      },
    },
    async (req, reply) => {
      const content = await withFileMeta(ctx, req.principal!, req.params.chatId, req.body);
      const { message, created } = await sendMessage(ctx, req.principal!, req.params.chatId, content);
      return reply.code(created ? 201 : 200).send(message);
    },
  );

  r.get(
    base,
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'listMessages',
        tags,
        summary:
          'list-messages: the source of truth clients refill from (Seq > afterSeq, ascending; or with beforeSeq the newest page below it, also ascending; deleted ones as tombstones). afterSeq with beforeSeq → 400 VALIDATION_FAILED',
        params: ChatParams,
        querystring: ListMessagesQuery,
        response: { 200: MessageList, 404: errorCodes('MSG_CHAT_NOT_FOUND') },
      },
    },
    async (req) => listMessages(ctx.db, req.principal!, req.params.chatId, req.query, req.query.limit ?? MESSENGER_DEFAULTS.messagePageDefault),
  );

  r.patch(
    `${base}/:messageId`,
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'editMessage',
        tags,
        summary: 'Edit your text or card message within the edit window (UC-MSG-003; later → MSG_MESSAGE_EDIT_WINDOW_EXPIRED)',
        params: MessageParams,
        body: EditMessageBody,
        response: {
          200: MessageView,
          400: errorCodes('MSG_MESSAGE_INVALID'),
          403: errorCodes('MSG_USER_NOT_REPLICATED', 'MSG_MESSAGE_NOT_SENDER'),
          404: errorCodes('MSG_CHAT_NOT_FOUND', 'MSG_MESSAGE_NOT_FOUND'),
          409: errorCodes('MSG_MESSAGE_DELETED', 'MSG_MESSAGE_NOT_EDITABLE', 'MSG_MESSAGE_EDIT_WINDOW_EXPIRED'),
        },
      },
    },
    async (req) => editMessage(ctx, req.principal!, req.params.chatId, req.params.messageId, req.body),
  );

  r.delete(
    `${base}/:messageId`,
    {
      preHandler: app.requireUser,
      schema: { operationId: 'deleteMessage', tags, summary: 'Delete your message (its Seq stays as a tombstone)', params: MessageParams,
        response: { 204: { type: 'null' }, 403: errorCodes('MSG_MESSAGE_NOT_SENDER'), 404: errorCodes('MSG_CHAT_NOT_FOUND', 'MSG_MESSAGE_NOT_FOUND') } },
    },
    async (req, reply) => {
      await deleteMessage(ctx, req.principal!, req.params.chatId, req.params.messageId);
      return reply.code(204).send();
    },
  );

  r.post(
    '/api/messenger/chats/:chatId/read',
    {
      preHandler: app.requireUser,
      schema: { operationId: 'markChatRead', tags, summary: 'Read receipt: my LastReadSeq moves forward to seq (pushed as read_receipt_updated)', params: ChatParams, body: ReadBody,
        response: { 200: ReadReply, 404: errorCodes('MSG_CHAT_NOT_FOUND') } },
    },
    async (req) => markRead(ctx, req.principal!, req.params.chatId, req.body.seq),
  );

  r.get(
    '/api/messenger/messages/search',
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'searchMessages',
        tags,
        summary:
          'Full-text search over the messages of your chats (or of one with chatId): ranked, then newest first, paged by cursor, each hit with its highlighted fragment. Only messages sent since you joined a chat; not chats you left; none withheld from you, none deleted',
        querystring: SearchMessagesQuery,
        response: { 200: MessageSearchPage, 400: errorCodes('MSG_SEARCH_CURSOR_INVALID'), 404: errorCodes('MSG_CHAT_NOT_FOUND') },
      },
    },
    async (req) => searchMessages(ctx.db, req.principal!, { text: req.query.q, chatId: req.query.chatId, limit: req.query.limit ?? MESSENGER_DEFAULTS.searchPageDefault, cursor: req.query.cursor }),
  );

  registerReactionRoutes(app, ctx);
}
