import { sql } from 'drizzle-orm';
import { query } from '../../../platform/db/index.ts';
import { errorText, isPgError, pgErrorOf, rootCause } from '../../../platform/errors/index.ts';
import type { Principal } from '../../../platform/http/index.ts';
import type { ModuleDeps } from '../../../platform/module.ts';
import { currentTraceparent } from '../../../platform/observability/index.ts';
import { OUTBOX_CHANNEL } from '../../../platform/outbox/index.ts';
import { newId } from '../../../platform/time.ts';
import { messagePostedOutboxInsert } from './message-posted.ts';
import { MESSAGE_COLUMNS, type MessageView } from './message-rows.ts';
import { messageViews, normalizedMentions, refuseBadReplyOrMentions } from './replies.ts';
import { trySendBatch, type BatchSend, type BatchSendOutcome, type SendDeps, type SendQueue } from './send-batch.ts';
import { contentProblem, type MessageContent } from './rules.ts';
import type { MessagesContext } from './context.ts';
import { ChatErrors } from '../errors.ts';
import { callerRefusal, refuseInactiveUser, replicaActivity } from '../user-replica/replica-reads.ts';
import { createBatchQueue, type BatchQueueOptions, type ItemResult } from './send-queue.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/**
 * Sending a message (message.md). Concurrent sends are coalesced (send-queue.ts): a send alone
 * runs the statement below, several run send-batch.ts's, which judges each message the
 * same way in one statement; if PostgreSQL refuses that statement, its sends run here one by one,
 * so one bad send never fails the others (a lost connection fails them all: it may have committed). Under load the per-statement cost (protocol, executor start, commit)
 * dominates a send, so sharing it is what lets a replica take ~1,000 sends/s on two cores.
 *
 * The single send is ONE statement — its own transaction, one round trip: the chat row lock hands
 * out the next Seq (gapless: the statement either writes everything or nothing), the message, its
 * MessageReceived push intent and MessagePostedKafkaEvent (recipients = the other Active
 * participants; never the body), the sender's acceptance of the chat if it was a message request to
 * them (writing back answers it: docs/security.md, "Consent"), and the NOTIFYs that wake the dispatcher and the outbox publisher
 * at commit.
 *
 * A block refuses only the one who blocks (403 MSG_USER_BLOCKED: they know their own block). A
 * message of the blocked in their Direct chat with the blocker is sent as any other (the blocked
 * are never told) but withheld from the blocker: `withheld_from` names them, its push goes to the
 * sender's own user:{UserId} alone, and the event's recipients leave them out (docs/security.md,
 * "Blocked means blocked").
 *
 * The recipients are read from the statement's snapshot, taken before the chat lock was granted.
 * Membership changes bump chats.membership_version under the same lock, and the Seq update only
 * applies while the version still equals the snapshot's, so a send that waited for a membership
 * change matches nothing and runs again on a fresh snapshot.
 */

type SendOutcome = BatchSendOutcome;

/**
 * The process's queue of sends. `maxBatch` 1 turns coalescing off (every send runs alone).
 */
export function createSendQueue(
  deps: SendDeps & {
    log: ModuleDeps['log'];
    /** Called once a statement has committed messages (their push intents are visible now), or may have. */
    onCommitted?: () => void;
    /**
     * The payload of the NOTIFY that wakes the dispatcher: the runner's own (JobDefinition.connectWake)
     * once onCommitted wakes it in this process, so this replica does not wake twice per commit.
     */
    wakePayload?: () => string;
  },
  opts: Omit<BatchQueueOptions<BatchSend, SendOutcome>, 'run'>,
): SendQueue {
  const one = async (s: BatchSend): Promise<ItemResult<SendOutcome>> => {
    try {
      return { ok: true, value: await trySend(deps, s) };
    } catch (error) {
      return { ok: false, error };
    }
  };
  async function run(sends: BatchSend[]): Promise<ItemResult<SendOutcome>[]> {
    if (sends.length === 1) return [await one(sends[0]!)];
    try {
      return (await trySendBatch(deps, sends, deps.clock.now(), deps.wakePayload?.())).map((value) => ({ ok: true, value }));
    } catch (error) {
      // One by one only after PostgreSQL refused the statement: it rolled back. A failure without
      // its answer (the connection lost) may have come after the commit, and sending again would
      // write every message twice; those sends fail, and a client retries with its clientMessageId.
      if (mayHaveCommitted(error)) return sends.map(() => ({ ok: false, error }));
      // The driver's message: drizzle's own would carry the statement and every message body.
      deps.log.warn({ err: { message: errorText(error, { name: false }) }, sends: sends.length }, 'message send batch failed; sending one by one');
      const results: ItemResult<SendOutcome>[] = [];
      for (const s of sends) results.push(await one(s));
      return results;
    }
  }
  return createBatchQueue<BatchSend, SendOutcome>({
    ...opts,
    timingChannel: SEND_TIMING_CHANNEL,
    async run(sends) {
      const results = await run(sends);
      // A send that may have committed wakes the dispatcher too: its statement's own NOTIFY skips
      // this replica (a claim that finds nothing costs little; otherwise its row waits for the timer).
      if (results.some((r) => (r.ok ? r.value.message : mayHaveCommitted(r.error)))) deps.onCommitted?.();
      return results;
    },
  });
}

/** Each send statement's BatchQueueTiming (send-queue.ts): the sends' wait for it, and its round trip with the commit. */
export const SEND_TIMING_CHANNEL = 'pin:messenger:sends';

/** A send statement that failed without PostgreSQL's own error (severity ERROR: rolled back), e.g. a lost connection. */
const mayHaveCommitted = (err: unknown): boolean => pgErrorOf(err)?.severity !== 'ERROR';

/** The unique index that makes a send with a clientMessageId idempotent (unique per sender). */
const CLIENT_MESSAGE_ID_INDEX = 'ux_messages_sender_client_message_id';

/**
 * Sends a message; `created` is false when the sender already sent one with this clientMessageId
 * (a retried request): then the stored message is answered and nothing is written. A concurrent
 * repeat that passed the lookup fails on the unique index (its whole statement rolls back, so no
 * Seq is spent) and is tried again, which finds the stored row.
 */
export async function sendMessage(
  ctx: MessagesContext,
  caller: Principal,
  chatId: string,
  content: MessageContent & { clientMessageId?: string },
): Promise<{ message: MessageView; created: boolean }> {
  const problem = contentProblem(content);
  if (problem) {
    // The route skips the early activity read (the send statement judges it): an inactive caller
    // is still refused as inactive before anything about its request.
    await refuseInactiveUser(ctx.db, caller.userId);
    throw ChatErrors.invalidMessage(problem);
  }
  // The content without the idempotency key (the send compares it with a stored repeat's).
  const { clientMessageId, ...rest } = content;
  const message = { ...rest, mentionedUserIds: normalizedMentions(rest.mentionedUserIds) };
  await refuseBadReplyOrMentions(ctx.db, caller.userId, chatId, message.replyToMessageId, message.mentionedUserIds);
  for (let attempt = 1; ; attempt++) {
    let out: SendOutcome;
    try {
      out = await ctx.sends.submit({ senderUserId: caller.userId, chatId, content: message, clientMessageId, traceparent: currentTraceparent() });
    } catch (err) {
      if (attempt < MESSENGER_DEFAULTS.sendMaxTries && isPgError(err, '23505', CLIENT_MESSAGE_ID_INDEX)) continue;
      throw err;
    }
    // The caller's activity first, as every messenger route refuses an inactive caller before anything else.
    // A refusal is rare: one more read tells a user the replica has not seen from a blocked one.
    if (out.senderInactive) throw callerRefusal(await replicaActivity(ctx.db, caller.userId));
    if (out.existing) {
      if (!out.sameContent) throw ChatErrors.clientMessageIdReused();
      return { message: (await messageViews(ctx.db, [out.existing]))[0]!, created: false };
    }
    if (out.message) return { message: (await messageViews(ctx.db, [out.message]))[0]!, created: true };
    if (!out.member) throw ChatErrors.chatNotFound();
    if (out.blocked) throw ChatErrors.blocked();
    if (out.recipientInactive) throw ChatErrors.recipientInactive();
    // The membership changed while this send waited for the chat: read it again.
    if (attempt >= MESSENGER_DEFAULTS.sendMaxTries) throw new Error(`send to chat ${chatId}: membership kept changing (${MESSENGER_DEFAULTS.sendMaxTries} tries)`);
  }
}

async function trySend(ctx: SendDeps & { wakePayload?: () => string }, send: BatchSend): Promise<SendOutcome> {
  const { senderUserId: me, chatId, content, traceparent } = send;
  const clientMessageId = send.clientMessageId ?? null;
  const fileMeta = content.fileMeta ? JSON.stringify(content.fileMeta) : null;
  const replyTo = content.replyToMessageId ?? null;
  const mentions = sql`${sql.param(content.mentionedUserIds ?? [])}::uuid[]`;
  const now = ctx.clock.now();
  const at = now.toISOString();
  const id = newId();
  const statement = sql`with existing as (
          select ${MESSAGE_COLUMNS},
                 chat_id = ${chatId} and kind = ${content.kind} and body is not distinct from ${content.body ?? null}::text
                   and file_meta is not distinct from ${fileMeta}::jsonb and card_text is not distinct from ${content.cardText ?? null}::text
                   and reply_to_message_id is not distinct from ${replyTo}::uuid and mentioned_user_ids = ${mentions} as same
            from messenger.messages where sender_user_id = ${me} and client_message_id = ${clientMessageId}::uuid),
        snapshot as (
          select c.membership_version, c.kind,
                 exists (select 1 from messenger.chat_participants p where p.chat_id = c.id and p.user_id = ${me} and p.status = 'Active') as member,
                 exists (select 1 from messenger.chat_participants p
                          where p.chat_id = c.id and p.user_id = ${me} and p.status = 'Active' and p.accepted_at is null) as pending
            from messenger.chats c where c.id = ${chatId}),
        recipients as (
          select user_id, accepted_at, notification_level from messenger.chat_participants where chat_id = ${chatId} and status = 'Active' and user_id <> ${me}),
        inactive as (
          select not coalesce((select u.is_active from messenger.users u where u.id = ${me}), false) as sender,
                 (select kind from snapshot) = 'Direct' and exists (
                   select 1 from recipients r where not exists (select 1 from messenger.users u where u.id = r.user_id and u.is_active)) as recipient),
        blocked as (
          select (select kind from snapshot) = 'Direct' and exists (
            select 1 from messenger.blacklist_entries b join recipients r on b.owner_user_id = ${me} and b.blocked_user_id = r.user_id
             where b.status = 'Blocked') as v),
        withheld as (
          select r.user_id from recipients r
           where (select kind from snapshot) = 'Direct' and exists (
             select 1 from messenger.blacklist_entries b where b.owner_user_id = r.user_id and b.blocked_user_id = ${me} and b.status = 'Blocked')),
        locked as (
          update messenger.chats c set last_seq = c.last_seq + 1, updated_at = ${at}
           where c.id = ${chatId} and (select member from snapshot) and not (select v from blocked)
             and not (select sender or recipient from inactive)
             and c.membership_version = (select membership_version from snapshot)
             and not exists (select 1 from existing)
          returning c.last_seq),
        msg as (
          insert into messenger.messages (id, chat_id, seq, sender_user_id, kind, body, file_meta, card_text, sent_at, client_message_id, withheld_from,
                                          reply_to_message_id, mentioned_user_ids)
          select ${id}, ${chatId}, l.last_seq, ${me}, ${content.kind}, ${content.body ?? null},
                 ${fileMeta}::jsonb, ${content.cardText ?? null}, ${at}, ${clientMessageId}::uuid, (select user_id from withheld),
                 ${replyTo}::uuid, ${mentions}
            from locked l
          returning ${MESSAGE_COLUMNS}),
        consented as (
          update messenger.chat_participants set accepted_at = ${at}, updated_at = ${at}
           where (select pending from snapshot) and exists (select 1 from locked)
             and chat_id = ${chatId} and user_id = ${me} and status = 'Active' and accepted_at is null),
        pushed as (${ctx.push.insert(
          {
            kind: 'MessageReceived',
            from: sql`from msg m`,
            id: sql`${newId()}::uuid`,
            // Withheld from a blocker: to the sender's own user:{UserId} alone.
            targetKind: sql`case when exists (select 1 from withheld) then 'User' else 'ChatGroup' end`,
            chatId: sql`m."chatId"`,
            targetUserId: sql`case when exists (select 1 from withheld) then ${me}::uuid end`,
            messageId: sql`m.id`,
            seq: sql`m.seq`,
            traceparent: sql`${traceparent ?? null}::varchar`,
          },
          now,
        )}),
        event_args as (
          select ${newId()}::uuid as event_id, ${at}::text as sent_at, ${traceparent ?? null}::varchar as traceparent,
                 (select coalesce(jsonb_agg(user_id order by user_id), '[]'::jsonb) from recipients where user_id not in (select user_id from withheld)) as recipient_user_ids,
                 (select coalesce(jsonb_agg(user_id order by user_id) filter (where accepted_at is null), '[]'::jsonb)
                    from recipients where user_id not in (select user_id from withheld)) as request_user_ids,
                 (select coalesce(jsonb_agg(user_id order by user_id) filter (where notification_level = 'off'), '[]'::jsonb)
                    from recipients where user_id not in (select user_id from withheld)) as muted_user_ids,
                 (select coalesce(jsonb_agg(user_id order by user_id) filter (where notification_level = 'mentions'), '[]'::jsonb)
                    from recipients where user_id not in (select user_id from withheld)) as mentions_only_user_ids),
        event as (${sql.raw(messagePostedOutboxInsert('from msg m cross join event_args e'))})
        select coalesce((select member from snapshot), false) as member, coalesce((select v from blocked), false) as blocked,
               (select sender from inactive) as "senderInactive", coalesce((select recipient from inactive), false) as "recipientInactive",
               (select row_to_json(msg) from msg) as message,
               (select to_jsonb(e) - 'same' from existing e) as existing, coalesce((select same from existing), true) as "sameContent",
               case when exists (select 1 from msg) then ${ctx.push.wakeAtCommit(ctx.wakePayload?.() ?? '')} end as woke_dispatcher,
               case when exists (select 1 from msg) then pg_notify(${OUTBOX_CHANNEL}, '') end as woke_publisher`;
  // A named (prepared) statement: its text never changes, so each connection plans it once instead
  // of on every send (planning this statement costs as much as running it).
  const { rows } = await query<SendOutcome>(ctx.db, statement, { name: 'messenger_send_message' });
  return rows[0]!;
}
