import type { Db } from '../db/index.ts';
import { userGroup } from '../realtime/index.ts';
import { cursorOf, positionOf } from './cursor.ts';
import type { Payload } from './delivery.ts';
import { StreamErrors } from './errors.ts';
import { chatGroupOf, type PushKinds } from './port.ts';
import { readStream, readStreamHead } from './stream-sql.ts';

/**
 * GET /api/events: the caller's events after a cursor, rebuilt from their stored
 * references exactly as the dispatcher builds them at delivery (the registered kinds' load and
 * build steps; a carried frame as stored) — the same payloads, and never a
 * media join token (one is minted only for a live invite). An event whose entity is gone since
 * is left out; the cursor still moves past it.
 */

export interface StreamEvent {
  cursor: string;
  name: string;
  payload: Payload;
}

export async function eventsAfter(db: Db, kinds: PushKinds, userId: string, after: string | undefined, limit: number): Promise<{ events: StreamEvent[]; next: string }> {
  await kinds.refuseReader(db, userId);
  if (after === undefined) {
    // Where a new client starts: nothing yet, and the reader's own head to continue from.
    return { events: [], next: cursorOf(await readStreamHead(db, userId)) };
  }
  const position = positionOf(after);
  if (position === undefined) throw StreamErrors.cursorInvalid();
  const page = await readStream(db, userId, position, limit);
  // Positions before the horizon were trimmed: events after this cursor may be gone (refetch state).
  if (position < page.trimmedBelow - 1) throw StreamErrors.cursorExpired();
  // Past the reader's head (read in the same snapshot): not a cursor this stream handed this reader; its events would be skipped silently.
  if (position > page.head) throw StreamErrors.cursorAhead();
  const refs = await kinds.load(db, page.rows);
  const events: StreamEvent[] = [];
  for (const row of page.rows) {
    const built = kinds.build(row, refs);
    if (!built.ok) continue;
    const cursor = cursorOf(row.position);
    // A chat event's sends all carry one payload (per-member sends differ only in the join token).
    const mine = built.delivery.sends.find((s) => s.group === userGroup(userId) || (row.chatId !== null && s.group === chatGroupOf(row.chatId)));
    const send = mine ?? (row.targetKind === 'ChatGroup' ? built.delivery.sends[0] : undefined);
    if (send) events.push({ cursor, name: send.event, payload: { ...send.payload, Cursor: cursor } });
  }
  // A full page continues from its last event; a short one from the head read with it.
  const last = page.rows.at(-1);
  const next = page.rows.length >= limit && last ? last.position : page.head;
  return { events, next: cursorOf(next) };
}
