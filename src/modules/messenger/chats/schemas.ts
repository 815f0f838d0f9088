import { Type } from '@sinclair/typebox';
import { BoundedInt, Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { CHAT_KINDS, NOTIFICATION_LEVELS } from '../model/chat-kinds.ts';
import { MESSAGE_CONTENT_KINDS } from '../model/message-kinds.ts';
import { named } from '../../../platform/http/index.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/** TypeBox schemas of the chats REST surface (camelCase bodies), shared by routes and tests (the messages' own: messages/schemas.ts). */

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));

export const ChatParams = Type.Object({ chatId: Uuid });
export const ParticipantParams = Type.Object({ chatId: Uuid, userId: Uuid });

export const CreateChatBody = Type.Object(
  {
    kind: literals(CHAT_KINDS),
    title: Type.Optional(Text({ minLength: 1, maxLength: 200 })),
    memberUserIds: Type.Array(Uuid, { maxItems: 1000, description: 'The other participants (Direct: exactly one)' }),
  },
  { additionalProperties: false },
);
export const RenameChatBody = Type.Object({ title: Text({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });
export const AddParticipantsBody = Type.Object({ userIds: Type.Array(Uuid, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false });

const LEVEL_DESCRIPTION =
  "What I am notified of in this chat: every message ('all', the default), only messages that mention me ('mentions'), or nothing ('off': muted). Only my own; others never see it";
export const NotificationLevelBody = Type.Object(
  { level: { ...literals(NOTIFICATION_LEVELS), description: LEVEL_DESCRIPTION } },
  { additionalProperties: false },
);
export const ChatView = named('ChatView', Type.Object({
  id: Uuid,
  kind: literals(CHAT_KINDS),
  title: Nullable(Type.String()),
  createdByUserId: Uuid,
  lastSeq: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  isRequest: Type.Boolean({
    description: 'The chat is a message request to me (from someone not my Accepted contact): accept it (POST …/accept) or decline it (leave a group, block the sender of a Direct chat)',
  }),
  notificationLevel: { ...literals(NOTIFICATION_LEVELS), description: LEVEL_DESCRIPTION },
  participants: Type.Array(
    Type.Object({
      userId: Uuid,
      role: Type.String(),
      lastReadSeq: Type.Integer({ description: "Another participant's read position: 0 while they have not accepted the chat or either of you blocks the other" }),
      joinedAt: Timestamp,
      accepted: Type.Boolean({ description: 'false: the chat is a message request to this participant until they accept it or write in it' }),
    }),
  ),
}));
export const LastMessage = named('LastMessage', Type.Object(
  {
    id: Uuid,
    seq: Type.Integer({ minimum: 1 }),
    senderUserId: Uuid,
    kind: literals(MESSAGE_CONTENT_KINDS),
    preview: Nullable(Type.String({ maxLength: 100, description: 'The first 100 characters of a Text body; null for a file or card, and for a deleted message' })),
    deleted: Type.Boolean({ description: 'Deleted: shown as deleted, without its body' }),
    sentAt: Timestamp,
  },
  { description: "The chat's last message (null for a chat without messages)" },
));
export const ChatList = named('ChatList', Type.Object({
  items: Type.Array(
    Type.Composite([
      ChatView,
      Type.Object({
        unreadCount: Type.Integer({ minimum: 0, description: "Others' messages after my last read Seq, deleted ones excluded" }),
        lastMessage: Nullable(LastMessage),
      }),
    ]),
  ),
  removed: Type.Array(Uuid, { description: 'With after: chats I left or was removed from since the token (drop them)' }),
  next: Type.String({ description: 'The sync token: pass it as after to get what changed since this answer' }),
}));
export const ChatListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: MESSENGER_DEFAULTS.chatPageDefault })),
    after: Type.Optional(Text({ minLength: 1, maxLength: 32, description: 'A sync token (a previous next): only the chats changed since' })),
  },
  { additionalProperties: false },
);
