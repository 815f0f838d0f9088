/** Reaction rules (messages/reactions.ts) as plain functions: which emoji is a reaction, and how many a user may leave on one message. */

/** Distinct reactions one user may have on one message at once (Telegram Premium allows 3, Slack 23): a product limit against spam. */
export const REACTIONS_PER_USER_MAX = 20;
/** Longest emoji path segment accepted, in code points (the longest RGI emoji, a kiss with two skin tones, has 10). */
export const EMOJI_MAX_CHARS = 16;

// Exactly one emoji of Unicode's Recommended-for-General-Interchange set (ZWJ sequences, flags, keycaps and
// skin tones included), so a reaction is always a picture every client can draw — never text, markup or
// several emoji glued together. Built at run time: the `v` flag's `\p{RGI_Emoji}` is newer than the compile target.
const RGI_EMOJI = new RegExp('^\\p{RGI_Emoji}$', 'v');
const VS16 = '\uFE0F';

/**
 * The reaction an emoji path segment names, fully qualified, or undefined when it is not one emoji.
 * A single emoji in its text form (❤ U+2764 without the emoji variation selector, as many keyboards
 * type it) is the same reaction as its emoji form (❤️): both are stored, counted and pushed as the latter.
 */
export function reactionEmoji(raw: string): string | undefined {
  if ([...raw].length > EMOJI_MAX_CHARS) return undefined;
  if (RGI_EMOJI.test(raw)) return raw;
  if (!raw.endsWith(VS16) && RGI_EMOJI.test(raw + VS16)) return raw + VS16;
  return undefined;
}
