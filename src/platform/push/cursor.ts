/**
 * The event stream's cursor as clients see it: an opaque string for a stream position. Clients keep
 * the last one they received and resume after it; nothing else may be read into it.
 */

const PREFIX = 'e';
const SHAPE = /^e[0-9a-z]{1,11}$/;

export const cursorOf = (position: number): string => `${PREFIX}${position.toString(36)}`;

/** The position of a cursor this service handed out, or undefined for anything else. */
export function positionOf(cursor: string): number | undefined {
  if (!SHAPE.test(cursor)) return undefined;
  const position = Number.parseInt(cursor.slice(PREFIX.length), 36);
  return Number.isSafeInteger(position) ? position : undefined;
}
