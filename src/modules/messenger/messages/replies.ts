import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { ChatErrors } from '../errors.ts';
import { refuseInactiveUser } from '../user-replica/replica-reads.ts';
import { messageView, type MessageRow, type MessageView } from './message-rows.ts';
import { replyPreviewObject, type ReplyPreview } from './reply-preview.ts';

/**
 * Replies and mentions. A reply names a message of the same chat its sender can read (not
 * withheld from them); its views and frames carry the parent's preview, read when they are built, so
 * an edited parent shows its current text and a deleted one shows `deleted` without an excerpt. A
 * parent withheld from a member (docs/security.md, "Blocked means blocked") is previewed without its
 * excerpt too: a frame to chat:{ChatId} reaches that member, and a reply must not carry to them what
 * was withheld. Mentions name Active members of a Group chat (a Direct chat has nobody to single out:
 * 422 MSG_MENTIONS_GROUP_ONLY); they are stored sorted and once each, so a retried send compares equal.
 */

/** Most members one message mentions (the route schema's maxItems). */
export const MENTIONS_MAX = 50;

/** Message rows as clients get them, with their parents' previews read in one statement (none for rows without a parent). */
export async function messageViews(db: Db, rows: readonly MessageRow[]): Promise<MessageView[]> {
  const parents = [...new Set(rows.map((r) => r.replyToMessageId).filter((id): id is string => id !== null))];
  const previews = new Map<string, ReplyPreview>();
  if (parents.length > 0) {
    const { rows: found } = await query<{ id: string; preview: ReplyPreview }>(
      db,
      sql`select p.id, ${sql.raw(replyPreviewObject('p'))} as preview from messenger.messages p where p.id = any(${sql.param(parents)}::uuid[])`,
    );
    for (const f of found) previews.set(f.id, f.preview);
  }
  return rows.map((r) => messageView(r, r.replyToMessageId === null ? null : (previews.get(r.replyToMessageId) ?? null)));
}

/** Mentions as stored: each once, sorted (a repeat of a send compares them as one list). */
export const normalizedMentions = (ids: readonly string[] | undefined): string[] => [...new Set((ids ?? []).map((id) => id.toLowerCase()))].sort();

/**
 * Refuses a reply whose parent is not a message of this chat the sender can read, and mentions of
 * users who are not Active members of this Group chat, before the send is queued. A sender who is no
 * Active member passes: the send statement answers them as any other send does (a repeat of a stored
 * message, else MSG_CHAT_NOT_FOUND), so nothing about the chat leaks. A member who leaves between this
 * read and the send stays mentioned: a mention is a fact of the moment it was written.
 */
export async function refuseBadReplyOrMentions(db: Db, senderUserId: string, chatId: string, replyToMessageId: string | undefined, mentions: readonly string[]): Promise<void> {
  if (replyToMessageId === undefined && mentions.length === 0) return;
  const { rows: [judged] } = await query<{ kind: string; member: boolean; parentFound: boolean; notMembers: string[] }>(
    db,
    sql`select c.kind,
               exists (select 1 from messenger.chat_participants p where p.chat_id = c.id and p.user_id = ${senderUserId} and p.status = 'Active') as member,
               ${replyToMessageId ?? null}::uuid is null or exists (
                 select 1 from messenger.messages m where m.id = ${replyToMessageId ?? null}::uuid and m.chat_id = c.id
                    and m.withheld_from is distinct from ${senderUserId}) as "parentFound",
               array(select u from unnest(${sql.param(mentions)}::uuid[]) u where not exists (
                 select 1 from messenger.chat_participants p where p.chat_id = c.id and p.user_id = u and p.status = 'Active') order by u) as "notMembers"
          from messenger.chats c where c.id = ${chatId}`,
  );
  if (!judged?.member) return;
  const refusal = !judged.parentFound
    ? ChatErrors.replyParentNotFound()
    : mentions.length > 0 && judged.kind !== 'Group'
      ? ChatErrors.mentionsGroupOnly()
      : judged.notMembers.length > 0
        ? ChatErrors.mentionNotMember(judged.notMembers[0]!)
        : undefined;
  if (!refusal) return;
  // As every messenger route: an inactive caller is refused as inactive before anything about its request.
  await refuseInactiveUser(db, senderUserId);
  throw refusal;
}
