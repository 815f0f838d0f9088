import { sql } from 'drizzle-orm';
import { AppError, type Principal } from '../../../platform/http/index.ts';
import { query, type Db } from '../../../platform/db/index.ts';
import { Value } from '@sinclair/typebox/value';
import { Uuid } from '../../../platform/types/index.ts';
import { chatForParticipant } from '../chats/chat-sql.ts';
import { ChatErrors } from '../errors.ts';
import { MESSAGE_COLUMNS, type MessageRow, type MessageView } from './message-rows.ts';
import { withReactions } from './reactions.ts';
import { messageViews } from './replies.ts';
import { MESSAGE_SEARCH_DOCUMENT, SEARCH_CONFIG } from './search-text.ts';

/**
 * Message search: full text over the messages of the chats the caller is an Active member of,
 * across them or within one, ranked (ts_rank, then the newest first) and paged by an opaque cursor,
 * each hit with its highlighted fragment. Only messages sent since the caller joined the chat (a
 * member added later does not find what was said before), none withheld from them, none deleted;
 * a chat they left or were removed from is not searched, as its history is not theirs to read.
 */

export interface SearchHit {
  message: MessageView;
  /** Relevance (higher is better); hits are ordered by it, then newest first. */
  rank: number;
  /** The matched fragment of the message, in pieces: `match` marks a searched word as found. */
  highlight: { text: string; match: boolean }[];
}

export interface SearchPage {
  items: SearchHit[];
  /** Pass as `cursor` for the next page; null on the last one. */
  nextCursor: string | null;
}

/** Marks ts_headline puts around a match: private-use characters, removed from the text first so a message cannot forge one. */
const START = '\uE000';
const STOP = '\uE001';
const HEADLINE_OPTIONS = `StartSel=${START}, StopSel=${STOP}, MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "`;

/** A page's position: the last hit's rank, its send time in microseconds since 1970 (exact, as stored) and id: the order's keys. */
interface Cursor { rank: number; sentUs: string; id: string }

const cursorInvalid = () => new AppError('MSG_SEARCH_CURSOR_INVALID', 'cursor is not one this search returned: start again without it', 400);

export const encodeCursor = (c: Cursor): string => Buffer.from(JSON.stringify([c.rank, c.sentUs, c.id])).toString('base64url');

export function decodeCursor(raw: string): Cursor {
  try {
    const v: unknown = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 3) {
      const [rank, sentUs, id] = v as unknown[];
      if (typeof rank === 'number' && Number.isFinite(rank) && typeof sentUs === 'string' && /^-?\d{1,18}$/.test(sentUs) && Value.Check(Uuid, id)) {
        return { rank, sentUs, id };
      }
    }
  } catch {
    // Not base64url JSON: refused below like any other foreign cursor.
  }
  throw cursorInvalid();
}

/** Splits ts_headline's output at its marks into pieces a client renders without parsing markup. */
export function highlightPieces(headline: string): { text: string; match: boolean }[] {
  const pieces: { text: string; match: boolean }[] = [];
  for (const [i, part] of headline.split(new RegExp(`[${START}${STOP}]`)).entries()) {
    if (part !== '') pieces.push({ text: part, match: i % 2 === 1 });
  }
  return pieces;
}

export async function searchMessages(
  q: Db,
  caller: Principal,
  params: { text: string; chatId?: string; limit: number; cursor?: string },
): Promise<SearchPage> {
  const after = params.cursor === undefined ? null : decodeCursor(params.cursor);
  if (params.chatId !== undefined && !(await chatForParticipant(q, params.chatId, caller.userId))) throw ChatErrors.chatNotFound();
  const me = caller.userId;
  const inChat = params.chatId === undefined ? sql`` : sql`and p.chat_id = ${params.chatId}`;
  // rank is real (float4); compared as real, so a cursor's rank, read back as a JS number, matches exactly.
  const below = after === null ? sql`` : sql`where (h.rank, h."sentUs", h.id) < (${after.rank}::real, ${after.sentUs}::bigint, ${after.id}::uuid)`;
  // The inner query finds and ranks (the index answers `chat_id = … and vector @@ query` per chat of
  // the caller); the outer one builds the highlight for the page's rows only, since ts_headline parses
  // the whole text again.
  const { rows } = await query<MessageRow & { rank: number; sentUs: string; headline: string }>(
    q,
    sql`with tsq as (select websearch_to_tsquery(${SEARCH_CONFIG}, ${params.text}) as q),
         hits as (
           select m.* from tsq,
             (select chat_id, joined_at from messenger.chat_participants p where user_id = ${me} and status = 'Active' ${inChat}) p
             cross join lateral (
               select ${MESSAGE_COLUMNS}, ts_rank(search_vector, tsq.q) as rank,
                      (extract(epoch from sent_at) * 1000000)::bigint as "sentUs",
                      translate(${MESSAGE_SEARCH_DOCUMENT}, ${START + STOP}, '') as doc
                 from messenger.messages
                where chat_id = p.chat_id and search_vector @@ tsq.q
                  and sent_at >= p.joined_at and deleted_at is null and withheld_from is distinct from ${me}) m)
       select h.*, ts_headline(${SEARCH_CONFIG}, h.doc, tsq.q, ${HEADLINE_OPTIONS}) as headline
         from (select * from hits h ${below} order by h.rank desc, h."sentUs" desc, h.id desc limit ${params.limit + 1}) h
         cross join tsq
        order by h.rank desc, h."sentUs" desc, h.id desc`,
  );
  const page = rows.slice(0, params.limit);
  const last = page.at(-1);
  const messages = await withReactions(q, me, await messageViews(q, page));
  return {
    items: page.map((r, i) => ({ message: messages[i]!, rank: r.rank, highlight: highlightPieces(r.headline) })),
    nextCursor: rows.length > params.limit && last ? encodeCursor({ rank: last.rank, sentUs: last.sentUs, id: last.id }) : null,
  };
}
