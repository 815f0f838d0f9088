import { sql } from 'drizzle-orm';
import { customType } from 'drizzle-orm/pg-core';

/**
 * What message search reads of a message: the words of a Text message's body, a Card's text or a
 * File's name, as a tsvector stored beside the row (a generated column) so the index (schema.ts) and
 * the ranking (search.ts) read it instead of parsing the text again for every candidate.
 * `russian` stems Russian words and, for words in Latin letters, falls back to the English stemmer,
 * so "квартиры" finds "квартира" and "rooms" finds "room".
 */
export const SEARCH_CONFIG = sql.raw(`'russian'::regconfig`);
/** The searched text, also what a hit's highlight is cut from. */
export const MESSAGE_SEARCH_DOCUMENT = sql.raw(`coalesce(body, card_text, file_meta->>'fileName', '')`);
export const MESSAGE_SEARCH_VECTOR = sql`to_tsvector(${SEARCH_CONFIG}, ${MESSAGE_SEARCH_DOCUMENT})`;

export const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
