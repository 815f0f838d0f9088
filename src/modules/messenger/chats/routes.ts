import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ErrorBody, perUserLimit } from '../../../platform/http/index.ts';
import { acceptChat, addParticipants, createChat, getChat, removeParticipant, renameChat } from './chats.ts';
import { chatPage } from './chat-sync.ts';
import {
  AddParticipantsBody,
  CHAT_PAGE_DEFAULT,
  ChatList,
  ChatListQuery,
  ChatParams,
  ChatView,
  CreateChatBody,
  ParticipantParams,
  RenameChatBody,
} from './schemas.ts';
import type { MessengerContext } from '../context.ts';

const tags = ['messenger-chats'];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody };
const limited = { 429: ErrorBody };

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
        response: { 200: ChatView, 201: ChatView, ...errors, ...limited },
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
        response: { 200: ChatList, 410: ErrorBody, ...errors },
      },
    },
    async (req) => chatPage(ctx.db, req.principal!.userId, { after: req.query.after, limit: req.query.limit ?? CHAT_PAGE_DEFAULT }),
  );

  r.get(
    `${base}/:chatId`,
    { preHandler: app.requireUser, schema: { operationId: 'getChat', tags, summary: 'A chat I take part in', params: ChatParams, response: { 200: ChatView, ...errors } } },
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
        response: { 200: ChatView, ...errors, ...limited },
      },
    },
    async (req) => acceptChat(ctx, req.principal!, req.params.chatId),
  );

  r.patch(
    `${base}/:chatId`,
    {
      preHandler: app.requireUser,
      schema: { operationId: 'renameChat', tags, summary: 'Rename a group chat (owner or admin); pushes ChatUpdated', params: ChatParams, body: RenameChatBody, response: { 200: ChatView, ...errors } },
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
        response: { 200: ChatView, ...errors, ...limited },
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
        response: { 204: { type: 'null' }, ...errors },
      },
    },
    async (req, reply) => {
      await removeParticipant(ctx, req.principal!, req.params.chatId, req.params.userId);
      return reply.code(204).send();
    },
  );
}
