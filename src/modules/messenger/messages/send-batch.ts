import type { Queryable } from '../../../platform/db/index.ts';
import { OUTBOX_CHANNEL } from '../../../platform/outbox/index.ts';
import { newId } from '../../../platform/time.ts';
import { messagePostedOutboxInsert } from './message-posted.ts';
import type { MessageRow } from './message-rows.ts';
import type { MessageContent } from './rules.ts';
import { REALTIME_OUTBOX_CHANNEL } from '../realtime-dispatch/outbox-sql.ts';
import type { BatchQueue } from './send-queue.ts';

/**
 * Several sends in ONE statement (one transaction, one round trip): what the single send
 * (send.ts) does for one message, row by row for many. Under load the per-statement cost
 * (protocol, executor start, commit and its WAL flush) dominates a send, so concurrent sends share it.
 *
 * Each message is judged on its own, exactly as a single send judges it: the sender must be an
 * Active participant (else `member` is false), a Direct chat with a block either way refuses it
 * (`blocked`), and the recipients are read from the statement's snapshot, taken before the chat
 * locks were granted. The chats are locked in id order (two batches never wait on each other in a
 * cycle), each bumped by its number of messages only while its membership_version still equals
 * the snapshot's; the messages of a chat whose membership changed meanwhile get no row (`message`
 * null with `member` true and `blocked` false: send them again on a fresh snapshot). Seq follows
 * the order of the input within a chat, gapless. One MessageReceived push intent and one
 * MessagePostedKafkaEvent per message; the NOTIFYs once per statement.
 *
 * The events are built by messagePostedOutboxInsert, as for the single send. The test of this file
 * compares every column with what the single send writes.
 */

export interface BatchSend {
  senderUserId: string;
  chatId: string;
  content: MessageContent;
}

export interface BatchSendOutcome {
  member: boolean;
  blocked: boolean;
  message: MessageRow | null;
}

/** The process's queue of sends (send.ts builds it; the routes' context carries it). */
export type SendQueue = BatchQueue<BatchSend, BatchSendOutcome>;

// The input is read with generate_subscripts rather than unnest: unnest's row estimate follows the
// array's length, so every batch size would get its own custom plan (planning this statement costs
// more than running it); generate_subscripts' fixed estimate lets the prepared statement settle on
// one generic plan per connection. Every lookup below is by key (LATERAL), whatever the estimates.
const TEXT = `with input as (
    select ($1::uuid[])[o] as id, ($2::uuid[])[o] as chat_id, ($3::uuid[])[o] as sender_id, ($4::varchar[])[o] as kind,
           ($5::text[])[o] as body, ($6::text[])[o] as file_meta, ($7::text[])[o] as card_text,
           ($8::uuid[])[o] as push_id, ($9::uuid[])[o] as event_id, o as ord
      from generate_subscripts($1::uuid[], 1) as o),
  checked as (
    select i.*, s.membership_version, coalesce(s.member, false) as member, coalesce(s.blocked, false) as blocked
      from input i
      left join lateral (
        select c.membership_version,
               exists (select 1 from messenger.chat_participants p
                        where p.chat_id = c.id and p.user_id = i.sender_id and p.status = 'Active') as member,
               c.kind = 'Direct' and exists (
                 select 1 from messenger.chat_participants r join messenger.blacklist_entries b
                   on (b.owner_user_id = r.user_id and b.blocked_user_id = i.sender_id) or (b.owner_user_id = i.sender_id and b.blocked_user_id = r.user_id)
                  where r.chat_id = c.id and r.status = 'Active' and r.user_id <> i.sender_id and b.status = 'Blocked') as blocked
          from messenger.chats c where c.id = i.chat_id) s on true),
  wanted as (
    select chat_id, count(*)::bigint as n, min(membership_version) as v from checked where member and not blocked group by chat_id),
  locked as (
    select c.id from messenger.chats c where c.id = any(array(select chat_id from wanted)) order by c.id for update),
  bumped as (
    update messenger.chats c set last_seq = c.last_seq + w.n, updated_at = $10
      from wanted w
     where c.id = w.chat_id and c.id = any(array(select id from locked)) and c.membership_version = w.v
    returning c.id, c.last_seq - w.n as base),
  msg as (
    insert into messenger.messages (id, chat_id, seq, sender_user_id, kind, body, file_meta, card_text, sent_at)
    select k.id, k.chat_id, b.base + row_number() over (partition by k.chat_id order by k.ord), k.sender_id, k.kind, k.body,
           k.file_meta::jsonb, k.card_text, $10
      from checked k join bumped b on b.id = k.chat_id
     where k.member and not k.blocked
    returning id, chat_id as "chatId", seq::float8 as seq, sender_user_id as "senderUserId", kind, body,
      file_meta as "fileMeta", card_text as "cardText", sent_at as "sentAt", edited_at as "editedAt", deleted_at as "deletedAt"),
  recipients as (
    select b.id as chat_id, r.users from bumped b
      cross join lateral (select array_agg(p.user_id order by p.user_id) as users
                            from messenger.chat_participants p where p.chat_id = b.id and p.status = 'Active') r),
  pushed as (
    insert into messenger.realtime_outbox (id, kind, target_kind, chat_id, message_id, seq, next_attempt_at, created_at, updated_at)
    select i.push_id, 'MessageReceived', 'ChatGroup', m."chatId", m.id, m.seq, $10, $10, $10
      from msg m join input i on i.id = m.id),
  event as (${messagePostedOutboxInsert(`from msg m join input i on i.id = m.id join recipients r on r.chat_id = m."chatId"
      cross join lateral (select i.event_id, $11::text as sent_at,
                                 coalesce(to_jsonb(array_remove(r.users, m."senderUserId")), '[]'::jsonb) as recipient_user_ids) e`)}),
  woke as (
    select pg_notify('${REALTIME_OUTBOX_CHANNEL}', ''), pg_notify('${OUTBOX_CHANNEL}', '') where exists (select 1 from msg))
  select k.member, k.blocked, row_to_json(m) as message, (select count(*) from woke) as woke
    from checked k left join msg m on m.id = k.id
   order by k.ord`;

/** One outcome per send, in input order. Throws when the statement fails (the caller sends row by row then). */
export async function trySendBatch(q: Queryable, sends: readonly BatchSend[], now: Date): Promise<BatchSendOutcome[]> {
  const col = <T>(f: (s: BatchSend) => T) => sends.map(f);
  const { rows } = await q.query<BatchSendOutcome>({
    name: 'messenger_send_messages',
    text: TEXT,
    values: [
      col(() => newId()),
      col((s) => s.chatId),
      col((s) => s.senderUserId),
      col((s) => s.content.kind),
      col((s) => s.content.body ?? null),
      col((s) => (s.content.fileMeta ? JSON.stringify(s.content.fileMeta) : null)),
      col((s) => s.content.cardText ?? null),
      col(() => newId()),
      col(() => newId()),
      now,
      now.toISOString(),
    ],
  });
  if (rows.length !== sends.length) throw new Error(`send batch: ${rows.length} outcomes for ${sends.length} sends`);
  return rows;
}
