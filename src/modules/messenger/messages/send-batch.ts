import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { OUTBOX_CHANNEL } from '../../../platform/outbox/index.ts';
import { newId } from '../../../platform/time.ts';
import { messagePostedOutboxInsert } from './message-posted.ts';
import { MESSAGE_COLUMNS, type MessageRow } from './message-rows.ts';
import type { MessageContent } from './rules.ts';
import type { Push } from '../../../platform/push/index.ts';
import type { Clock } from '../../../platform/time.ts';
import type { BatchQueue } from './send-queue.ts';

/**
 * Several sends in ONE statement (one transaction, one round trip): what the single send
 * (send.ts) does for one message, row by row for many. Under load the per-statement cost
 * (protocol, executor start, commit and its WAL flush) dominates a send, so concurrent sends share it.
 *
 * Each message is judged on its own, exactly as a single send judges it: a send whose sender already
 * stored a message with its clientMessageId writes nothing and gets that row back (`existing`); the sender must be an
 * Active participant (else `member` is false) and active in the user replica (`senderInactive`), a
 * Direct chat whose other member the sender blocks (`blocked`) or an inactive other participant
 * (`recipientInactive`) refuses it, and the recipients are read from the statement's snapshot, taken before the chat
 * locks were granted. The chats are locked in id order (two batches never wait on each other in a
 * cycle), each bumped by its number of messages only while its membership_version still equals
 * the snapshot's; the messages of a chat whose membership changed meanwhile get no row (`message`
 * null with `member` true and `blocked` false: send them again on a fresh snapshot). Seq follows
 * the order of the input within a chat, gapless. One MessageReceived push intent and one
 * MessagePostedKafkaEvent per message; a sender's acceptance of a chat that was a message request
 * to them, as the single send writes it; the NOTIFYs once per statement. A message of the blocked
 * in their Direct chat with the blocker is withheld from the blocker, as the single send does it
 * (`withheld_from`, its push to the sender alone, the event's recipients without the blocker).
 *
 * The events are built by messagePostedOutboxInsert, as for the single send. The test of this file
 * compares every column with what the single send writes.
 */

export interface BatchSend {
  senderUserId: string;
  chatId: string;
  content: MessageContent;
  /** The id the client picked once for this message: a send that finds it stored writes nothing. */
  clientMessageId?: string | null;
  /** The sending request's W3C traceparent (null or absent: tracing off), stored on its MessageReceived push row and MessagePosted outbox row. */
  traceparent?: string | null;
}

export interface BatchSendOutcome {
  member: boolean;
  blocked: boolean;
  /** The sender's replica row is not active, or missing (seed 002, fail closed). */
  senderInactive: boolean;
  /** A Direct chat whose other participant is not active in the replica. */
  recipientInactive: boolean;
  message: MessageRow | null;
  /** The message this sender already sent with the same clientMessageId (then nothing was written). */
  existing: MessageRow | null;
  /** Whether `existing` has this send's chat and content (else the id was reused for another message). */
  sameContent: boolean;
}

/** What a send statement runs with: the database, and the push part's writer of its MessageReceived rows. */
export interface SendDeps {
  db: Db;
  clock: Clock;
  push: Pick<Push, 'insert' | 'wakeAtCommit'>;
}

/** The process's queue of sends (send.ts builds it; the routes' context carries it). */
export type SendQueue = BatchQueue<BatchSend, BatchSendOutcome>;

// The input is read with generate_subscripts rather than unnest: unnest's row estimate follows the
// array's length, so every batch size would get its own custom plan (planning this statement costs
// more than running it); generate_subscripts' fixed estimate lets the prepared statement settle on
// one generic plan per connection. Every lookup below is by key (LATERAL), whatever the estimates.
// Its text is the same for every batch (the lists are one parameter each), as a named statement needs.
function sendBatchStatement(push: SendDeps['push'], sends: readonly BatchSend[], now: Date, wakePayload: string): SQL {
  const col = <T>(f: (s: BatchSend) => T, type: string) => sql`${sql.param(sends.map(f))}::${sql.raw(type)}[]`;
  const id = sql`${sql.param(sends.map(() => newId()))}::uuid[]`;
  const at = sql`${now}::timestamptz`;
  return sql`with input as (
    select (${id})[o] as id, (${col((s) => s.chatId, 'uuid')})[o] as chat_id, (${col((s) => s.senderUserId, 'uuid')})[o] as sender_id,
           (${col((s) => s.content.kind, 'varchar')})[o] as kind, (${col((s) => s.content.body ?? null, 'text')})[o] as body,
           (${col((s) => (s.content.fileMeta ? JSON.stringify(s.content.fileMeta) : null), 'text')})[o] as file_meta,
           (${col((s) => s.content.cardText ?? null, 'text')})[o] as card_text,
           (${col(() => newId(), 'uuid')})[o] as push_id, (${col(() => newId(), 'uuid')})[o] as event_id, o as ord,
           (${col((s) => s.traceparent ?? null, 'varchar')})[o] as traceparent,
           (${col((s) => s.clientMessageId ?? null, 'uuid')})[o] as client_message_id,
           (${col((s) => s.content.replyToMessageId ?? null, 'uuid')})[o] as reply_to,
           -- Mentions as one text[] of '{…}' literals (arrays of arrays must be rectangular in PostgreSQL).
           (${col((s) => `{${(s.content.mentionedUserIds ?? []).join(',')}}`, 'text')})[o]::uuid[] as mentions,
           -- The event's SentAt as text (ISO-8601 UTC), read by the event's FROM clause below.
           ${now.toISOString()}::text as sent_at
      from generate_subscripts(${id}, 1) as o),
  judged as (
    select i.*, s.membership_version, coalesce(s.member, false) as member, coalesce(s.blocked, false) as blocked,
           not coalesce((select u.is_active from messenger.users u where u.id = i.sender_id), false) as sender_inactive,
           coalesce(s.recipient_inactive, false) as recipient_inactive, s.withheld_from, s.pending_participant_id, x.existing, x.same
      from input i
      left join lateral (
        select to_jsonb(e) - 'same' as existing, e.same from (
          select ${MESSAGE_COLUMNS},
                 chat_id = i.chat_id and kind = i.kind and body is not distinct from i.body
                   and file_meta is not distinct from i.file_meta::jsonb and card_text is not distinct from i.card_text
                   and reply_to_message_id is not distinct from i.reply_to and mentioned_user_ids = i.mentions as same
            from messenger.messages m where m.sender_user_id = i.sender_id and m.client_message_id = i.client_message_id) e) x on true
      left join lateral (
        select c.membership_version, sp.id is not null as member, case when sp.accepted_at is null then sp.id end as pending_participant_id,
               c.kind = 'Direct' and exists (
                 select 1 from messenger.chat_participants r join messenger.blacklist_entries b
                   on b.owner_user_id = i.sender_id and b.blocked_user_id = r.user_id
                  where r.chat_id = c.id and r.status = 'Active' and r.user_id <> i.sender_id and b.status = 'Blocked') as blocked,
               case when c.kind = 'Direct' then (
                 select r.user_id from messenger.chat_participants r join messenger.blacklist_entries b
                   on b.owner_user_id = r.user_id and b.blocked_user_id = i.sender_id
                  where r.chat_id = c.id and r.status = 'Active' and r.user_id <> i.sender_id and b.status = 'Blocked' limit 1) end as withheld_from,
               c.kind = 'Direct' and exists (
                 select 1 from messenger.chat_participants r
                  where r.chat_id = c.id and r.status = 'Active' and r.user_id <> i.sender_id
                    and not exists (select 1 from messenger.users u where u.id = r.user_id and u.is_active)) as recipient_inactive
          from messenger.chats c
          left join lateral (select p.id, p.accepted_at from messenger.chat_participants p
                              where p.chat_id = c.id and p.user_id = i.sender_id and p.status = 'Active' limit 1) sp on true
         where c.id = i.chat_id) s on true),
  checked as (
    select j.*, j.existing is null and j.member and not j.blocked and not j.sender_inactive and not j.recipient_inactive as allowed from judged j),
  wanted as (
    select chat_id, count(*)::bigint as n, min(membership_version) as v from checked where allowed group by chat_id),
  locked as (
    select c.id from messenger.chats c where c.id = any(array(select chat_id from wanted)) order by c.id for update),
  bumped as (
    update messenger.chats c set last_seq = c.last_seq + w.n, updated_at = ${at}
      from wanted w
     where c.id = w.chat_id and c.id = any(array(select id from locked)) and c.membership_version = w.v
    returning c.id, c.last_seq - w.n as base),
  msg as (
    insert into messenger.messages (id, chat_id, seq, sender_user_id, kind, body, file_meta, card_text, sent_at, client_message_id, withheld_from,
                                    reply_to_message_id, mentioned_user_ids)
    select k.id, k.chat_id, b.base + row_number() over (partition by k.chat_id order by k.ord), k.sender_id, k.kind, k.body,
           k.file_meta::jsonb, k.card_text, ${at}, k.client_message_id, k.withheld_from, k.reply_to, k.mentions
      from checked k join bumped b on b.id = k.chat_id
     where k.allowed
    returning id, chat_id as "chatId", seq::float8 as seq, sender_user_id as "senderUserId", kind, body,
      file_meta as "fileMeta", card_text as "cardText", sent_at as "sentAt", edited_at as "editedAt", deleted_at as "deletedAt",
      client_message_id as "clientMessageId", reply_to_message_id as "replyToMessageId", mentioned_user_ids as "mentionedUserIds"),
  recipients as (
    select b.id as chat_id, r.users, r.requests, r.muted, r.mentions_only from bumped b
      cross join lateral (select array_agg(p.user_id order by p.user_id) as users,
                                 array_agg(p.user_id order by p.user_id) filter (where p.accepted_at is null) as requests,
                                 array_agg(p.user_id order by p.user_id) filter (where p.notification_level = 'off') as muted,
                                 array_agg(p.user_id order by p.user_id) filter (where p.notification_level = 'mentions') as mentions_only
                            from messenger.chat_participants p where p.chat_id = b.id and p.status = 'Active') r),
  -- By the participant rows' keys: a join on (chat, sender) gets a generic plan that reads every
  -- active participation of every chat on each batch, though almost every batch accepts none.
  consented as (
    update messenger.chat_participants p set accepted_at = ${at}, updated_at = ${at}
     where p.id = any(array(select k.pending_participant_id from checked k join msg m on m.id = k.id where k.pending_participant_id is not null))
       and p.status = 'Active' and p.accepted_at is null),
  pushed as (${push.insert(
    {
      kind: 'MessageReceived',
      from: sql`from msg m join input i on i.id = m.id join checked k on k.id = m.id`,
      id: sql`i.push_id`,
      targetKind: sql`case when k.withheld_from is null then 'ChatGroup' else 'User' end`,
      chatId: sql`m."chatId"`,
      targetUserId: sql`case when k.withheld_from is not null then m."senderUserId" end`,
      messageId: sql`m.id`,
      seq: sql`m.seq`,
      traceparent: sql`i.traceparent`,
    },
    now,
  )}),
  event as (${sql.raw(
    messagePostedOutboxInsert(`from msg m join input i on i.id = m.id join checked k on k.id = m.id join recipients r on r.chat_id = m."chatId"
      cross join lateral (select i.event_id, i.sent_at, i.traceparent,
                                 coalesce(to_jsonb(array_remove(array_remove(r.users, m."senderUserId"), k.withheld_from)), '[]'::jsonb) as recipient_user_ids,
                                 -- A sender of an earlier message of the chat in this batch accepted it by sending, as one by one.
                                 coalesce((select jsonb_agg(u order by u) from unnest(r.requests) u
                                            where u <> m."senderUserId" and u is distinct from k.withheld_from and not exists (
                                              select 1 from msg m2 join input i2 on i2.id = m2.id
                                               where m2."chatId" = m."chatId" and m2."senderUserId" = u and i2.ord < i.ord)), '[]'::jsonb) as request_user_ids,
                                 coalesce(to_jsonb(array_remove(array_remove(r.muted, m."senderUserId"), k.withheld_from)), '[]'::jsonb) as muted_user_ids,
                                 coalesce(to_jsonb(array_remove(array_remove(r.mentions_only, m."senderUserId"), k.withheld_from)), '[]'::jsonb)
                                   as mentions_only_user_ids) e`),
  )}),
  woke as (
    select ${push.wakeAtCommit(wakePayload)}, pg_notify('${sql.raw(OUTBOX_CHANNEL)}', '') where exists (select 1 from msg))
  select k.member, k.blocked, k.sender_inactive as "senderInactive", k.recipient_inactive as "recipientInactive",
         row_to_json(m) as message, k.existing, coalesce(k.same, true) as "sameContent", (select count(*) from woke) as woke
    from checked k left join msg m on m.id = k.id
   order by k.ord`;
}

/** One outcome per send, in input order. Throws when the statement fails (the caller sends row by row then). */
export async function trySendBatch(deps: Pick<SendDeps, 'db' | 'push'>, sends: readonly BatchSend[], now: Date, wakePayload = ''): Promise<BatchSendOutcome[]> {
  const { rows } = await query<BatchSendOutcome>(deps.db, sendBatchStatement(deps.push, sends, now, wakePayload), { name: 'messenger_send_messages' });
  if (rows.length !== sends.length) throw new Error(`send batch: ${rows.length} outcomes for ${sends.length} sends`);
  return rows;
}
