import { Type } from '@sinclair/typebox';
import { BoundedInt, Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { named } from '../../../platform/http/index.ts';
import { MESSAGE_CONTENT_KINDS } from '../model/message-kinds.ts';
import { MESSAGE_MAX_CHARS } from './rules.ts';
import { EMOJI_MAX_CHARS } from './reaction-rules.ts';
import { MENTIONS_MAX } from './replies.ts';
import { REPLY_EXCERPT_CHARS } from './reply-preview.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/** TypeBox schemas of the messages REST surface (camelCase bodies), beside the messages they describe; shared by routes and tests. */

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));

export const MessageParams = Type.Object({ chatId: Uuid, messageId: Uuid });

export const FileMetaSchema = named('FileMeta', Type.Object(
  {
    fileId: Text({ minLength: 1, maxLength: 200 }),
    fileName: Text({ minLength: 1, maxLength: 255 }),
    contentType: Text({ minLength: 1, maxLength: 127 }),
    size: BoundedInt({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false },
));

export const SendMessageBody = Type.Object(
  {
    kind: literals(MESSAGE_CONTENT_KINDS),
    body: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })),
    fileId: Type.Optional(
      Text({
        pattern: Uuid.pattern,
        maxLength: 36,
        description:
          'A File message names its file only by the fileId requestFileUpload issued, confirmed by completeFileUpload: name, type and size come from the stored file (yours, of this chat, Ready, within FILES_UNSENT_EXPIRY)',
      }),
    ),
    cardText: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })),
    clientMessageId: Type.Optional(
      Text({
        pattern: Uuid.pattern,
        maxLength: 36,
        description:
          'A UUID the client picks once per message and sends again on every retry of it: a repeat answers the stored message (200) and writes nothing; the same id with other content (replyToMessageId and mentionedUserIds included) → 409 MSG_CLIENT_MESSAGE_ID_REUSED',
      }),
    ),
    replyToMessageId: Type.Optional({
      ...Uuid,
      description: 'Reply to this message of the same chat; one that is not in this chat or is withheld from you → 404 MSG_REPLY_PARENT_NOT_FOUND',
    }),
    mentionedUserIds: Type.Optional(
      Type.Array(Uuid, {
        maxItems: MENTIONS_MAX,
        uniqueItems: true,
        description: `Mention these Active members (group chats only: in a direct chat → 422 MSG_MENTIONS_GROUP_ONLY; a non-member → 422 MSG_MENTION_NOT_MEMBER). A member whose notification level is "mentions" is notified only of messages that mention them`,
      }),
    ),
  },
  { additionalProperties: false },
);
export const EditMessageBody = Type.Object(
  { body: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })), cardText: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })) },
  { additionalProperties: false, minProperties: 1 },
);

export const Reaction = named('Reaction', Type.Object({
  emoji: Type.String({ description: 'One emoji, fully qualified (❤ is stored and shown as ❤️)' }),
  count: Type.Integer({ minimum: 1, description: 'How many members reacted with it, as you see them: yours, and others’ shared with the chat (docs/security.md, "Consent")' }),
  mine: Type.Boolean({ description: 'You reacted with it' }),
}));
export const Reactions = Type.Array(Reaction, { description: 'By count (most first), then emoji; empty for a deleted message' });
export const ReplyPreview = named('ReplyPreview', Type.Object(
  {
    messageId: Uuid,
    seq: Type.Integer({ minimum: 1 }),
    senderUserId: Uuid,
    kind: literals(MESSAGE_CONTENT_KINDS),
    excerpt: Nullable(Type.String({ maxLength: REPLY_EXCERPT_CHARS, description: `The first ${REPLY_EXCERPT_CHARS} characters of the text or card (as edited now), the file name of a file; null when the parent is deleted or withheld from a member` })),
    deleted: Type.Boolean({ description: 'The parent was deleted: shown without its excerpt' }),
  },
  { description: 'The message this one replies to, as it is now' },
));
export const MessageView = named('MessageView', Type.Object({
  id: Uuid,
  chatId: Uuid,
  seq: Type.Integer({ minimum: 1 }),
  senderUserId: Uuid,
  kind: literals(MESSAGE_CONTENT_KINDS),
  body: Nullable(Type.String()),
  fileMeta: Nullable(FileMetaSchema),
  cardText: Nullable(Type.String()),
  sentAt: Timestamp,
  editedAt: Nullable(Timestamp),
  deleted: Type.Boolean(),
  clientMessageId: Nullable(Uuid),
  reactions: Reactions,
  replyTo: Nullable(ReplyPreview),
  mentionedUserIds: Type.Array(Uuid, { description: 'The members this message mentions (group chats)' }),
}));
// No `default` on afterSeq: a filled-in default could not be told apart from a caller's afterSeq,
// and the two directions are mutually exclusive (the handler answers 400 naming both).
export const ListMessagesQuery = Type.Object(
  {
    afterSeq: Type.Optional(
      BoundedInt({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Messages with Seq greater than this, oldest first (0 when neither afterSeq nor beforeSeq is given)' }),
    ),
    beforeSeq: Type.Optional(
      BoundedInt({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'Older history: the newest `limit` messages with Seq less than this, returned in ascending Seq order (pass the first Seq of a page to get the page before it); not with afterSeq',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: MESSENGER_DEFAULTS.messagePageDefault })),
  },
  { additionalProperties: false },
);
export const MessageList = named('MessageList', Type.Object({
  items: Type.Array(MessageView),
  lastSeq: Type.Integer({ description: "The chat's current last Seq" }),
  hasMore: Type.Boolean({ description: 'More messages I can read lie beyond this page in the direction asked: older with beforeSeq, newer otherwise' }),
}));
export const ReadBody = Type.Object({ seq: BoundedInt({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }) }, { additionalProperties: false });
export const ReadReply = Type.Object({ lastReadSeq: Type.Integer() });

export const SearchMessagesQuery = Type.Object(
  {
    q: Text({
      minLength: 1,
      maxLength: 200,
      description:
        'What to find, as in a web search box: words (each must occur, in any form of the word: Russian and English stemming), "a quoted phrase", `or`, and -word to leave out. Only stop words (и, the, …) → no hits',
    }),
    chatId: Type.Optional({ ...Uuid, description: 'Search this chat only (a chat you are not an active member of → 404 MSG_CHAT_NOT_FOUND); absent: all your chats' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: MESSENGER_DEFAULTS.searchPageDefault })),
    cursor: Type.Optional(Text({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_-]+$', description: "The previous page's nextCursor" })),
  },
  { additionalProperties: false },
);
const HighlightPiece = Type.Object({ text: Type.String(), match: Type.Boolean({ description: 'A searched word as found in the text' }) });
export const MessageSearchPage = named('MessageSearchPage', Type.Object({
  items: Type.Array(named('MessageSearchHit', Type.Object({
    message: MessageView,
    rank: Type.Number({ description: 'Relevance (higher is better): hits come by it, then newest first' }),
    highlight: Type.Array(HighlightPiece, { description: 'The matched fragment(s) of the text, in pieces, "…" between fragments: render `match` pieces emphasised; no markup to parse' }),
  }))),
  nextCursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last page' })),
}));

export const ReactionParams = Type.Object({
  chatId: Uuid,
  messageId: Uuid,
  emoji: Text({ minLength: 1, maxLength: EMOJI_MAX_CHARS, description: 'One emoji, URL-encoded (👍 is %F0%9F%91%8D); anything else → 400 MSG_REACTION_INVALID' }),
});
export const ReactionReply = named('ReactionReply', Type.Object({ messageId: Uuid, reactions: Reactions }));
