import { Type } from '@sinclair/typebox';
import { BoundedInt, Nullable, Text, Timestamp, Uuid } from '../../../platform/types/index.ts';
import { named } from '../../../platform/http/index.ts';
import { MESSAGE_CONTENT_KINDS } from '../model/message-kinds.ts';
import { ALLOWED_FILE_TYPE_SUMMARY } from './file-types.ts';
import { CONTENT_TYPE_PATTERN, FILE_ID_MAX_CHARS, FILE_ID_PATTERN, FILE_MAX_BYTES, FILE_NAME_MAX_CHARS, FILE_NAME_PATTERN, MESSAGE_MAX_CHARS } from './rules.ts';
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

/** A File message's metadata as sent: the limits of messages/rules.ts (fileMetaProblem checks them again, with the allow-list of content types). */
export const FileMetaBody = named('FileMetaInput', Type.Object(
  {
    fileId: Text({
      minLength: 1,
      maxLength: FILE_ID_MAX_CHARS,
      pattern: FILE_ID_PATTERN,
      description: 'The id the file storage issued: a UUID or a token of letters, digits, _ and -',
    }),
    fileName: Text({
      minLength: 1,
      maxLength: FILE_NAME_MAX_CHARS,
      pattern: FILE_NAME_PATTERN,
      description: 'One file name: no / or \\, no control, bidi or direction characters, no leading dot, not a reserved device name (CON, NUL, COM1, …)',
    }),
    contentType: Text({
      minLength: 3,
      maxLength: 255,
      pattern: CONTENT_TYPE_PATTERN,
      description:
        `A MIME type, type/subtype without parameters, one of: ${ALLOWED_FILE_TYPE_SUMMARY}. Any other → 400 MSG_MESSAGE_INVALID; send such a file as application/octet-stream`,
    }),
    size: BoundedInt({ minimum: 0, maximum: FILE_MAX_BYTES, description: 'Bytes, at most 2 GiB' }),
  },
  { additionalProperties: false },
));

export const SendMessageBody = Type.Object(
  {
    kind: literals(MESSAGE_CONTENT_KINDS),
    body: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })),
    fileMeta: Type.Optional(FileMetaBody),
    cardText: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })),
    clientMessageId: Type.Optional(
      Text({
        pattern: Uuid.pattern,
        maxLength: 36,
        description:
          'A UUID the client picks once per message and sends again on every retry of it: a repeat answers the stored message (200) and writes nothing; the same id with other content → 409 MSG_CLIENT_MESSAGE_ID_REUSED',
      }),
    ),
  },
  { additionalProperties: false },
);
export const EditMessageBody = Type.Object(
  { body: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })), cardText: Type.Optional(Text({ minLength: 1, maxLength: MESSAGE_MAX_CHARS })) },
  { additionalProperties: false, minProperties: 1 },
);

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
export const MessageList = named('MessageList', Type.Object({ items: Type.Array(MessageView), lastSeq: Type.Integer({ description: "The chat's current last Seq" }) }));
export const ReadBody = Type.Object({ seq: BoundedInt({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }) }, { additionalProperties: false });
export const ReadReply = Type.Object({ lastReadSeq: Type.Integer() });
