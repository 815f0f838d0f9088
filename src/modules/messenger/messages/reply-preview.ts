import type { MessageContentKind } from '../model/message-kinds.ts';

/** A reply's preview of its parent (replies.ts): the type views and frames carry, and the SQL that builds it. */

/** The parent of a reply as clients see it. */
export interface ReplyPreview {
  messageId: string;
  seq: number;
  senderUserId: string;
  kind: MessageContentKind;
  /** The first REPLY_EXCERPT_CHARS characters of the text or card, the file name of a File; null when deleted or withheld. */
  excerpt: string | null;
  deleted: boolean;
}

/** How much of the parent a preview quotes (characters, as PostgreSQL's left() counts them: code points). */
export const REPLY_EXCERPT_CHARS = 100;
/** The preview of the message row `p` as a jsonb object (SQL text: the frame's claim reads it beside the reply). */
export const replyPreviewObject = (p: string): string => `jsonb_build_object('messageId', ${p}.id, 'seq', ${p}.seq::float8,
  'senderUserId', ${p}.sender_user_id, 'kind', ${p}.kind, 'deleted', ${p}.deleted_at is not null,
  'excerpt', case when ${p}.deleted_at is not null or ${p}.withheld_from is not null then null
                  when ${p}.kind = 'File' then left(${p}.file_meta->>'fileName', ${REPLY_EXCERPT_CHARS})
                  else left(coalesce(${p}.body, ${p}.card_text), ${REPLY_EXCERPT_CHARS}) end)`;
