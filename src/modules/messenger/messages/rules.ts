/** Message rules (message.md, UC-MSG-003) as plain functions. */

export const MESSAGE_CONTENT_KINDS = ['Text', 'File', 'Card'] as const;
export type MessageContentKind = (typeof MESSAGE_CONTENT_KINDS)[number];

export interface FileMeta {
  fileId: string;
  fileName: string;
  contentType: string;
  size: number;
}

/**
 * Limits of a File message's metadata. The messenger stores only what the client says about a file
 * it uploaded elsewhere, and every other client shows that name and opens the file by that type, so
 * the metadata is checked as if it were hostile: a name that is one path segment of printable
 * characters (no `/` or `\`, no control or bidi-override characters that disguise `exe` as `pdf`,
 * not `.` or `..`), a MIME type `type/subtype` without parameters, no active content (below), and
 * a size of at most 2 GiB (a fixed limit, in the module README and the OpenAPI document).
 */
export const FILE_NAME_MAX_CHARS = 255;

/**
 * Longest message body or card text, in characters (code points): a product rule. The route schemas
 * say it as maxLength (so the published document has it, and a longer text is 400
 * VALIDATION_FAILED before any work); contentProblem checks it again for the paths without a schema.
 */
export const MESSAGE_MAX_CHARS = 4000;
export const FILE_MAX_BYTES = 2 * 1024 ** 3;
export const FILE_NAME_PATTERN = '^(?!\\.+$)[^/\\\\\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]+$';
const TOKEN = "[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}";
export const CONTENT_TYPE_PATTERN = `^${TOKEN}/${TOKEN}$`;

/**
 * Types a browser or viewer runs rather than shows (markup that carries script, script itself,
 * Flash), refused whatever the file: a client that opens the file inline from a shared origin would
 * run the sender's code in the reader's session. Any `+xml` subtype counts (SVG, XHTML). Such a file
 * can still be sent as `application/octet-stream`, which clients download.
 */
const ACTIVE_CONTENT_TYPES = new Set([
  'text/html',
  'text/xml',
  'application/xml',
  'text/javascript',
  'text/ecmascript',
  'application/javascript',
  'application/ecmascript',
  'application/x-javascript',
  'application/x-shockwave-flash',
]);

const FILE_NAME = new RegExp(FILE_NAME_PATTERN, 'u');
const CONTENT_TYPE = new RegExp(CONTENT_TYPE_PATTERN, 'u');

/** True for a content type clients would run instead of show (case-insensitive, as MIME types are). */
export function isActiveContentType(contentType: string): boolean {
  const type = contentType.toLowerCase();
  return ACTIVE_CONTENT_TYPES.has(type) || type.endsWith('+xml');
}

/** What is wrong with a File message's metadata, or undefined (the limits above). */
export function fileMetaProblem(f: FileMeta): string | undefined {
  if ([...f.fileName].length > FILE_NAME_MAX_CHARS || !FILE_NAME.test(f.fileName)) {
    return `fileName must be one file name of at most ${FILE_NAME_MAX_CHARS} characters: no / or \\, no control characters, not . or ..`;
  }
  if (!CONTENT_TYPE.test(f.contentType)) return 'contentType must be a MIME type, type/subtype (no parameters)';
  if (isActiveContentType(f.contentType)) {
    return `contentType ${f.contentType.toLowerCase()} is active content (markup or script) and is refused; send the file as application/octet-stream`;
  }
  if (!Number.isSafeInteger(f.size) || f.size < 0 || f.size > FILE_MAX_BYTES) return `size must be 0…${FILE_MAX_BYTES} bytes`;
  return undefined;
}

export interface MessageContent {
  kind: MessageContentKind;
  body?: string;
  fileMeta?: FileMeta;
  cardText?: string;
}

/** What is wrong with a new message's content, or undefined. Exactly the field of its kind is set. */
export function contentProblem(c: MessageContent): string | undefined {
  const set = { Text: c.body, File: c.fileMeta, Card: c.cardText };
  for (const [kind, value] of Object.entries(set)) {
    if (kind !== c.kind && value !== undefined) return `a ${c.kind} message carries no ${kind === 'Text' ? 'body' : kind === 'File' ? 'fileMeta' : 'cardText'}`;
  }
  if (c.kind === 'File') return c.fileMeta ? fileMetaProblem(c.fileMeta) : 'a File message needs fileMeta';
  const text = c.kind === 'Text' ? c.body : c.cardText;
  if (text === undefined || text.trim() === '') return `a ${c.kind} message needs ${c.kind === 'Text' ? 'a body' : 'cardText'}`;
  if ([...text].length > MESSAGE_MAX_CHARS) return `the text is longer than ${MESSAGE_MAX_CHARS} characters`;
  return undefined;
}

/** The sender may edit within the edit window (inclusive; UC-MSG-003); a clock earlier than SentAt counts as inside. */
export const withinEditWindow = (sentAt: Date, now: Date, windowSeconds: number): boolean =>
  now.getTime() - sentAt.getTime() <= windowSeconds * 1000;

export const isEditable = (kind: MessageContentKind): boolean => kind === 'Text' || kind === 'Card';
