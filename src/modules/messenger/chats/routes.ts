import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorCodes, perUserLimit } from '../../../platform/http/index.ts';
import { acceptChat, addParticipants, createChat, getChat, removeParticipant, renameChat } from './chats.ts';
import { chatPage } from './chat-sync.ts';
import {
  AddParticipantsBody,
  ChatList,
  ChatListQuery,
  ChatParams,
  ChatView,
  CreateChatBody,
  NotificationLevelBody,
  ParticipantParams,
  RenameChatBody,
} from './schemas.ts';
import { setNotificationLevel } from './notification-level.ts';
import type { MessengerContext } from '../context.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

const tags = ['messenger-chats'];
/**
 * Each route's own refusals; the kernel adds the input, token, rate-limit and availability codes and
 * the messenger's guard MSG_USER_INACTIVE (messenger/routes.ts), which every write checks again.
 */
const notFound = errorCodes('MSG_CHAT_NOT_FOUND');

export function registerChatRoutes(app: FastifyInstance, ctx: MessengerContext): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/messenger/chats';
  // Each opens hub groups and pushes to every member: bounded per user, each route on its own.
  const changes = perUserLimit(ctx.options.rateLimits.chatChanges);

  r.post(
    base,
    {
      preHandler: app.requireUser,
      config: changes,
      schema: {
        operationId: 'createChat',
        tags,
        summary: 'Create a group chat, or open the direct chat with a user (200 with the existing one)',
        body: CreateChatBody,
        response: {
          200: ChatView,
          201: ChatView,
          400: errorCodes('MSG_CHAT_INVALID'),
          403: errorCodes('MSG_USER_NOT_REPLICATED', 'MSG_USER_BLOCKED'),
          // The chat is a Direct chat opened again, accepted as acceptChat does.
          404: errorCodes('MSG_USER_NOT_FOUND', 'MSG_CHAT_NOT_FOUND'),
          409: errorCodes('MSG_CHAT_FULL'),
        },
      },
    },
    async (req, reply) => {
      const { chat, created } = await createChat(ctx, req.principal!, req.body);
      return reply.code(created ? 201 : 200).send(chat);
    },
  );

  r.get(
    base,
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'listChats',
        tags,
        summary:
          'My chats, most recently active first, each with its unreadCount, and a sync token (next); with after=<token>: only the chats changed since (new messages, renames, membership, read marks) and the ids of chats I left or was removed from. 410 MSG_EVENTS_CURSOR_EXPIRED past retention; 400 MSG_CHAT_SYNC_TOKEN_AHEAD for a token past the head (list again)',
        querystring: ChatListQuery,
        response: { 200: ChatList, 400: errorCodes('MSG_EVENTS_CURSOR_INVALID', 'MSG_CHAT_SYNC_TOKEN_AHEAD'), 410: errorCodes('MSG_EVENTS_CURSOR_EXPIRED') },
      },
    },
    async (req) => chatPage(ctx.db, req.principal!.userId, { after: req.query.after, limit: req.query.limit ?? MESSENGER_DEFAULTS.chatPageDefault }),
  );

  r.get(
    `${base}/:chatId`,
    { preHandler: app.requireUser, schema: { operationId: 'getChat', tags, summary: 'A chat I take part in', params: ChatParams, response: { 200: ChatView, 404: notFound } } },
    async (req) => getChat(ctx.db, req.params.chatId, req.principal!.userId),
  );

  r.post(
    `${base}/:chatId/accept`,
    {
      preHandler: app.requireUser,
      config: changes,
      schema: {
        operationId: 'acceptChat',
        tags,
        summary:
          "Accept a chat that is a message request to me: its members then get my presence, typing and read position (docs/security.md, Consent); accepting an accepted chat changes nothing",
        params: ChatParams,
        response: { 200: ChatView, 404: notFound },
      },
    },
    async (req) => acceptChat(ctx, req.principal!, req.params.chatId),
  );

  r.put(
    `${base}/:chatId/notifications`,
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'setChatNotifications',
        tags,
        summary:
          "Set what I am notified of in this chat: 'all' (default), 'mentions' (only messages that mention me) or 'off' (muted); shown to me alone as notificationLevel, honoured by the notifications of new messages; a change pushes notification_level_changed to my own devices only",
        params: ChatParams,
        body: NotificationLevelBody,
        response: { 200: ChatView, 404: notFound },
      },
    },
    async (req) => setNotificationLevel(ctx, req.principal!, req.params.chatId, req.body.level),
  );

  r.patch(
    `${base}/:chatId`,
    {
      preHandler: app.requireUser,
      schema: { operationId: 'renameChat', tags, summary: 'Rename a group chat (owner or admin); pushes ChatUpdated', params: ChatParams, body: RenameChatBody,
        response: { 200: ChatView, 400: errorCodes('MSG_CHAT_INVALID'), 403: errorCodes('MSG_CHAT_FORBIDDEN'), 404: notFound, 409: errorCodes('MSG_CHAT_DIRECT_MEMBERS_FIXED') } },
    },
    async (req) => renameChat(ctx, req.principal!, req.params.chatId, req.body.title),
  );

  r.post(
    `${base}/:chatId/participants`,
    {
      preHandler: app.requireUser,
      config: changes,
      schema: {
        operationId: 'addParticipants',
        tags,
        summary: "Add participants to a group chat (owner or admin); their open connections join the chat's group at once",
        params: ChatParams,
        body: AddParticipantsBody,
        response: {
          200: ChatView,
          403: errorCodes('MSG_USER_NOT_REPLICATED', 'MSG_CHAT_FORBIDDEN', 'MSG_USER_BLOCKED'),
          404: errorCodes('MSG_CHAT_NOT_FOUND', 'MSG_USER_NOT_FOUND'),
          409: errorCodes('MSG_CHAT_DIRECT_MEMBERS_FIXED', 'MSG_CHAT_FULL'),
        },
      },
    },
    async (req) => addParticipants(ctx, req.principal!, req.params.chatId, req.body.userIds),
  );

  r.delete(
    `${base}/:chatId/participants/:userId`,
    {
      preHandler: app.requireUser,
      schema: {
        operationId: 'removeParticipant',
        tags,
        summary: "Remove a participant (owner or admin) or leave (yourself); its connections leave the chat's group at once",
        params: ParticipantParams,
        response: {
          204: { type: 'null' },
          403: errorCodes('MSG_CHAT_FORBIDDEN'),
          404: errorCodes('MSG_CHAT_NOT_FOUND', 'MSG_PARTICIPANT_NOT_FOUND'),
          409: errorCodes('MSG_CHAT_DIRECT_MEMBERS_FIXED', 'MSG_CHAT_OWNER_CANNOT_LEAVE'),
        },
      },
    },
    async (req, reply) => {
      await removeParticipant(ctx, req.principal!, req.params.chatId, req.params.userId);
      return reply.code(204).send();
    },
  );
}
