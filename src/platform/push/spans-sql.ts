import { sql, type SQL } from 'drizzle-orm';

/**
 * The one writer of push.chat_membership_spans, for the group's owner: statement parts for its own
 * transaction, which changes the membership under the group's row lock and bumps its membership
 * version (`version`: that new version, as an expression of the owner's statement, e.g. the value
 * its UPDATE returned). The event stream reads a ChatGroup event for the users whose span holds its
 * membership version (stream-sql.ts), so the spans open and close at exactly that version.
 */

/** Opens the users' spans of the chat at `version` (a user already in an open span there: nothing). */
export const openSpansSql = (chatId: string, userIds: readonly string[], version: SQL): SQL =>
  sql`insert into push.chat_membership_spans (chat_id, user_id, from_version)
      select ${chatId}::uuid, u, v from unnest(${sql.param(userIds)}::uuid[]) u cross join (select ${version} as v) b
       where b.v is not null
      on conflict do nothing`;

/** Closes the users' open spans of the chat at `version` (they are no members from it on). */
export const closeSpansSql = (chatId: string, userIds: readonly string[], version: SQL): SQL =>
  sql`update push.chat_membership_spans s set to_version = ${version}
       where s.chat_id = ${chatId} and s.user_id = any(${sql.param(userIds)}::uuid[]) and s.to_version is null`;

/** The reader's spans: rows (chat_id, from_version, to_version). */
export const spansOf = (userId: string): SQL =>
  sql`select chat_id, from_version, to_version from push.chat_membership_spans where user_id = ${userId}`;
