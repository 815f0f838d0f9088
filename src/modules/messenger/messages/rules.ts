/** Message rules (message.md, UC-MSG-003) as plain functions. */

import { ALLOWED_FILE_TYPE_SUMMARY, isAllowedFileType } from './file-types.ts';

import type { MessageContentKind } from '../model/message-kinds.ts';

export interface FileMeta {
  fileId: string;
  fileName: string;
  contentType: string;
  size: number;
}

/**
 * Limits of a File message's metadata. The messenger stores only what the client says about a file
 * it uploaded elsewhere, and every other client shows that name and opens the file by that type, so
 * the metadata is checked as if it were hostile: an id that is a bounded token (`../../secret` or
 * `javascript:alert(1)` were taken, and a client may build a download URL from it), a name that is
 * one path segment of printable characters (no `/` or `\`, no control, bidi-override or direction
 * characters that disguise `exe` as `pdf`, no leading dot, not a device name Windows reserves), a
 * MIME type `type/subtype` without parameters from an allow-list (file-types.ts), and a size of at
 * most 2 GiB (a fixed limit, in the module README and the OpenAPI document).
 */
export const FILE_NAME_MAX_CHARS = 255;

/**
 * Longest message body or card text, in characters (code points): a product rule. The route schemas
 * say it as maxLength (so the published document has it, and a longer text is 400
 * VALIDATION_FAILED before any work); contentProblem checks it again for the paths without a schema.
 */
export const MESSAGE_MAX_CHARS = 4000;
export const FILE_MAX_BYTES = 2 * 1024 ** 3;
/** A file id as the storage that issued it names it: a UUID or any token of letters, digits, `_` and `-`. */
export const FILE_ID_MAX_CHARS = 128;
export const FILE_ID_PATTERN = `^[A-Za-z0-9_-]{1,${FILE_ID_MAX_CHARS}}$`;
/** Windows' reserved device names, alone or before an extension (`CON`, `nul.txt`), in any case. */
const RESERVED_NAME = '(?:[cC][oO][nN]|[pP][rR][nN]|[aA][uU][xX]|[nN][uU][lL]|[cC][oO][mM][0-9]|[lL][pP][tT][0-9])(?:\\.|$)';
/** Not allowed anywhere in a name: separators, C0/C1 controls, the Arabic letter mark, LRM/RLM, bidi embeddings, overrides and isolates. */
const NAME_FORBIDDEN = '/\\\\\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069';
export const FILE_NAME_PATTERN = `^(?!\\.)(?!${RESERVED_NAME})[^${NAME_FORBIDDEN}]+$`;
const TOKEN = "[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}";
export const CONTENT_TYPE_PATTERN = `^${TOKEN}/${TOKEN}$`;

const FILE_ID = new RegExp(FILE_ID_PATTERN, 'u');
const FILE_NAME = new RegExp(FILE_NAME_PATTERN, 'u');
const CONTENT_TYPE = new RegExp(CONTENT_TYPE_PATTERN, 'u');

/** What is wrong with a File message's metadata, or undefined (the limits above). */
export function fileMetaProblem(f: FileMeta): string | undefined {
  if (!FILE_ID.test(f.fileId)) return `fileId must be 1…${FILE_ID_MAX_CHARS} letters, digits, _ or -`;
  if ([...f.fileName].length > FILE_NAME_MAX_CHARS || !FILE_NAME.test(f.fileName)) {
    return `fileName must be one file name of at most ${FILE_NAME_MAX_CHARS} characters: no / or \\, no control or direction characters, no leading dot, not a reserved device name`;
  }
  if (!CONTENT_TYPE.test(f.contentType)) return 'contentType must be a MIME type, type/subtype (no parameters)';
  if (!isAllowedFileType(f.contentType)) {
    return `contentType ${f.contentType.toLowerCase()} is not one a File message may carry: ${ALLOWED_FILE_TYPE_SUMMARY}`;
  }
  if (!Number.isSafeInteger(f.size) || f.size < 0 || f.size > FILE_MAX_BYTES) return `size must be 0…${FILE_MAX_BYTES} bytes`;
  return undefined;
}

export interface MessageContent {
  kind: MessageContentKind;
  body?: string;
  fileMeta?: FileMeta;
  cardText?: string;
  /** The message of the same chat this one replies to (replies.ts). */
  replyToMessageId?: string;
  /** Members of a Group chat it mentions, sorted and once each (replies.ts normalizedMentions). */
  mentionedUserIds?: string[];
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
