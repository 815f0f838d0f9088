import { sql } from 'drizzle-orm';
import { query, type Db } from '../../../platform/db/index.ts';
import { HubRefusal, userGroup, type Hub, type HubMethod } from '../../../platform/realtime/index.ts';
import type { TypingFrame } from '../realtime-dispatch/frames.ts';
import { MESSENGER_DEFAULTS } from '../defaults.ts';

/**
 * The hub method `Typing(chatId)`: a `typing` frame `{ ChatId, UserId }` to the chat's other Active
 * members (not the typist's own devices) — none while the chat is a message request to the typist,
 * and never to a member either side blocks (docs/security.md, "Consent"). Refused (a completion error) for a malformed id or a
 * caller who is not an Active member. Not part of the events stream: a typing hint is stale in
 * seconds, so it is pushed live only, never stored or replayed.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** As REST answers a non-member: the chat's existence is not revealed. */
export const TYPING_NOT_MEMBER = 'MSG_CHAT_NOT_FOUND: no chat with this id among your chats';
export const TYPING_BAD_CHAT_ID = 'VALIDATION_FAILED: Typing takes one argument, the chat id (a UUID).';

/** A connection's last answered call for a chat: when, and its refusal (undefined: the frame went out) once known. */
interface LastCall {
  at: number;
  refusal: Promise<string | undefined>;
}

export function typingMethod(db: Db, hub: Hub, nowMs: () => number = () => performance.now()): HubMethod {
  const lastCalls = new Map<string, LastCall>();
  const sweep = (now: number) => {
    for (const [key, call] of lastCalls) if (now - call.at >= MESSENGER_DEFAULTS.typingThrottleMs) lastCalls.delete(key);
  };
  const typed = async (chatId: string, userId: string): Promise<string | undefined> => {
    const audience = await typingAudience(db, chatId, userId);
    if (!audience) return TYPING_NOT_MEMBER;
    const frame: TypingFrame = { ChatId: chatId, UserId: userId };
    await Promise.all(audience.map((id) => hub.send(userGroup(id), 'typing', frame)));
    return undefined;
  };
  return async (caller, args) => {
    const chatId = args[0];
    if (args.length !== 1 || typeof chatId !== 'string' || !UUID.test(chatId)) throw new HubRefusal(TYPING_BAD_CHAT_ID);
    const key = `${caller.connectionId}:${chatId}`;
    const now = nowMs();
    let call = lastCalls.get(key);
    if (call === undefined || now - call.at >= MESSENGER_DEFAULTS.typingThrottleMs) {
      if (lastCalls.size >= MESSENGER_DEFAULTS.typingThrottleEntriesMax) sweep(now);
      // Remembered before the query, so calls arriving while it runs wait for its answer instead of querying too.
      const made: LastCall = { at: now, refusal: typed(chatId, caller.userId) };
      lastCalls.set(key, made);
      // A failed query or send is not remembered: the next call tries again.
      made.refusal.catch(() => lastCalls.get(key) === made && lastCalls.delete(key));
      call = made;
    }
    const refusal = await call.refusal;
    if (refusal !== undefined) throw new HubRefusal(refusal);
  };
}

/**
 * Who hears `me` type in the chat, in one read: undefined when `me` is no Active member; empty
 * while the chat is a message request to `me`; else the other Active members but those blocked
 * either way round.
 */
async function typingAudience(db: Db, chatId: string, me: string): Promise<string[] | undefined> {
  const { rows } = await query<{ accepted: boolean | null; audience: string[] | null }>(
    db,
    sql`select (select p.accepted_at is not null from messenger.chat_participants p
                 where p.chat_id = ${chatId} and p.user_id = ${me} and p.status = 'Active') as accepted,
               (select array_agg(o.user_id::text) from messenger.chat_participants o
                 where o.chat_id = ${chatId} and o.status = 'Active' and o.user_id <> ${me}
                   and not exists (select 1 from messenger.blacklist_entries b where b.status = 'Blocked'
                     and ((b.owner_user_id = ${me} and b.blocked_user_id = o.user_id) or (b.owner_user_id = o.user_id and b.blocked_user_id = ${me})))) as audience`,
  );
  const r = rows[0]!;
  if (r.accepted === null) return undefined;
  return r.accepted ? (r.audience ?? []) : [];
}
